//! The leader-election algorithm of client-go's `LeaderElector`: acquire, renew, release.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use rand::Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Error, LeaderCallbacks, LeaderElectionConfig, LeaderElectionRecord, LeaseLock};

/// Runs client-go's leader election on a [`LeaseLock`].
///
/// A cheap handle (clones share state). [`run`](Self::run) competes for the lease until it is
/// acquired, calls `on_started_leading` with a token, renews every `retry_period`, and cancels
/// that token as soon as a renewal has not succeeded within `renew_deadline` of the start of
/// the last successful one — which is before `lease_duration` has passed, the earliest moment
/// another candidate may take the lease over. So two leaders never act at once, provided
/// leader-only work stops when its token fires.
#[derive(Clone)]
pub struct LeaderElector {
    inner: Arc<Inner>,
}

struct Inner {
    config: LeaderElectionConfig,
    lock: LeaseLock,
    callbacks: LeaderCallbacks,
    state: Mutex<Observed>,
}

/// What this candidate has seen of the lease.
#[derive(Default)]
struct Observed {
    record: Option<LeaderElectionRecord>,
    raw: Vec<u8>,
    /// Local time the record was last seen to change (never a timestamp from the record).
    time: Option<Instant>,
    /// Start of our last successful acquire or renew.
    last_renew: Option<Instant>,
    reported_leader: Option<String>,
}

