//! Waiting for caches to sync (client-go's `WaitForCacheSync`), woken by a signal rather than polling.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Anything with a "has the initial list been delivered" check.
pub trait HasSynced: Send + Sync {
    /// True once synced.
    fn has_synced(&self) -> bool;

    /// Resolves once [`HasSynced::has_synced`] is true. Informers, their controllers, handler
    /// registrations and the factory resolve from a [`SyncedSignal`] the moment they sync; the
    /// default implementation, for other implementors, polls every [`SYNC_POLL_INTERVAL`].
    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            while !self.has_synced() {
                tokio::time::sleep(SYNC_POLL_INTERVAL).await;
            }
        })
    }
}

/// How often the default [`HasSynced::wait_synced`] polls (only for implementors without a
/// signal).
pub const SYNC_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Waits until every check is synced (`true`) or `stop` is cancelled (`false`). Returns as
/// soon as the last check syncs: informers signal it, nothing polls them.
pub async fn wait_for_cache_sync(stop: &CancellationToken, checks: &[&dyn HasSynced]) -> bool {
    let all = futures::future::join_all(checks.iter().map(|c| c.wait_synced()));
    tokio::select! {
        biased;
        _ = all => true,
        _ = stop.cancelled() => false,
    }
}

/// A latch that turns true once and can be awaited: how a queue announces that its initial
/// contents have been processed. Clones share the latch.
#[derive(Clone)]
pub struct SyncedSignal {
    tx: Arc<watch::Sender<bool>>,
}

impl fmt::Debug for SyncedSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncedSignal")
            .field("set", &self.is_set())
            .finish()
    }
}

impl Default for SyncedSignal {
    fn default() -> Self {
        Self::new()
    }
}

impl SyncedSignal {
    /// An unset latch.
    pub fn new() -> Self {
        SyncedSignal {
            tx: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Sets the latch and wakes every waiter (idempotent).
    pub fn set(&self) {
        self.tx.send_if_modified(|v| !std::mem::replace(v, true));
    }

    /// True once set.
    pub fn is_set(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once the latch is set.
    pub async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = rx.wait_for(|set| *set).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Latch(SyncedSignal);

    impl HasSynced for Latch {
        fn has_synced(&self) -> bool {
            self.0.is_set()
        }
        fn wait_synced(&self) -> BoxFuture<'_, ()> {
            Box::pin(self.0.wait())
        }
    }

    /// The wait ends the moment the signal is set: on the paused clock, without time passing
    /// (a 100 ms poll would have advanced it).
    #[tokio::test(start_paused = true)]
    async fn wakes_on_the_signal_without_the_clock_moving() {
        let a = Arc::new(Latch(SyncedSignal::new()));
        let b = Arc::new(Latch(SyncedSignal::new()));
        let start = tokio::time::Instant::now();
        let waiter = {
            let (a, b) = (a.clone(), b.clone());
            tokio::spawn(async move {
                wait_for_cache_sync(&CancellationToken::new(), &[a.as_ref(), b.as_ref()]).await
            })
        };
        tokio::task::yield_now().await;
        a.0.set();
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "one of two synced");
        b.0.set();
        assert!(waiter.await.unwrap());
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn stop_ends_the_wait() {
        let a = Latch(SyncedSignal::new());
        let stop = CancellationToken::new();
        stop.cancel();
        assert!(!wait_for_cache_sync(&stop, &[&a]).await);
        a.0.set();
        assert!(
            wait_for_cache_sync(&stop, &[&a]).await,
            "synced wins over stop"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn default_wait_polls() {
        struct After(tokio::time::Instant);
        impl HasSynced for After {
            fn has_synced(&self) -> bool {
                tokio::time::Instant::now() >= self.0
            }
        }
        let at = tokio::time::Instant::now() + Duration::from_millis(250);
        assert!(wait_for_cache_sync(&CancellationToken::new(), &[&After(at)]).await);
        assert!(tokio::time::Instant::now() >= at);
    }
}
