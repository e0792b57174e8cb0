//! RealFIFO in atomic mode (client-go's informer queue since 1.33): every event in order, no merging.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;

use async_trait::async_trait;
use kube_client::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::{Fifo, ProcessFn, QueueClosed, SyncTracker, wake};
use crate::key::KeyMaker;
use crate::room::Room;
use crate::{DeletedObject, Delta, DeltaObject, DeltaType, KeyFunc};

/// Options for [`RealFifo`].
#[derive(Debug, Clone)]
pub struct RealFifoOptions {
    /// Most consecutive add/update/delete deltas handed to one process call (default 1000).
    pub batch_size: usize,
    /// Queued entries at which [`Fifo::wait_for_room`] starts to wait (default 1024; 0 means
    /// never). The reflector waits for room before it reads the next watch event, so a watch
    /// backlog stays on the socket as bytes instead of piling up here as decoded objects. A
    /// replace is one entry whatever its size, and only the reflector waits: adds, updates
    /// and deletes are never refused.
    pub capacity: usize,
}

impl Default for RealFifoOptions {
    fn default() -> Self {
        RealFifoOptions {
            batch_size: 1000,
            capacity: DEFAULT_REAL_FIFO_CAPACITY,
        }
    }
}

/// [`RealFifoOptions::capacity`]'s default.
pub const DEFAULT_REAL_FIFO_CAPACITY: usize = 1024;

struct State<K> {
    items: VecDeque<Delta<K>>,
    sync: SyncTracker,
    closed: bool,
    waiters: usize,
}

/// client-go's RealFIFO in atomic mode: a flat, ordered list of deltas.
///
/// A replace is one `ReplacedAll` delta carrying the whole list, a resync one `SyncAll` delta,
/// so both are applied atomically by the consumer. Consecutive add/update/delete deltas are
/// popped in batches; a batch holds each key at most once (client-go's `PopBatch` closes a
/// batch at a key it already holds), so two updates of one object reach the consumer in two
/// batches. The lock is released while processing, so producers never wait for handlers;
/// there must be a single consumer.
pub struct RealFifo<K> {
    state: Mutex<State<K>>,
    notify: Notify,
    /// The queued count against the capacity, for [`Fifo::wait_for_room`].
    room: Room,
    batch_size: usize,
    key_maker: KeyMaker<K>,
    /// Hashes keys for a batch's uniqueness check; a collision only closes a batch early.
    hasher: std::collections::hash_map::RandomState,
}

impl<K> fmt::Debug for RealFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("RealFifo")
            .field("queued", &st.items.len())
            .field("closed", &st.closed)
            .finish()
    }
}

impl<K: Resource> Default for RealFifo<K> {
    fn default() -> Self {
        Self::new(RealFifoOptions::default())
    }
}

impl<K: Resource> RealFifo<K> {
    /// A new, empty RealFIFO keying objects by `namespace/name`.
    pub fn new(options: RealFifoOptions) -> Self {
        Self::with_key_maker(options, KeyMaker::namespace_name())
    }
}

impl<K> RealFifo<K> {
    /// A new, empty RealFIFO keying objects with `key_fn` (client-go's `KeyFunction`), which
    /// decides which deltas may share a batch.
    pub fn with_key_fn(options: RealFifoOptions, key_fn: KeyFunc<K>) -> Self {
        Self::with_key_maker(options, KeyMaker::Custom(key_fn))
    }

    fn with_key_maker(options: RealFifoOptions, key_maker: KeyMaker<K>) -> Self {
        RealFifo {
            state: Mutex::new(State {
                items: VecDeque::new(),
                sync: SyncTracker::default(),
                closed: false,
                waiters: 0,
            }),
            notify: Notify::new(),
            room: Room::new(options.capacity),
            batch_size: options.batch_size.max(1),
            key_maker,
            hasher: Default::default(),
        }
    }

