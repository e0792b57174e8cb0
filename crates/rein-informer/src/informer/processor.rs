//! Per-handler listeners: one task and one buffer per handler, plus resync bookkeeping. Each
//! buffer counts against a [`Room`] of [`HANDLER_BUFFER_CAPACITY`]: sending never blocks, and
//! the informer's process loop waits for room before it pops more.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Queues;
use crate::room::Room;
use crate::{DeletedObject, ResourceEventHandler};

/// Notifications a handler's buffer holds before the informer's process loop waits for its
/// delivery task to catch up (the loop checks between batches, so a buffer may hold one batch
/// more).
pub(crate) const HANDLER_BUFFER_CAPACITY: usize = 256;

/// The smallest per-handler resync period (client-go's `minimumResyncPeriod`).
pub(crate) const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

pub(crate) enum Notification<K> {
    Add(Arc<K>, bool),
    Update(Arc<K>, Arc<K>),
    Delete(DeletedObject<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add(o, i) => Notification::Add(o.clone(), *i),
            Notification::Update(a, b) => Notification::Update(a.clone(), b.clone()),
            Notification::Delete(d) => Notification::Delete(d.clone()),
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) struct Listener<K> {
    pub(crate) id: u64,
    handler: Arc<dyn ResourceEventHandler<K>>,
    tx: mpsc::UnboundedSender<Notification<K>>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<Notification<K>>>>,
    removed: AtomicBool,
    stop: CancellationToken,
    pending_initial: AtomicUsize,
    /// Notifications sent and not yet handled, against [`HANDLER_BUFFER_CAPACITY`].
    room: Room,
    requested_resync: Duration,
    resync: Mutex<(Duration, Instant)>,
    syncing: AtomicBool,
    queue: Arc<Queues<K>>,
    /// Woken whenever `pending_initial` drops to zero.
    initial_done: Notify,
}

impl<K> Listener<K> {
    pub(crate) fn new(
        handler: Arc<dyn ResourceEventHandler<K>>,
        requested_resync: Duration,
        effective_resync: Duration,
        queue: Arc<Queues<K>>,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Listener {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            handler,
            tx,
            rx: Mutex::new(Some(rx)),
            removed: AtomicBool::new(false),
            stop: CancellationToken::new(),
            pending_initial: AtomicUsize::new(0),
            room: Room::new(HANDLER_BUFFER_CAPACITY),
            requested_resync,
            resync: Mutex::new((effective_resync, Instant::now() + effective_resync)),
            syncing: AtomicBool::new(false),
            queue,
            initial_done: Notify::new(),
        }
    }

    pub(crate) fn send(&self, n: Notification<K>) {
        if self.removed.load(Ordering::Acquire) {
            return;
        }
        if let Notification::Add(_, true) = n {
            self.pending_initial.fetch_add(1, Ordering::AcqRel);
        }
        self.room.fill(1);
        if self.tx.send(n).is_err() {
            self.room.close();
            self.pending_initial.store(0, Ordering::Release);
            self.initial_done.notify_waiters();
        }
    }

    pub(crate) fn has_synced(&self) -> bool {
        self.queue.has_synced() && self.pending_initial.load(Ordering::Acquire) == 0
    }

    /// Resolves once [`Listener::has_synced`] holds: the queue's signal, then the last
    /// initial add handled.
    pub(crate) async fn wait_synced(self: Arc<Self>) {
        self.queue.wait_synced().await;
        loop {
            let done = self.initial_done.notified();
            if self.pending_initial.load(Ordering::Acquire) == 0 {
                return;
            }
            done.await;
        }
    }

    pub(crate) fn remove(&self) {
        self.removed.store(true, Ordering::Release);
        self.stop.cancel();
        self.room.close();
    }

    pub(crate) fn set_effective_resync(&self, check_period: Duration) {
        let effective = determine_resync(self.requested_resync, check_period);
        let mut r = self.resync.lock();
        *r = (effective, Instant::now() + effective);
    }

    /// Decides whether this listener resyncs now, updating its schedule.
    fn should_resync(&self, now: Instant) -> bool {
        let mut r = self.resync.lock();
        let syncing = !r.0.is_zero() && now >= r.1;
        if syncing {
            r.1 = now + r.0;
        }
        self.syncing.store(syncing, Ordering::Release);
        syncing
    }

    fn is_syncing(&self) -> bool {
        self.syncing.load(Ordering::Acquire)
    }

