//! DeltaFIFO with client-go's legacy semantics: per-key delta lists, delete dedup, relist tombstones.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use kube_client::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::{Fifo, ProcessFn, QueueClosed, Requeue, SyncTracker, wake};
use crate::key::KeyMaker;
use crate::{DeletedObject, Delta, DeltaType, Indexer, KeyFunc};

/// Options for [`DeltaFifo`].
pub struct DeltaFifoOptions<K> {
    /// The consumer's store, used to find deletions a relist implies and to resync.
    pub known_objects: Option<Indexer<K>>,
    /// Emit `Replaced` (true, what informers use) instead of `Sync` for listed objects.
    pub emit_replaced: bool,
    /// Key function (default `namespace/name`).
    pub key_fn: Option<KeyFunc<K>>,
    /// Honour [`Requeue`] from the process function: the popped deltas are queued again unless
    /// the key got newer deltas meanwhile (client-go ≤ 1.32's `ErrRequeue`; off by default).
    pub requeue_on_error: bool,
}

impl<K> Default for DeltaFifoOptions<K> {
    fn default() -> Self {
        DeltaFifoOptions {
            known_objects: None,
            emit_replaced: false,
            key_fn: None,
            requeue_on_error: false,
        }
    }
}

impl<K> fmt::Debug for DeltaFifoOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaFifoOptions")
            .field("known_objects", &self.known_objects.is_some())
            .field("emit_replaced", &self.emit_replaced)
            .finish()
    }
}

struct State<K> {
    items: crate::store::FastMap<Arc<str>, Vec<Delta<K>>>,
    queue: VecDeque<Arc<str>>,
    sync: SyncTracker,
    closed: bool,
    waiters: usize,
}

/// client-go's DeltaFIFO: a queue of keys, each with the list of deltas that happened to it.
///
/// `pop` runs the process function while holding the queue lock, so a concurrent `replace`
/// always sees the consumer's store and the queue in a consistent state.
pub struct DeltaFifo<K> {
    state: Mutex<State<K>>,
    notify: Notify,
    known: Option<Indexer<K>>,
    emit_replaced: bool,
    requeue_on_error: bool,
    key_maker: KeyMaker<K>,
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("DeltaFifo")
            .field("queued", &st.queue.len())
            .field("closed", &st.closed)
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> DeltaFifo<K> {
    /// A new, empty DeltaFIFO.
    pub fn new(options: DeltaFifoOptions<K>) -> Self {
        DeltaFifo {
            state: Mutex::new(State {
                items: Default::default(),
                queue: VecDeque::new(),
                sync: SyncTracker::default(),
                closed: false,
                waiters: 0,
            }),
            notify: Notify::new(),
            known: options.known_objects,
            emit_replaced: options.emit_replaced,
            requeue_on_error: options.requeue_on_error,
            key_maker: match options.key_fn {
                Some(f) => KeyMaker::Custom(f),
                None => KeyMaker::namespace_name(),
            },
        }
    }
}

impl<K> DeltaFifo<K> {
    fn queue_locked(&self, st: &mut State<K>, kind: DeltaType, obj: DeletedObject<K>) {
        match &obj {
            DeletedObject::Object(o) => {
                let o = o.clone();
                self.key_maker
                    .with_key(&o, |key| Self::push_keyed(st, key, kind, obj));
            }
            DeletedObject::Tombstone { key, .. } => {
                let key = key.clone();
                Self::push_keyed(st, &key, kind, obj);
            }
        }
        wake(&self.notify, st.waiters);
    }

    /// Appends a delta under `key`; the key is allocated only when it is new to the queue.
    fn push_keyed(st: &mut State<K>, key: &str, kind: DeltaType, obj: DeletedObject<K>) {
        let delta = Delta {
            kind,
            object: crate::DeltaObject::Object(obj),
        };
        match st.items.get_mut(key) {
            Some(deltas) => {
                deltas.push(delta);
                dedup_deletes(deltas);
            }
            None => {
                let key: Arc<str> = Arc::from(key);
                // Room for the common add-then-update pair without a reallocation.
                let mut deltas = Vec::with_capacity(2);
                deltas.push(delta);
                st.items.insert(key.clone(), deltas);
                st.queue.push_back(key);
            }
        }
    }

    /// Queues the deltas under `key` unless the key already has queued deltas (retry path).
    pub fn add_if_not_present(&self, key: String, deltas: Vec<Delta<K>>) {
        if deltas.is_empty() {
            return;
        }
        let mut st = self.state.lock();
        st.sync.mark_populated();
        if st.items.contains_key(key.as_str()) {
            return;
        }
        let key: Arc<str> = key.into();
        st.items.insert(key.clone(), deltas);
        st.queue.push_back(key);
        wake(&self.notify, st.waiters);
    }

    /// The newest queued object of every key, in FIFO order.
    pub fn list(&self) -> Vec<Arc<K>> {
        let st = self.state.lock();
        st.queue
            .iter()
            .filter_map(|k| st.items.get(k).and_then(|d| Self::newest_object(d)))
            .collect()
    }

    /// The deltas queued for `obj`'s key.
    pub fn get(&self, obj: &K) -> Option<Vec<Delta<K>>> {
        self.key_maker.with_key(obj, |key| self.get_by_key(key))
    }

