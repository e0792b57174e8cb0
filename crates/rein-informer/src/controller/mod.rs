//! The low-level informer controller (client-go's `cache.Config` + `controller`): reflector plus process loop.

use std::fmt;
use std::sync::Arc;

use kube_client::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::reflector::ResourceVersionCell;
use crate::{
    Delta, ListerWatcher, Queue, Reflector, ReflectorOptions, Requeue, ShouldResyncFn, TransformFn,
    WatchErrorHandler,
};

/// The process function: applies one popped batch of deltas.
pub type ProcessDeltasFn<K> = Box<dyn FnMut(Vec<Delta<K>>, bool) -> Result<(), Requeue> + Send>;

/// Everything a low-level [`Controller`] needs (client-go's `cache.Config`).
pub struct Config<K> {
    /// The queue the reflector fills and the process loop drains.
    pub queue: Arc<dyn Queue<K>>,
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

impl<K> fmt::Debug for Config<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("queue", &self.queue)
            .field("reflector", &self.reflector)
            .field("should_resync", &self.should_resync.is_some())
            .field("watch_error_handler", &self.watch_error_handler.is_some())
            .field("transform", &self.transform.is_some())
            .finish()
    }
}

/// Runs a reflector into a queue and pops the queue into a process function.
pub struct Controller<K> {
    queue: Arc<dyn Queue<K>>,
    config: Mutex<Option<Config<K>>>,
    last_sync: ResourceVersionCell,
    known: Option<crate::Indexer<K>>,
}

impl<K> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("queue", &self.queue)
            .field("last_sync", &self.last_sync.get())
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> Controller<K> {
    /// A controller over `config`; nothing happens until [`Controller::run`].
    pub fn new(config: Config<K>) -> Self {
        Controller {
            queue: config.queue.clone(),
            config: Mutex::new(Some(config)),
            last_sync: ResourceVersionCell::default(),
            known: None,
        }
    }

    /// Lets the reflector's lists share unchanged objects with `cache` (the store the process
    /// function writes into): see [`Reflector::with_known_objects`].
    pub fn with_known_objects(mut self, cache: crate::Indexer<K>) -> Self {
        self.known = Some(cache);
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

    /// Runs until `stop` is cancelled; then closes the queue, drains it and returns. Runs once:
    /// a second call returns immediately.
    pub async fn run(&self, stop: CancellationToken) {
        let Some(config) = self.config.lock().take() else {
            tracing::warn!("informer controller already ran");
            return;
        };
        let Config {
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
        while queue.pop(&mut process_fn).await.is_ok() {}
        reflector_stop.cancel();
        let _ = reflector_task.await;
        let _ = closer.await;
    }
}

impl<K: Resource + Send + Sync + 'static> crate::HasSynced for Controller<K> {
    fn has_synced(&self) -> bool {
        Controller::has_synced(self)
    }

    fn wait_synced(&self) -> futures::future::BoxFuture<'_, ()> {
        self.queue.wait_synced()
    }
}
