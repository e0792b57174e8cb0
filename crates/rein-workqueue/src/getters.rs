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
//! A `get` that leaves fewer than [`BACKLOG`] items queued ends the worker's turn: it spends
//! what is left of tokio's cooperative budget (128 units per task poll), so the worker yields
//! at its next `get` (or other budgeted await) and the tasks queued behind it on its thread run
//! first, the producers on that thread among them. Such a worker is caught up, taking items
//! about as fast as they are added; handing it each item the moment it is added defeats
//! de-duplication: every add finds its key gone, queues it again and makes one more get and
//! done, each a turn of the queue's lock between cores. With two producers and two no-op
//! workers on two cores, spending one unit per get (a yield every 128 items) left 20% of a
//! million adds over 1,000 hot keys as gets; ending the turn leaves about 1%, as client-go's
//! goroutines do. A `get` from a longer queue is free: that worker is working through a
//! backlog, which is due anyway, and yielding there would let the producers on its thread grow
//! the backlog faster than it shrinks (with a no-op worker, a million distinct keys piled up
//! ten times slower to drain). An exhausted budget makes any `get` yield before it takes
//! anything, as tokio's own resources do.

use std::future::poll_fn;
use std::pin::pin;
use std::task::{Context, Poll, ready};

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

/// How many items must stay queued after a `get` for it to count as working through a
/// backlog, which spends no cooperative budget (see the module docs).
pub(crate) const BACKLOG: usize = 1024;

/// tokio's budget per task poll: a caught-up get spends at most this many units.
const BUDGET: usize = 128;

/// What a getter's `take` found: its result, and whether the getter is catching up.
#[derive(Debug)]
pub(crate) struct Taken<R> {
    pub(crate) result: R,
    /// Fewer than [`BACKLOG`] items are left: the get ends the worker's turn.
    pub(crate) caught_up: bool,
}

impl Getters {
    /// Waits until `take` returns a result. `take(park)` locks the queue and returns the
    /// result if it has one; otherwise, when `park` is true, it counts the getter with
    /// [`Parked::park`] under that same lock before returning `None`.
    pub(crate) async fn get<R>(&self, mut take: impl FnMut(bool) -> Option<Taken<R>>) -> R {
        let first = poll_fn(|cx| {
            // Reserves a unit of budget (yielding if there is none) before anything is
            // taken, so a get that yields here has taken nothing.
            let coop = ready!(tokio::task::coop::poll_proceed(cx));
            let taken = take(false);
            if taken.as_ref().is_some_and(|t| t.caught_up) {
                coop.made_progress();
                end_turn(cx);
            }
            Poll::Ready(taken)
        })
        .await;
        if let Some(taken) = first {
            return taken.result;
        }
        loop {
            let mut notified = pin!(self.notify.notified());
            notified.as_mut().enable();
            if let Some(taken) = take(true) {
                return taken.result;
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

/// Spends what is left of the task's cooperative budget (nothing when it is unconstrained,
/// beyond [`BUDGET`] checks), so its next budgeted await yields.
fn end_turn(cx: &mut Context<'_>) {
    for _ in 1..BUDGET {
        if !tokio::task::coop::has_budget_remaining() {
            return;
        }
        match tokio::task::coop::poll_proceed(cx) {
            Poll::Ready(coop) => coop.made_progress(),
            Poll::Pending => return,
        }
    }
}