/// Why a renew loop ended.
enum RenewEnd {
    Stopped,
    Lost,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.inner.config)
            .field("lock", &self.inner.lock)
            .field("leader", &self.leader())
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// Validates `config` (client-go's rules) and builds an elector.
    pub fn new(
        config: LeaderElectionConfig,
        lock: LeaseLock,
        callbacks: LeaderCallbacks,
    ) -> Result<Self, Error> {
        config.validate()?;
        if lock.identity().is_empty() {
            return Err(Error::InvalidConfig {
                reason: "Lock identity is empty",
            });
        }
        Ok(LeaderElector {
            inner: Arc::new(Inner {
                config,
                lock,
                callbacks,
                state: Mutex::new(Observed::default()),
            }),
        })
    }

    /// Competes for the lease until `stop` is cancelled or leadership is lost, then returns.
    ///
    /// `on_stopped_leading` is always called on the way out (also if the future is dropped).
    /// With `release_on_cancel` the lease is released after the leader token was cancelled,
    /// but only when `stop` ended the term: a leader that *lost* the lease (its renew deadline
    /// passed) never releases it, because its leader-only work may still be winding down; the
    /// lease then expires by itself, `lease_duration - renew_deadline` after the deadline.
    /// Call once per elector; a manager that lost the lease is expected to exit.
    pub async fn run(&self, stop: CancellationToken) {
        let _stopped = StoppedGuard(self.inner.callbacks.clone());
        if !self.acquire(&stop).await {
            return;
        }
        let leader = stop.child_token();
        let leader_guard = leader.clone().drop_guard();
        (self.inner.callbacks.on_started_leading)(leader);
        let end = self.renew(&stop).await;
        drop(leader_guard);
        match end {
            RenewEnd::Stopped => {
                tracing::info!(lease = %self.describe(), "stopped leading");
                if self.inner.config.release_on_cancel {
                    self.release().await;
                }
            }
            RenewEnd::Lost => {
                tracing::warn!(lease = %self.describe(), "leader election lost: renew deadline passed")
            }
        }
    }

    /// Whether this candidate is the holder it last observed.
    pub fn is_leader(&self) -> bool {
        let state = self.inner.state.lock();
        state
            .record
            .as_ref()
            .is_some_and(|r| r.holder_identity == self.inner.lock.identity())
    }

    /// The last observed holder, if any.
    pub fn leader(&self) -> Option<String> {
        let state = self.inner.state.lock();
        state
            .record
            .as_ref()
            .map(|r| r.holder_identity.clone())
            .filter(|h| !h.is_empty())
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        self.inner.lock.identity()
    }

    /// client-go's `Check` (the healthz adaptor): an error if we believe we lead but have not
    /// renewed for longer than the lease duration plus `max_tolerable_expired_lease`.
    pub fn check(&self, max_tolerable_expired_lease: Duration) -> Result<(), Error> {
        if !self.is_leader() {
            return Ok(());
        }
        let last = self.inner.state.lock().last_renew;
        let Some(last) = last else { return Ok(()) };
        let since = last.elapsed();
        let tolerated = self.inner.config.lease_duration + max_tolerable_expired_lease;
        if since > tolerated {
            return Err(Error::LeaseExpired {
                lease: self.describe(),
                since,
                tolerated,
            });
        }
        Ok(())
    }

    fn describe(&self) -> String {
        self.inner.lock.describe()
    }

    /// Tries until the lease is ours (true) or `stop` fires (false); jittered sliding retries.
    async fn acquire(&self, stop: &CancellationToken) -> bool {
        tracing::info!(lease = %self.describe(), identity = self.identity(), "attempting to acquire leader lease");
        loop {
            let acquired = tokio::select! {
                biased;
                _ = stop.cancelled() => return false,
                ok = self.try_acquire_or_renew() => ok,
            };
            self.report_transition();
            if acquired {
                tracing::info!(lease = %self.describe(), identity = self.identity(), "successfully acquired lease");
                return true;
            }
            let backoff = self.inner.config.acquire_backoff(rand::rng().random());
            tokio::select! {
                _ = stop.cancelled() => return false,
                _ = tokio::time::sleep(backoff) => {}
            }
        }
    }

    /// Renews every `retry_period` until `stop` fires or a renewal misses its deadline.
    async fn renew(&self, stop: &CancellationToken) -> RenewEnd {
        let config = &self.inner.config;
        loop {
            let last = self
                .inner
                .state
                .lock()
                .last_renew
                .unwrap_or_else(Instant::now);
            let deadline = last + config.renew_deadline;
            let mut next = Instant::now() + config.retry_period;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return RenewEnd::Stopped,
                    _ = tokio::time::sleep_until(next.min(deadline)) => {}
                }
                if Instant::now() >= deadline {
                    return RenewEnd::Lost;
                }
                let attempt = tokio::time::timeout_at(deadline, self.try_acquire_or_renew());
                let renewed = tokio::select! {
                    _ = stop.cancelled() => return RenewEnd::Stopped,
                    result = attempt => result.unwrap_or(false),
                };
                self.report_transition();
                if renewed {
                    break;
                }
                if self
                    .leader()
                    .is_some_and(|holder| holder != self.identity())
                {
                    // Someone else wrote the lease: they believe they lead. Stop at once.
                    return RenewEnd::Lost;
                }
                next = Instant::now() + config.retry_period;
            }
        }
    }

    /// Gives the lease up: empty holder, one-second duration. Bounded by `renew_deadline`.
    async fn release(&self) -> bool {
        let config = &self.inner.config;
        let deadline = Instant::now() + config.renew_deadline;
        loop {
            let attempt = tokio::time::timeout_at(deadline, self.try_release());
            match attempt.await {
                Ok(true) => {
                    tracing::info!(lease = %self.describe(), "released leader lease");
                    return true;
                }
                Ok(false) => {}
                Err(_) => break,
            }
            if Instant::now() + config.retry_period >= deadline {
                break;
            }
            tokio::time::sleep(config.retry_period).await;
        }
        tracing::warn!(lease = %self.describe(), "failed to release leader lease");
        false
    }

    async fn try_release(&self) -> bool {
        let lock = &self.inner.lock;
        let record = match self.timed("reading", lock.get()).await {
            Ok(Some(record)) => record,
            Ok(None) => return true,
            Err(err) => {
                tracing::debug!(error = %err, "release: reading lease failed");
                return false;
            }
        };
        if record.holder_identity != lock.identity() {
            return true;
        }
        let now = Some(MicroTime(Timestamp::now()));
        let released = LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: now.clone(),
            renew_time: now,
            leader_transitions: record.leader_transitions,
            ..LeaderElectionRecord::default()
        };
        match self.timed("updating", lock.update(&released)).await {
            Ok(()) => {
                self.set_observed(released, Instant::now(), false);
                true
            }
            Err(err) => {
                tracing::debug!(error = %err, "release: updating lease failed");
                false
            }
        }
    }

    /// One round of client-go's `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&self) -> bool {
        let config = &self.inner.config;
        let lock = &self.inner.lock;
        let me = lock.identity();
        let started = Instant::now();
        let now = Some(MicroTime(Timestamp::now()));
        let mut record = LeaderElectionRecord {
            holder_identity: me.to_owned(),
            lease_duration_seconds: config.lease_duration_seconds(),
            acquire_time: now.clone(),
            renew_time: now,
            ..LeaderElectionRecord::default()
        };

        // 1. Fast path: we hold a lease we observed as valid; update it directly.
        let fast_path = {
            let state = self.inner.state.lock();
            match (&state.record, state.time) {
                (Some(observed), Some(time))
                    if observed.holder_identity == me && time + config.lease_duration > started =>
                {
                    Some(observed.clone())
                }
                _ => None,
            }
        };
        if let Some(observed) = fast_path {
            record.acquire_time = observed.acquire_time.clone();
            record.leader_transitions = observed.leader_transitions;
            match self.timed("updating", lock.update(&record)).await {
                Ok(()) => {
                    self.set_observed(record, started, true);
                    return true;
                }
                Err(err) => {
                    tracing::debug!(error = %err, "fast-path renew failed, trying the slow path")
                }
            }
        }

        // 2. Read the lease; create it if missing.
        let old = match self.timed("reading", lock.get()).await {
            Ok(Some(old)) => old,
            Ok(None) => {
                return match self.timed("creating", lock.create(&record)).await {
                    Ok(()) => {
                        self.set_observed(record, started, true);
                        true
                    }
                    Err(err) => {
                        tracing::debug!(error = %err, "creating lease failed");
                        false
                    }
                };
            }
            Err(err) => {
                tracing::debug!(error = %err, "reading lease failed");
                return false;
            }
        };

        // 3. Note a change of the record at the local time the read *returned* (client-go's
        //    `setObservedRecord`). Not `started`: a slow read can return a renewal the holder
        //    began after `started`, and dating it back would let us judge the lease expired
        //    up to one request timeout before the holder's renew deadline.
        let observed_time = {
            let mut state = self.inner.state.lock();
            let raw = old.raw();
            if state.record.is_none() || state.raw != raw {
                state.record = Some(old.clone());
                state.raw = raw;
                state.time = Some(Instant::now());
            }
            state.time.unwrap_or(started)
        };

        // 4. Someone else holds a lease that has not expired by our own observation.
        let lease = Duration::from_secs(u64::try_from(old.lease_duration_seconds).unwrap_or(0));
        if !old.holder_identity.is_empty()
            && old.holder_identity != me
            && observed_time + lease > started
        {
            tracing::trace!(holder = %old.holder_identity, "lock is held and has not yet expired");
            return false;
        }

        // 5. Keep acquire time and transitions when renewing; count a transition otherwise.
        if old.holder_identity == me {
            record.acquire_time = old.acquire_time.clone();
            record.leader_transitions = old.leader_transitions;
        } else {
            record.leader_transitions = old.leader_transitions + 1;
        }

        // 6. Write it; a conflict means another candidate won this round.
        match self.timed("updating", lock.update(&record)).await {
            Ok(()) => {
                self.set_observed(record, started, true);
                true
            }
            Err(err) => {
                tracing::debug!(error = %err, "updating lease failed");
                false
            }
        }
    }

    async fn timed<T>(
        &self,
        action: &'static str,
        fut: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        match tokio::time::timeout(self.inner.config.request_timeout(), fut).await {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout {
                action,
                lease: self.describe(),
            }),
        }
    }

    fn set_observed(&self, record: LeaderElectionRecord, at: Instant, renewed: bool) {
        let mut state = self.inner.state.lock();
        state.raw = record.raw();
        state.record = Some(record);
        state.time = Some(at);
        if renewed {
            state.last_renew = Some(at);
        }
    }

    fn report_transition(&self) {
        let new_leader = {
            let mut state = self.inner.state.lock();
            let holder = state
                .record
                .as_ref()
                .map(|r| r.holder_identity.clone())
                .filter(|h| !h.is_empty());
            match holder {
                Some(holder) if state.reported_leader.as_ref() != Some(&holder) => {
                    state.reported_leader = Some(holder.clone());
                    Some(holder)
                }
                _ => None,
            }
        };
        if let Some(holder) = new_leader {
            tracing::info!(lease = %self.describe(), leader = %holder, "new leader elected");
            if let Some(f) = &self.inner.callbacks.on_new_leader {
                f(&holder);
            }
        }
    }
}

/// Calls `on_stopped_leading` when `run` ends, however it ends.
struct StoppedGuard(LeaderCallbacks);

impl Drop for StoppedGuard {
    fn drop(&mut self) {
        (self.0.on_stopped_leading)();
    }
}
