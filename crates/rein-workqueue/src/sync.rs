//! Small synchronisation helpers shared by the queues: poison-tolerant locking that spins
//! before it blocks, cache-line padding, and a "closed" flag.

use std::sync::{Mutex, MutexGuard, TryLockError};

/// Locks `mutex`, ignoring poisoning: every critical section in this crate leaves the state
/// consistent before anything that could panic, so a poisoned lock still holds valid data.
///
/// The queues' critical sections are short (a table probe and a few writes), so a lock that
/// is held is usually free again within a fraction of a microsecond: this tries again after
/// 8, 16, … 256 spin-loop hints (a few microseconds in all; waiting longer between tries
/// leaves the lock's cache line with its holder), then yields its thread a few times (a
/// holder that was preempted may run), and only then blocks. Blocking at once made
/// two cores taking turns on a queue pay a futex wait and wake-up per hand-off (std's mutex,
/// once a thread has waited, makes a wake-up call on every unlock until the lock is next
/// uncontended).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    for round in 0..SPIN_ROUNDS + YIELD_ROUNDS {
        match mutex.try_lock() {
            Ok(guard) => return guard,
            Err(TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
            Err(TryLockError::WouldBlock) if round < SPIN_ROUNDS => {
                for _ in 0..8u32 << round {
                    std::hint::spin_loop();
                }
            }
            Err(TryLockError::WouldBlock) => std::thread::yield_now(),
        }
    }
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How many times [`lock`] spins (8, 16, 32, … spin-loop hints) and then yields its thread
/// before it blocks.
const SPIN_ROUNDS: u32 = 6;
const YIELD_ROUNDS: u32 = 4;

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

/// Keeps a value on cache lines of its own (128 bytes: two 64-byte lines, as adjacent-line
/// prefetchers pair them), so that writes to it do not slow down readers of its neighbours.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub(crate) T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::lock;

    #[test]
    fn a_poisoned_lock_still_locks() {
        let mutex = Arc::new(Mutex::new(1));
        let poisoner = mutex.clone();
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.lock().unwrap();
            panic!("poison the lock");
        })
        .join();
        assert!(mutex.is_poisoned());
        *lock(&mutex) += 1;
        assert_eq!(*lock(&mutex), 2);
    }

    #[test]
    fn a_held_lock_is_waited_for() {
        let mutex = Arc::new(Mutex::new(0));
        let guard = lock(&mutex);
        let waiter = std::thread::spawn({
            let mutex = mutex.clone();
            move || *lock(&mutex) += 1
        });
        // The waiter spins, then blocks, until the guard is dropped.
        std::thread::yield_now();
        drop(guard);
        waiter.join().unwrap();
        assert_eq!(*lock(&mutex), 1);
    }
}
