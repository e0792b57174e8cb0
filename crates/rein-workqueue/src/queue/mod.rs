//! The plain work queue: FIFO, de-duplicating, never handing one item to two workers at once
//! (client-go's `workqueue.Typed`).
//!
//! State (one mutex): the FIFO of items ready to hand out, and one map entry per item that is
//! dirty (needs processing) and/or processing (handed out, not yet done). An item is in the FIFO
//! at most once, and only while it is dirty and not processing. Getters with nothing to take
//! park; an add that queues an item wakes one parked getter, if any (see `crate::getters`).

mod config;
#[cfg(test)]
mod tests;

use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio::time::Instant;

pub use config::QueueConfig;

use crate::Item;
use crate::getters::{BACKLOG, Getters, Parked, Taken};
use crate::key::{Hashed, ItemHasher, Key, PassThrough};
use crate::metrics::recorder::{ItemTimes, Recorder, UnfinishedWork, spawn_unfinished_work_loop};
use crate::sync::{CachePadded, Closed, lock};

/// A work queue (client-go's `workqueue.TypedInterface`).
///
/// * fair: items are handed out in the order they were added;
/// * stingy: an item added several times before it is handed out is handed out once, and an
///   item is never handed to two workers at once: added again while being processed, it is
///   handed out once more after [`done`](Self::done);
/// * many producers and consumers; cheap to clone (clones share the queue);
/// * [`get`](Self::get) returns `None` once the queue is shut down and empty.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use rein_workqueue::Queue;
///
/// let queue = Queue::new();
/// queue.add("a");
/// queue.add("b");
/// queue.add("a"); // already waiting: no second copy
/// assert_eq!(queue.len(), 2);
///
/// let item = queue.get().await.unwrap();
/// assert_eq!(item, "a");
/// queue.add("a"); // being processed: handed out again only after `done`
/// queue.done(&item);
/// assert_eq!(queue.get().await, Some("b"));
/// assert_eq!(queue.get().await, Some("a"));
///
/// queue.shut_down();
/// assert_eq!(queue.get().await, None);
/// # }
/// ```
pub struct Queue<T> {
    shared: Arc<Shared<T>>,
}

pub(crate) struct Shared<T> {
    /// On cache lines of its own: every operation writes them, while the fields below are
    /// read by every add (the hasher, the metrics) or written apart (wake-ups).
    state: CachePadded<Mutex<State<T>>>,
    /// Wakes getters waiting for an item (or for shut-down).
    getters: Getters,
    /// Wakes `shut_down_with_drain` when the last item in flight is done.
    drained: Notify,
    /// Closed on shut-down (and drop): stops the background tasks.
    closed: Arc<Closed>,
    metrics: Option<Recorder>,
    name: String,
    /// Hashes items before the lock is taken.
    hasher: ItemHasher,
}

struct State<T> {
    /// Items ready to hand out, in order.
    queue: VecDeque<Hashed<T>>,
    /// Every item that is dirty and/or processing.
    items: HashMap<Hashed<T>, Entry, PassThrough>,
    /// How many entries are processing.
    processing: usize,
    /// Getters waiting for an item and not yet woken.
    parked: Parked,
    shutting_down: bool,
    drain: bool,
}

#[derive(Debug, Default)]
struct Entry {
    /// Needs processing (queued, or re-added while processing).
    dirty: bool,
    /// Handed out and not yet done.
    processing: bool,
    /// Only with metrics (boxed: without, an entry and its key take 48 bytes, not 72, which
    /// counts on a table of a million items).
    times: Option<Box<ItemTimes>>,
}

impl Entry {
    /// The metrics times, created on first use.
    fn times(&mut self) -> &mut ItemTimes {
        self.times.get_or_insert_with(Box::default)
    }
}

