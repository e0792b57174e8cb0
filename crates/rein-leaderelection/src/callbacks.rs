//! What a [`LeaderElector`](super::LeaderElector) tells its user.

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

type StartedFn = dyn Fn(CancellationToken) + Send + Sync;
type StoppedFn = dyn Fn() + Send + Sync;
type NewLeaderFn = dyn Fn(&str) + Send + Sync;

/// client-go's `LeaderCallbacks`. The functions run on the elector's task and must not block:
/// spawn work instead.
#[derive(Clone)]
pub struct LeaderCallbacks {
    pub(crate) on_started_leading: Arc<StartedFn>,
    pub(crate) on_stopped_leading: Arc<StoppedFn>,
    pub(crate) on_new_leader: Option<Arc<NewLeaderFn>>,
}

impl LeaderCallbacks {
    /// `on_started_leading` gets a token that is cancelled when leadership ends (lost, or the
    /// elector stopped) — always before the lease could expire; run leader-only work until
    /// it fires. `on_stopped_leading` is called once when [`run`](super::LeaderElector::run)
    /// returns, even if this candidate never led.
    pub fn new(
        on_started_leading: impl Fn(CancellationToken) + Send + Sync + 'static,
        on_stopped_leading: impl Fn() + Send + Sync + 'static,
    ) -> Self {
        LeaderCallbacks {
            on_started_leading: Arc::new(on_started_leading),
            on_stopped_leading: Arc::new(on_stopped_leading),
            on_new_leader: None,
        }
    }

    /// Called with the holder's identity whenever the observed holder changes (including the
    /// first observation, and when it is this candidate).
    pub fn on_new_leader(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_new_leader = Some(Arc::new(f));
        self
    }
}

impl fmt::Debug for LeaderCallbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderCallbacks")
            .field("on_new_leader", &self.on_new_leader.is_some())
            .finish_non_exhaustive()
    }
}
