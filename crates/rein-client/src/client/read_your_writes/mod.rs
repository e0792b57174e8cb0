//! Read-your-own-writes: after a write through the cache-backed [`Client`](crate::Client), a
//! read of that kind through the same client waits (bounded) until the cache has caught up
//! with the write, then answers from the cache.
//!
//! How it works. Every write answered with an object records, per kind and per object key,
//! what the cache must show: the object at the written resourceVersion or newer (`Written`),
//! or the object gone (`Deleted`). A small handler on the kind's informer follows what the
//! informer delivers (it runs after each change is in the cache) and closes expectations as
//! they are met; it also keeps the highest resourceVersion delivered, so an object changed or
//! deleted again by someone else after the write still counts as reached. A `get` waits only
//! for its own key; a `list` waits for every open expectation in its namespace (or all).
//!
//! ResourceVersions are opaque in the API. They are compared as integers only when both
//! parse as decimal integers, as etcd revisions (kube-apiserver) and rein-testenv's do; a
//! write answered with any other resourceVersion is not tracked, and reads after it are plain
//! cached reads.

mod expect;
mod kind;
mod metrics;
#[cfg(test)]
mod tests;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use rein_informer::{SharedIndexInformer, meta_namespace_key};
use rein_scheme::ObjectKey;
use tokio::time::Instant;

pub use metrics::{WaitOutcome, read_your_writes_waits};

use crate::Error;
use crate::cache::Cache;
use crate::endpoint::Endpoint;
use expect::{Expect, parse_rv};
pub(crate) use kind::Scope;
use kind::{Follower, KindState};
use rein_scheme::Object;

/// Read-your-own-writes (a [`ClientOptions`](crate::ClientOptions) setting; on by default).
///
/// **What it guarantees.** After a write through a cache-backed client (`create`, `update`,
/// `patch`, `apply`, `delete`, and `status()`/`sub_resource(…)` `update` and `patch`) has
/// returned, a `get` of that object or a `list` of that kind through the same client (or a
/// clone of it) answers with that write or something newer: the read waits until the cache's
/// informer for the kind has delivered the written resourceVersion for that object, or any
/// later change of the kind, and for a delete until the object has left the cache (or a newer
/// object took its name). It holds per object for `get` and per kind (within the listed
/// namespace) for `list`, and only as long as the read waits: at most
/// [`ReadYourWrites::timeout`], after which [`ReadYourWrites::on_timeout`] decides.
///
/// **What it does not guarantee.** Writes by other clients, other processes or other replicas
/// (a read can still be older than those: the cache is eventually consistent); ordering across
/// kinds (a `get` of a ConfigMap after writing a Deployment does not wait); writes through the
/// [`DynamicClient`](crate::dynamic::DynamicClient), `delete_all_of`, and sub-resource writes
/// that do not answer with the object (`create` of an eviction, `update_as`/`patch_as` of a
/// scale); dry runs (nothing was stored); writes answered with a resourceVersion that is not an
/// integer (reads then do not wait); objects the cache does not hold (outside its namespace or
/// its selectors for the kind — reads do not wait for them).
///
/// **What it costs.** A read with nothing open for its kind checks one atomic and does not
/// wait; writes of a kind whose informer exists record one map entry; the informer of every
/// kind this client has written calls one more handler per event. A read after a write waits
/// for the informer's delivery latency, no longer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadYourWrites {
    /// Whether reads wait for the client's own writes (default: on).
    pub enabled: bool,
    /// The longest a read waits for the cache to catch up (default 5 s). A write the cache
    /// has not reached stays expected: every later read it covers waits again (so a cache that
    /// stopped following the server slows those reads by this much each, and says so in a
    /// warning and the metric, rather than answering silently stale).
    pub timeout: Duration,
    /// What a read does when the wait times out (default: answer from the cache, with a
    /// warning and the `rein_client_read_your_writes_waits_total{outcome="timed_out"}` metric).
    pub on_timeout: OnTimeout,
}

/// What a read does when the cache has not caught up with the client's own write in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnTimeout {
    /// Answer from the cache as it is (possibly older than the write), log a warning and count
    /// `timed_out` in the metric. Reconcilers written for an eventually consistent cache keep
    /// working, a little later.
    #[default]
    ServeCached,
    /// Fail with [`Error::ReadYourWritesTimeout`]; the reconcile errors and is retried.
    Fail,
}

