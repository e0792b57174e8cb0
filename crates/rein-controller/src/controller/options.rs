//! Controller options and their defaults (controller-runtime's `controller.Options`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::queue::RateLimiter;
use crate::reconcile::Request;

/// How a controller runs. `ControllerOptions::default()` gives controller-runtime's defaults.
#[derive(Clone)]
pub struct ControllerOptions {
    /// How many reconciles run at once (never two for one key). Default 1; 0 means 1.
    pub max_concurrent_reconciles: usize,
    /// How long sources may take to start and sync before `start` fails. Default 2 min.
    pub cache_sync_timeout: Duration,
    /// Catch panics in reconciles, count them and retry with backoff. Default true; when false
    /// the panic propagates (the controller's worker dies).
    pub recover_panic: bool,
    /// Whether the controller runs only on the leader. Default true.
    pub need_leader_election: bool,
    /// The rate limiter behind retries of errors and `Action::requeue()`. Default (`None`):
    /// per-request exponential backoff, 5 ms doubling to 1000 s (controller-runtime's default
    /// with the priority queue); e.g. `rein_workqueue::default_controller_rate_limiter()` adds
    /// an overall 10 qps / 100 burst bucket.
    pub rate_limiter: Option<Arc<dyn RateLimiter<Request>>>,
    /// Skip the unique-name check (among a manager's controllers, or the process's for
    /// controllers built by hand), e.g. for a test that builds the same controller twice.
    pub skip_name_validation: bool,
    /// Each reconcile gets at most this long (then fails and is retried). Default none.
    pub reconciliation_timeout: Option<Duration>,
    /// How long stop waits for running reconciles to finish before abandoning them.
    /// Default 30 s.
    pub graceful_shutdown_timeout: Duration,
    /// Start the sources (and so sync their caches) on a replica that does not lead yet,
    /// when the manager warms its leader-only runnables up (controller-runtime's
    /// `EnableWarmup`): once elected, the controller reconciles at once instead of first
    /// listing everything. Requests queue up meanwhile; nothing is reconciled before the
    /// controller starts. Default false.
    pub enable_warmup: bool,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        ControllerOptions {
            max_concurrent_reconciles: 1,
            cache_sync_timeout: Duration::from_secs(120),
            recover_panic: true,
            need_leader_election: true,
            rate_limiter: None,
            skip_name_validation: false,
            reconciliation_timeout: None,
            graceful_shutdown_timeout: Duration::from_secs(30),
            enable_warmup: false,
        }
    }
}

impl fmt::Debug for ControllerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerOptions")
            .field("max_concurrent_reconciles", &self.max_concurrent_reconciles)
            .field("cache_sync_timeout", &self.cache_sync_timeout)
            .field("recover_panic", &self.recover_panic)
            .field("need_leader_election", &self.need_leader_election)
            .field("rate_limiter", &self.rate_limiter.is_some())
            .field("skip_name_validation", &self.skip_name_validation)
            .field("reconciliation_timeout", &self.reconciliation_timeout)
            .field("graceful_shutdown_timeout", &self.graceful_shutdown_timeout)
            .field("enable_warmup", &self.enable_warmup)
            .finish()
    }
}
