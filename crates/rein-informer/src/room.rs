//! `Room`: the informer pipeline's one back-pressure mechanism.
//!
//! Each buffer between two stages of the pipeline — the queue between the reflector and the
//! process loop, and each handler's buffer between the process loop and the handler — counts
//! what it holds against a soft capacity. Writers never block and nothing is refused; the
//! stage that fills the buffer awaits [`Room::wait`] before it takes more *input* (the
//! reflector before it reads the next watch event, the process loop before it pops the next
//! batch). So a slow handler slows the process loop, which lets the queue fill, which stops the
//! reflector reading: a backlog waits on the connection as bytes, never in memory as decoded
//! objects, and every buffer stays within about one batch of its capacity.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// A soft capacity over a count, with a wait for room. See the module docs.
#[derive(Debug)]
pub(crate) struct Room {
    /// At or above this count, [`Room::wait`] waits; 0 means never.
    capacity: usize,
    used: AtomicUsize,
    waiters: AtomicUsize,
    closed: AtomicBool,
    notify: Notify,
}

impl Room {
    /// A room of `capacity` (0: unbounded, [`Room::wait`] always resolves at once).
    pub(crate) fn new(capacity: usize) -> Self {
        Room {
            capacity,
            used: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            notify: Notify::new(),
        }
    }

    /// What the buffer holds now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    /// True while a writer should wait.
    pub(crate) fn is_full(&self) -> bool {
        self.capacity != 0 && self.used() >= self.capacity && !self.closed.load(Ordering::SeqCst)
    }

    /// `n` more entries are held.
    pub(crate) fn fill(&self, n: usize) {
        self.used.fetch_add(n, Ordering::SeqCst);
    }

    /// `n` entries were taken out; wakes the waiters once there is room.
    pub(crate) fn drain(&self, n: usize) {
        let before = self.used.fetch_sub(n, Ordering::SeqCst);
        if before.saturating_sub(n) < self.capacity && self.waiters.load(Ordering::SeqCst) > 0 {
            self.notify.notify_waiters();
        }
    }

    /// Sets the count outright (for a buffer that knows its length under its own lock).
    pub(crate) fn set(&self, used: usize) {
        self.used.store(used, Ordering::SeqCst);
        if used < self.capacity && self.waiters.load(Ordering::SeqCst) > 0 {
            self.notify.notify_waiters();
        }
    }

    /// Wakes every waiter for good: the buffer's consumer is gone (closed or removed).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Resolves once the buffer holds less than its capacity, or is closed.
    pub(crate) async fn wait(&self) {
        while self.is_full() {
            let room = self.notify.notified();
            tokio::pin!(room);
            // Registered before the re-check, so a drain between the two is not missed.
            room.as_mut().enable();
            self.waiters.fetch_add(1, Ordering::SeqCst);
            if self.is_full() {
                room.await;
            }
            self.waiters.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn waits_until_drained_below_capacity() {
        let room = Arc::new(Room::new(2));
        room.fill(2);
        assert!(room.is_full());
        let waiter = {
            let room = room.clone();
            tokio::spawn(async move { room.wait().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "full: the writer waits");
        room.drain(1);
        waiter.await.unwrap();
        assert_eq!(room.used(), 1);
    }

    #[tokio::test]
    async fn unbounded_and_closed_rooms_never_wait() {
        let unbounded = Room::new(0);
        unbounded.fill(1_000_000);
        unbounded.wait().await;
        let closed = Arc::new(Room::new(1));
        closed.fill(5);
        let waiter = {
            let closed = closed.clone();
            tokio::spawn(async move { closed.wait().await })
        };
        tokio::task::yield_now().await;
        closed.close();
        waiter.await.unwrap();
    }

    #[tokio::test]
    async fn set_wakes_waiters_when_it_makes_room() {
        let room = Arc::new(Room::new(3));
        room.set(10);
        let waiter = {
            let room = room.clone();
            tokio::spawn(async move { room.wait().await })
        };
        tokio::task::yield_now().await;
        room.set(2);
        waiter.await.unwrap();
    }
}