impl Default for ReadYourWrites {
    fn default() -> Self {
        ReadYourWrites {
            enabled: true,
            timeout: Duration::from_secs(5),
            on_timeout: OnTimeout::ServeCached,
        }
    }
}

impl ReadYourWrites {
    /// Off: reads answer from the cache at once (controller-runtime's behaviour).
    pub fn disabled() -> Self {
        ReadYourWrites {
            enabled: false,
            ..Self::default()
        }
    }

    /// Sets the longest a read waits.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets what a read does when the wait times out.
    pub fn on_timeout(mut self, on_timeout: OnTimeout) -> Self {
        self.on_timeout = on_timeout;
        self
    }
}

/// One client's open expectations, per kind (typed kinds, keyed by Rust type as the cache's
/// informers are).
pub(crate) struct Tracker {
    options: ReadYourWrites,
    kinds: RwLock<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl fmt::Debug for Tracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracker")
            .field("options", &self.options)
            .field("kinds", &self.kinds.read().len())
            .finish()
    }
}

/// A kind followed by this client: its state and the informer it follows.
struct Followed<K> {
    state: Arc<KindState>,
    informer: Arc<SharedIndexInformer<K>>,
}

impl Tracker {
    pub(crate) fn new(options: ReadYourWrites) -> Self {
        Tracker {
            options,
            kinds: RwLock::new(HashMap::new()),
        }
    }

    fn followed<K: Object>(&self) -> Option<Arc<Followed<K>>> {
        self.kinds
            .read()
            .get(&TypeId::of::<K>())?
            .clone()
            .downcast::<Followed<K>>()
            .ok()
    }

    /// The kind's state, following its informer from now on. `None` when the cache has no
    /// informer for the kind: one made later lists after the write and so already sees it.
    fn follow<K: Object>(&self, cache: &Cache) -> Option<Arc<Followed<K>>> {
        if let Some(found) = self.followed::<K>() {
            return Some(found);
        }
        let informer = cache.existing_informer_for::<K>()?;
        let mut kinds = self.kinds.write();
        if let Some(found) = kinds
            .get(&TypeId::of::<K>())
            .and_then(|f| f.clone().downcast::<Followed<K>>().ok())
        {
            return Some(found);
        }
        let state = Arc::new(KindState::default());
        informer
            .add_event_handler_with_resync(Follower(state.clone()), Duration::ZERO)
            .ok()?;
        let followed = Arc::new(Followed { state, informer });
        kinds.insert(TypeId::of::<K>(), followed.clone());
        Some(followed)
    }

    /// Records a write answered with `stored`.
    pub(crate) fn wrote<K: Object>(&self, cache: &Cache, stored: &K) {
        if !self.options.enabled {
            return;
        }
        let meta = stored.meta();
        let Some(rv) = parse_rv(meta.resource_version.as_deref()) else {
            return;
        };
        if !cache_holds(cache, stored) {
            return;
        }
        if let Some(followed) = self.follow::<K>(cache) {
            followed
                .state
                .expect(meta_namespace_key(stored), Expect::Written { rv });
        }
    }

    /// Records a delete of `key` answered with `answer` (the object or a `Status`).
    pub(crate) fn deleted<K: Object>(
        &self,
        cache: &Cache,
        key: &ObjectKey,
        answer: &serde_json::Value,
    ) {
        if !self.options.enabled {
            return;
        }
        let Some(mut expect) = expect::after_delete(answer) else {
            return;
        };
        let Some(followed) = self.follow::<K>(cache) else {
            return;
        };
        let store_key = store_key::<K>(key);
        if let Expect::Deleted { uid, last_rv } = &mut expect {
            // Fill in from the cache what the answer did not say.
            if let Some(cached) = followed.informer.indexer().get_by_key(&store_key) {
                let meta = cached.meta();
                if uid.is_none() {
                    uid.clone_from(&meta.uid);
                }
                if last_rv.is_none() && *uid == meta.uid {
                    *last_rv = parse_rv(meta.resource_version.as_deref());
                }
            }
        }
        followed.state.expect(store_key, expect);
    }

