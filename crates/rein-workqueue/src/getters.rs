//! Getters waiting for an item: the queues' `sync.Cond`, woken one per newly available item.
//!
//! client-go's queue waits on a `sync.Cond` and calls `Signal` when it queues an item:
//! `Signal` wakes one parked waiter, or does nothing when none is parked. This module keeps
//! that contract on a tokio [`Notify`]: each queue counts, under its own lock, the getters
//! that are parked and not yet signalled ([`Parked`]); an add wakes a getter only while that
//! count is above zero, and takes one off it, so a burst of adds costs one wake-up per parked
//! getter, not one per add, and adds with no getter parked touch no shared state besides the
//! queue's lock.
//!
//! No wake-up is lost: a getter registers with the [`Notify`] *before* it counts itself under
//! the queue lock, so an add that sees the count also finds it registered; a notified getter
//! that returns without waiting (it found an item on its own) passes the notification on to
//! the next registered getter (tokio's `Notified` does so when dropped), and a woken getter
//! that finds the queue empty again counts itself again. A getter whose `get` future is
//! dropped while counted leaves one count behind: the next add wakes a getter for nothing,
//! which is harmless.
//!
//! [`get`](Getters::get) also spends one unit of tokio's cooperative budget per call: a
//! worker whose queue is always refilled by producers on another thread would otherwise never
//! yield, starving the tasks queued behind it on its own thread (tokio's channels do the
//! same).

use std::pin::pin;

use tokio::sync::Notify;

/// The wake-up side of a queue's getters (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Getters {
    notify: Notify,
}

/// How many getters are parked and not yet signalled; part of a queue's locked state.
#[derive(Debug, Default)]
pub(crate) struct Parked(usize);

impl Parked {
    /// A getter found nothing and is about to wait.
    pub(crate) fn park(&mut self) {
        self.0 += 1;
    }

    /// `available` items became available: how many parked getters to wake (each at most
    /// once). Pass the result to [`Getters::wake`] after releasing the lock.
    pub(crate) fn signal(&mut self, available: usize) -> usize {
        let woken = available.min(self.0);
        self.0 -= woken;
        woken
    }
}

impl Getters {
    /// Waits until `take` returns a result. `take(park)` locks the queue and returns the
    /// result if it has one; otherwise, when `park` is true, it counts the getter with
    /// [`Parked::park`] under that same lock before returning `None`.
    pub(crate) async fn get<R>(&self, mut take: impl FnMut(bool) -> Option<R>) -> R {
        tokio::task::coop::consume_budget().await;
        if let Some(result) = take(false) {
            return result;
        }
        loop {
            let mut notified = pin!(self.notify.notified());
            notified.as_mut().enable();
            if let Some(result) = take(true) {
                return result;
            }
            notified.await;
        }
    }

    /// Wakes `count` parked getters (a count from [`Parked::signal`]).
    pub(crate) fn wake(&self, count: usize) {
        for _ in 0..count {
            self.notify.notify_one();
        }
    }

    /// Wakes every waiting getter (shut-down).
    pub(crate) fn wake_all(&self) {
        self.notify.notify_waiters();
    }
}
