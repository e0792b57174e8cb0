//! The shared informer cache (controller-runtime's `pkg/cache`): one informer per kind,
//! created on first use, with namespace restriction, per-kind selectors, a metadata transform,
//! field indexes, and `get`/`list` answered from memory.

mod metrics;
mod options;
mod reader;
#[cfg(test)]
mod tests;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use kube_client::core::{ApiResource, DynamicObject, ObjectList};
use parking_lot::Mutex;
use rein_informer::{
    ApiListerWatcher, HasSynced, InformerOptions, InformerStatus, ListWatchOptions,
    SharedIndexInformer, SharedInformerFactory,
};
use rein_scheme::{GroupVersionKind, ObjectKey, RestMapping, Scope};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use options::{ByObject, CacheOptions, Transform, strip_managed_fields};

use crate::endpoint::Endpoint;
use crate::{Error, ListOptions, Object};
use options::KindSettings;
use reader::KindRef;

/// The shared informer cache. A cheap `Clone` handle.
///
/// Informers are created lazily by [`Cache::informer_for`] (and by reads through the cache or a
/// cache-backed [`Client`](crate::Client)); [`Cache::start`] runs every informer created
/// before or after it, until its stop token is cancelled. Once started, asking for a new
/// informer waits until it has synced.
#[derive(Clone)]
pub struct Cache {
    inner: Arc<Inner>,
}

struct Inner {
    kube: kube_client::Client,
    options: CacheOptions,
    factory: SharedInformerFactory,
    informers: Mutex<HashMap<InformerKey, Entry>>,
    started: watch::Sender<Option<CancellationToken>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InformerKey {
    type_id: TypeId,
    resource: String,
}

struct Entry {
    informer: Arc<dyn Any + Send + Sync>,
    synced: Arc<dyn HasSynced>,
    /// Set for informers the cache builds itself (per-kind overrides); factory informers are
    /// started by the factory.
    run: Option<RunFn>,
    running: bool,
    /// The kind, for status reports.
    kind: String,
    status: StatusFn,
}

type StatusFn = Arc<dyn Fn() -> InformerStatus + Send + Sync>;

fn status_fn<K>(informer: &Arc<SharedIndexInformer<K>>) -> StatusFn
where
    K: kube_client::Resource + Send + Sync + 'static,
{
    let informer = informer.clone();
    Arc::new(move || informer.status())
}

type RunFn = Arc<dyn Fn(CancellationToken) -> JoinHandle<()> + Send + Sync>;

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("options", &self.inner.options)
            .field("informers", &self.inner.informers.lock().len())
            .field("started", &self.is_started())
            .finish()
    }
}

impl Cache {
    /// A cache reading through `kube` with the given options; nothing runs until
    /// [`Cache::start`].
    pub fn new(kube: kube_client::Client, options: CacheOptions) -> Self {
        let mut factory = SharedInformerFactory::new(kube.clone(), options.sync_period);
        if let Some(ns) = &options.namespace {
            factory = factory.with_namespace(ns.clone());
        }
        let labels = options
            .default_label_selector
            .as_ref()
            .map(|s| s.to_string());
        let fields = options
            .default_field_selector
            .as_ref()
            .map(|s| s.to_string());
        if labels.is_some() || fields.is_some() {
            factory = factory.with_tweak_list_options(move |o: &mut ListWatchOptions| {
                o.label_selector = labels.clone().filter(|s| !s.is_empty());
                o.field_selector = fields.clone().filter(|s| !s.is_empty());
            });
        }
        let (started, _) = watch::channel(None);
        let inner = Arc::new(Inner {
            kube,
            options,
            factory,
            informers: Mutex::new(HashMap::new()),
            started,
            tasks: Mutex::new(Vec::new()),
        });
        metrics::track(&inner);
        Self { inner }
    }

    /// The options the cache was built with.
    pub fn options(&self) -> &CacheOptions {
        &self.inner.options
    }

    /// Whether [`Cache::start`] has been called (and its token not yet cancelled).
    pub fn is_started(&self) -> bool {
        self.inner
            .started
            .borrow()
            .as_ref()
            .is_some_and(|t| !t.is_cancelled())
    }

    /// Runs every informer, present and future, until `stop` is cancelled; then waits for
    /// them to finish. Calling it twice is an error.
    pub async fn start(&self, stop: CancellationToken) -> Result<(), Error> {
        let already = self.inner.started.borrow().is_some();
        if already {
            return Err(Error::InvalidInput {
                action: "starting the cache".into(),
                problem: "the cache was already started".into(),
            });
        }
        self.inner.started.send_replace(Some(stop.clone()));
        self.run_pending(&stop);
        stop.cancelled().await;
        self.inner.factory.shutdown().await;
        let tasks: Vec<_> = std::mem::take(&mut *self.inner.tasks.lock());
        for t in tasks {
            let _ = t.await;
        }
        Ok(())
    }

