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
//! A `get` that leaves fewer than [`BACKLOG`] items queued ends the worker's turn: the same
//! task's next `get` on that thread yields first, so the tasks queued behind it on its thread
//! run, the producers on that thread among them. Such a worker is caught up, taking items
//! about as fast as they are added; handing it each item the moment it is added defeats
//! de-duplication: every add finds its key gone, queues it again and makes one more get and
//! done, each a turn of the queue's lock between cores. With two producers and two no-op
//! workers on two cores, a yield every 128 such gets (a unit of tokio's cooperative budget
//! per get) left 20% of a million adds over 1,000 hot keys as gets; ending the turn leaves
//! about 1%, as client-go's goroutines do. A `get` from a longer queue does not end the turn:
//! that worker is working through a backlog, which is due anyway, and yielding there would let
//! the producers on its thread grow the backlog faster than it shrinks (with a no-op worker, a
//! million distinct keys piled up ten times slower to drain). Every `get` that takes an item
//! from a short queue also spends a unit of budget, and an exhausted budget makes any `get`
//! yield before it takes anything, as tokio's own resources do. Outside a spawned task (in
//! `block_on`), where there is no task id to mark, a caught-up `get` spends the rest of the
//! budget instead.

use std::cell::Cell;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::{Context, Poll, ready};

use tokio::sync::Notify;
use tokio::task::Id;

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

/// tokio's budget per task poll: a caught-up get outside a task spends at most this many
/// units.
const BUDGET: usize = 128;

thread_local! {
    /// The task whose last get on this thread ended its turn: its next get yields first.
    static TURN_ENDED: Cell<Option<Id>> = const { Cell::new(None) };
}

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
            if turn_over() {
                // Yields as `yield_now` does: the scheduler wakes the task only after the
                // tasks already queued on this thread have run.
                let _ = pin!(tokio::task::yield_now()).poll(cx);
                return Poll::Pending;
            }
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

/// Whether the current task's last get on this thread ended its turn (and clears that).
fn turn_over() -> bool {
    let Some(id) = tokio::task::try_id() else {
        return false;
    };
    TURN_ENDED.with(|ended| {
        let over = ended.get() == Some(id);
        if over {
            ended.set(None);
        }
        over
    })
}

/// Ends the current task's turn: its next get on this thread yields first. Outside a task,
/// spends what is left of the cooperative budget (nothing when it is unconstrained), so the
/// next budgeted await yields.
fn end_turn(cx: &mut Context<'_>) {
    if let Some(id) = tokio::task::try_id() {
        TURN_ENDED.with(|ended| ended.set(Some(id)));
        return;
    }
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
