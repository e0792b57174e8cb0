//! Waiting for caches to sync (client-go's `WaitForCacheSync`).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Anything with a "has the initial list been delivered" check.
pub trait HasSynced: Send + Sync {
    /// True once synced.
    fn has_synced(&self) -> bool;
}

/// How often [`wait_for_cache_sync`] polls.
pub const SYNC_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Polls every 100 ms (immediately first) until every check is synced (`true`) or `stop` is
/// cancelled (`false`).
pub async fn wait_for_cache_sync(stop: &CancellationToken, checks: &[&dyn HasSynced]) -> bool {
    loop {
        if checks.iter().all(|c| c.has_synced()) {
            return true;
        }
        tokio::select! {
            _ = stop.cancelled() => return false,
            _ = tokio::time::sleep(SYNC_POLL_INTERVAL) => {}
        }
    }
}
