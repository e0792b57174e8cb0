//! What a read waits for after a write: one expectation per written object, and whether what
//! the cache holds (and how far its informer has got) meets it.

/// A resourceVersion as a number, when it is one. The API makes resourceVersions opaque;
/// etcd-backed kube-apiservers and rein-testenv use etcd-style revisions (decimal integers,
/// one counter per server, growing with every write), and only those are compared.
pub(crate) fn parse_rv(rv: Option<&str>) -> Option<u64> {
    let rv = rv?;
    if rv.is_empty() || !rv.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rv.parse().ok()
}

/// The state a read must see for one object this client wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Written at `rv` (created, updated, patched, applied, its status written, or marked
    /// for deletion while finalizers or a grace period keep it): the cache holds the object
    /// at `rv` or newer, or the informer has delivered an event of this kind at `rv` or newer
    /// (so every change up to `rv` has been applied, including a later deletion).
    Written {
        /// The resourceVersion the server answered the write with.
        rv: u64,
    },
    /// Deleted: the cache no longer holds the object with `uid`.
    Deleted {
        /// The deleted object's uid, when the server said.
        uid: Option<String>,
        /// The newest resourceVersion of the object known to this client (from the delete's
        /// answer or an earlier write). While the informer has not reached it, an empty key
        /// may mean "not created yet" rather than "deleted", so it does not count.
        last_rv: Option<u64>,
    },
}

/// What the cache holds at the key now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cached<'a> {
    pub(crate) uid: Option<&'a str>,
    pub(crate) rv: Option<u64>,
}

impl<'a> Cached<'a> {
    pub(crate) fn of(meta: &'a kube_client::core::ObjectMeta) -> Self {
        Cached {
            uid: meta.uid.as_deref(),
            rv: parse_rv(meta.resource_version.as_deref()),
        }
    }
}

impl Expect {
    /// Whether the cache meets the expectation: it holds `cached` at the key and its informer
    /// has delivered everything up to `watermark`.
    pub(crate) fn met(&self, cached: Option<Cached<'_>>, watermark: u64) -> bool {
        match self {
            Expect::Written { rv } => {
                watermark >= *rv || cached.and_then(|c| c.rv).is_some_and(|r| r >= *rv)
            }
            Expect::Deleted { uid, last_rv } => match cached {
                None => last_rv.is_none_or(|last| watermark >= last),
                Some(c) => {
                    // Another object under the same name, newer than the deleted one.
                    let other = matches!((uid, c.uid), (Some(a), Some(b)) if a != b);
                    other
                        && match (last_rv, c.rv) {
                            (None, _) => true,
                            (Some(last), Some(r)) => r > *last,
                            (Some(_), None) => false,
                        }
                }
            },
        }
    }

    /// The expectation after this one is followed by `next` for the same key.
    pub(crate) fn then(&self, next: Expect) -> Expect {
        match (self, next) {
            (Expect::Written { rv }, Expect::Deleted { uid, last_rv }) => Expect::Deleted {
                uid,
                last_rv: Some(last_rv.map_or(*rv, |l| l.max(*rv))),
            },
            (_, next) => next,
        }
    }
}

/// The expectation after a delete, from the server's answer: the object itself (still
/// terminating behind finalizers or a grace period, or as it was deleted) or a `Status`.
/// `None` when nothing can be tracked (a resourceVersion that is not a number).
pub(crate) fn after_delete(answer: &serde_json::Value) -> Option<Expect> {
    let str_at = |v: &serde_json::Value, path: &[&str]| -> Option<String> {
        path.iter()
            .try_fold(v, |v, p| v.get(p))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    if answer.get("kind").and_then(|k| k.as_str()) == Some("Status") {
        return Some(Expect::Deleted {
            uid: str_at(answer, &["details", "uid"]),
            last_rv: None,
        });
    }
    let meta = answer.get("metadata")?;
    let rv = str_at(meta, &["resourceVersion"]);
    let rv = match rv {
        Some(rv) => Some(parse_rv(Some(&rv))?),
        None => None,
    };
    let terminating = meta.get("deletionTimestamp").is_some_and(|t| !t.is_null());
    let finalizers = meta
        .get("finalizers")
        .and_then(|f| f.as_array())
        .is_some_and(|f| !f.is_empty());
    let grace = meta
        .get("deletionGracePeriodSeconds")
        .and_then(|g| g.as_i64())
        .is_some_and(|g| g > 0);
    if terminating && (finalizers || grace) {
        return rv.map(|rv| Expect::Written { rv });
    }
    Some(Expect::Deleted {
        uid: str_at(meta, &["uid"]),
        last_rv: rv,
    })
}
