//! controller-runtime's priority queue: the work queue semantics plus a priority per add
//! (higher first, FIFO within one priority), delays and rate-limited adds, in one structure.
//!
//! State (one mutex): a map with one entry per known item; ready items in a B-tree ordered by
//! (priority descending, insertion sequence); waiting items in a B-tree by ready time, released
//! by one timer task. An item handed out is locked until `done`: re-added meanwhile, it keeps
//! its place in the order but is parked outside the ready tree until `done` puts it back.

mod config;
mod snapshot;
#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

pub use config::{AddOptions, PriorityQueueConfig};
pub use snapshot::{ItemSnapshot, ItemState};

use crate::getters::{BACKLOG, Getters, Parked, Taken};
use crate::key::{Hashed, ItemHasher, Key, PassThrough};
use crate::limiter::add_saturating;
use crate::metrics::recorder::{ItemTimes, Recorder, UnfinishedWork, spawn_unfinished_work_loop};
use crate::sync::{Closed, lock};
use crate::timer::{TimerSignal, TimerTarget, spawn_driver};
use crate::{ExponentialFailureRateLimiter, Item, RateLimiter};

/// A priority work queue (controller-runtime's `priorityqueue.PriorityQueue`, the default
/// controller queue there since v0.23).
///
/// * Items are de-duplicated and never handed to two workers at once, as in
///   [`Queue`](crate::Queue).
/// * Each add may carry a priority (default 0): higher priorities are handed out first, FIFO
///   within one priority. Re-adding a waiting item keeps the higher priority (moving it to the
///   end of that class) and the earlier ready time.
/// * Unlike [`Queue`](crate::Queue), an item re-added while in flight counts in
///   [`len`](Self::len), and [`get`](Self::get) returns `None` as soon as the queue shuts
///   down, even if items are still queued.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use rein_workqueue::{AddOptions, PriorityQueue};
///
/// let queue = PriorityQueue::new();
/// queue.add_with_opts(AddOptions::priority(-100), "resync");
/// queue.add("live change");
/// assert_eq!(queue.get_with_priority().await, Some(("live change", 0)));
/// assert_eq!(queue.get_with_priority().await, Some(("resync", -100)));
/// # }
/// ```
pub struct PriorityQueue<T> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    getters: Getters,
    drained: Notify,
    limiter: Arc<dyn RateLimiter<T>>,
    timer: Arc<TimerSignal>,
    closed: Arc<Closed>,
    metrics: Option<Recorder>,
    name: String,
    /// Hashes items before the lock is taken.
    hasher: ItemHasher,
}

/// Where a snapshot lists an item: 0 ready (by priority, then insertion), 1 in flight (longest
/// first), 2 waiting (earliest ready time first).
type SnapshotOrder = (u8, Reverse<i32>, Duration, u64);

struct State<T> {
    items: HashMap<Hashed<T>, Entry, PassThrough>,
    /// Ready, not locked: handed out in this order.
    ready: BTreeMap<(Reverse<i32>, u64), Hashed<T>>,
    /// Waiting for their ready time.
    waiting: BTreeMap<(Instant, u64), Hashed<T>>,
    /// Ready but locked (in flight): they go back into `ready` on `done`.
    parked: usize,
    /// Locked (handed out, not done).
    locked: usize,
    /// Getters waiting for an item and not yet woken.
    getters_parked: Parked,
    sequence: u64,
    driver_started: bool,
    shutting_down: bool,
}

#[derive(Debug)]
struct Entry {
    /// Handed out and not yet done.
    locked: bool,
    /// When it was handed out, while locked.
    handed_out: Option<Instant>,
    /// Where the item is queued, if it is.
    queued: Option<Queued>,
    times: ItemTimes,
}

#[derive(Debug, Clone, Copy)]
struct Queued {
    priority: i32,
    sequence: u64,
    /// `Some` while the item waits.
    ready_at: Option<Instant>,
}