    /// The queued keys in FIFO order.
    pub fn list_keys(&self) -> Vec<String> {
        self.state
            .lock()
            .queue
            .iter()
            .map(|k| k.to_string())
            .collect()
    }

    /// The deltas queued for `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Vec<Delta<K>>> {
        self.state.lock().items.get(key).cloned()
    }

    fn newest_object(deltas: &[Delta<K>]) -> Option<Arc<K>> {
        deltas
            .last()
            .and_then(|d| d.as_object())
            .map(|o| o.object().clone())
    }
}

/// If the last two deltas are both deletions keep one: the older, unless it is a tombstone.
fn dedup_deletes<K>(deltas: &mut Vec<Delta<K>>) {
    let n = deltas.len();
    if n < 2 {
        return;
    }
    if deltas[n - 1].kind != DeltaType::Deleted || deltas[n - 2].kind != DeltaType::Deleted {
        return;
    }
    if deltas[n - 2].is_tombstone() {
        deltas.remove(n - 2);
    } else {
        deltas.pop();
    }
}

#[async_trait]
impl<K: Send + Sync + 'static> Fifo<K> for DeltaFifo<K> {
    fn add(&self, obj: Arc<K>) {
        let mut st = self.state.lock();
        st.sync.mark_populated();
        self.queue_locked(&mut st, DeltaType::Added, DeletedObject::Object(obj));
    }

    fn update(&self, obj: Arc<K>) {
        let mut st = self.state.lock();
        st.sync.mark_populated();
        self.queue_locked(&mut st, DeltaType::Updated, DeletedObject::Object(obj));
    }

    fn delete(&self, obj: Arc<K>) {
        let mut st = self.state.lock();
        st.sync.mark_populated();
        let wanted = self.key_maker.with_key(&obj, |key| {
            st.items.contains_key(key)
                || self
                    .known
                    .as_ref()
                    .is_some_and(|known| known.contains_key(key))
        });
        if !wanted {
            return;
        }
        self.queue_locked(&mut st, DeltaType::Deleted, DeletedObject::Object(obj));
    }

    fn replace(&self, objects: Vec<Arc<K>>, _resource_version: String) {
        let kind = if self.emit_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        };
        let mut st = self.state.lock();
        let mut keys = HashSet::with_capacity(objects.len());
        for obj in objects {
            keys.insert(self.key_maker.key(&obj));
            self.queue_locked(&mut st, kind, DeletedObject::Object(obj));
        }
        let mut queued_deletions = 0;
        let stale: Vec<(String, Arc<K>)> = st
            .items
            .iter()
            .filter(|(k, _)| !keys.contains(k.as_ref()))
            .filter_map(|(k, d)| Self::newest_object(d).map(|o| (k.to_string(), o)))
            .collect();
        for (key, obj) in stale {
            queued_deletions += 1;
            self.queue_locked(
                &mut st,
                DeltaType::Deleted,
                DeletedObject::Tombstone { key, obj },
            );
        }
        if let Some(known) = &self.known {
            for key in known.list_keys() {
                if keys.contains(&key) || st.items.contains_key(key.as_str()) {
                    continue;
                }
                let Some(obj) = known.get_by_key(&key) else {
                    continue;
                };
                queued_deletions += 1;
                self.queue_locked(
                    &mut st,
                    DeltaType::Deleted,
                    DeletedObject::Tombstone { key, obj },
                );
            }
        }
        st.sync.first_replace(keys.len() + queued_deletions);
    }

    fn resync(&self) {
        let Some(known) = &self.known else {
            return;
        };
        let mut st = self.state.lock();
        for key in known.list_keys() {
            if st.items.contains_key(key.as_str()) {
                continue;
            }
            if let Some(obj) = known.get_by_key(&key) {
                self.queue_locked(&mut st, DeltaType::Sync, DeletedObject::Object(obj));
            }
        }
    }

    fn has_synced(&self) -> bool {
        self.state.lock().sync.has_synced()
    }

    async fn wait_synced(&self) {
        let signal = self.state.lock().sync.signal();
        signal.wait().await;
    }

    fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    async fn pop(&self, process: &mut ProcessFn<'_, K>) -> Result<(), QueueClosed> {
        loop {
            let notified = self.notify.notified();
            {
                let mut st = self.state.lock();
                while let Some(key) = st.queue.pop_front() {
                    let Some(deltas) = st.items.remove(&key) else {
                        continue;
                    };
                    let initial = !st.sync.has_synced();
                    if initial {
                        st.sync.popped(1);
                    }
                    let retry = self.requeue_on_error.then(|| deltas.clone());
                    let result = process(deltas, initial);
                    if initial {
                        st.sync.publish();
                    }
                    if let (Err(Requeue), Some(retry)) = (result, retry)
                        && !st.items.contains_key(&key)
                    {
                        st.items.insert(key.clone(), retry);
                        st.queue.push_back(key);
                    }
                    return Ok(());
                }
                if st.closed {
                    return Err(QueueClosed);
                }
                st.waiters += 1;
            }
            notified.await;
            self.state.lock().waiters -= 1;
        }
    }
}
