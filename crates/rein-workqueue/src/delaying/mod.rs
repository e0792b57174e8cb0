//! The delaying queue: a work queue plus `add_after`, with every waiting item in one heap
//! driven by one background task (client-go's `workqueue.TypedDelayingInterface`).

#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::key::{Hashed, PassThrough};
use crate::limiter::add_saturating;
use crate::sync::lock;
use crate::timer::{TimerSignal, TimerTarget, spawn_driver};
use crate::{Item, Queue, QueueConfig};

/// A [`Queue`] whose items can also be added after a delay.
///
/// `add_after(item, d)` hands the item to the queue once `d` has passed; a zero delay adds at
/// once. For an item already waiting the earlier ready time wins. All waiting items live in
/// one heap served by a single tokio task (spawned on the first delayed add, so that call must
/// happen inside a tokio runtime); shutting down discards the waiting items and ends the task.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use rein_workqueue::DelayingQueue;
///
/// let queue = DelayingQueue::new();
/// queue.add_after("later", Duration::from_secs(2));
/// queue.add_after("sooner", Duration::from_secs(1));
/// assert_eq!(queue.get().await, Some("sooner"));
/// assert_eq!(queue.get().await, Some("later"));
/// # }
/// ```
pub struct DelayingQueue<T> {
    shared: Arc<DelayShared<T>>,
}

struct DelayShared<T> {
    queue: Queue<T>,
    waiting: Mutex<Waiting<T>>,
    signal: Arc<TimerSignal>,
    /// Set on shut-down: later adds are ignored without taking a lock.
    stopped: AtomicBool,
    /// The driver's buffer of released items, reused between firings.
    released: Mutex<Vec<Hashed<T>>>,
}

struct Waiting<T> {
    /// Waiting items by ready time; entries whose time no longer matches `ready_at` are stale.
    heap: BinaryHeap<HeapEntry<T>>,
    /// The ready time of each waiting item, in nanoseconds since `origin`.
    ready_at: HashMap<Hashed<T>, u64, PassThrough>,
    /// Ready times are kept as nanoseconds since this instant (small heap entries).
    origin: Instant,
    driver_started: bool,
    stopped: bool,
}

struct HeapEntry<T> {
    /// Nanoseconds since the queue's origin.
    ready_at: u64,
    item: Hashed<T>,
}

