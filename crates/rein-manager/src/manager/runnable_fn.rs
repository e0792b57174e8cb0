//! `RunnableFn`: a closure as a [`Runnable`] (controller-runtime's `RunnableFunc`).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use rein_controller::BoxError;
use rein_controller::Runnable;
use tokio_util::sync::CancellationToken;

type StartFn = dyn Fn(CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> + Send + Sync;

/// A runnable made of an async closure that runs until its token is cancelled.
///
/// Needs leader election by default, like any runnable; call
/// [`without_leader_election`](Self::without_leader_election) for work every replica does.
#[derive(Clone)]
pub struct RunnableFn {
    start: Arc<StartFn>,
    needs_leader_election: bool,
}

impl RunnableFn {
    /// Wraps `f`; it gets the stop token and must return soon after it is cancelled.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        RunnableFn {
            start: Arc::new(move |stop| Box::pin(f(stop))),
            needs_leader_election: true,
        }
    }

    /// Runs on every replica, leader or not (servers, caches, user tasks).
    pub fn without_leader_election(mut self) -> Self {
        self.needs_leader_election = false;
        self
    }
}

impl fmt::Debug for RunnableFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunnableFn")
            .field("needs_leader_election", &self.needs_leader_election)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Runnable for RunnableFn {
    async fn start(&self, stop: CancellationToken) -> Result<(), BoxError> {
        (self.start)(stop).await
    }

    fn needs_leader_election(&self) -> bool {
        self.needs_leader_election
    }
}
