//! The object store: JSON objects keyed by resource and (namespace, name), one global
//! monotonically increasing resourceVersion, and a bounded history of change events that
//! watches resume from. Objects are kept serialised ([`Stored`]): the store, the history and
//! every response share one allocation per object version.

mod object;
mod snapshot;
mod watch;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};
use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use crate::resources::ResKey;

pub(crate) use object::{Stored, Summary};
pub(crate) use snapshot::object_key;
pub(crate) use watch::{Subscription, WatchStart};

/// An object's place within its resource: namespace (empty when cluster-scoped) and name.
pub(crate) type ObjKey = (String, String);

/// The kind of change an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// The watch event `type` string.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change to one object.
#[derive(Debug)]
pub(crate) struct Event {
    /// The resourceVersion the change produced.
    pub(crate) rv: u64,
    /// What happened.
    pub(crate) kind: EventType,
    /// Which resource.
    pub(crate) res: ResKey,
    /// The object after the change (for `Deleted`, its last state with the deletion's rv):
    /// the store's own copy, not another one.
    pub(crate) object: Arc<Stored>,
    /// The object before the change (`Modified` and `Deleted`).
    pub(crate) old: Option<Arc<Stored>>,
}

impl Event {
    /// A new event.
    pub(crate) fn new(
        rv: u64,
        kind: EventType,
        res: ResKey,
        object: Arc<Stored>,
        old: Option<Arc<Stored>>,
    ) -> Event {
        Event {
            rv,
            kind,
            res,
            object,
            old,
        }
    }

    /// Appends the watch line reporting this event as `kind` with the stored JSON
    /// (`{"type":…,"object":…}` and a newline). Nothing is cached per event: the line is a
    /// copy of bytes every watcher makes into its own buffer anyway.
    pub(crate) fn write_line(&self, kind: EventType, out: &mut Vec<u8>) {
        let object = self.object.json();
        out.reserve(object.len() + 32);
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(kind.as_str().as_bytes());
        out.extend_from_slice(b"\",\"object\":");
        out.extend_from_slice(object);
        out.extend_from_slice(b"}\n");
    }
}

/// Work for the garbage collector, queued by the write that made it necessary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GcWork {
    /// The object with this uid is gone: collect dependents that have no owner left.
    Dependents(String),
    /// The owner with this uid is in foreground deletion: delete its dependents, and release
    /// it once no dependent blocks it.
    Foreground(String),
    /// The owner with this uid is being deleted with the `orphan` finalizer: drop the
    /// references to it, then release it.
    Orphan(String),
    /// This namespace is terminating: delete its contents, then the namespace.
    Namespace(String),
    /// The CRD with this name is being deleted: delete its instances, then release it.
    CrdCleanup(String),
}

/// Code that runs inside the transaction of every write, right after it: the controllers a
/// real cluster runs that must see each write (quota usage, a namespace's default objects).
pub(crate) trait WriteHook: Send + Sync + std::fmt::Debug {
    /// An object of `res` went from `old` to `new` (`None`: absent).
    fn written(&self, txn: &mut Txn<'_>, res: &ResKey, old: Option<&Value>, new: Option<&Value>);
}

/// The shared store.
#[derive(Debug)]
pub(crate) struct Store {
    inner: Mutex<Inner>,
    /// Runs after every write ([`Store::set_write_hook`]).
    hook: OnceLock<Box<dyn WriteHook>>,
    current_rv: AtomicU64,
    gc_wake: Notify,
    /// Woken by every write, for requests waiting for a resourceVersion.
    rv_changed: Notify,
    /// How many requests are waiting for a resourceVersion right now.
    rv_waiters: AtomicUsize,
}

impl Store {
    /// An empty store keeping up to `history` events for watch resumption.
    pub(crate) fn new(history: usize) -> Store {
        Store {
            inner: Mutex::new(Inner {
                rv: 0,
                buckets: HashMap::new(),
                history: VecDeque::new(),
                history_cap: history.max(1),
                compacted: 0,
                watchers: HashMap::new(),
                uids: HashMap::new(),
                dependents: HashMap::new(),
                gc_queue: VecDeque::new(),
            }),
            hook: OnceLock::new(),
            current_rv: AtomicU64::new(0),
            gc_wake: Notify::new(),
            rv_changed: Notify::new(),
            rv_waiters: AtomicUsize::new(0),
        }
    }

    /// Sets the hook every write runs (once; later calls are ignored).
    pub(crate) fn set_write_hook(&self, hook: Box<dyn WriteHook>) {
        let _ = self.hook.set(hook);
    }