    /// Waits, bounded by the timeout, until the cache covers this client's writes in
    /// `scope`; `Ok` at once when nothing is open there.
    pub(crate) async fn before_read<K: Object>(
        &self,
        cache: &Cache,
        verb: &str,
        scope: Scope,
        target: &(dyn fmt::Display + Sync),
    ) -> Result<(), Error> {
        if !self.options.enabled {
            return Ok(());
        }
        let Some(followed) = self.followed::<K>() else {
            return Ok(());
        };
        if !followed.state.covers(&scope) || !cache.is_started() {
            return Ok(());
        }
        let kind = &Endpoint::of::<K>().gvk;
        let started = Instant::now();
        let deadline = started + self.options.timeout;
        let indexer = followed.informer.indexer();
        let caught_up = tokio::select! {
            caught_up = wait_for(&followed.state, deadline, || {
                followed.state.check(&indexer, &scope)
            }) => caught_up,
            // A stopped cache will not get there: answer from it at once (the manager is
            // shutting down), without the timeout's warning.
            () = cache.stopped() => {
                tracing::debug!(kind = %kind, verb, target = %target, "the cache stopped while a read waited for this client's own write; answering from the cache");
                return Ok(());
            }
        };
        if caught_up {
            let waited = started.elapsed();
            metrics::record(&kind.kind, verb, WaitOutcome::CaughtUp, waited);
            tracing::debug!(kind = %kind, verb, target = %target, ?waited, "read waited for the cache to reach this client's own write");
            return Ok(());
        }
        let after = self.options.timeout;
        metrics::record(&kind.kind, verb, WaitOutcome::TimedOut, after);
        match self.options.on_timeout {
            OnTimeout::ServeCached => {
                tracing::warn!(kind = %kind, verb, target = %target, ?after, "the cache did not reach this client's own write in time; answering from the cache, which may be older than the write");
                Ok(())
            }
            OnTimeout::Fail => Err(Error::ReadYourWritesTimeout {
                action: Endpoint::of::<K>()
                    .action(if verb == "list" { "listing" } else { "getting" }, target),
                after,
            }),
        }
    }
}

/// Waits until `check` holds, checking again after each delivery of the kind's informer;
/// `false` at the deadline. Dropping the future stops the wait.
async fn wait_for(state: &KindState, deadline: Instant, mut check: impl FnMut() -> bool) -> bool {
    let mut changed = state.subscribe();
    loop {
        changed.borrow_and_update();
        if check() {
            return true;
        }
        tokio::select! {
            res = changed.changed() => {
                if res.is_err() {
                    return false;
                }
            }
            () = tokio::time::sleep_until(deadline) => return false,
        }
    }
}

/// The cache key of `key` for kind `K` (`namespace/name`, or `name` for cluster-scoped kinds).
pub(crate) fn store_key<K: Object>(key: &ObjectKey) -> String {
    match (&key.namespace, Endpoint::of::<K>().namespaced()) {
        (Some(ns), true) if !ns.is_empty() => format!("{ns}/{}", key.name),
        _ => key.name.clone(),
    }
}

/// Whether the cache would hold `obj`: inside its namespace, matching its selectors for the
/// kind. Reads do not wait for objects it would not hold (no event would ever come for them).
fn cache_holds<K: Object>(cache: &Cache, obj: &K) -> bool {
    let options = cache.options();
    let meta = obj.meta();
    if let Some(ns) = &options.namespace
        && Endpoint::of::<K>().namespaced()
        && meta.namespace.as_deref() != Some(ns.as_str())
    {
        return false;
    }
    let (label_selector, field_selector) = options.selectors_for(&Endpoint::of::<K>().gvk);
    if let Some(labels) = &label_selector {
        let none = std::collections::BTreeMap::new();
        if !labels.matches(meta.labels.as_ref().unwrap_or(&none)) {
            return false;
        }
    }
    if let Some(fields) = field_selector.as_ref().filter(|f| !f.is_everything()) {
        let mut json = None;
        return fields.matches(|field| match field {
            "metadata.name" => meta.name.clone(),
            "metadata.namespace" => meta.namespace.clone(),
            path => {
                let json = json.get_or_insert_with(|| serde_json::to_value(obj).ok());
                let value = path.split('.').try_fold(json.as_ref()?, |v, p| v.get(p))?;
                Some(match value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            }
        });
    }
    true
}
