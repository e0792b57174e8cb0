//! The back-off before a DaemonSet deletes (and so replaces) a failed daemon Pod again on the
//! same node: kube-controller-manager's `flowcontrol.NewBackOff(1s, 15min)` keyed by
//! `<uid>/<observedGeneration>/<node>`, so a kubelet rejecting Pods is not fought in a hot loop.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

/// The first delay.
const INITIAL: Duration = Duration::from_secs(1);
/// The longest delay.
const MAX: Duration = Duration::from_secs(15 * 60);

#[derive(Debug, Clone, Copy)]
struct Entry {
    backoff: Duration,
    last_update: Instant,
}

/// The delays per key (`flowcontrol.Backoff`).
#[derive(Debug, Default)]
pub(super) struct FailedPodsBackoff {
    entries: Mutex<HashMap<String, Entry>>,
}

impl FailedPodsBackoff {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `IsInBackOffSinceUpdate`: how long `key` must still wait, if it must.
    pub(super) fn waiting(&self, key: &str, now: Instant) -> Option<Duration> {
        let entries = self.lock();
        let entry = entries.get(key)?;
        let since = now.saturating_duration_since(entry.last_update);
        (since < entry.backoff).then(|| entry.backoff - since)
    }

    /// `Next`: records an attempt now, doubling the delay (back to the first one after a
    /// quiet spell of twice the longest delay).
    pub(super) fn next(&self, key: &str, now: Instant) {
        let mut entries = self.lock();
        let backoff = match entries.get(key) {
            Some(e) if now.saturating_duration_since(e.last_update) <= 2 * MAX => {
                (e.backoff * 2).min(MAX)
            }
            _ => INITIAL,
        };
        entries.insert(
            key.to_owned(),
            Entry {
                backoff,
                last_update: now,
            },
        );
        // kube's periodic GC, folded in: drop entries quiet for twice the longest delay.
        entries.retain(|_, e| now.saturating_duration_since(e.last_update) <= 2 * MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_delay_doubles_and_expires() {
        let backoff = FailedPodsBackoff::default();
        let start = Instant::now();
        assert_eq!(backoff.waiting("k", start), None);
        backoff.next("k", start);
        assert_eq!(backoff.waiting("k", start), Some(INITIAL));
        let later = start + INITIAL;
        assert_eq!(backoff.waiting("k", later), None);
        backoff.next("k", later);
        assert_eq!(backoff.waiting("k", later), Some(2 * INITIAL));
    }
}