    /// Locks the store for a read-modify-write.
    pub(crate) fn lock(&self) -> Txn<'_> {
        Txn {
            inner: self.inner.lock(),
            hook: self.hook.get().map(|h| &**h),
            current_rv: &self.current_rv,
            gc_wake: &self.gc_wake,
            rv_changed: &self.rv_changed,
        }
    }

    /// Waits until garbage-collection work may have been queued.
    pub(crate) async fn gc_queued(&self) {
        self.gc_wake.notified().await;
    }

    /// The latest resourceVersion, readable without the lock.
    pub(crate) fn current_rv(&self) -> u64 {
        self.current_rv.load(Ordering::Acquire)
    }

    /// Waits until the store has reached `rv`, for at most `limit`, as kube-apiserver's watch
    /// cache waits for a resourceVersion it has not seen yet. Woken by the store's writes, not
    /// by polling. Answers whether `rv` was reached.
    pub(crate) async fn wait_for_rv(&self, rv: u64, limit: Duration) -> bool {
        if self.current_rv() >= rv {
            return true;
        }
        self.rv_waiters.fetch_add(1, Ordering::AcqRel);
        let _waiting = WaiterGuard(&self.rv_waiters);
        // A deadline too far away to represent is no deadline.
        let deadline = tokio::time::Instant::now().checked_add(limit);
        loop {
            // Created before the check: a write after the check wakes it (`notify_waiters`
            // reaches every `Notified` that exists when it is called, polled or not).
            let changed = self.rv_changed.notified();
            if self.current_rv() >= rv {
                return true;
            }
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, changed).await.is_err() {
                        return self.current_rv() >= rv;
                    }
                }
                None => changed.await,
            }
        }
    }

    /// Waits until the store is past `rv` (the next write after it), for at most `limit`;
    /// for background work that reacts to writes (not counted as a request waiting).
    pub(crate) async fn written_after(&self, rv: u64, limit: Duration) {
        let changed = self.rv_changed.notified();
        if self.current_rv() > rv {
            return;
        }
        let _ = tokio::time::timeout(limit, changed).await;
    }

    /// How many requests are waiting in [`Store::wait_for_rv`] right now.
    pub(crate) fn rv_waiters(&self) -> usize {
        self.rv_waiters.load(Ordering::Acquire)
    }
}

/// Counts one waiter for as long as it lives (also when its request is dropped mid-wait).
struct WaiterGuard<'a>(&'a AtomicUsize);

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Debug)]
struct Inner {
    rv: u64,
    buckets: HashMap<ResKey, BTreeMap<ObjKey, Arc<Stored>>>,
    history: VecDeque<Arc<Event>>,
    history_cap: usize,
    /// Events with an rv at or below this are gone from the history.
    compacted: u64,
    /// Each watch's channel holds at most the history's worth of events: a watcher that far
    /// behind (a client that stopped reading) is dropped, as kube-apiserver's watch cache
    /// ends an unresponsive watcher; its client watches again from its last version.
    watchers: HashMap<ResKey, Vec<mpsc::Sender<Arc<Event>>>>,
    /// Where each object lives, by uid.
    uids: HashMap<String, (ResKey, ObjKey)>,
    /// Objects naming each owner uid in their ownerReferences.
    dependents: HashMap<String, BTreeSet<(ResKey, ObjKey)>>,
    /// Garbage-collection work, oldest first, without duplicates.
    gc_queue: VecDeque<GcWork>,
}

impl Inner {
    fn index(&mut self, res: &ResKey, key: &ObjKey, old: Option<&Summary>, new: Option<&Summary>) {
        let place = (res.clone(), key.clone());
        if let Some(old) = old {
            if new.is_none()
                && let Some(uid) = old.uid()
            {
                self.uids.remove(uid);
            }
            for owner in old.owner_uids() {
                if let Some(set) = self.dependents.get_mut(owner) {
                    set.remove(&place);
                    if set.is_empty() {
                        self.dependents.remove(owner);
                    }
                }
            }
        }
        if let Some(new) = new {
            if let Some(uid) = new.uid() {
                self.uids.insert(uid.to_string(), place.clone());
            }
            for owner in new.owner_uids() {
                self.dependents
                    .entry(owner.to_string())
                    .or_default()
                    .insert(place.clone());
            }
        }
    }
}

/// `metadata.uid`.
pub(crate) fn uid_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/uid").and_then(Value::as_str)
}

/// The uids in `metadata.ownerReferences`.
pub(crate) fn owner_uids(obj: &Value) -> Vec<&str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