impl<T: Item> DelayingQueue<T> {
    /// An unnamed delaying queue (no metrics).
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A delaying queue with a metrics name and provider.
    pub fn with_config(config: QueueConfig) -> Self {
        Self {
            shared: Arc::new(DelayShared {
                queue: Queue::with_config(config),
                waiting: Mutex::new(Waiting {
                    heap: BinaryHeap::new(),
                    ready_at: HashMap::default(),
                    origin: Instant::now(),
                    driver_started: false,
                    stopped: false,
                }),
                signal: Arc::new(TimerSignal::default()),
                stopped: AtomicBool::new(false),
                released: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Adds `item` once `delay` has passed (at once for a zero delay). If the item is already
    /// waiting, the earlier ready time wins. Ignored after shut-down. Counts a retry in the
    /// metrics.
    pub fn add_after(&self, item: T, delay: Duration) {
        let shared = &*self.shared;
        if shared.stopped.load(AtomicOrdering::Relaxed) {
            return;
        }
        if let Some(metrics) = shared.queue.metrics() {
            metrics.retried();
        }
        if delay.is_zero() {
            shared.queue.add(item);
            return;
        }
        let ready_instant = add_saturating(Instant::now(), delay);
        let item = shared.queue.hashed(item);
        let mut waiting = lock(&shared.waiting);
        if waiting.stopped {
            return;
        }
        let ready_at = nanos_since(waiting.origin, ready_instant);
        let earliest = waiting.heap.peek().map(|entry| entry.ready_at);
        match waiting.ready_at.get_mut(&item) {
            Some(current) if *current <= ready_at => return,
            Some(current) => *current = ready_at,
            None => {
                waiting.ready_at.insert(item.clone(), ready_at);
            }
        }
        waiting.heap.push(HeapEntry { ready_at, item });
        if !waiting.driver_started {
            waiting.driver_started =
                spawn_driver(Arc::downgrade(&self.shared), shared.signal.clone());
        } else if earliest.is_none_or(|earliest| ready_at < earliest) {
            shared.signal.wake();
        }
    }

    /// Marks `item` as needing processing now (see [`Queue::add`]).
    pub fn add(&self, item: T) {
        self.shared.queue.add(item);
    }

    /// Items ready to hand out (waiting items are not counted).
    pub fn len(&self) -> usize {
        self.shared.queue.len()
    }

    /// Whether no item is ready to hand out.
    pub fn is_empty(&self) -> bool {
        self.shared.queue.is_empty()
    }

    /// How many items wait for their delay to pass.
    pub fn waiting_len(&self) -> usize {
        lock(&self.shared.waiting).ready_at.len()
    }

    /// Waits for the next item (see [`Queue::get`]).
    pub async fn get(&self) -> Option<T> {
        self.shared.queue.get().await
    }

    /// Marks `item` as done (see [`Queue::done`]).
    pub fn done(&self, item: &T) {
        self.shared.queue.done(item);
    }

    /// Shuts down: waiting items are discarded, the timer task ends, queued items are still
    /// handed out (see [`Queue::shut_down`]).
    pub fn shut_down(&self) {
        self.stop_timers();
        self.shared.queue.shut_down();
    }

    /// Shuts down like [`shut_down`](Self::shut_down) and waits until every item handed out
    /// is done. Unlike client-go, the timers stop at once here too.
    pub async fn shut_down_with_drain(&self) {
        self.stop_timers();
        self.shared.queue.shut_down_with_drain().await;
    }

    /// Whether the queue is shutting down.
    pub fn shutting_down(&self) -> bool {
        self.shared.queue.shutting_down()
    }

    /// The queue's metrics name ("" if unnamed).
    pub fn name(&self) -> &str {
        self.shared.queue.name()
    }

    fn stop_timers(&self) {
        {
            let mut waiting = lock(&self.shared.waiting);
            waiting.stopped = true;
            waiting.heap = BinaryHeap::new();
            waiting.ready_at = HashMap::default();
        }
        self.shared.stopped.store(true, AtomicOrdering::Relaxed);
        self.shared.signal.closed.close();
    }
}

impl<T: Item> TimerTarget for DelayShared<T> {
    fn fire(&self, now: Instant) -> Option<Instant> {
        let mut released = lock(&self.released);
        let next = {
            let mut waiting = lock(&self.waiting);
            let waiting = &mut *waiting;
            let now = nanos_since(waiting.origin, now);
            while let Some(top) = waiting.heap.peek() {
                if top.ready_at > now {
                    break;
                }
                let Some(entry) = waiting.heap.pop() else {
                    break;
                };
                if waiting.ready_at.get(&entry.item) == Some(&entry.ready_at) {
                    waiting.ready_at.remove(&entry.item);
                    released.push(entry.item);
                }
            }
            let origin = waiting.origin;
            waiting
                .heap
                .peek()
                .map(|entry| origin + Duration::from_nanos(entry.ready_at))
        };
        // Released outside the waiting lock: producers keep adding meanwhile.
        self.queue.add_batch(&mut released);
        next
    }
}

impl<T> Drop for DelayShared<T> {
    fn drop(&mut self) {
        self.signal.closed.close();
    }
}

impl<T> PartialEq for HeapEntry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ready_at == other.ready_at
    }
}

impl<T> Eq for HeapEntry<T> {}

impl<T> PartialOrd for HeapEntry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for HeapEntry<T> {
    /// Reversed, so that the max-heap pops the earliest ready time first (equal times in no
    /// particular order, as in client-go).
    fn cmp(&self, other: &Self) -> Ordering {
        other.ready_at.cmp(&self.ready_at)
    }
}

/// `instant` as nanoseconds since `origin` (0 before it; saturating far ahead).
fn nanos_since(origin: Instant, instant: Instant) -> u64 {
    u64::try_from(instant.saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX)
}

impl<T: Item> Default for DelayingQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<T> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let waiting = lock(&self.shared.waiting).ready_at.len();
        f.debug_struct("DelayingQueue")
            .field("queue", &self.shared.queue)
            .field("waiting", &waiting)
            .finish()
    }
}
