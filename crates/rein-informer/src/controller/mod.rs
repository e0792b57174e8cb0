//! The low-level informer controller (client-go's `cache.Config` + `controller`): reflector plus process loop.

use std::fmt;
use std::sync::Arc;

use kube_client::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::reflector::{ReflectorStatus, ResourceVersionCell, StatusCell};
use crate::{
    Delta, Fifo, ListerWatcher, Reflector, ReflectorOptions, Requeue, ShouldResyncFn, TransformFn,
    WatchErrorHandler,
};

/// The process function: applies one popped batch of deltas.
pub type ProcessDeltasFn<K> = Box<dyn FnMut(Vec<Delta<K>>, bool) -> Result<(), Requeue> + Send>;

/// Everything a low-level [`InformerController`] needs (client-go's `cache.Config`).
pub struct InformerControllerConfig<K> {
    /// The queue the reflector fills and the process loop drains.
    pub queue: Arc<dyn Fifo<K>>,
    /// Where objects come from.
    pub lister_watcher: Arc<dyn ListerWatcher<K>>,
    /// Applies popped deltas (`is_in_initial_list` as second argument).
    pub process: ProcessDeltasFn<K>,
    /// Reflector settings: full resync period, page size, watch timeout, streaming, backoff.
    pub reflector: ReflectorOptions,
    /// Gate consulted at each resync tick.
    pub should_resync: Option<ShouldResyncFn>,
    /// Hook for errors that end a list-and-watch cycle.
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// Transform applied before queueing.
    pub transform: Option<TransformFn<K>>,
    /// Pass [`Requeue`] results on to the queue (a [`crate::DeltaFifo`] built with
    /// `requeue_on_error` then queues the deltas again); when false they are dropped.
    pub retry_on_error: bool,
}

impl<K> fmt::Debug for InformerControllerConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerControllerConfig")
            .field("queue", &self.queue)
            .field("reflector", &self.reflector)
            .field("should_resync", &self.should_resync.is_some())
            .field("watch_error_handler", &self.watch_error_handler.is_some())
            .field("transform", &self.transform.is_some())
            .finish()
    }
}

/// Runs a reflector into a queue and pops the queue into a process function.
pub struct InformerController<K> {
    queue: Arc<dyn Fifo<K>>,
    config: Mutex<Option<InformerControllerConfig<K>>>,
    last_sync: ResourceVersionCell,
    status: StatusCell,
    known: Option<crate::Indexer<K>>,
    behind: Option<Behind>,
}

/// Tells the process loop that what it hands on is piling up downstream (a shared informer's
/// handler buffers): then it yields before popping more, see [`InformerController::run`].
pub(crate) type Behind = Arc<dyn Fn() -> bool + Send + Sync>;

/// Most yields after one pop while downstream is behind. Each yield lets a woken handler task
/// drain up to tokio's cooperative budget (128 notifications); the cap keeps a handler that is
/// slow for its own reasons from holding the loop (it never waits on a handler).
const MAX_YIELDS_PER_POP: usize = 32;

impl<K> fmt::Debug for InformerController<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerController")
            .field("queue", &self.queue)
            .field("last_sync", &self.last_sync.get())
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> InformerController<K> {
    /// A controller over `config`; nothing happens until [`InformerController::run`].
    pub fn new(config: InformerControllerConfig<K>) -> Self {
        InformerController {
            queue: config.queue.clone(),
            config: Mutex::new(Some(config)),
            last_sync: ResourceVersionCell::default(),
            status: StatusCell::default(),
            known: None,
            behind: None,
        }
    }

    /// Lets the reflector's lists share unchanged objects with `cache` (the store the process
    /// function writes into): see [`Reflector::with_known_objects`].
    pub fn with_known_objects(mut self, cache: crate::Indexer<K>) -> Self {
        self.known = Some(cache);
        self
    }

    /// Gives the process loop a way to see that its consumers fall behind.
    pub(crate) fn with_behind(mut self, behind: Behind) -> Self {
        self.behind = Some(behind);
        self
    }

    /// True once the queue's initial contents have been processed.
    pub fn has_synced(&self) -> bool {
        self.queue.has_synced()
    }

    /// The reflector's last synced resource version.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.last_sync.get()
    }

    /// What its reflector is doing now (see [`ReflectorStatus`]).
    pub fn reflector_status(&self) -> ReflectorStatus {
        self.status.snapshot(self.last_sync.get())
    }

    /// Runs until `stop` is cancelled; then closes the queue, drains it and returns. Runs once:
    /// a second call returns immediately.
    pub async fn run(&self, stop: CancellationToken) {
        let Some(config) = self.config.lock().take() else {
            tracing::warn!("informer controller already ran");
            return;
        };
        let InformerControllerConfig {
            queue,
            lister_watcher,
            mut process,
            reflector,
            should_resync,
            watch_error_handler,
            transform,
            retry_on_error,
        } = config;
        let mut reflector = Reflector::new(lister_watcher, queue.clone(), reflector)
            .with_transform(transform)
            .with_watch_error_handler(watch_error_handler)
            .with_resource_version_cell(self.last_sync.clone())
            .with_status_cell(self.status.clone())
            .with_known_objects(self.known.clone());
        if let Some(f) = should_resync {
            reflector = reflector.with_should_resync(f);
        }
        let reflector_stop = stop.child_token();
        let reflector_task = {
            let token = reflector_stop.clone();
            tokio::spawn(async move { reflector.run(token).await })
        };
        let closer = {
            let queue = queue.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                stop.cancelled().await;
                queue.close();
            })
        };
        let mut process_fn = move |deltas: Vec<Delta<K>>, initial: bool| {
            let result = process(deltas, initial);
            if retry_on_error { result } else { Ok(()) }
        };
        // A pop that finds entries queued completes without yielding, so during a backlog this
        // loop would run until the queue is empty while the handler tasks it wakes wait in this
        // worker's next-task slot, which other workers cannot steal. Their buffers then grow
        // by thousands of notifications, each holding the old and the new object (the watch
        // backlog bench peaked at 1.7x kube-runtime's memory). Yielding while they are behind
        // lets them run; it never waits for a handler.
        while queue.pop(&mut process_fn).await.is_ok() {
            if let Some(behind) = &self.behind {
                let mut yields = 0;
                while yields < MAX_YIELDS_PER_POP && behind() {
                    tokio::task::yield_now().await;
                    yields += 1;
                }
            }
        }
        reflector_stop.cancel();
        let _ = reflector_task.await;
        let _ = closer.await;
    }
}

