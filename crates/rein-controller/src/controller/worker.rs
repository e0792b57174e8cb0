//! Running a controller: start and sync the watches, run the workers, stop gracefully; and the
//! reconcile handler that turns each result into a queue action.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::FutureExt;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{Error, Inner};
use crate::queue::AddOptions;
use crate::reconcile::{Action, BoxError, Context, Request, is_terminal};

pub(super) async fn run(inner: Arc<Inner>, stop: CancellationToken) -> Result<(), Error> {
    if inner.started.swap(true, Ordering::AcqRel) {
        return Err(Error::AlreadyStarted {
            name: inner.name.to_string(),
        });
    }
    let workers = inner.options.max_concurrent_reconciles.max(1);
    inner.metrics.max_concurrent.set(workers as i64);
    inner.metrics.active_workers.set(0);

    let result = {
        let mut watches_started = inner.watches_started.lock().await;
        if *watches_started {
            // Warmed up: started with the warm-up's token; wait for them to have synced.
            sync_watches(&inner, &stop).await
        } else {
            *watches_started = true;
            start_watches(&inner, &stop).await
        }
    };
    if let Err(err) = result {
        inner.queue.shut_down();
        return Err(err);
    }
    if stop.is_cancelled() {
        inner.queue.shut_down();
        return Ok(());
    }

    tracing::info!(controller = %inner.name, workers, "starting workers");
    let mut set = JoinSet::new();
    for _ in 0..workers {
        let inner = inner.clone();
        let stop = stop.clone();
        set.spawn(async move { worker(inner, stop).await });
    }

    stop.cancelled().await;

    tracing::info!(controller = %inner.name, "stopping; waiting for running reconciles");
    inner.queue.shut_down();
    let timeout = inner.options.graceful_shutdown_timeout;
    let drained = tokio::time::timeout(timeout, async {
        while let Some(res) = set.join_next().await {
            if let Err(err) = res
                && err.is_panic()
            {
                // Only reachable with recover_panic = false: let the panic surface.
                std::panic::resume_unwind(err.into_panic());
            }
        }
    })
    .await;
    if drained.is_err() {
        let running = set.len();
        set.abort_all();
        return Err(Error::StopTimeout {
            name: inner.name.to_string(),
            running,
            timeout,
        });
    }
    tracing::info!(controller = %inner.name, "all workers finished");
    Ok(())
}

/// Warm-up: starts the watches with `stop` (the manager's, not the leader's) and waits for
/// them to sync, unless they were started already.
pub(super) async fn warm_up(inner: &Arc<Inner>, stop: &CancellationToken) -> Result<(), Error> {
    let mut watches_started = inner.watches_started.lock().await;
    if *watches_started {
        return Ok(());
    }
    *watches_started = true;
    tracing::info!(controller = %inner.name, "warming up: starting the sources before leading");
    start_watches(inner, stop).await
}

/// Starts every watch concurrently, each bounded by the cache-sync timeout.
async fn start_watches(inner: &Arc<Inner>, stop: &CancellationToken) -> Result<(), Error> {
    *inner.running.lock() = Some(stop.clone());
    for_each_watch(inner, stop, true).await
}

/// Waits for every (started) watch to sync, bounded by the cache-sync timeout.
async fn sync_watches(inner: &Arc<Inner>, stop: &CancellationToken) -> Result<(), Error> {
    for_each_watch(inner, stop, false).await
}

/// Starts (`start`) and syncs every watch concurrently, each bounded by the cache-sync
/// timeout.
async fn for_each_watch(
    inner: &Arc<Inner>,
    stop: &CancellationToken,
    start: bool,
) -> Result<(), Error> {
    let watches = inner.watches.lock().clone();
    let timeout = inner.options.cache_sync_timeout;
    let starts = watches.iter().map(|w| {
        let queue = inner.queue.clone();
        let stop = stop.clone();
        let name = inner.name.to_string();
        async move {
            let started = tokio::time::timeout(timeout, async {
                if start {
                    w.start(queue, stop.clone()).await?;
                }
                w.wait_for_sync(stop).await
            })
            .await;
            match started {
                Ok(Ok(())) => Ok(()),
                Ok(Err(source)) => Err(Error::SourceStart {
                    name,
                    source_name: w.describe(),
                    source,
                }),
                Err(_) => Err(Error::SyncTimeout {
                    name,
                    source_name: w.describe(),
                    timeout,
                }),
            }
        }
    });
    let stopped = stop.clone();
    tokio::select! {
        res = futures::future::try_join_all(starts) => res.map(|_| ()),
        _ = stopped.cancelled() => Ok(()),
    }
}