    /// Starts the delivery task; a no-op if it already runs.
    pub(crate) fn spawn(
        self: &Arc<Self>,
        handle: &tokio::runtime::Handle,
        parent: &CancellationToken,
    ) where
        K: Send + Sync + 'static,
    {
        let Some(mut rx) = self.rx.lock().take() else {
            return;
        };
        let this = self.clone();
        let parent = parent.clone();
        handle.spawn(async move {
            // Notifications are taken in runs: one wake-up and one cooperative-budget unit
            // per run instead of per notification, so a handler that was starved of CPU
            // catches up quickly once it runs.
            let mut run = Vec::with_capacity(RECEIVE_RUN);
            'deliver: loop {
                let received = tokio::select! {
                    biased;
                    _ = this.stop.cancelled() => break,
                    _ = parent.cancelled() => break,
                    n = rx.recv_many(&mut run, RECEIVE_RUN) => n,
                };
                if received == 0 {
                    break;
                }
                for n in run.drain(..) {
                    // As between runs: nothing is delivered once removed or stopped.
                    if this.removed.load(Ordering::Acquire) || parent.is_cancelled() {
                        break 'deliver;
                    }
                    this.deliver(n);
                }
                this.room.drain(received);
            }
            // Nobody takes from this buffer any more: never make the process loop wait on it.
            this.room.close();
        });
    }

    /// Runs the handler on one notification; a panic is logged and the notification skipped.
    fn deliver(&self, n: Notification<K>)
    where
        K: Send + Sync + 'static,
    {
        let initial = matches!(n, Notification::Add(_, true));
        let handler = self.handler.clone();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| match &n {
            Notification::Add(o, i) => handler.on_add(o, *i),
            Notification::Update(a, b) => handler.on_update(a, b),
            Notification::Delete(d) => handler.on_delete(d),
        }));
        if initial && self.pending_initial.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.initial_done.notify_waiters();
        }
        if result.is_err() {
            tracing::error!("an event handler panicked; the notification was skipped");
        }
    }
}

/// Most notifications a delivery task takes from its buffer at once.
const RECEIVE_RUN: usize = 256;

/// A handler's effective resync period given the informer's check period.
pub(crate) fn determine_resync(requested: Duration, check_period: Duration) -> Duration {
    if requested.is_zero() || check_period.is_zero() {
        return Duration::ZERO;
    }
    requested.max(check_period)
}

pub(crate) struct Processor<K> {
    listeners: RwLock<Vec<Arc<Listener<K>>>>,
}

impl<K> fmt::Debug for Processor<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Processor")
            .field("listeners", &self.listeners.read().len())
            .finish()
    }
}

impl<K> Processor<K> {
    pub(crate) fn new() -> Self {
        Processor {
            listeners: RwLock::new(Vec::new()),
        }
    }

    pub(crate) fn add(&self, l: Arc<Listener<K>>) {
        self.listeners.write().push(l);
    }

    pub(crate) fn remove(&self, id: u64) -> bool {
        let mut ls = self.listeners.write();
        match ls.iter().position(|l| l.id == id) {
            Some(i) => {
                ls.remove(i).remove();
                true
            }
            None => false,
        }
    }

    pub(crate) fn listeners(&self) -> Vec<Arc<Listener<K>>> {
        self.listeners.read().clone()
    }

    pub(crate) fn distribute(&self, n: Notification<K>, sync_only: bool) {
        let ls = self.listeners.read();
        for l in ls.iter() {
            if sync_only && !l.is_syncing() {
                continue;
            }
            l.send(n.clone());
        }
    }

    /// Notifications waiting in each running handler's buffer.
    pub(crate) fn buffered(&self) -> Vec<usize> {
        self.listeners
            .read()
            .iter()
            .filter(|l| !l.stop.is_cancelled())
            .map(|l| l.room.used())
            .collect()
    }

    /// Resolves once every running handler's buffer is below [`HANDLER_BUFFER_CAPACITY`]
    /// (a removed or stopped handler never holds it up).
    pub(crate) async fn wait_for_room(&self) {
        loop {
            let full = self
                .listeners
                .read()
                .iter()
                .find(|l| l.room.is_full())
                .cloned();
            match full {
                Some(listener) => listener.room.wait().await,
                None => return,
            }
        }
    }

    /// True if some running handler's buffer is at capacity.
    pub(crate) fn is_full(&self) -> bool {
        self.listeners.read().iter().any(|l| l.room.is_full())
    }

    pub(crate) fn should_resync(&self) -> bool {
        let now = Instant::now();
        let mut any = false;
        for l in self.listeners.read().iter() {
            any |= l.should_resync(now);
        }
        any
    }

    pub(crate) fn recompute_resync(&self, check_period: Duration) {
        for l in self.listeners.read().iter() {
            l.set_effective_resync(check_period);
        }
    }
}