impl<K: Resource + Send + Sync + 'static> crate::HasSynced for InformerController<K> {
    fn has_synced(&self) -> bool {
        InformerController::has_synced(self)
    }

    fn wait_synced(&self) -> futures::future::BoxFuture<'_, ()> {
        self.queue.wait_synced()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::testutil::cm;
    use crate::{ApiListerWatcher, Fifo, ListWatchOptions, RealFifo, RealFifoOptions};

    /// During a backlog the process loop yields while its consumer is behind, so a consumer
    /// task on the same thread keeps up instead of buffering the whole backlog. Runs on a
    /// single-threaded runtime, where the interleaving is deterministic: without the yields
    /// the loop drains all 5,000 queued events before the consumer runs once.
    #[tokio::test]
    async fn the_process_loop_yields_while_its_consumer_is_behind() {
        let env = rein_testenv::TestEnv::start().await.unwrap();
        let queue = Arc::new(RealFifo::<ConfigMap>::default());
        for i in 0..5_000 {
            queue.add(cm("backlog", &format!("cm-{i}"), "1"));
        }
        let buffered = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let handled = Arc::new(AtomicUsize::new(0));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let consumer = {
            let (buffered, handled) = (buffered.clone(), handled.clone());
            tokio::spawn(async move {
                while let Some(()) = rx.recv().await {
                    buffered.fetch_sub(1, Ordering::Relaxed);
                    handled.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let process: ProcessDeltasFn<ConfigMap> = {
            let (buffered, most) = (buffered.clone(), most.clone());
            Box::new(move |deltas, _| {
                for _ in deltas {
                    let now = buffered.fetch_add(1, Ordering::Relaxed) + 1;
                    most.fetch_max(now, Ordering::Relaxed);
                    let _ = tx.send(());
                }
                Ok(())
            })
        };
        let lw = ApiListerWatcher::<ConfigMap>::new(
            env.client(),
            ListWatchOptions {
                namespace: Some("backlog".into()),
                ..Default::default()
            },
        );
        let limit = 256;
        let behind = {
            let buffered = buffered.clone();
            Arc::new(move || buffered.load(Ordering::Relaxed) > limit)
        };
        let controller = Arc::new(
            InformerController::new(InformerControllerConfig {
                queue: queue.clone(),
                lister_watcher: Arc::new(lw),
                process,
                reflector: ReflectorOptions::default(),
                should_resync: None,
                watch_error_handler: None,
                transform: None,
                retry_on_error: false,
            })
            .with_behind(behind),
        );
        let stop = CancellationToken::new();
        let run = {
            let (c, stop) = (controller.clone(), stop.clone());
            tokio::spawn(async move { c.run(stop).await })
        };
        while handled.load(Ordering::Relaxed) < 5_000 {
            tokio::task::yield_now().await;
        }
        stop.cancel();
        run.await.unwrap();
        drop(controller);
        consumer.await.unwrap();
        let most = most.load(Ordering::Relaxed);
        // One popped batch (at most 1,000) can land on top of what is allowed to wait.
        assert!(
            most <= limit + RealFifoOptions::default().batch_size,
            "the consumer fell {most} events behind"
        );
    }
}