impl<T: Item> Queue<T> {
    /// An unnamed queue (no metrics).
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A queue with a metrics name and provider. A named queue with metrics spawns one task
    /// refreshing the unfinished-work gauges; it ends when the queue shuts down.
    pub fn with_config(config: QueueConfig) -> Self {
        let metrics = Recorder::new(&config.name, config.metrics_provider.as_ref(), false);
        let has_metrics = metrics.is_some();
        let shared = Arc::new(Shared {
            state: CachePadded(Mutex::new(State {
                queue: VecDeque::new(),
                items: HashMap::default(),
                processing: 0,
                parked: Parked::default(),
                shutting_down: false,
                drain: false,
            })),
            getters: Getters::default(),
            drained: Notify::new(),
            closed: Arc::new(Closed::default()),
            metrics,
            name: config.name,
            hasher: ItemHasher::default(),
        });
        if has_metrics {
            spawn_unfinished_work_loop(Arc::downgrade(&shared), shared.closed.clone());
        }
        Self { shared }
    }

    /// Marks `item` as needing processing. Ignored after shut-down; a no-op if the item is
    /// already waiting; if it is being processed it is handed out again after `done`.
    pub fn add(&self, item: T) {
        let shared = &*self.shared;
        let key = Hashed {
            hash: shared.hasher.hash_one(&item),
            item,
        };
        // A de-duplicated `key` is dropped after the lock is released (it may own memory).
        let wake = {
            let mut state = lock(&shared.state);
            if state.shutting_down {
                return;
            }
            let state = &mut *state;
            if let Some(entry) = state.items.get_mut(&key) {
                if !entry.dirty {
                    // Processing: `done` will queue it again.
                    entry.dirty = true;
                    if let Some(metrics) = &shared.metrics {
                        metrics.added(entry.times(), Instant::now(), 0);
                    }
                }
                return;
            }
            state.queue.push_back(key.clone());
            let entry = state.items.entry(key).or_insert(Entry {
                dirty: true,
                ..Entry::default()
            });
            if let Some(metrics) = &shared.metrics {
                metrics.added(entry.times(), Instant::now(), 0);
            }
            state.parked.signal(1)
        };
        shared.getters.wake(wake);
    }

    /// Adds every item of `items` under one lock (the delaying queue's release path).
    pub(crate) fn add_batch(&self, items: &mut Vec<Hashed<T>>) {
        let shared = &*self.shared;
        let mut queued = 0;
        let wake = {
            let mut state = lock(&shared.state);
            if state.shutting_down {
                items.clear();
                return;
            }
            let state = &mut *state;
            let now = shared.metrics.as_ref().map(|_| Instant::now());
            for key in items.drain(..) {
                match state.items.entry(key) {
                    MapEntry::Occupied(mut occupied) => {
                        let entry = occupied.get_mut();
                        if !entry.dirty {
                            entry.dirty = true;
                            if let (Some(metrics), Some(now)) = (&shared.metrics, now) {
                                metrics.added(entry.times(), now, 0);
                            }
                        }
                    }
                    MapEntry::Vacant(vacant) => {
                        state.queue.push_back(vacant.key().clone());
                        let entry = vacant.insert(Entry {
                            dirty: true,
                            ..Entry::default()
                        });
                        if let (Some(metrics), Some(now)) = (&shared.metrics, now) {
                            metrics.added(entry.times(), now, 0);
                        }
                        queued += 1;
                    }
                }
            }
            state.parked.signal(queued)
        };
        shared.getters.wake(wake);
    }

    /// Hashes `item` with this queue's hasher.
    pub(crate) fn hashed(&self, item: T) -> Hashed<T> {
        Hashed {
            hash: self.shared.hasher.hash_one(&item),
            item,
        }
    }

    /// How many items are waiting to be handed out (items re-added while being processed are
    /// not counted until they are done).
    pub fn len(&self) -> usize {
        lock(&self.shared.state).queue.len()
    }

    /// Whether no item is waiting to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for the next item and marks it as processing; the caller must call
    /// [`done`](Self::done) with it when finished. After shut-down, items still queued are
    /// handed out; `None` once the queue is shut down and empty.
    ///
    /// A call that leaves fewer than 1,024 items queued ends the worker's turn: its next `get`
    /// yields first, so the tasks on its own thread run, the producers among them, whose
    /// repeated adds of a key then collapse while it waits. A worker working through a longer
    /// backlog does not yield until it is shorter.
    pub async fn get(&self) -> Option<T> {
        self.shared.getters.get(|park| self.try_get(park)).await
    }