    /// The hash of the key of the object `delta` carries (`None` for list-wide deltas).
    fn key_hash(&self, delta: &Delta<K>) -> Option<u64> {
        let hash = |key: &str| self.hasher.hash_one(key);
        match delta.as_object()? {
            DeletedObject::Object(obj) => Some(self.key_maker.with_key(obj, hash)),
            DeletedObject::Tombstone { key, .. } => Some(hash(key)),
        }
    }

    fn push(&self, delta: Delta<K>, populates: bool) {
        let mut st = self.state.lock();
        if populates {
            st.sync.mark_populated();
        }
        st.items.push_back(delta);
        self.room.set(st.items.len());
        wake(&self.notify, st.waiters);
    }
}

fn batchable(kind: DeltaType) -> bool {
    matches!(
        kind,
        DeltaType::Added | DeltaType::Updated | DeltaType::Deleted
    )
}

#[async_trait]
impl<K: Send + Sync + 'static> Fifo<K> for RealFifo<K> {
    fn add(&self, obj: Arc<K>) {
        self.push(Delta::object(DeltaType::Added, obj), true);
    }

    fn update(&self, obj: Arc<K>) {
        self.push(Delta::object(DeltaType::Updated, obj), true);
    }

    fn delete(&self, obj: Arc<K>) {
        self.push(Delta::object(DeltaType::Deleted, obj), true);
    }

    fn replace(&self, objects: Vec<Arc<K>>, resource_version: String) {
        let mut st = self.state.lock();
        st.items.push_back(Delta {
            kind: DeltaType::ReplacedAll,
            object: DeltaObject::List {
                objects,
                resource_version,
            },
        });
        let queued = st.items.len();
        self.room.set(queued);
        st.sync.first_replace(queued);
        wake(&self.notify, st.waiters);
    }

    fn resync(&self) {
        self.push(
            Delta {
                kind: DeltaType::SyncAll,
                object: DeltaObject::None,
            },
            false,
        );
    }

    fn bookmark(&self, resource_version: String) {
        self.push(
            Delta {
                kind: DeltaType::Bookmark,
                object: DeltaObject::ResourceVersion(resource_version),
            },
            false,
        );
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
        self.room.close();
    }

    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    fn len(&self) -> usize {
        self.state.lock().items.len()
    }

    async fn wait_for_room(&self) {
        self.room.wait().await;
    }

    async fn pop(&self, process: &mut ProcessFn<'_, K>) -> Result<(), QueueClosed> {
        loop {
            let notified = self.notify.notified();
            let popped = {
                let mut st = self.state.lock();
                if let Some(first) = st.items.pop_front() {
                    let initial = !st.sync.has_synced();
                    let mut limit = self.batch_size;
                    if initial && st.sync.in_initial() > 0 {
                        limit = limit.min(st.sync.in_initial());
                    }
                    let mut batch = Vec::with_capacity(1);
                    let more = batchable(first.kind) && limit > 1;
                    // The keys in this batch: it closes at a key it already holds.
                    let mut keys = HashSet::new();
                    if more {
                        keys.extend(self.key_hash(&first));
                    }
                    batch.push(first);
                    while more && batch.len() < limit {
                        let Some(next) = st.items.front().filter(|d| batchable(d.kind)) else {
                            break;
                        };
                        if self.key_hash(next).is_some_and(|key| !keys.insert(key)) {
                            break;
                        }
                        if let Some(d) = st.items.pop_front() {
                            batch.push(d);
                        }
                    }
                    self.room.set(st.items.len());
                    Some((batch, initial))
                } else if st.closed {
                    return Err(QueueClosed);
                } else {
                    st.waiters += 1;
                    None
                }
            };
            match popped {
                Some((batch, initial)) => {
                    let n = batch.len();
                    // A requeue request is ignored: RealFIFO delivers every event exactly once.
                    let _ = process(batch, initial);
                    if initial {
                        let mut st = self.state.lock();
                        st.sync.popped(n);
                        st.sync.publish();
                    }
                    return Ok(());
                }
                None => {
                    notified.await;
                    self.state.lock().waiters -= 1;
                }
            }
        }
    }
}
