//! The `reconcile` package: requests, actions, the `Reconciler` trait and terminal errors.

mod error;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rein_scheme::ObjectKey;
use tokio_util::sync::CancellationToken;

pub use error::{BoxError, TerminalError, is_terminal};

/// What to reconcile: the key (namespace and name) of one object.
///
/// A request carries no event type and no object: a reconciler reads the current state and
/// drives the world towards it, so a burst of events for one key collapses into one request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Request {
    /// The object's key.
    pub key: ObjectKey,
}

impl Request {
    /// A request for a namespaced object.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Request {
            key: ObjectKey::new(namespace, name),
        }
    }

    /// A request for a cluster-scoped object.
    pub fn cluster_scoped(name: impl Into<String>) -> Self {
        Request {
            key: ObjectKey::cluster_scoped(name),
        }
    }

    /// A request for `obj`'s key.
    pub fn from_object<K: kube_client::Resource>(obj: &K) -> Self {
        Request {
            key: ObjectKey::from_object(obj),
        }
    }

    /// The namespace, or `None` for a cluster-scoped object.
    pub fn namespace(&self) -> Option<&str> {
        self.key.namespace.as_deref()
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.key.name
    }
}

impl From<ObjectKey> for Request {
    fn from(key: ObjectKey) -> Self {
        Request { key }
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.key.fmt(f)
    }
}

/// What the controller does with a request after a successful reconcile (controller-runtime's
/// `Result`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Action {
    requeue: bool,
    requeue_after: Option<Duration>,
    priority: Option<i32>,
}

impl Action {
    /// Done: forget the request's failures; it comes back only with a new event.
    pub fn done() -> Self {
        Action::default()
    }

    /// Requeue through the controller's rate limiter (the deprecated `Requeue: true`).
    pub fn requeue() -> Self {
        Action {
            requeue: true,
            ..Action::default()
        }
    }

    /// Forget the request's failures and reconcile it again after `after`.
    /// A zero duration is the same as [`Action::done`].
    pub fn requeue_after(after: Duration) -> Self {
        Action {
            requeue_after: (!after.is_zero()).then_some(after),
            ..Action::default()
        }
    }

    /// Sets the priority of the requeued item (default: the priority it was dequeued with).
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Whether the request is requeued through the rate limiter.
    pub fn is_requeue(&self) -> bool {
        self.requeue
    }

    /// The delay before the request is reconciled again, if any.
    pub fn requeue_after_duration(&self) -> Option<Duration> {
        self.requeue_after
    }

    /// The requested priority, if any.
    pub fn priority(&self) -> Option<i32> {
        self.priority
    }

    /// True for [`Action::done`] without a priority.
    pub fn is_zero(&self) -> bool {
        *self == Action::default()
    }
}

/// The reconcile a task is running: its controller and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentReconcile {
    /// The controller's name.
    pub controller: Arc<str>,
    /// The reconcile id, as in the reconcile's log span and [`Context::reconcile_id`].
    pub id: u64,
}

tokio::task_local! {
    static CURRENT: CurrentReconcile;
}

/// The reconcile the calling task runs, when called from inside a controller's reconcile (not
/// from tasks it spawns). The event recorder uses it to tie events to reconciles.
pub fn current_reconcile() -> Option<CurrentReconcile> {
    CURRENT.try_with(Clone::clone).ok()
}

/// Runs `fut` as the reconcile `id` of `controller`, so [`current_reconcile`] answers inside it.
pub(crate) async fn run_as<F: std::future::Future>(
    controller: Arc<str>,
    id: u64,
    fut: F,
) -> F::Output {
    CURRENT
        .scope(CurrentReconcile { controller, id }, fut)
        .await
}

/// Per-reconcile context: which controller, a reconcile id for logs, and the controller's stop
/// signal (cancelled when the controller is asked to stop).
#[derive(Debug, Clone)]
pub struct Context {
    controller: Arc<str>,
    reconcile_id: u64,
    stop: CancellationToken,
}

impl Context {
    /// A context for a reconcile outside a controller (tests, manual calls).
    pub fn new(controller: impl Into<Arc<str>>, stop: CancellationToken) -> Self {
        Context {
            controller: controller.into(),
            reconcile_id: 0,
            stop,
        }
    }

    pub(crate) fn with_id(
        controller: Arc<str>,
        reconcile_id: u64,
        stop: CancellationToken,
    ) -> Self {
        Context {
            controller,
            reconcile_id,
            stop,
        }
    }

    /// The controller's name.
    pub fn controller(&self) -> &str {
        &self.controller
    }

    /// The id of this reconcile call, unique within its controller (controller-runtime's
    /// `reconcileID`); 0 outside a controller.
    pub fn reconcile_id(&self) -> u64 {
        self.reconcile_id
    }

    /// Cancelled when the controller stops; long reconciles may watch it to finish early.
    pub fn stop_token(&self) -> &CancellationToken {
        &self.stop
    }
}

/// Drives one object towards its desired state.
///
/// Called with the key of an object that changed (or of any object an event handler mapped the
/// change to). Return `Ok(Action::done())` when done, an `Ok` with a requeue to come back later,
/// or an error to be retried with backoff — unless the error is (or wraps) a [`TerminalError`],
/// which is recorded and not retried.
#[async_trait]
pub trait Reconciler: Send + Sync + 'static {
    /// The reconciler's error; anything convertible to a boxed error (including `anyhow::Error`).
    type Error: Into<BoxError> + Send + 'static;

    /// Reconciles the object named by `req`.
    async fn reconcile(&self, ctx: Context, req: Request) -> Result<Action, Self::Error>;
}

#[async_trait]
impl<R: Reconciler + ?Sized> Reconciler for Arc<R> {
    type Error = R::Error;

    async fn reconcile(&self, ctx: Context, req: Request) -> Result<Action, Self::Error> {
        (**self).reconcile(ctx, req).await
    }
}

/// A reconciler with its type erased (and its error boxed): what the controller builder hands
/// a host to wrap (see [`ControllerHost::shard_reconciler`](crate::ControllerHost::shard_reconciler)).
pub type BoxReconciler = Arc<dyn Reconciler<Error = BoxError>>;

/// Erases `reconciler`'s type, boxing its errors.
pub fn box_reconciler<R: Reconciler>(reconciler: R) -> BoxReconciler {
    Arc::new(Boxed(reconciler))
}

struct Boxed<R>(R);

#[async_trait]
impl<R: Reconciler> Reconciler for Boxed<R> {
    type Error = BoxError;

    async fn reconcile(&self, ctx: Context, req: Request) -> Result<Action, BoxError> {
        self.0.reconcile(ctx, req).await.map_err(Into::into)
    }
}

/// A reconciler made from an async closure (controller-runtime's `reconcile.Func`).
pub struct ReconcilerFn<F> {
    f: F,
}

impl<F> fmt::Debug for ReconcilerFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcilerFn").finish_non_exhaustive()
    }
}

/// Wraps `f(ctx, req)` as a [`Reconciler`].
pub fn reconciler_fn<F, Fut, E>(f: F) -> ReconcilerFn<F>
where
    F: Fn(Context, Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    ReconcilerFn { f }
}

#[async_trait]
impl<F, Fut, E> Reconciler for ReconcilerFn<F>
where
    F: Fn(Context, Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    type Error = E;

    async fn reconcile(&self, ctx: Context, req: Request) -> Result<Action, E> {
        (self.f)(ctx, req).await
    }
}