    /// The next item if one is waiting (`Some(Some(item))`), `Some(None)` if shut down and
    /// empty, `None` if the caller must wait (counted as parked if `park`).
    fn try_get(&self, park: bool) -> Option<Taken<Option<T>>> {
        let shared = &*self.shared;
        let mut state = lock(&shared.state);
        let state = &mut *state;
        match state.queue.pop_front() {
            Some(item) => {
                if let Some(entry) = state.items.get_mut(&item) {
                    entry.dirty = false;
                    entry.processing = true;
                    if let Some(metrics) = &shared.metrics {
                        metrics.got(entry.times(), Instant::now(), 0);
                    }
                }
                state.processing += 1;
                Some(Taken {
                    result: Some(item.item),
                    caught_up: state.queue.len() < BACKLOG,
                })
            }
            None if state.shutting_down => Some(Taken {
                result: None,
                caught_up: false,
            }),
            None => {
                if park {
                    state.parked.park();
                }
                None
            }
        }
    }

    /// Marks `item` as done processing. If it was added again meanwhile it is queued again
    /// (at the back). Harmless for an item that is not being processed.
    pub fn done(&self, item: &T) {
        let shared = &*self.shared;
        let hash = shared.hasher.hash_one(item);
        // The removed key is dropped after the lock is released (it may own memory).
        let removed;
        let wake = {
            let mut state = lock(&shared.state);
            let Some((key, mut entry)) = state.items.remove_entry(&(hash, item) as &dyn Key<T>)
            else {
                return;
            };
            if !entry.processing {
                state.items.insert(key, entry);
                return;
            }
            entry.processing = false;
            state.processing -= 1;
            if let Some(metrics) = &shared.metrics {
                metrics.done(entry.times(), Instant::now());
            }
            let requeued = entry.dirty;
            if requeued {
                state.queue.push_back(key.clone());
                state.items.insert(key, entry);
                removed = None;
            } else {
                removed = Some(key);
            }
            if state.processing == 0 && state.drain {
                shared.drained.notify_waiters();
            }
            state.parked.signal(usize::from(requeued))
        };
        drop(removed);
        shared.getters.wake(wake);
    }

    /// Shuts the queue down without waiting: later adds are ignored, getters receive the items
    /// still queued and then `None`. Aborts a concurrent
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) wait.
    pub fn shut_down(&self) {
        let shared = &*self.shared;
        {
            let mut state = lock(&shared.state);
            state.drain = false;
            state.shutting_down = true;
        }
        shared.closed.close();
        shared.getters.wake_all();
        shared.drained.notify_waiters();
    }

    /// Shuts the queue down like [`shut_down`](Self::shut_down), then waits until every item
    /// handed out is done. Workers must call `done`, or this waits forever; a later
    /// `shut_down` ends the wait.
    pub async fn shut_down_with_drain(&self) {
        let shared = &*self.shared;
        {
            let mut state = lock(&shared.state);
            state.drain = true;
            state.shutting_down = true;
        }
        shared.closed.close();
        shared.getters.wake_all();
        loop {
            let notified = shared.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = lock(&shared.state);
                if state.processing == 0 || !state.drain {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Whether the queue is shutting down.
    pub fn shutting_down(&self) -> bool {
        lock(&self.shared.state).shutting_down
    }

    /// The queue's metrics name ("" if unnamed).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The queue's metrics recorder, for the wrapping queues (retries).
    pub(crate) fn metrics(&self) -> Option<&Recorder> {
        self.shared.metrics.as_ref()
    }
}

impl<T: Item> UnfinishedWork for Shared<T> {
    fn update_unfinished_work(&self) {
        let Some(metrics) = &self.metrics else { return };
        let state = lock(&self.state);
        let starts = state
            .items
            .values()
            .filter_map(|entry| entry.times.as_ref()?.started);
        metrics.update_unfinished(starts, Instant::now());
    }
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        self.closed.close();
    }
}

impl<T: Item> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<T> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = lock(&self.shared.state);
        f.debug_struct("Queue")
            .field("name", &self.shared.name)
            .field("len", &state.queue.len())
            .field("processing", &state.processing)
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}
