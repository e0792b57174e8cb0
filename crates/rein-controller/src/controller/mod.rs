//! The controller: a named work queue of requests, the watches that fill it, and the workers
//! that hand each request to the reconciler (controller-runtime's `pkg/internal/controller`).

mod error;
mod introspect;
mod name;
mod options;
#[cfg(test)]
mod tests;
mod watch;
mod worker;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use async_trait::async_trait;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::handler::EventHandler;
use crate::metrics::{ControllerMetrics, WorkqueueMetrics};
use crate::predicate::BoxPredicate;
use crate::queue::RequestQueue;
use crate::reconcile::{Action, BoxError, Context, Reconciler, Request};
use crate::runnable::Runnable;
use crate::source::Source;

pub use error::Error;
pub use introspect::{QueueSnapshot, queue_snapshots};
pub use name::ControllerNames;
pub use options::ControllerOptions;
use watch::{ErasedWatch, Watch};

/// A controller: watches feed requests into its queue; `max_concurrent_reconciles` workers
/// reconcile them, never two of one key at once. Cheap to clone (a shared handle).
///
/// Run it with [`Runnable::start`] (a manager does this) until the stop token is cancelled.
#[derive(Clone)]
pub struct Controller {
    inner: Arc<Inner>,
}

type ReconcileFn =
    dyn Fn(Context, Request) -> BoxFuture<'static, Result<Action, BoxError>> + Send + Sync;

struct Inner {
    name: Arc<str>,
    /// Gives the name back to its scope when the controller goes.
    _claim: name::NameClaim,
    options: ControllerOptions,
    reconcile: Box<ReconcileFn>,
    queue: RequestQueue,
    metrics: ControllerMetrics,
    watches: Mutex<Vec<Arc<dyn ErasedWatch>>>,
    running: Mutex<Option<CancellationToken>>,
    /// Whether the watches were started (by warm-up or start); held while starting them.
    watches_started: tokio::sync::Mutex<bool>,
    started: AtomicBool,
    next_reconcile_id: AtomicU64,
}

impl fmt::Debug for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.inner.name)
            .field("options", &self.inner.options)
            .field("watches", &self.inner.watches.lock().len())
            .field("queue", &self.inner.queue)
            .finish()
    }
}

impl Controller {
    /// A controller named `name` (letters, digits, `-`, `_`, `.`; unique among the live
    /// controllers built outside a manager) that hands requests to `reconciler`.
    pub fn new<R: Reconciler>(
        name: &str,
        reconciler: R,
        options: ControllerOptions,
    ) -> Result<Controller, Error> {
        Controller::new_in(name, reconciler, options, ControllerNames::process())
    }

    /// Like [`Controller::new`], the name unique among the live controllers of `names` (a
    /// manager's: [`ControllerHost::controller_names`](crate::ControllerHost::controller_names)).
    pub fn new_in<R: Reconciler>(
        name: &str,
        reconciler: R,
        options: ControllerOptions,
        names: &ControllerNames,
    ) -> Result<Controller, Error> {
        let claim = name::claim(name, options.skip_name_validation, names)?;
        let reconciler = Arc::new(reconciler);
        let reconcile: Box<ReconcileFn> = Box::new(move |ctx, req| {
            let reconciler = reconciler.clone();
            Box::pin(async move { reconciler.reconcile(ctx, req).await.map_err(Into::into) })
        });
        let queue = RequestQueue::for_controller(
            name,
            options.rate_limiter.clone(),
            Arc::new(WorkqueueMetrics::for_controller(name)),
        );
        let inner = Arc::new(Inner {
            name: Arc::from(name),
            _claim: claim,
            options,
            reconcile,
            queue,
            metrics: ControllerMetrics::new(name),
            watches: Mutex::new(Vec::new()),
            running: Mutex::new(None),
            watches_started: tokio::sync::Mutex::new(false),
            started: AtomicBool::new(false),
            next_reconcile_id: AtomicU64::new(1),
        });
        introspect::track(&inner);
        Ok(Controller { inner })
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The controller's options.
    pub fn options(&self) -> &ControllerOptions {
        &self.inner.options
    }

    /// The controller's queue: enqueue requests directly (from a webhook, a timer, a test).
    pub fn queue(&self) -> &RequestQueue {
        &self.inner.queue
    }

    /// Watches `source`: its events pass `predicates` (in order) and go to `handler`, which
    /// enqueues requests. Before start the watch is stored; after start it starts at once.
    pub fn watch<K: Send + Sync + 'static>(
        &self,
        source: impl Source<K>,
        handler: impl EventHandler<K>,
        predicates: Vec<BoxPredicate<K>>,
    ) {
        let watch: Arc<dyn ErasedWatch> = Arc::new(Watch {
            source: Arc::new(source),
            handler: Arc::new(handler),
            predicates,
        });
        self.inner.watches.lock().push(watch.clone());
        let running = self.inner.running.lock().clone();
        if let Some(stop) = running {
            let queue = self.inner.queue.clone();
            let name = self.inner.name.clone();
            tokio::spawn(async move {
                if let Err(err) = watch.start(queue, stop).await {
                    tracing::error!(controller = %name, source = %watch.describe(), error = %err, "starting a watch failed");
                }
            });
        }
    }

    /// How many watches the controller has.
    pub fn watch_count(&self) -> usize {
        self.inner.watches.lock().len()
    }
}

#[async_trait]
impl Runnable for Controller {
    async fn start(&self, stop: CancellationToken) -> Result<(), BoxError> {
        worker::run(self.inner.clone(), stop)
            .await
            .map_err(Into::into)
    }

    fn needs_leader_election(&self) -> bool {
        self.inner.options.need_leader_election
    }

    /// With [`ControllerOptions::enable_warmup`], starts the watches with `stop` and waits
    /// for them to sync; the workers start only with [`Runnable::start`].
    async fn warm_up(&self, stop: CancellationToken) -> Result<(), BoxError> {
        if !self.inner.options.enable_warmup {
            return Ok(());
        }
        worker::warm_up(&self.inner, &stop)
            .await
            .map_err(Into::into)
    }
}
