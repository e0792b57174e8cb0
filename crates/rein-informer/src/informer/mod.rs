//! The shared index informer: one reflector and one cache, fanned out to any number of handlers.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use kube_client::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::controller::{Downstream, InformerController, InformerControllerConfig};
use crate::reflector::{ReflectorOptions, TransformFn, WatchErrorHandler};
use crate::{
    DeletedObject, Delta, DeltaFifo, DeltaFifoOptions, DeltaObject, DeltaType, Error, Fifo,
    HasSynced, Indexer, Indexers, ListerWatcher, RealFifo, RealFifoOptions, ResourceEventHandler,
};

mod processor;
#[cfg(test)]
mod tests;

use processor::{Listener, MINIMUM_RESYNC_PERIOD, Notification, Processor, determine_resync};

/// Which queue an informer uses between its reflector and its cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum QueueKind {
    /// RealFIFO in atomic mode: every event in order, atomic replace and resync (the default).
    #[default]
    RealFifo,
    /// The legacy DeltaFIFO (per-key deltas, `Replaced` deltas, relist tombstones).
    DeltaFifo,
}

/// Settings of a [`SharedIndexInformer`].
#[derive(Debug, Clone, Default)]
pub struct InformerOptions {
    /// Default resync period for handlers (zero: handlers never resync).
    pub resync_period: Duration,
    /// The queue between reflector and cache.
    pub queue: QueueKind,
    /// Reflector settings (its `resync_period` is managed by the informer).
    pub reflector: ReflectorOptions,
}

/// A handle for one registered handler: its sync state and the key to remove it.
#[derive(Clone)]
pub struct HandlerRegistration {
    id: u64,
    synced: Arc<dyn Fn() -> bool + Send + Sync>,
    wait: Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>,
}

impl fmt::Debug for HandlerRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerRegistration")
            .field("id", &self.id)
            .field("has_synced", &(self.synced)())
            .finish()
    }
}

impl HandlerRegistration {
    /// True once the informer has synced and this handler has handled every initial add.
    pub fn has_synced(&self) -> bool {
        (self.synced)()
    }
}

impl HasSynced for HandlerRegistration {
    fn has_synced(&self) -> bool {
        HandlerRegistration::has_synced(self)
    }

    /// Resolves once the informer has synced and this handler has handled every initial add.
    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        (self.wait)()
    }
}

/// A snapshot of a [`SharedIndexInformer`]'s state (see [`SharedIndexInformer::status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InformerStatus {
    /// `run` has been called.
    pub started: bool,
    /// `run` has returned.
    pub stopped: bool,
    /// The initial list has been stored and distributed.
    pub synced: bool,
    /// The reflector's step; `None` before `run`.
    pub reflector: Option<crate::reflector::ReflectorStatus>,
    /// Changes read from the server and not yet applied to the cache.
    pub queued: usize,
    /// Notifications waiting in each running handler's buffer.
    pub handler_buffers: Vec<usize>,
    /// Objects in the informer's cache.
    pub store_size: usize,
}

impl fmt::Display for InformerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match (self.started, self.stopped, self.synced) {
            (false, _, _) => "not started",
            (_, true, _) => "stopped",
            (_, _, false) => "syncing",
            _ => "synced",
        };
        write!(f, "{state}; ")?;
        match &self.reflector {
            Some(r) => write!(f, "reflector {r}")?,
            None => write!(f, "no reflector yet")?,
        }
        write!(
            f,
            "; {} queued; handler buffers {:?}",
            self.queued, self.handler_buffers
        )
    }
}

struct Inner<K> {
    indexer: Indexer<K>,
    processor: Processor<K>,
    queue: Arc<Queues<K>>,
    block_deltas: Mutex<()>,
}

/// The queues between the informer's reflectors and its cache: one, or one per namespace of
/// a partitioned informer. Synced when every one is.
#[derive(Debug)]
pub(crate) struct Queues<K> {
    all: Vec<Arc<dyn Fifo<K>>>,
}

impl<K> Queues<K> {
    pub(crate) fn has_synced(&self) -> bool {
        self.all.iter().all(|q| q.has_synced())
    }

    pub(crate) async fn wait_synced(&self) {
        for q in &self.all {
            q.wait_synced().await;
        }
    }

    fn len(&self) -> usize {
        self.all.iter().map(|q| q.len()).sum()
    }
}

/// One reflector's share of an informer: what it lists and watches, the queue it fills, and
/// the namespace it covers when the informer is partitioned by namespace.
struct Partition<K> {
    namespace: Option<String>,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    queue: Arc<dyn Fifo<K>>,
}