/// One worker: take a request, reconcile it, act on the result, until the queue shuts down.
async fn worker(inner: Arc<Inner>, stop: CancellationToken) {
    while let Some((req, priority)) = inner.queue.get().await {
        inner.metrics.active_workers.inc();
        reconcile_handler(&inner, &stop, &req, priority).await;
        inner.metrics.active_workers.dec();
        inner.queue.done(&req);
    }
}

/// Reconciles one request and acts on the result (controller-runtime's `reconcileHandler`).
async fn reconcile_handler(
    inner: &Arc<Inner>,
    stop: &CancellationToken,
    req: &Request,
    priority: i32,
) {
    let id = inner.next_reconcile_id.fetch_add(1, Ordering::Relaxed);
    let span = reconcile_span(&inner.name, req, id);
    let ctx = Context::with_id(inner.name.clone(), id, stop.clone());
    let started = Instant::now();
    let result = crate::reconcile::run_as(
        inner.name.clone(),
        id,
        reconcile(inner, ctx, req.clone()).instrument(span.clone()),
    )
    .await;
    let _entered = span.enter();
    inner.metrics.time.observe(
        Instant::now()
            .saturating_duration_since(started)
            .as_secs_f64(),
    );
    let m = &inner.metrics;
    let q = &inner.queue;
    match result {
        Err(err) if is_terminal(&*err) => {
            m.error.inc();
            m.errors.inc();
            m.terminal.inc();
            tracing::error!(error = %ErrorChain(&*err), "reconciler returned a terminal error; not retrying");
        }
        Err(err) => {
            m.error.inc();
            m.errors.inc();
            tracing::error!(error = %ErrorChain(&*err), "reconciler error; requeueing with backoff");
            q.add_with_options(
                req.clone(),
                AddOptions {
                    rate_limited: true,
                    priority: Some(priority),
                    ..AddOptions::default()
                },
            );
        }
        Ok(action) => {
            let priority = action.priority().unwrap_or(priority);
            if let Some(after) = action.requeue_after_duration() {
                m.requeue_after.inc();
                q.forget(req);
                q.add_with_options(
                    req.clone(),
                    AddOptions {
                        after: Some(after),
                        priority: Some(priority),
                        ..AddOptions::default()
                    },
                );
            } else if action.is_requeue() {
                m.requeue.inc();
                q.add_with_options(
                    req.clone(),
                    AddOptions {
                        rate_limited: true,
                        priority: Some(priority),
                        ..AddOptions::default()
                    },
                );
            } else {
                m.success.inc();
                q.forget(req);
            }
        }
    }
}

/// The span every reconcile runs in (and its outcome is logged in), carrying what
/// controller-runtime puts in its reconcile logger: the controller, the object's namespace and
/// name, and the reconcile id. Logs written by user code inside a reconcile are attributed by it.
fn reconcile_span(controller: &str, req: &Request, id: u64) -> tracing::Span {
    tracing::info_span!(
        "reconcile",
        controller = %controller,
        namespace = req.key.namespace.as_deref().unwrap_or(""),
        name = %req.key.name,
        reconcile_id = id,
    )
}

/// Calls the reconciler, catching panics and applying the reconciliation timeout.
async fn reconcile(inner: &Arc<Inner>, ctx: Context, req: Request) -> Result<Action, BoxError> {
    let fut = AssertUnwindSafe((inner.reconcile)(ctx, req)).catch_unwind();
    let outcome = match inner.options.reconciliation_timeout {
        Some(limit) => match tokio::time::timeout(limit, fut).await {
            Ok(outcome) => outcome,
            Err(_) => {
                inner.metrics.timeouts.inc();
                return Err(Box::new(ReconcileTimeout(limit)));
            }
        },
        None => fut.await,
    };
    match outcome {
        Ok(result) => result,
        Err(panic) => {
            inner.metrics.panics.inc();
            if !inner.options.recover_panic {
                std::panic::resume_unwind(panic);
            }
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            Err(Box::new(ReconcilePanic(message)))
        }
    }
}

/// A reconcile panicked (and the panic was recovered).
#[derive(Debug, thiserror::Error)]
#[error("panic: {0} [recovered]")]
pub(crate) struct ReconcilePanic(String);

/// A reconcile exceeded the reconciliation timeout.
#[derive(Debug, thiserror::Error)]
#[error("reconcile did not finish within {0:?}")]
pub(crate) struct ReconcileTimeout(Duration);

/// Displays an error with its sources: `a: b: c`.
struct ErrorChain<'a>(&'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}
