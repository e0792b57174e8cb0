//! The shared informer factory: one informer per type and namespace selection, started together.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kube_client::core::{ApiResource, ClusterResourceScope, DynamicObject};
use kube_client::{Client, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::{
    ApiListerWatcher, InformerOptions, ListWatchOptions, Lister, SharedIndexInformer, wait,
};

/// Adjusts the list/watch options of every informer the factory builds.
pub type TweakListOptions = Arc<dyn Fn(&mut ListWatchOptions) + Send + Sync>;

trait FactoryInformer: Send + Sync {
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
    fn spawn(self: Arc<Self>, stop: CancellationToken) -> tokio::task::JoinHandle<()>;
    fn synced(&self) -> bool;
    fn wait(self: Arc<Self>) -> BoxFuture<'static, ()>;
}

impl<K> FactoryInformer for SharedIndexInformer<K>
where
    K: Resource + Send + Sync + 'static,
{
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
    fn spawn(self: Arc<Self>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move { self.run(stop).await })
    }
    fn synced(&self) -> bool {
        self.has_synced()
    }
    fn wait(self: Arc<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move { wait::HasSynced::wait_synced(self.as_ref()).await })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InformerKey {
    type_id: TypeId,
    resource: String,
}

struct Entry {
    informer: Arc<dyn FactoryInformer>,
    started: bool,
}

/// client-go's `SharedInformerFactory`: hands out one shared informer per type.
pub struct SharedInformerFactory {
    client: Client,
    default_resync: Duration,
    namespace: Option<String>,
    tweak: Option<TweakListOptions>,
    options: InformerOptions,
    custom_resync: HashMap<TypeId, Duration>,
    informers: Mutex<HashMap<InformerKey, Entry>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .field("default_resync", &self.default_resync)
            .field("namespace", &self.namespace)
            .field("informers", &self.informers.lock().len())
            .finish()
    }
}

impl SharedInformerFactory {
    /// A factory watching all namespaces, with `default_resync` for every informer.
    pub fn new(client: Client, default_resync: Duration) -> Self {
        SharedInformerFactory {
            client,
            default_resync,
            namespace: None,
            tweak: None,
            options: InformerOptions::default(),
            custom_resync: HashMap::new(),
            informers: Mutex::new(HashMap::new()),
            tasks: Mutex::new(Vec::new()),
        }
    }

    /// Restricts namespaced resources to one namespace (cluster-scoped ones are unaffected).
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Adjusts every informer's list/watch options (e.g. a label selector).
    pub fn with_tweak_list_options(
        mut self,
        f: impl Fn(&mut ListWatchOptions) + Send + Sync + 'static,
    ) -> Self {
        self.tweak = Some(Arc::new(f));
        self
    }

    /// Template options for every informer (queue kind, reflector settings).
    pub fn with_informer_options(mut self, options: InformerOptions) -> Self {
        self.options = options;
        self
    }

    /// A different resync period for the informer of `K`.
    pub fn with_custom_resync<K: 'static>(mut self, period: Duration) -> Self {
        self.custom_resync.insert(TypeId::of::<K>(), period);
        self
    }

    fn list_options(&self, namespaced: bool) -> ListWatchOptions {
        let mut opts = ListWatchOptions {
            namespace: if namespaced {
                self.namespace.clone()
            } else {
                None
            },
            ..Default::default()
        };
        if let Some(t) = &self.tweak {
            t(&mut opts);
        }
        opts
    }

    fn informer_options<K: 'static>(&self) -> InformerOptions {
        let mut o = self.options.clone();
        o.resync_period = self
            .custom_resync
            .get(&TypeId::of::<K>())
            .copied()
            .unwrap_or(self.default_resync);
        o.reflector.name = std::any::type_name::<K>().to_string();
        o
    }

    fn get_or_create<K>(
        &self,
        key: InformerKey,
        make: impl FnOnce() -> SharedIndexInformer<K>,
    ) -> Arc<SharedIndexInformer<K>>
    where
        K: Resource + Send + Sync + 'static,
    {
        let mut map = self.informers.lock();
        if let Some(entry) = map.get(&key)
            && let Ok(inf) = entry
                .informer
                .clone()
                .as_any()
                .downcast::<SharedIndexInformer<K>>()
        {
            return inf;
        }
        let inf = Arc::new(make());
        map.insert(
            key,
            Entry {
                informer: inf.clone(),
                started: false,
            },
        );
        inf
    }

    /// The shared informer for the typed resource `K` (created on first use).
    pub fn informer<K>(&self) -> Arc<SharedIndexInformer<K>>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        K::Scope: 'static,
    {
        let namespaced = TypeId::of::<K::Scope>() != TypeId::of::<ClusterResourceScope>();
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            resource: String::new(),
        };
        self.get_or_create(key, || {
            let lw = ApiListerWatcher::<K>::new(self.client.clone(), self.list_options(namespaced));
            SharedIndexInformer::new(lw, self.informer_options::<K>())
        })
    }

    /// The shared informer for a dynamic resource (`namespaced`: whether the namespace
    /// restriction applies to it).
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        namespaced: bool,
    ) -> Arc<SharedIndexInformer<DynamicObject>> {
        let key = InformerKey {
            type_id: TypeId::of::<DynamicObject>(),
            resource: format!("{}/{}", resource.api_version, resource.plural),
        };
        self.get_or_create(key, || {
            let lw = ApiListerWatcher::<DynamicObject>::new_with(
                self.client.clone(),
                resource,
                self.list_options(namespaced),
            );
            SharedIndexInformer::new(lw, self.informer_options::<DynamicObject>())
        })
    }

    /// A lister over the shared informer of `K`.
    pub fn lister<K>(&self) -> Lister<K>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        K::Scope: 'static,
    {
        Lister::new(self.informer::<K>().indexer())
    }

    /// Starts every informer not yet started; informers requested later need another `start`.
    pub fn start(&self, stop: CancellationToken) {
        let mut map = self.informers.lock();
        let mut tasks = self.tasks.lock();
        for entry in map.values_mut() {
            if !entry.started {
                entry.started = true;
                tasks.push(entry.informer.clone().spawn(stop.clone()));
            }
        }
    }

    /// True if every started informer has synced.
    pub fn has_synced(&self) -> bool {
        self.informers
            .lock()
            .values()
            .filter(|e| e.started)
            .all(|e| e.informer.synced())
    }

    /// Waits until every started informer has synced, or `stop` is cancelled (`false`).
    pub async fn wait_for_cache_sync(&self, stop: &CancellationToken) -> bool {
        wait::wait_for_cache_sync(stop, &[self]).await
    }

    /// Waits for every started informer to return (after their stop token is cancelled).
    pub async fn shutdown(&self) {
        let tasks: Vec<_> = std::mem::take(&mut *self.tasks.lock());
        for t in tasks {
            let _ = t.await;
        }
    }
}

impl wait::HasSynced for SharedInformerFactory {
    fn has_synced(&self) -> bool {
        SharedInformerFactory::has_synced(self)
    }

    /// Awaits every started informer's signal; checks again afterwards in case more informers
    /// were started meanwhile.
    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            loop {
                let started: Vec<Arc<dyn FactoryInformer>> = self
                    .informers
                    .lock()
                    .values()
                    .filter(|e| e.started)
                    .map(|e| e.informer.clone())
                    .collect();
                futures::future::join_all(started.into_iter().map(|i| i.wait())).await;
                if self.has_synced() {
                    return;
                }
            }
        })
    }
}