impl<T: Item> PriorityQueue<T> {
    /// An unnamed queue with the default rate limiter (exponential 5 ms to 1000 s).
    pub fn new() -> Self {
        Self::with_config(PriorityQueueConfig::default())
    }

    /// A queue with a metrics name, provider and rate limiter.
    pub fn with_config(config: PriorityQueueConfig<T>) -> Self {
        let limiter = config.rate_limiter.unwrap_or_else(|| {
            Arc::new(ExponentialFailureRateLimiter::new(
                Duration::from_millis(5),
                Duration::from_secs(1000),
            ))
        });
        let metrics = Recorder::new(&config.name, config.metrics_provider.as_ref(), true);
        let has_metrics = metrics.is_some();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                items: HashMap::default(),
                ready: BTreeMap::new(),
                waiting: BTreeMap::new(),
                parked: 0,
                locked: 0,
                getters_parked: Parked::default(),
                sequence: 0,
                driver_started: false,
                shutting_down: false,
            }),
            getters: Getters::default(),
            drained: Notify::new(),
            limiter,
            timer: Arc::new(TimerSignal::default()),
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

    /// Adds `item` at priority 0, ready now.
    pub fn add(&self, item: T) {
        self.add_with_opts(AddOptions::default(), item);
    }

    /// Adds `item` at priority 0 once `delay` has passed.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.add_with_opts(AddOptions::default().after(delay), item);
    }

    /// Adds `item` at priority 0 after the delay the rate limiter gives it.
    pub fn add_rate_limited(&self, item: T) {
        self.add_with_opts(AddOptions::default().rate_limited(), item);
    }

    /// Adds `item` as `options` say. If the item is already queued it stays queued once, with
    /// the higher of the two priorities and the earlier of the two ready times. Ignored after
    /// shut-down.
    pub fn add_with_opts(&self, options: AddOptions, item: T) {
        let shared = &*self.shared;
        let ready_in = self.ready_in(&options, &item);
        let priority = options.priority.unwrap_or(0);
        let now = Instant::now();
        let ready_at = (!ready_in.is_zero()).then(|| add_saturating(now, ready_in));
        let item = Hashed {
            hash: shared.hasher.hash_one(&item),
            item,
        };
        let (wake_timer, wake_getters) = {
            let mut state = lock(&shared.state);
            if state.shutting_down {
                return;
            }
            if ready_at.is_some()
                && let Some(metrics) = &shared.metrics
            {
                metrics.retried();
            }
            let mut wake = self.queue_locked(&mut state, item, priority, ready_at, now);
            if wake.timer && !state.driver_started {
                state.driver_started =
                    spawn_driver(Arc::downgrade(&self.shared), shared.timer.clone());
                wake.timer = false;
            }
            let getters = state.getters_parked.signal(usize::from(wake.getter));
            (wake.timer, getters)
        };
        if wake_timer {
            shared.timer.wake();
        }
        shared.getters.wake(wake_getters);
    }

    /// How long `item` waits before it is ready: the requested delay, or the rate limiter's if
    /// that is sooner (or the only one).
    fn ready_in(&self, options: &AddOptions, item: &T) -> Duration {
        let after = options.after.unwrap_or(Duration::ZERO);
        if !options.rate_limited {
            return after;
        }
        let limited = self.shared.limiter.when(item);
        if after.is_zero() || limited < after {
            limited
        } else {
            after
        }
    }

    /// Queues `item` anew, or moves it if this add raises its priority or makes it ready
    /// sooner (never both ways: a queued item stays queued once).
    fn queue_locked(
        &self,
        state: &mut State<T>,
        item: Hashed<T>,
        priority: i32,
        ready_at: Option<Instant>,
        now: Instant,
    ) -> Wake {
        let metrics = self.shared.metrics.as_ref();
        if !state.items.contains_key(&item) {
            state.items.insert(item.clone(), Entry::idle());
        }
        let Some(entry) = state.items.get_mut(&item) else {
            return Wake::default();
        };
        let locked = entry.locked;
        match entry.queued {
            None => {
                state.sequence += 1;
                let queued = Queued {
                    priority,
                    sequence: state.sequence,
                    ready_at,
                };
                entry.queued = Some(queued);
                if ready_at.is_none()
                    && let Some(metrics) = metrics
                {
                    metrics.added(&mut entry.times, now, priority);
                }
                state.place(item, queued, locked)
            }
            Some(old) => {
                let Some(queued) = old.merged(priority, ready_at, &mut state.sequence) else {
                    return Wake::default();
                };
                entry.queued = Some(queued);
                if let Some(metrics) = metrics {
                    if old.ready_at.is_some() && queued.ready_at.is_none() {
                        metrics.added(&mut entry.times, now, queued.priority);
                    } else if queued.ready_at.is_none() {
                        metrics.moved(old.priority, queued.priority);
                    }
                }
                match state.take_out(item, old, locked) {
                    Some(item) => state.place(item, queued, locked),
                    None => Wake::default(),
                }
            }
        }
    }

    /// Waits for the next item (highest priority first, FIFO within one) and locks it until
    /// [`done`](Self::done). `None` once the queue shuts down.
    pub async fn get(&self) -> Option<T> {
        self.get_with_priority().await.map(|(item, _)| item)
    }

    /// Like [`get`](Self::get), also returning the item's priority.
    ///
    /// A call that leaves fewer than 1,024 items ready ends the worker's turn: its next `get`
    /// yields first, so the tasks on its own thread run, the producers among them, whose
    /// repeated adds of a key then collapse while it waits. A worker working through a longer
    /// backlog does not yield until it is shorter.
    pub async fn get_with_priority(&self) -> Option<(T, i32)> {
        self.shared.getters.get(|park| self.try_get(park)).await
    }

    /// The next item (`Some(Some(_))`), `Some(None)` once shut down, `None` if the caller must
    /// wait (counted as parked if `park`).
    fn try_get(&self, park: bool) -> Option<Taken<Option<(T, i32)>>> {
        let shared = &*self.shared;
        let mut state = lock(&shared.state);
        if state.shutting_down {
            return Some(Taken {
                result: None,
                caught_up: false,
            });
        }
        let state = &mut *state;
        let Some(((Reverse(priority), _), item)) = state.ready.pop_first() else {
            if park {
                state.getters_parked.park();
            }
            return None;
        };
        if let Some(entry) = state.items.get_mut(&item) {
            entry.queued = None;
            entry.locked = true;
            entry.handed_out = Some(Instant::now());
            if let Some(metrics) = &shared.metrics {
                metrics.got(&mut entry.times, Instant::now(), priority);
            }
        }
        state.locked += 1;
        Some(Taken {
            result: Some((item.item, priority)),
            caught_up: state.ready.len() < BACKLOG,
        })
    }

    /// Unlocks `item`; if it was re-added meanwhile it becomes available again in its place.
    pub fn done(&self, item: &T) {
        let shared = &*self.shared;
        let hash = shared.hasher.hash_one(item);
        let key = (hash, item);
        let key = &key as &dyn Key<T>;
        let mut wake_getter = false;
        let wake = {
            let mut state = lock(&shared.state);
            let state = &mut *state;
            let Some(entry) = state.items.get_mut(key) else {
                return;
            };
            if !entry.locked {
                return;
            }
            entry.locked = false;
            entry.handed_out = None;
            state.locked -= 1;
            if let Some(metrics) = &shared.metrics {
                metrics.done(&mut entry.times, Instant::now());
            }
            match entry.queued {
                None => {
                    state.items.remove(key);
                }
                Some(queued) if queued.ready_at.is_none() => {
                    state.parked -= 1;
                    state.ready.insert(
                        (Reverse(queued.priority), queued.sequence),
                        Hashed {
                            hash,
                            item: item.clone(),
                        },
                    );
                    wake_getter = true;
                }
                Some(_) => {}
            }
            if state.locked == 0 {
                shared.drained.notify_waiters();
            }
            state.getters_parked.signal(usize::from(wake_getter))
        };
        shared.getters.wake(wake);
    }

    /// Clears the rate limiter's memory of `item` (it must still be marked done).
    pub fn forget(&self, item: &T) {
        self.shared.limiter.forget(item);
    }

    /// How many failures of `item` the rate limiter tracks.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.shared.limiter.num_requeues(item)
    }

    /// Every item the queue knows, in the order it would hand the ready ones out (ready first,
    /// then in flight, then waiting by ready time), with its priority and its failure count.
    /// Takes the queue's lock once, for a copy of the items; meant for debug endpoints and
    /// tests, not for hot paths.
    pub fn snapshot(&self) -> Vec<ItemSnapshot<T>> {
        let now = Instant::now();
        let mut items: Vec<(SnapshotOrder, ItemSnapshot<T>)> = {
            let state = lock(&self.shared.state);
            state
                .items
                .iter()
                .map(|(key, entry)| {
                    let priority = entry.queued.map(|q| q.priority);
                    let sequence = entry.queued.map_or(0, |q| q.sequence);
                    let (order, item_state) = match entry.queued {
                        _ if entry.locked => {
                            let for_ = entry
                                .handed_out
                                .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
                            let requeued = entry.queued.is_some();
                            (
                                (1, Reverse(0), Duration::MAX - for_, 0),
                                ItemState::InFlight { for_, requeued },
                            )
                        }
                        Some(Queued {
                            ready_at: Some(at), ..
                        }) => {
                            let ready_in = at.saturating_duration_since(now);
                            (
                                (2, Reverse(0), ready_in, sequence),
                                ItemState::Waiting { ready_in },
                            )
                        }
                        _ => (
                            (0, Reverse(priority.unwrap_or(0)), Duration::ZERO, sequence),
                            ItemState::Ready,
                        ),
                    };
                    let snapshot = ItemSnapshot {
                        item: key.item.clone(),
                        state: item_state,
                        priority,
                        failures: 0,
                    };
                    (order, snapshot)
                })
                .collect()
        };
        items.sort_by_key(|(order, _)| *order);
        items
            .into_iter()
            .map(|(_, mut snapshot)| {
                snapshot.failures = self.shared.limiter.num_requeues(&snapshot.item);
                snapshot
            })
            .collect()
    }

    /// Ready items, including ones re-added while in flight; waiting items are not counted.
    pub fn len(&self) -> usize {
        let state = lock(&self.shared.state);
        state.ready.len() + state.parked
    }

    /// How many items are handed out and not yet done.
    pub fn in_flight_len(&self) -> usize {
        lock(&self.shared.state).locked
    }

    /// How many items wait for their ready time.
    pub fn waiting_len(&self) -> usize {
        lock(&self.shared.state).waiting.len()
    }

    /// Whether no item is ready.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts down: adds are ignored from now on, getters get `None` at once, waiting and
    /// queued items are dropped, the timer task ends.
    pub fn shut_down(&self) {
        let shared = &*self.shared;
        {
            let mut state = lock(&shared.state);
            state.shutting_down = true;
            state.waiting.clear();
        }
        shared.timer.closed.close();
        shared.closed.close();
        shared.getters.wake_all();
    }

    /// Shuts down like [`shut_down`](Self::shut_down), then waits until every item in flight
    /// is done (controller-runtime returns at once here).
    pub async fn shut_down_with_drain(&self) {
        self.shut_down();
        let shared = &*self.shared;
        loop {
            let notified = shared.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if lock(&shared.state).locked == 0 {
                return;
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
}

/// Whom an add must wake once the lock is released.
#[derive(Debug, Default)]
struct Wake {
    /// An item became ready: wake one waiting `get`.
    getter: bool,
    /// An item now waits with the earliest ready time: wake the timer driver.
    timer: bool,
}

impl Entry {
    /// An item the queue has just learnt of: neither queued nor handed out.
    fn idle() -> Self {
        Entry {
            locked: false,
            handed_out: None,
            queued: None,
            times: ItemTimes::default(),
        }
    }
}

impl Queued {
    /// Where an item queued at `self` goes when added again at `priority`, ready at `ready_at`:
    /// the higher priority and the earlier ready time, at the end of its priority class if the
    /// priority rose or it just became ready; `None` if nothing changes.
    fn merged(self, priority: i32, ready_at: Option<Instant>, sequence: &mut u64) -> Option<Self> {
        let new_priority = self.priority.max(priority);
        let new_ready_at = match (self.ready_at, ready_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            _ => None,
        };
        if new_priority == self.priority && new_ready_at == self.ready_at {
            return None;
        }
        let became_ready = self.ready_at.is_some() && new_ready_at.is_none();
        let sequence = if new_priority > self.priority || became_ready {
            *sequence += 1;
            *sequence
        } else {
            self.sequence
        };
        Some(Queued {
            priority: new_priority,
            sequence,
            ready_at: new_ready_at,
        })
    }
}

impl<T: Item> State<T> {
    /// Puts `item` where `queued` says: waiting for its time, parked while it is in flight
    /// (`locked`), or ready.
    fn place(&mut self, item: Hashed<T>, queued: Queued, locked: bool) -> Wake {
        match queued.ready_at {
            Some(at) => {
                let earliest = self.waiting.first_key_value().is_none_or(|(k, _)| at < k.0);
                self.waiting.insert((at, queued.sequence), item);
                Wake {
                    getter: false,
                    timer: earliest,
                }
            }
            None if locked => {
                self.parked += 1;
                Wake::default()
            }
            None => {
                self.ready
                    .insert((Reverse(queued.priority), queued.sequence), item);
                Wake {
                    getter: true,
                    timer: false,
                }
            }
        }
    }

    /// Takes an item out of the place `queued` put it (see [`State::place`]); a parked item is
    /// only counted there, so `item` itself comes back.
    fn take_out(&mut self, item: Hashed<T>, queued: Queued, locked: bool) -> Option<Hashed<T>> {
        match queued.ready_at {
            Some(at) => self.waiting.remove(&(at, queued.sequence)),
            None if locked => {
                self.parked -= 1;
                Some(item)
            }
            None => self
                .ready
                .remove(&(Reverse(queued.priority), queued.sequence)),
        }
    }
}

impl<T: Item> TimerTarget for Shared<T> {
    fn fire(&self, now: Instant) -> Option<Instant> {
        let mut woken = 0;
        let (next, wake_getters) = {
            let mut state = lock(&self.state);
            let state = &mut *state;
            while let Some(entry) = state.waiting.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let item = entry.remove();
                let Some(item_entry) = state.items.get_mut(&item) else {
                    continue;
                };
                let Some(queued) = item_entry.queued.as_mut() else {
                    continue;
                };
                state.sequence += 1;
                queued.sequence = state.sequence;
                queued.ready_at = None;
                let key = (Reverse(queued.priority), queued.sequence);
                if let Some(metrics) = &self.metrics {
                    metrics.added(&mut item_entry.times, now, queued.priority);
                }
                if item_entry.locked {
                    state.parked += 1;
                } else {
                    state.ready.insert(key, item);
                    woken += 1;
                }
            }
            let next = state.waiting.first_key_value().map(|(key, _)| key.0);
            (next, state.getters_parked.signal(woken))
        };
        self.getters.wake(wake_getters);
        next
    }
}

impl<T: Item> UnfinishedWork for Shared<T> {
    fn update_unfinished_work(&self) {
        let Some(metrics) = &self.metrics else { return };
        let state = lock(&self.state);
        let starts = state.items.values().filter_map(|entry| entry.times.started);
        metrics.update_unfinished(starts, Instant::now());
    }
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        self.timer.closed.close();
        self.closed.close();
    }
}

impl<T: Item> Default for PriorityQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for PriorityQueue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<T> fmt::Debug for PriorityQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = lock(&self.shared.state);
        f.debug_struct("PriorityQueue")
            .field("name", &self.shared.name)
            .field("ready", &(state.ready.len() + state.parked))
            .field("waiting", &state.waiting.len())
            .field("in_flight", &state.locked)
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}
