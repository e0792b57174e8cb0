//! The low-level informer controller (client-go's `cache.Config` + `controller`): reflector plus process loop.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use kube_client::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::reflector::{ReflectorHandle, ReflectorStatus};
use crate::{
    Delta, Fifo, Indexer, ListerWatcher, Reflector, ReflectorOptions, Requeue, ShouldResyncFn,
    TransformFn, WatchErrorHandler,
};

/// The process function: applies one popped batch of deltas.
pub type ProcessDeltasFn<K> = Box<dyn FnMut(Vec<Delta<K>>, bool) -> Result<(), Requeue> + Send>;

/// Everything a low-level [`InformerController`] needs (client-go's `cache.Config`): the one
/// value the whole pipeline — reflector, queue, process loop — is built from.
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
    /// The store the process function writes into, when it has one: the reflector's lists
    /// then share unchanged objects with it (see [`Reflector::with_known_objects`]).
    pub known_objects: Option<Indexer<K>>,
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
            .field("known_objects", &self.known_objects.is_some())
            .finish()
    }
}

/// Where the process loop hands what it pops (a shared informer's handler buffers): it waits
/// for room there before popping more, the same [`crate::room`] back-pressure the reflector
/// applies before the queue.
pub(crate) trait Downstream: Send + Sync {
    /// True while the loop should wait.
    fn is_full(&self) -> bool;
    /// Resolves once there is room.
    fn wait_for_room(&self) -> BoxFuture<'_, ()>;
}

/// What [`InformerController::run`] takes apart: built in `new`, consumed once.
struct Pipeline<K> {
    reflector: Reflector<K>,
    process: ProcessDeltasFn<K>,
    retry_on_error: bool,
}

/// Runs a reflector into a queue and pops the queue into a process function.
pub struct InformerController<K> {
    queue: Arc<dyn Fifo<K>>,
    pipeline: Mutex<Option<Pipeline<K>>>,
    reflector: ReflectorHandle,
    downstream: Option<Arc<dyn Downstream>>,
}

impl<K> fmt::Debug for InformerController<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerController")
            .field("queue", &self.queue)
            .field("reflector", &self.reflector.status())
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> InformerController<K> {
    /// A controller over `config`; nothing happens until [`InformerController::run`].
    pub fn new(config: InformerControllerConfig<K>) -> Self {
        let InformerControllerConfig {
            queue,
            lister_watcher,
            process,
            reflector,
            should_resync,
            watch_error_handler,
            transform,
            known_objects,
            retry_on_error,
        } = config;
        let mut reflector = Reflector::new(lister_watcher, queue.clone(), reflector)
            .with_transform(transform)
            .with_watch_error_handler(watch_error_handler)
            .with_known_objects(known_objects);
        if let Some(f) = should_resync {
            reflector = reflector.with_should_resync(f);
        }
        InformerController {
            queue,
            reflector: reflector.handle(),
            pipeline: Mutex::new(Some(Pipeline {
                reflector,
                process,
                retry_on_error,
            })),
            downstream: None,
        }
    }

    /// Makes the process loop wait for room downstream before each pop.
    pub(crate) fn with_downstream(mut self, downstream: Arc<dyn Downstream>) -> Self {
        self.downstream = Some(downstream);
        self
    }

    /// True once the queue's initial contents have been processed.
    pub fn has_synced(&self) -> bool {
        self.queue.has_synced()
    }

    /// The reflector's last synced resource version.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.reflector.last_sync_resource_version()
    }

    /// What its reflector is doing now (see [`ReflectorStatus`]).
    pub fn reflector_status(&self) -> ReflectorStatus {
        self.reflector.status()
    }

    /// Runs until `stop` is cancelled; then closes the queue, drains it and returns. Runs once:
    /// a second call returns immediately.
    pub async fn run(&self, stop: CancellationToken) {
        let Some(Pipeline {
            reflector,
            mut process,
            retry_on_error,
        }) = self.pipeline.lock().take()
        else {
            tracing::warn!("informer controller already ran");
            return;
        };
        let queue = self.queue.clone();
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
        while queue.pop(&mut process_fn).await.is_ok() {
            // Back-pressure: pop more only once the handlers have room (until stopped, when
            // the queue drains without waiting).
            if let Some(downstream) = &self.downstream
                && downstream.is_full()
            {
                tokio::select! {
                    biased;
                    _ = stop.cancelled() => {}
                    () = downstream.wait_for_room() => {}
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
    use crate::room::Room;
    use crate::testutil::cm;
    use crate::{ApiListerWatcher, Fifo, ListWatchOptions, RealFifo, RealFifoOptions};

    struct Buffer(Arc<Room>);

    impl Downstream for Buffer {
        fn is_full(&self) -> bool {
            self.0.is_full()
        }
        fn wait_for_room(&self) -> BoxFuture<'_, ()> {
            Box::pin(self.0.wait())
        }
    }

    /// During a backlog the process loop waits for room downstream before each pop, so its
    /// consumer never falls more than one batch past the buffer's capacity. Runs on a
    /// single-threaded runtime, where the interleaving is deterministic: without the wait the
    /// loop drains all 5,000 queued events before the consumer runs once.
    #[tokio::test]
    async fn the_process_loop_waits_for_room_downstream() {
        let env = rein_testenv::TestEnv::start().await.unwrap();
        let queue = Arc::new(RealFifo::<ConfigMap>::default());
        for i in 0..5_000 {
            queue.add(cm("backlog", &format!("cm-{i}"), "1"));
        }
        let limit = 256;
        let room = Arc::new(Room::new(limit));
        let most = Arc::new(AtomicUsize::new(0));
        let handled = Arc::new(AtomicUsize::new(0));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let consumer = {
            let (room, handled) = (room.clone(), handled.clone());
            tokio::spawn(async move {
                while let Some(()) = rx.recv().await {
                    room.drain(1);
                    handled.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let process: ProcessDeltasFn<ConfigMap> = {
            let (room, most) = (room.clone(), most.clone());
            Box::new(move |deltas, _| {
                for _ in deltas {
                    room.fill(1);
                    most.fetch_max(room.used(), Ordering::Relaxed);
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
        let controller = Arc::new(
            InformerController::new(InformerControllerConfig {
                queue: queue.clone(),
                lister_watcher: Arc::new(lw),
                process,
                reflector: ReflectorOptions::default(),
                should_resync: None,
                watch_error_handler: None,
                transform: None,
                known_objects: None,
                retry_on_error: false,
            })
            .with_downstream(Arc::new(Buffer(room.clone()))),
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
        assert!(
            most >= limit,
            "the buffer filled up to its capacity ({most})"
        );
    }
}