struct Lifecycle<K> {
    started: bool,
    stopped: bool,
    check_period: Duration,
    runtime: Option<(tokio::runtime::Handle, CancellationToken)>,
    /// The pipeline's config value, one per reflector (one, or one per namespace): built with
    /// the informer, completed by the setters before start, taken by `run`.
    configs: Vec<InformerControllerConfig<K>>,
}

/// client-go's `SharedIndexInformer`: lists and watches one resource, keeps an indexed cache and
/// notifies every registered handler through its own unbounded buffer.
pub struct SharedIndexInformer<K> {
    inner: Arc<Inner<K>>,
    lifecycle: Mutex<Lifecycle<K>>,
    options: InformerOptions,
    running: AtomicBool,
    /// The running reflectors' controllers, one per namespace partition.
    controllers: Mutex<Vec<Arc<InformerController<K>>>>,
}

impl<K> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("indexer", &self.inner.indexer)
            .field("processor", &self.inner.processor)
            .field("options", &self.options)
            .finish()
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// An informer over `lister_watcher`; call [`SharedIndexInformer::run`] to start it.
    pub fn new(lister_watcher: impl ListerWatcher<K> + 'static, options: InformerOptions) -> Self {
        Self::from_arc(Arc::new(lister_watcher), options)
    }

    /// Like [`SharedIndexInformer::new`] with a shared lister-watcher.
    pub fn from_arc(lister_watcher: Arc<dyn ListerWatcher<K>>, options: InformerOptions) -> Self {
        Self::from_arc_with_indexer(lister_watcher, options, Indexer::new())
    }

    /// Like [`SharedIndexInformer::from_arc`], keeping its cache in `indexer` (an empty one,
    /// e.g. [`Indexer::compact`] for a compact cache).
    pub fn from_arc_with_indexer(
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        options: InformerOptions,
        indexer: Indexer<K>,
    ) -> Self {
        let queue: Arc<dyn Fifo<K>> = match options.queue {
            QueueKind::RealFifo => Arc::new(RealFifo::new(RealFifoOptions::default())),
            QueueKind::DeltaFifo => Arc::new(DeltaFifo::new(DeltaFifoOptions {
                known_objects: Some(indexer.clone()),
                emit_replaced: true,
                ..Default::default()
            })),
        };
        let partition = Partition {
            namespace: None,
            lister_watcher,
            queue,
        };
        Self::from_partitions(indexer, vec![partition], options)
    }

    /// An informer over several namespaces of one kind (controller-runtime's multi-namespace
    /// cache): one lister-watcher per namespace, each with its own reflector, queue and
    /// resourceVersion, all feeding one cache and one set of handlers. Each lister-watcher
    /// must see only objects of its namespace: a relist of one namespace replaces that
    /// namespace's objects in the cache and leaves the others alone. Synced once every
    /// namespace has synced. The queues are RealFIFOs whatever `options.queue` says (a
    /// DeltaFIFO's relist would compare against the whole cache).
    ///
    /// With one namespace this is [`SharedIndexInformer::from_arc`].
    pub fn per_namespace(
        lister_watchers: Vec<(String, Arc<dyn ListerWatcher<K>>)>,
        options: InformerOptions,
    ) -> Self {
        Self::per_namespace_with_indexer(lister_watchers, options, Indexer::new())
    }

    /// Like [`SharedIndexInformer::per_namespace`], keeping its cache in `indexer`.
    pub fn per_namespace_with_indexer(
        lister_watchers: Vec<(String, Arc<dyn ListerWatcher<K>>)>,
        options: InformerOptions,
        indexer: Indexer<K>,
    ) -> Self {
        if let [(_, only)] = lister_watchers.as_slice() {
            return Self::from_arc_with_indexer(only.clone(), options, indexer);
        }
        let partitions = lister_watchers
            .into_iter()
            .map(|(namespace, lister_watcher)| Partition {
                namespace: Some(namespace),
                lister_watcher,
                queue: Arc::new(RealFifo::new(RealFifoOptions::default())) as Arc<dyn Fifo<K>>,
            })
            .collect();
        Self::from_partitions(indexer, partitions, options)
    }

    /// The informer over its partitions.
    fn from_partitions(
        indexer: Indexer<K>,
        partitions: Vec<Partition<K>>,
        options: InformerOptions,
    ) -> Self {
        let inner = Arc::new(Inner {
            indexer: indexer.clone(),
            processor: Processor::new(),
            queue: Arc::new(Queues {
                all: partitions.iter().map(|p| p.queue.clone()).collect(),
            }),
            block_deltas: Mutex::new(()),
        });
        let configs = partitions
            .into_iter()
            .map(|partition| {
                let Partition {
                    namespace,
                    lister_watcher,
                    queue,
                } = partition;
                let (process, should) = (inner.clone(), inner.clone());
                let mut reflector = options.reflector.clone();
                if let Some(ns) = &namespace {
                    reflector.name = format!("{} in {ns}", reflector.name);
                }
                InformerControllerConfig {
                    queue,
                    lister_watcher,
                    process: Box::new(move |deltas, initial| {
                        process.process_deltas(deltas, initial, namespace.as_deref());
                        Ok(())
                    }),
                    reflector,
                    should_resync: Some(Arc::new(move || should.processor.should_resync())),
                    watch_error_handler: None,
                    transform: None,
                    known_objects: Some(indexer.clone()),
                    retry_on_error: false,
                }
            })
            .collect();
        SharedIndexInformer {
            inner,
            lifecycle: Mutex::new(Lifecycle {
                started: false,
                stopped: false,
                check_period: options.resync_period,
                runtime: None,
                configs,
            }),
            options,
            running: AtomicBool::new(false),
            controllers: Mutex::new(Vec::new()),
        }
    }

    /// How many reflectors feed the cache: one, or one per namespace
    /// ([`SharedIndexInformer::per_namespace`]).
    pub fn reflector_count(&self) -> usize {
        self.inner.queue.all.len()
    }

    /// The informer's cache.
    pub fn indexer(&self) -> Indexer<K> {
        self.inner.indexer.clone()
    }

    /// Installs more indexes (any time until stopped); current contents are indexed at once.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), Error> {
        if self.lifecycle.lock().stopped {
            return Err(Error::Stopped {
                action: "adding indexers",
            });
        }
        self.inner.indexer.add_indexers(indexers)
    }

    /// Sets a transform applied to every object before it is stored. Only before start.
    pub fn set_transform(&self, f: impl Fn(K) -> K + Send + Sync + 'static) -> Result<(), Error> {
        let mut lc = self.lifecycle.lock();
        if lc.started {
            return Err(Error::AlreadyStarted {
                action: "setting a transform",
            });
        }
        let f: TransformFn<K> = Arc::new(f);
        for config in &mut lc.configs {
            config.transform = Some(f.clone());
        }
        Ok(())
    }

    /// Sets the hook for errors that end a list-and-watch cycle. Only before start.
    pub fn set_watch_error_handler(
        &self,
        f: impl Fn(&Error) + Send + Sync + 'static,
    ) -> Result<(), Error> {
        let mut lc = self.lifecycle.lock();
        if lc.started {
            return Err(Error::AlreadyStarted {
                action: "setting a watch error handler",
            });
        }
        let f: WatchErrorHandler = Arc::new(f);
        for config in &mut lc.configs {
            config.watch_error_handler = Some(f.clone());
        }
        Ok(())
    }

    /// True once the initial list has been stored and distributed.
    pub fn has_synced(&self) -> bool {
        self.inner.queue.has_synced()
    }

    /// True once `run` has been called.
    pub fn has_started(&self) -> bool {
        self.lifecycle.lock().started
    }

    /// True once `run` has returned.
    pub fn is_stopped(&self) -> bool {
        self.lifecycle.lock().stopped
    }

    /// What the informer is doing now: started, synced, its reflector's step, and how much
    /// waits in its queue and in each handler's buffer. For diagnosing an informer that stopped
    /// delivering; every field is read without waiting on the informer.
    pub fn status(&self) -> InformerStatus {
        let (started, stopped) = {
            let lc = self.lifecycle.lock();
            (lc.started, lc.stopped)
        };
        InformerStatus {
            started,
            stopped,
            synced: self.has_synced(),
            reflector: self
                .controllers
                .lock()
                .first()
                .map(|c| c.reflector_status()),
            queued: self.inner.queue.len(),
            handler_buffers: self.inner.processor.buffered(),
            store_size: self.inner.indexer.len(),
        }
    }

    /// The resource version of the last list, event or bookmark the reflector applied (the
    /// first namespace's reflector for a per-namespace informer).
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.controllers
            .lock()
            .first()
            .and_then(|c| c.last_sync_resource_version())
    }

    /// Registers a handler with the informer's default resync period.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<HandlerRegistration, Error> {
        self.add_event_handler_with_resync(handler, self.options.resync_period)
    }

    /// Registers a handler with its own resync period. A handler added after start first
    /// receives a synthetic add (`is_in_initial_list = true`) for every cached object.
    pub fn add_event_handler_with_resync(
        &self,
        handler: impl ResourceEventHandler<K>,
        resync_period: Duration,
    ) -> Result<HandlerRegistration, Error> {
        self.add_boxed_handler(Arc::new(handler), resync_period)
    }

    /// Registers an already shared handler.
    pub fn add_boxed_handler(
        &self,
        handler: Arc<dyn ResourceEventHandler<K>>,
        resync_period: Duration,
    ) -> Result<HandlerRegistration, Error> {
        let mut lc = self.lifecycle.lock();
        if lc.stopped {
            return Err(Error::Stopped {
                action: "adding an event handler",
            });
        }
        let mut requested = resync_period;
        if !requested.is_zero() && requested < MINIMUM_RESYNC_PERIOD {
            requested = MINIMUM_RESYNC_PERIOD;
        }
        if !requested.is_zero() && requested < lc.check_period {
            if lc.started {
                requested = lc.check_period;
            } else {
                lc.check_period = requested;
                self.inner.processor.recompute_resync(requested);
            }
        }
        let effective = determine_resync(requested, lc.check_period);
        let listener = Arc::new(Listener::new(
            handler,
            requested,
            effective,
            self.inner.queue.clone(),
        ));
        let registration = {
            let l = listener.clone();
            let w = listener.clone();
            HandlerRegistration {
                id: listener.id,
                synced: Arc::new(move || l.has_synced()),
                wait: Arc::new(move || Box::pin(w.clone().wait_synced())),
            }
        };
        if !lc.started {
            self.inner.processor.add(listener);
            return Ok(registration);
        }
        // Late join: under the delta lock, replay the cache as initial adds, then go live.
        let _block = self.inner.block_deltas.lock();
        for obj in self.inner.indexer.list() {
            listener.send(Notification::Add(obj, true));
        }
        if let Some((handle, token)) = &lc.runtime {
            listener.spawn(handle, token);
        }
        self.inner.processor.add(listener);
        Ok(registration)
    }

    /// Unregisters a handler; pending notifications are dropped. Unknown handles are a no-op.
    pub fn remove_event_handler(&self, registration: &HandlerRegistration) {
        self.inner.processor.remove(registration.id);
    }

    /// Runs the informer until `stop` is cancelled. Runs once: later calls return at once.
    pub async fn run(&self, stop: CancellationToken) {
        if self.running.swap(true, Ordering::AcqRel) {
            tracing::warn!("shared informer already running");
            return;
        }
        let processor_stop = CancellationToken::new();
        let configs = {
            let mut lc = self.lifecycle.lock();
            lc.started = true;
            let handle = tokio::runtime::Handle::current();
            for l in self.inner.processor.listeners() {
                l.spawn(&handle, &processor_stop);
            }
            lc.runtime = Some((handle, processor_stop.clone()));
            let check_period = lc.check_period;
            let mut configs = std::mem::take(&mut lc.configs);
            for config in &mut configs {
                config.reflector.resync_period = check_period;
            }
            configs
        };
        if configs.is_empty() {
            return;
        }
        let controllers: Vec<_> = configs
            .into_iter()
            .map(|config| {
                Arc::new(InformerController::new(config).with_downstream(self.inner.clone()))
            })
            .collect();
        *self.controllers.lock() = controllers.clone();
        futures::future::join_all(controllers.iter().map(|c| c.run(stop.clone()))).await;
        processor_stop.cancel();
        self.lifecycle.lock().stopped = true;
    }
}