/// A locked view of the store; every write records an event and wakes watchers.
#[derive(Debug)]
pub(crate) struct Txn<'a> {
    inner: MutexGuard<'a, Inner>,
    hook: Option<&'a dyn WriteHook>,
    current_rv: &'a AtomicU64,
    gc_wake: &'a Notify,
    rv_changed: &'a Notify,
}

impl Txn<'_> {
    /// The latest resourceVersion.
    pub(crate) fn rv(&self) -> u64 {
        self.inner.rv
    }

    /// The object at `key` in `res`, decoded (the caller's own copy).
    pub(crate) fn get(&self, res: &ResKey, key: &ObjKey) -> Option<Arc<Value>> {
        self.get_stored(res, key).map(|s| s.value())
    }

    /// The object at `key` in `res` as stored (serialised).
    pub(crate) fn get_stored(&self, res: &ResKey, key: &ObjKey) -> Option<Arc<Stored>> {
        self.inner.buckets.get(res)?.get(key).cloned()
    }

    /// Whether `res` has an object at `key`.
    pub(crate) fn contains(&self, res: &ResKey, key: &ObjKey) -> bool {
        self.inner
            .buckets
            .get(res)
            .is_some_and(|bucket| bucket.contains_key(key))
    }

    /// Every object of `res` (in `namespace` when given), ordered by namespace then name,
    /// decoded (for the operations that change them; serving reads [`Txn::list_stored`]).
    pub(crate) fn list(&self, res: &ResKey, namespace: Option<&str>) -> Vec<Arc<Value>> {
        self.list_stored(res, namespace)
            .iter()
            .map(|s| s.value())
            .collect()
    }

    /// Every object of `res` (in `namespace` when given) as stored, ordered by namespace
    /// then name.
    pub(crate) fn list_stored(&self, res: &ResKey, namespace: Option<&str>) -> Vec<Arc<Stored>> {
        let Some(bucket) = self.inner.buckets.get(res) else {
            return Vec::new();
        };
        match namespace {
            None => bucket.values().cloned().collect(),
            Some(ns) => {
                let start = (ns.to_string(), String::new());
                bucket
                    .range(start..)
                    .take_while(|((n, _), _)| n == ns)
                    .map(|(_, v)| v.clone())
                    .collect()
            }
        }
    }

    /// Where the object with `uid` lives.
    pub(crate) fn locate(&self, uid: &str) -> Option<(ResKey, ObjKey)> {
        self.inner.uids.get(uid).cloned()
    }

    /// The objects whose ownerReferences name `owner_uid`.
    pub(crate) fn dependents_of(&self, owner_uid: &str) -> Vec<(ResKey, ObjKey)> {
        self.inner
            .dependents
            .get(owner_uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether any object of any resource lives in `namespace`.
    pub(crate) fn namespace_is_empty(&self, namespace: &str) -> bool {
        self.inner.buckets.values().all(|bucket| {
            let start = (namespace.to_string(), String::new());
            bucket
                .range(start..)
                .next()
                .is_none_or(|((n, _), _)| n != namespace)
        })
    }

    /// Stores a new object; sets its resourceVersion and returns the stored copy.
    pub(crate) fn insert(&mut self, res: &ResKey, key: ObjKey, obj: Value) -> Arc<Value> {
        self.insert_stored(res, key, obj).0
    }

    /// [`Txn::insert`], answering the stored copy both decoded and as stored.
    pub(crate) fn insert_stored(
        &mut self,
        res: &ResKey,
        key: ObjKey,
        mut obj: Value,
    ) -> (Arc<Value>, Arc<Stored>) {
        let rv = self.next_rv();
        set_rv(&mut obj, rv);
        let stored = Arc::new(Stored::new(res, &obj));
        self.inner.index(res, &key, None, Some(stored.summary()));
        self.inner
            .buckets
            .entry(res.clone())
            .or_default()
            .insert(key, stored.clone());
        self.record(rv, EventType::Added, res, stored.clone(), None);
        self.queue_dangling_owners(&obj);
        self.after_write(res, None, Some(&obj));
        (Arc::new(obj), stored)
    }

    /// Replaces an existing object; sets its resourceVersion and returns the stored copy.
    pub(crate) fn replace(&mut self, res: &ResKey, key: ObjKey, obj: Value) -> Arc<Value> {
        self.replace_stored(res, key, obj).0
    }

    /// [`Txn::replace`], answering the stored copy both decoded and as stored.
    pub(crate) fn replace_stored(
        &mut self,
        res: &ResKey,
        key: ObjKey,
        mut obj: Value,
    ) -> (Arc<Value>, Arc<Stored>) {
        let rv = self.next_rv();
        set_rv(&mut obj, rv);
        let stored = Arc::new(Stored::new(res, &obj));
        let old = self
            .inner
            .buckets
            .entry(res.clone())
            .or_default()
            .insert(key.clone(), stored.clone());
        self.inner.index(
            res,
            &key,
            old.as_deref().map(Stored::summary),
            Some(stored.summary()),
        );
        let old_value = self.hook.and(old.as_deref()).map(Stored::decode);
        self.record(rv, EventType::Modified, res, stored.clone(), old);
        self.queue_dangling_owners(&obj);
        self.after_write(res, old_value.as_ref(), Some(&obj));
        (Arc::new(obj), stored)
    }

    /// Runs the store's [`WriteHook`], if any.
    fn after_write(&mut self, res: &ResKey, old: Option<&Value>, new: Option<&Value>) {
        if let Some(hook) = self.hook {
            hook.written(self, res, old, new);
        }
    }

    /// Queues collection for each owner `obj` refers to that exists nowhere, as
    /// kube-controller-manager's garbage collector does for a dependent whose owner is absent
    /// (created or updated after the owner went, e.g. by a controller reading a stale cache):
    /// without a live owner it is deleted, otherwise it loses the dangling reference.
    fn queue_dangling_owners(&mut self, obj: &Value) {
        for owner in owner_uids(obj) {
            if !self.inner.uids.contains_key(owner) {
                self.enqueue_gc(GcWork::Dependents(owner.to_string()));
            }
        }
    }

    /// Removes an object; returns its last state (carrying the deletion's resourceVersion).
    pub(crate) fn remove(&mut self, res: &ResKey, key: &ObjKey) -> Option<Arc<Value>> {
        let old = self.inner.buckets.get_mut(res)?.remove(key)?;
        self.inner.index(res, key, Some(old.summary()), None);
        let rv = self.next_rv();
        let mut last = old.decode();
        set_rv(&mut last, rv);
        let stored = Arc::new(Stored::new(res, &last));
        let old_value = self.hook.map(|_| old.decode());
        self.record(rv, EventType::Deleted, res, stored, Some(old));
        self.after_write(res, old_value.as_ref(), None);
        Some(Arc::new(last))
    }

    /// Removes every object of `res` without events (the resource itself went away).
    pub(crate) fn drop_resource(&mut self, res: &ResKey) {
        if let Some(bucket) = self.inner.buckets.remove(res) {
            for (key, obj) in bucket {
                self.inner.index(res, &key, Some(obj.summary()), None);
            }
        }
        self.inner.watchers.remove(res);
    }

    /// Queues garbage-collection work (once) and wakes the collector.
    pub(crate) fn enqueue_gc(&mut self, work: GcWork) {
        if !self.inner.gc_queue.contains(&work) {
            self.inner.gc_queue.push_back(work);
        }
        self.gc_wake.notify_one();
    }

    /// The oldest queued garbage-collection work.
    pub(crate) fn next_gc(&mut self) -> Option<GcWork> {
        self.inner.gc_queue.pop_front()
    }

    /// Forgets the watch history: older resourceVersions get 410 Expired.
    pub(crate) fn compact(&mut self) {
        self.inner.history.clear();
        self.inner.compacted = self.inner.rv;
    }

    /// Ends every open watch.
    pub(crate) fn close_watches(&mut self) {
        self.inner.watchers.clear();
    }

    fn next_rv(&mut self) -> u64 {
        self.inner.rv += 1;
        self.inner.rv
    }

    fn record(
        &mut self,
        rv: u64,
        kind: EventType,
        res: &ResKey,
        object: Arc<Stored>,
        old: Option<Arc<Stored>>,
    ) {
        let event = Arc::new(Event::new(rv, kind, res.clone(), object, old));
        let inner = &mut *self.inner;
        if let Some(watchers) = inner.watchers.get_mut(res) {
            watchers.retain(|tx| tx.try_send(event.clone()).is_ok());
        }
        inner.history.push_back(event);
        while inner.history.len() > inner.history_cap {
            if let Some(gone) = inner.history.pop_front() {
                inner.compacted = gone.rv;
            }
        }
        self.current_rv.store(rv, Ordering::Release);
        self.rv_changed.notify_waiters();
    }
}

/// Writes `metadata.resourceVersion`.
pub(crate) fn set_rv(obj: &mut Value, rv: u64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".to_string(), Value::String(rv.to_string()));
    }
}

#[cfg(test)]
mod tests;