    /// Waits until the cache is started and every informer has synced; `false` if the cache
    /// is stopped first.
    pub async fn wait_for_cache_sync(&self) -> bool {
        let Some(stop) = self.wait_started().await else {
            return false;
        };
        rein_informer::wait_for_cache_sync(&stop, &[&*self.inner]).await
    }

    async fn wait_started(&self) -> Option<CancellationToken> {
        let mut rx = self.inner.started.subscribe();
        let token = rx.wait_for(|t| t.is_some()).await.ok()?.clone()?;
        (!token.is_cancelled()).then_some(token)
    }

    fn run_pending(&self, stop: &CancellationToken) {
        let mut factory_pending = false;
        {
            let mut map = self.inner.informers.lock();
            let mut tasks = self.inner.tasks.lock();
            for entry in map.values_mut() {
                if entry.running {
                    continue;
                }
                entry.running = true;
                match &entry.run {
                    Some(run) => tasks.push(run(stop.clone())),
                    None => factory_pending = true,
                }
            }
        }
        if factory_pending {
            self.inner.factory.start(stop.clone());
        }
    }

    /// Every informer the cache holds, by kind (`group/version, Kind=...`), with what it is
    /// doing now: whether it has synced, its reflector's step and for how long, and what
    /// waits in its queue and handler buffers. Sorted by kind. For diagnosing a cache that
    /// stopped following the server.
    pub fn informer_statuses(&self) -> Vec<(String, InformerStatus)> {
        let entries: Vec<(String, StatusFn)> = self
            .inner
            .informers
            .lock()
            .values()
            .map(|e| (e.kind.clone(), e.status.clone()))
            .collect();
        let mut all: Vec<(String, InformerStatus)> =
            entries.into_iter().map(|(k, f)| (k, f())).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The shared informer for `K`, created on first use. If the cache is running, it is
    /// started and this waits until it has synced.
    pub async fn informer_for<K: Object>(&self) -> Result<Arc<SharedIndexInformer<K>>, Error> {
        let informer = self.get_or_create::<K>();
        self.ensure_running(&informer, &Endpoint::of::<K>().gvk.to_string())
            .await?;
        Ok(informer)
    }

    /// The shared informer for `K` if one exists already (made by a read, a controller's
    /// watch or [`Cache::informer_for`]); never creates, starts or waits for one.
    pub fn existing_informer_for<K: Object>(&self) -> Option<Arc<SharedIndexInformer<K>>> {
        self.inner
            .informers
            .lock()
            .get(&Self::typed_key::<K>())
            .and_then(|e| e.informer.clone().downcast::<SharedIndexInformer<K>>().ok())
    }

    /// The shared informer for a dynamic kind (as [`Cache::informer_for`]).
    pub async fn dynamic_informer_for(
        &self,
        mapping: &RestMapping,
    ) -> Result<Arc<SharedIndexInformer<DynamicObject>>, Error> {
        let informer = self.get_or_create_dynamic(mapping);
        self.ensure_running(&informer, &mapping.gvk.to_string())
            .await?;
        Ok(informer)
    }

    async fn ensure_running<K>(
        &self,
        informer: &SharedIndexInformer<K>,
        what: &str,
    ) -> Result<(), Error>
    where
        K: kube_client::Resource + Send + Sync + 'static,
    {
        let token = self.inner.started.borrow().clone();
        let Some(stop) = token else {
            return Ok(());
        };
        self.run_pending(&stop);
        let checks: [&dyn HasSynced; 1] = [informer];
        let synced = rein_informer::wait_for_cache_sync(&stop, &checks);
        let synced =
            match self.inner.options.informer_sync_timeout {
                Some(after) => tokio::time::timeout(after, synced).await.map_err(|_| {
                    Error::CacheSyncTimeout {
                        kind: what.to_string(),
                        after,
                    }
                })?,
                None => synced.await,
            };
        if synced {
            Ok(())
        } else {
            Err(Error::CacheNotRunning {
                action: format!("waiting for the {what} informer to sync"),
            })
        }
    }

    fn has_informer(&self, key: &InformerKey) -> bool {
        self.inner.informers.lock().contains_key(key)
    }

    fn typed_key<K: Object>() -> InformerKey {
        InformerKey {
            type_id: TypeId::of::<K>(),
            resource: String::new(),
        }
    }

    fn dynamic_key(mapping: &RestMapping) -> InformerKey {
        InformerKey {
            type_id: TypeId::of::<DynamicObject>(),
            resource: mapping.gvr.to_string(),
        }
    }

    fn get_or_create<K: Object>(&self) -> Arc<SharedIndexInformer<K>> {
        let key = Self::typed_key::<K>();
        let endpoint = Endpoint::of::<K>();
        let mut map = self.inner.informers.lock();
        if let Some(found) = map
            .get(&key)
            .and_then(|e| e.informer.clone().downcast::<SharedIndexInformer<K>>().ok())
        {
            return found;
        }
        let settings = self.inner.options.for_kind(&endpoint.gvk);
        let (informer, run) = if self.inner.options.by_object.contains_key(&endpoint.gvk) {
            let lw = ApiListerWatcher::<K>::new(
                self.inner.kube.clone(),
                self.list_watch_options(&settings, endpoint.namespaced()),
            );
            let informer = Arc::new(SharedIndexInformer::new(
                lw,
                informer_options::<K>(&settings),
            ));
            let run = run_fn(informer.clone());
            (informer, Some(run))
        } else {
            (self.inner.factory.informer::<K>(), None)
        };
        if let Some(transform) = settings.transform.clone() {
            // Only fails once started; a fresh informer is not.
            let _ = informer.set_transform(move |mut obj: K| {
                transform(obj.meta_mut());
                obj
            });
        }
        map.insert(
            key,
            Entry {
                informer: informer.clone(),
                synced: informer.clone(),
                run,
                running: false,
                kind: endpoint.gvk.to_string(),
                status: status_fn(&informer),
            },
        );
        informer
    }

    fn get_or_create_dynamic(
        &self,
        mapping: &RestMapping,
    ) -> Arc<SharedIndexInformer<DynamicObject>> {
        let key = Self::dynamic_key(mapping);
        let mut map = self.inner.informers.lock();
        if let Some(found) = map.get(&key).and_then(|e| {
            e.informer
                .clone()
                .downcast::<SharedIndexInformer<DynamicObject>>()
                .ok()
        }) {
            return found;
        }
        let resource: ApiResource = mapping.api_resource();
        let namespaced = mapping.scope == Scope::Namespaced;
        let settings = self.inner.options.for_kind(&mapping.gvk);
        let (informer, run) = if self.inner.options.by_object.contains_key(&mapping.gvk) {
            let lw = ApiListerWatcher::<DynamicObject>::new_with(
                self.inner.kube.clone(),
                &resource,
                self.list_watch_options(&settings, namespaced),
            );
            let informer = Arc::new(SharedIndexInformer::new(
                lw,
                informer_options::<DynamicObject>(&settings),
            ));
            let run = run_fn(informer.clone());
            (informer, Some(run))
        } else {
            (
                self.inner.factory.dynamic_informer(&resource, namespaced),
                None,
            )
        };
        if let Some(transform) = settings.transform.clone() {
            let _ = informer.set_transform(move |mut obj: DynamicObject| {
                transform(&mut obj.metadata);
                obj
            });
        }
        map.insert(
            key,
            Entry {
                informer: informer.clone(),
                synced: informer.clone(),
                run,
                running: false,
                kind: mapping.gvk.to_string(),
                status: status_fn(&informer),
            },
        );
        informer
    }

    fn list_watch_options(&self, settings: &KindSettings, namespaced: bool) -> ListWatchOptions {
        ListWatchOptions {
            namespace: self.inner.options.namespace.clone().filter(|_| namespaced),
            label_selector: settings
                .label_selector
                .as_ref()
                .map(|s| s.to_string())
                .filter(|s| !s.is_empty()),
            field_selector: settings
                .field_selector
                .as_ref()
                .map(|s| s.to_string())
                .filter(|s| !s.is_empty()),
        }
    }

    /// Adds a field index for `K` (controller-runtime's `IndexField`): `extract` returns the
    /// values of `field` for an object; `list` with `matching_fields([(field, v)])` then finds
    /// objects by value. Allowed before and after start.
    pub fn index_field<K: Object>(
        &self,
        field: &str,
        extract: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Result<(), Error> {
        let informer = self.get_or_create::<K>();
        let name = reader::field_index_name(field);
        let index = reader::field_index_func::<K>(Arc::new(extract));
        informer
            .add_indexers([(name, index)].into_iter().collect())
            .map_err(|source| Error::Informer {
                action: format!(
                    "adding field index {field:?} for {}",
                    Endpoint::of::<K>().gvk
                ),
                source,
            })
    }

    fn check_readable(
        &self,
        key: InformerKey,
        gvk: &GroupVersionKind,
        verb: &str,
    ) -> Result<(), Error> {
        if self.inner.options.reader_fail_on_missing_informer && !self.has_informer(&key) {
            return Err(Error::CacheUnsupported {
                action: format!("{verb} {gvk} from the cache"),
                problem: "the kind is not cached and the cache may not start informers on reads"
                    .into(),
            });
        }
        if self.inner.started.borrow().is_none() {
            return Err(Error::CacheNotRunning {
                action: format!("{verb} {gvk} from the cache"),
            });
        }
        Ok(())
    }

    /// Reads one object from the cache (a copy); cluster-scoped kinds ignore the namespace.
    ///
    /// Before [`Cache::start`] this fails with [`Error::CacheNotRunning`] (as controller-runtime's
    /// `ErrCacheNotStarted`); when starting the cache on a spawned task, await
    /// [`Cache::wait_for_cache_sync`] before the first read.
    pub async fn get<K: Object>(&self, key: &ObjectKey) -> Result<K, Error> {
        let endpoint = Endpoint::of::<K>();
        self.check_readable(Self::typed_key::<K>(), &endpoint.gvk, "getting")?;
        let informer = self.informer_for::<K>().await?;
        let kind = KindRef {
            kind: &endpoint.gvk.kind,
            namespaced: endpoint.namespaced(),
        };
        reader::get(&informer.indexer(), kind, key)
    }

    /// Lists objects from the cache: namespace, label selector, exact field matches through
    /// field indexes, and limit (`continue` is not supported).
    pub async fn list<K: Object>(&self, opts: &ListOptions) -> Result<ObjectList<K>, Error> {
        let endpoint = Endpoint::of::<K>();
        self.check_readable(Self::typed_key::<K>(), &endpoint.gvk, "listing")?;
        let informer = self.informer_for::<K>().await?;
        let kind = KindRef {
            kind: &endpoint.gvk.kind,
            namespaced: endpoint.namespaced(),
        };
        reader::list(&informer.indexer(), kind, opts)
    }

    pub(crate) async fn get_dynamic(
        &self,
        mapping: &RestMapping,
        key: &ObjectKey,
    ) -> Result<DynamicObject, Error> {
        self.check_readable(Self::dynamic_key(mapping), &mapping.gvk, "getting")?;
        let informer = self.dynamic_informer_for(mapping).await?;
        let kind = KindRef {
            kind: &mapping.gvk.kind,
            namespaced: mapping.scope == Scope::Namespaced,
        };
        reader::get(&informer.indexer(), kind, key)
    }

    pub(crate) async fn list_dynamic(
        &self,
        mapping: &RestMapping,
        opts: &ListOptions,
    ) -> Result<ObjectList<DynamicObject>, Error> {
        self.check_readable(Self::dynamic_key(mapping), &mapping.gvk, "listing")?;
        let informer = self.dynamic_informer_for(mapping).await?;
        let kind = KindRef {
            kind: &mapping.gvk.kind,
            namespaced: mapping.scope == Scope::Namespaced,
        };
        reader::list(&informer.indexer(), kind, opts)
    }
}

impl HasSynced for Inner {
    fn has_synced(&self) -> bool {
        self.informers
            .lock()
            .values()
            .filter(|e| e.running)
            .all(|e| e.synced.has_synced())
    }

    /// Awaits each running informer's sync signal (no polling); checks again afterwards in
    /// case more informers were started meanwhile.
    fn wait_synced(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(async move {
            loop {
                let running: Vec<Arc<dyn HasSynced>> = self
                    .informers
                    .lock()
                    .values()
                    .filter(|e| e.running)
                    .map(|e| e.synced.clone())
                    .collect();
                futures::future::join_all(running.iter().map(|s| s.wait_synced())).await;
                if self.has_synced() {
                    return;
                }
            }
        })
    }
}

fn informer_options<K>(settings: &KindSettings) -> InformerOptions {
    let mut options = InformerOptions {
        resync_period: settings.sync_period,
        ..Default::default()
    };
    options.reflector.name = std::any::type_name::<K>().to_string();
    options
}

fn run_fn<K>(informer: Arc<SharedIndexInformer<K>>) -> RunFn
where
    K: kube_client::Resource + Send + Sync + 'static,
{
    Arc::new(move |stop: CancellationToken| {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run(stop).await })
    })
}