impl<K: Resource + Send + Sync + 'static> HasSynced for SharedIndexInformer<K> {
    fn has_synced(&self) -> bool {
        SharedIndexInformer::has_synced(self)
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.inner.queue.wait_synced())
    }
}

fn same_resource_version<K: Resource>(a: &K, b: &K) -> bool {
    match (&a.meta().resource_version, &b.meta().resource_version) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// The process loop waits for room in the handlers' buffers before it pops more.
impl<K: Send + Sync + 'static> Downstream for Inner<K> {
    fn is_full(&self) -> bool {
        self.processor.is_full()
    }

    fn wait_for_room(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.processor.wait_for_room())
    }
}

impl<K: Resource + Send + Sync + 'static> Inner<K> {
    fn upsert_and_notify(&self, obj: Arc<K>, initial: bool) {
        match self.indexer.upsert(obj.clone()) {
            Some(old) => {
                let sync_only = same_resource_version(old.as_ref(), obj.as_ref());
                self.processor
                    .distribute(Notification::Update(old, obj), sync_only);
            }
            None => self
                .processor
                .distribute(Notification::Add(obj, initial), false),
        }
    }

    /// client-go's `processDeltas`: store presence, not the delta type, decides add vs update.
    /// `scope`: the namespace this batch's reflector covers in a per-namespace informer (its
    /// relists and resyncs touch that namespace only).
    fn process_deltas(&self, deltas: Vec<Delta<K>>, initial: bool, scope: Option<&str>) {
        let _block = self.block_deltas.lock();
        for delta in deltas {
            match (delta.kind, delta.object) {
                (
                    DeltaType::Added | DeltaType::Updated | DeltaType::Replaced | DeltaType::Sync,
                    DeltaObject::Object(obj),
                ) => {
                    let obj = match obj {
                        DeletedObject::Object(o) => o,
                        DeletedObject::Tombstone { obj, .. } => obj,
                    };
                    self.upsert_and_notify(obj, initial);
                }
                (DeltaType::Deleted, DeltaObject::Object(obj)) => {
                    match &obj {
                        DeletedObject::Object(o) => {
                            self.indexer.delete(o);
                        }
                        DeletedObject::Tombstone { key, .. } => {
                            self.indexer.delete_by_key(key);
                        }
                    }
                    self.processor.distribute(Notification::Delete(obj), false);
                }
                (
                    DeltaType::ReplacedAll,
                    DeltaObject::List {
                        objects,
                        resource_version,
                    },
                ) => match scope {
                    Some(ns) => self.replace_namespace(ns, objects, resource_version, initial),
                    None => self.replace_all(objects, resource_version, initial),
                },
                (DeltaType::SyncAll, _) => {
                    let objects = match scope {
                        Some(ns) => self.in_namespace(ns),
                        None => self.indexer.list(),
                    };
                    for obj in objects {
                        self.processor
                            .distribute(Notification::Update(obj.clone(), obj), true);
                    }
                }
                (DeltaType::Bookmark, DeltaObject::ResourceVersion(rv)) => {
                    self.indexer.bookmark(rv);
                }
                (kind, _) => tracing::warn!(?kind, "ignoring a malformed delta"),
            }
        }
    }

    /// The cached objects of one namespace.
    fn in_namespace(&self, ns: &str) -> Vec<Arc<K>> {
        match self.indexer.by_index(crate::NAMESPACE_INDEX, ns) {
            Ok(found) => found,
            Err(_) => self
                .indexer
                .list()
                .into_iter()
                .filter(|o| o.meta().namespace.as_deref() == Some(ns))
                .collect(),
        }
    }

    /// A relist of one namespace of a per-namespace informer: that namespace's objects missing
    /// from the list are deleted (as tombstones) first, then the list is stored in order; the
    /// other namespaces are left alone.
    fn replace_namespace(
        &self,
        ns: &str,
        objects: Vec<Arc<K>>,
        resource_version: String,
        initial: bool,
    ) {
        let mut old: std::collections::HashMap<Arc<str>, Arc<K>> = self
            .in_namespace(ns)
            .into_iter()
            .map(|o| (self.indexer.arc_key(&o), o))
            .collect();
        for obj in &objects {
            old.remove(&self.indexer.arc_key(obj));
        }
        for (key, obj) in old {
            self.indexer.delete_by_key(&key);
            self.processor.distribute(
                Notification::Delete(DeletedObject::Tombstone {
                    key: key.to_string(),
                    obj,
                }),
                false,
            );
        }
        for obj in objects {
            self.upsert_and_notify(obj, initial);
        }
        self.indexer.bookmark(resource_version);
    }

    /// Applies an atomic replacement: deletions (as tombstones) first, then adds and updates in
    /// list order. The previous contents are dropped as soon as they have been compared.
    fn replace_all(&self, objects: Vec<Arc<K>>, resource_version: String, initial: bool) {
        let keyed: Vec<(Arc<str>, Arc<K>)> = objects
            .into_iter()
            .map(|o| (self.indexer.arc_key(&o), o))
            .collect();
        let mut old = self
            .indexer
            .replace_keyed(keyed.iter().cloned(), resource_version);
        let mut changes = Vec::with_capacity(keyed.len());
        for (key, obj) in keyed {
            let prev = old.remove(&key);
            changes.push((obj, prev));
        }
        for (key, obj) in old {
            self.processor.distribute(
                Notification::Delete(DeletedObject::Tombstone {
                    key: key.to_string(),
                    obj,
                }),
                false,
            );
        }
        for (obj, prev) in changes {
            match prev {
                Some(prev) => {
                    let sync_only = same_resource_version(prev.as_ref(), obj.as_ref());
                    self.processor
                        .distribute(Notification::Update(prev, obj), sync_only);
                }
                None => self
                    .processor
                    .distribute(Notification::Add(obj, initial), false),
            }
        }
    }
}
