//! kube's `pkg/controller/job/backoff_utils.go`: the back-off before a Job replaces failed
//! Pods — 10 s after the first failure since the last success, doubling up to 6 min.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use rein_scheme::ObjectKey;

/// `DefaultJobPodFailureBackOff`.
const DEFAULT_BACKOFF: Duration = Duration::from_secs(10);
/// `MaxJobPodFailureBackOff`.
const MAX_BACKOFF: Duration = Duration::from_secs(360);

/// Failures since the last success of one Job, and when the last one happened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct BackoffRecord {
    failures_after_last_success: u32,
    last_failure_time: Option<Timestamp>,
}

impl BackoffRecord {
    /// `getRemainingTime`: how long Pod creation must still wait.
    pub(super) fn remaining(&self, now: Timestamp) -> Duration {
        let Some(last) = self.last_failure_time else {
            return Duration::ZERO;
        };
        if self.failures_after_last_success == 0 {
            return Duration::ZERO;
        }
        let mut backoff = DEFAULT_BACKOFF;
        for _ in 1..self.failures_after_last_success {
            backoff = backoff.saturating_mul(2);
            if backoff >= MAX_BACKOFF {
                backoff = MAX_BACKOFF;
                break;
            }
        }
        let elapsed = Duration::try_from(now.duration_since(last)).unwrap_or_default();
        backoff.saturating_sub(elapsed)
    }
}

/// The records of every Job, kept in memory as kube's `backoffStore`.
#[derive(Debug, Default)]
pub(super) struct BackoffStore {
    records: Mutex<HashMap<ObjectKey, BackoffRecord>>,
}

impl BackoffStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, BackoffRecord>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `newBackoffRecord`: the record after the Pods that finished since the last count.
    pub(super) fn next(
        &self,
        key: &ObjectKey,
        succeeded: &[&Pod],
        failed: &[&Pod],
    ) -> BackoffRecord {
        let mut record = self.lock().get(key).copied().unwrap_or_default();
        let mut succeeded: Vec<Timestamp> = succeeded.iter().map(|p| finished_time(p)).collect();
        let mut failed: Vec<Timestamp> = failed.iter().map(|p| finished_time(p)).collect();
        succeeded.sort();
        failed.sort();
        match succeeded.last() {
            None => {
                if let Some(last) = failed.last() {
                    record.failures_after_last_success +=
                        u32::try_from(failed.len()).unwrap_or(u32::MAX);
                    record.last_failure_time = Some(*last);
                }
            }
            Some(last_success) => {
                record = BackoffRecord::default();
                for failure in failed.iter().rev() {
                    if failure <= last_success {
                        break;
                    }
                    record.last_failure_time.get_or_insert(*failure);
                    record.failures_after_last_success += 1;
                }
            }
        }
        record
    }

    /// `updateBackoffRecord`.
    pub(super) fn store(&self, key: &ObjectKey, record: BackoffRecord) {
        self.lock().insert(key.clone(), record);
    }

    /// `removeBackoffRecord`.
    pub(super) fn remove(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }
}

/// `getFinishedTime`: when the last container terminated, else when the Pod stopped being
/// ready, else its deletion, else its creation.
pub(super) fn finished_time(pod: &Pod) -> Timestamp {
    let status = pod.status.as_ref();
    let from_containers = status
        .into_iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0)
        .max();
    let from_ready = || {
        status?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "Ready" && c.status == "False")?
            .last_transition_time
            .as_ref()
            .map(|t| t.0)
    };
    from_containers
        .or_else(from_ready)
        .or_else(|| pod.metadata.deletion_timestamp.as_ref().map(|t| t.0))
        .or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .unwrap_or_else(Timestamp::now)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::SignedDuration;

    use super::*;

    #[test]
    fn the_backoff_doubles_from_ten_seconds_up_to_six_minutes() {
        let now = Timestamp::now();
        let record = |failures| BackoffRecord {
            failures_after_last_success: failures,
            last_failure_time: Some(now),
        };
        assert_eq!(record(0).remaining(now), Duration::ZERO);
        assert_eq!(record(1).remaining(now), Duration::from_secs(10));
        assert_eq!(record(3).remaining(now), Duration::from_secs(40));
        assert_eq!(record(20).remaining(now), Duration::from_secs(360));
        let later = now + SignedDuration::from_secs(4);
        assert_eq!(record(1).remaining(later), Duration::from_secs(6));
    }
}
