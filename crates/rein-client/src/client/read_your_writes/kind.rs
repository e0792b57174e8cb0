//! One kind's read-your-own-writes state: the expectations still open, how far the informer
//! has delivered, and the informer handler that keeps both up to date and wakes waiting reads.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use kube_client::Resource;
use parking_lot::Mutex;
use rein_informer::{DeletedObject, Indexer, ResourceEventHandler, meta_namespace_key};
use tokio::sync::watch;

use super::expect::{Cached, Expect, parse_rv};

/// Which cached objects a read covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    /// One object, by its cache key (`namespace/name` or `name`).
    Key(String),
    /// Every object in a namespace (`None`: all namespaces).
    Namespace(Option<String>),
}

/// The open expectations of one kind and the informer's progress.
#[derive(Debug)]
pub(crate) struct KindState {
    /// The highest resourceVersion the informer has delivered to its handlers.
    delivered: AtomicU64,
    /// How many expectations are open: zero makes the read path and the handler skip the lock.
    open: AtomicUsize,
    pending: Mutex<Pending>,
    /// Bumped after each delivery while expectations are open; waiting reads watch it.
    changed: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct Pending {
    by_key: HashMap<String, Expect>,
    /// The highest `Written` resourceVersion among open expectations (0: none).
    max_written: u64,
}

impl Pending {
    /// Drops every `Written` expectation once the informer has passed them all.
    fn prune_written(&mut self, watermark: u64) {
        if self.max_written != 0 && self.max_written <= watermark {
            self.by_key
                .retain(|_, e| !matches!(e, Expect::Written { .. }));
            self.max_written = 0;
        }
    }
}

impl Default for KindState {
    fn default() -> Self {
        KindState {
            delivered: AtomicU64::new(0),
            open: AtomicUsize::new(0),
            pending: Mutex::new(Pending::default()),
            changed: watch::Sender::new(0),
        }
    }
}

impl KindState {
    /// Whether any expectation is open (no lock taken).
    pub(crate) fn is_idle(&self) -> bool {
        self.open.load(Ordering::Acquire) == 0
    }

    /// Records that the object at `key` was written; an earlier expectation for the key is
    /// combined with it. An expectation the informer has met already is not recorded.
    pub(crate) fn expect(&self, key: String, expect: Expect) {
        let delivered = self.delivered.load(Ordering::Acquire);
        let mut p = self.pending.lock();
        let expect = match p.by_key.get(&key) {
            Some(prev) => prev.then(expect),
            None => expect,
        };
        if let Expect::Written { rv } = expect {
            if rv <= delivered {
                p.by_key.remove(&key);
                self.open.store(p.by_key.len(), Ordering::Release);
                return;
            }
            p.max_written = p.max_written.max(rv);
        }
        p.by_key.insert(key, expect);
        self.open.store(p.by_key.len(), Ordering::Release);
    }

    /// Whether what `scope` covers has been met; closes the expectations found met.
    pub(crate) fn check<K: Resource>(&self, indexer: &Indexer<K>, scope: &Scope) -> bool {
        let watermark = self
            .delivered
            .load(Ordering::Acquire)
            .max(parse_rv(indexer.last_store_sync_resource_version().as_deref()).unwrap_or(0));
        let met = |key: &str, e: &Expect| {
            let cached = indexer.get_by_key(key);
            e.met(cached.as_deref().map(|o| Cached::of(o.meta())), watermark)
        };
        let mut p = self.pending.lock();
        p.prune_written(watermark);
        let done = match scope {
            Scope::Key(key) => match p.by_key.get(key) {
                None => true,
                Some(e) if met(key, e) => {
                    p.by_key.remove(key);
                    true
                }
                Some(_) => false,
            },
            Scope::Namespace(ns) => {
                p.by_key.retain(|key, e| !met(key, e));
                !p.by_key.keys().any(|key| in_namespace(key, ns.as_deref()))
            }
        };
        self.open.store(p.by_key.len(), Ordering::Release);
        done
    }

    /// Whether `scope` has an open expectation (a cheap look before any waiting).
    pub(crate) fn covers(&self, scope: &Scope) -> bool {
        if self.is_idle() {
            return false;
        }
        let p = self.pending.lock();
        match scope {
            Scope::Key(key) => p.by_key.contains_key(key),
            Scope::Namespace(ns) => p.by_key.keys().any(|k| in_namespace(k, ns.as_deref())),
        }
    }

    /// A receiver woken after every delivery while expectations are open.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The informer delivered the object at `key` (`now`: what the cache holds there now).
    fn delivered(&self, key: impl FnOnce() -> String, rv: Option<u64>, now: Option<Cached<'_>>) {
        if let Some(rv) = rv {
            self.delivered.fetch_max(rv, Ordering::AcqRel);
        }
        if self.is_idle() {
            return;
        }
        let watermark = self.delivered.load(Ordering::Acquire);
        {
            let mut p = self.pending.lock();
            let key = key();
            if p.by_key.get(&key).is_some_and(|e| e.met(now, watermark)) {
                p.by_key.remove(&key);
            }
            p.prune_written(watermark);
            self.open.store(p.by_key.len(), Ordering::Release);
        }
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// Whether the cache key `key` lies in `ns` (`None`: every namespace).
fn in_namespace(key: &str, ns: Option<&str>) -> bool {
    match ns {
        None => true,
        Some(ns) => key
            .strip_prefix(ns)
            .is_some_and(|rest| rest.starts_with('/')),
    }
}

/// The informer handler feeding a [`KindState`]. It runs after the informer has applied each
/// change to its cache, so what it reports is already readable.
#[derive(Debug, Clone)]
pub(crate) struct Follower(pub(crate) Arc<KindState>);

impl<K: Resource + Send + Sync + 'static> ResourceEventHandler<K> for Follower {
    fn on_add(&self, obj: &Arc<K>, _is_in_initial_list: bool) {
        let meta = obj.meta();
        let now = Cached::of(meta);
        self.0
            .delivered(|| meta_namespace_key(&**obj), now.rv, Some(now));
    }

    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        self.on_add(new, false);
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        match obj {
            DeletedObject::Object(o) => {
                let rv = parse_rv(o.meta().resource_version.as_deref());
                self.0.delivered(|| meta_namespace_key(&**o), rv, None);
            }
            // A deletion found by a relist: its last known state, not the deletion itself.
            DeletedObject::Tombstone { key, obj } => {
                let rv = parse_rv(obj.meta().resource_version.as_deref());
                self.0.delivered(|| key.clone(), rv, None);
            }
        }
    }
}
