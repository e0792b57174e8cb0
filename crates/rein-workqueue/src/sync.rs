//! Small synchronisation helpers shared by the queues: poison-tolerant locking.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, ignoring poisoning: every critical section in this crate leaves the state
/// consistent before anything that could panic, so a poisoned lock still holds valid data.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A one-shot "closed" flag that async tasks can wait for (the queues' shut-down signal for
/// their background tasks).
#[derive(Debug, Default)]
pub(crate) struct Closed {
    flag: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl Closed {
    /// Sets the flag and wakes every waiter.
    pub(crate) fn close(&self) {
        self.flag.store(true, std::sync::atomic::Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Whether [`close`](Self::close) was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.flag.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Returns once the flag is set.
    pub(crate) async fn closed(&self) {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.is_closed() {
            return;
        }
        notified.await;
    }
}
