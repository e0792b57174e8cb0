//! Leader-election timing and its validation (client-go `LeaderElectionConfig`).

use std::time::Duration;

use super::Error;

/// client-go's `JitterFactor`: acquire retries wait `[1, 2.2) × retry_period`.
pub const JITTER_FACTOR: f64 = 1.2;

/// Timing and behaviour of a [`LeaderElector`](super::LeaderElector).
///
/// The defaults are the conventional 15 s / 10 s / 2 s that controller-runtime applies.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaderElectionConfig {
    /// How long non-leaders wait, after last observing a change of the lease, before they may
    /// take it over. Stored in the Lease in whole seconds, so at least one second.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before it gives up leadership. Measured
    /// from the start of the last successful renewal, so a leader that cannot renew stops
    /// before anyone else may acquire the lease.
    pub renew_deadline: Duration,
    /// How long to wait between attempts.
    pub retry_period: Duration,
    /// Give the lease up (empty holder, 1 s duration) when stopped, so a successor need not
    /// wait for it to expire. Only safe if all leader-only work has stopped before (the
    /// manager stops its leader-only runnables first). A lost lease is never released.
    pub release_on_cancel: bool,
    /// A name for logs and metrics.
    pub name: String,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: false,
            name: String::new(),
        }
    }
}

impl LeaderElectionConfig {
    /// Checks client-go's rules, in client-go's order and with its messages.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |reason| Err(Error::InvalidConfig { reason });
        if self.lease_duration <= self.renew_deadline {
            return invalid("leaseDuration must be greater than renewDeadline");
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return invalid("renewDeadline must be greater than retryPeriod*JitterFactor");
        }
        if self.lease_duration.is_zero() {
            return invalid("leaseDuration must be greater than zero");
        }
        if self.renew_deadline.is_zero() {
            return invalid("renewDeadline must be greater than zero");
        }
        if self.retry_period.is_zero() {
            return invalid("retryPeriod must be greater than zero");
        }
        if self.lease_duration < Duration::from_secs(1) {
            return invalid(
                "leaseDuration must be at least one second (Leases store whole seconds)",
            );
        }
        Ok(())
    }

    /// The lease duration as stored in the Lease (whole seconds, truncated like client-go).
    pub(crate) fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }

    /// The wait before acquire attempt n+1: `retry_period × (1 + unit × JITTER_FACTOR)` for a
    /// `unit` drawn from `[0, 1)`, i.e. within `[1, 2.2) × retry_period` (`wait.JitterUntil`).
    pub(crate) fn acquire_backoff(&self, unit: f64) -> Duration {
        self.retry_period
            .mul_f64(1.0 + unit.clamp(0.0, 1.0) * JITTER_FACTOR)
    }

    /// client-go's per-request client timeout for the lock: `max(1 s, renew_deadline / 2)`.
    pub(crate) fn request_timeout(&self) -> Duration {
        (self.renew_deadline / 2).max(Duration::from_secs(1))
    }
}
