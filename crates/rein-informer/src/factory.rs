//! The shared informer factory: the one registry of informers (typed and dynamic), each built
//! from an [`InformerSpec`], started together and stopped together.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kube_client::core::{ApiResource, ClusterResourceScope, DynamicObject, ObjectMeta};
use kube_client::{Client, Resource};
use parking_lot::Mutex;
use rein_scheme::{GroupVersionKind, Object};
use tokio_util::sync::CancellationToken;

use crate::{
    ApiListerWatcher, Indexer, InformerOptions, InformerStatus, ListWatchOptions, Lister,
    ListerWatcher, SharedIndexInformer, StoreKind, wait,
};

/// Adjusts the list/watch options of every informer the factory builds.
pub type TweakListOptions = Arc<dyn Fn(&mut ListWatchOptions) + Send + Sync>;

/// A function applied to every object's metadata before it is stored (e.g. dropping
/// `managedFields`). It sees metadata only, so one transform serves every kind.
pub type MetaTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// What one informer watches and how it stores objects: the per-kind settings of a
/// [`SharedInformerFactory`] (controller-runtime's `ByObject`).
///
/// A field left `None` in a per-kind spec falls back to the factory's default spec
/// ([`SharedInformerFactory::with_default_spec`]).
#[derive(Clone, Default)]
pub struct InformerSpec {
    /// Restrict namespaced kinds to this namespace (ignored for cluster-scoped kinds).
    pub namespace: Option<String>,
    /// Restrict namespaced kinds to these namespaces, with one list and watch per namespace
    /// feeding one informer ([`SharedIndexInformer::per_namespace`]); replaces `namespace`
    /// when set (controller-runtime's `DefaultNamespaces` / `ByObject.Namespaces`).
    pub namespaces: Option<Vec<String>>,
    /// Only objects matching this label selector (an empty selector means everything).
    pub label_selector: Option<String>,
    /// Only objects matching this field selector (an empty selector means everything).
    pub field_selector: Option<String>,
    /// Applied to every object's metadata before it is stored.
    pub transform: Option<MetaTransform>,
    /// The informer's default handler resync period (zero: no resync).
    pub resync_period: Option<Duration>,
    /// How the informer's cache keeps objects: typed (the default) or compact, for large
    /// fleets read a few objects at a time (see [`Indexer::compact`]).
    pub store: Option<StoreKind>,
}

impl fmt::Debug for InformerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerSpec")
            .field("namespace", &self.namespace)
            .field("namespaces", &self.namespaces)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("transform", &self.transform.is_some())
            .field("resync_period", &self.resync_period)
            .field("store", &self.store)
            .finish()
    }
}

impl InformerSpec {
    /// This spec with every unset field taken from `defaults`.
    pub fn or(self, defaults: &InformerSpec) -> InformerSpec {
        // The namespaces are one setting: a spec naming either field replaces both defaults.
        let (namespace, namespaces) = if self.namespace.is_some() || self.namespaces.is_some() {
            (self.namespace, self.namespaces)
        } else {
            (defaults.namespace.clone(), defaults.namespaces.clone())
        };
        InformerSpec {
            namespace,
            namespaces,
            label_selector: self
                .label_selector
                .or_else(|| defaults.label_selector.clone()),
            field_selector: self
                .field_selector
                .or_else(|| defaults.field_selector.clone()),
            transform: self.transform.or_else(|| defaults.transform.clone()),
            resync_period: self.resync_period.or(defaults.resync_period),
            store: self.store.or(defaults.store),
        }
    }

    /// The namespaces a namespaced kind is restricted to (sorted, without duplicates or
    /// empty names); empty: all namespaces.
    pub fn effective_namespaces(&self) -> Vec<String> {
        let mut all: Vec<String> = match &self.namespaces {
            Some(set) => set.clone(),
            None => self.namespace.iter().cloned().collect(),
        };
        all.retain(|ns| !ns.is_empty());
        all.sort();
        all.dedup();
        all
    }

    /// The list/watch options of each reflector: one per namespace, or one for all.
    fn list_options(&self, namespaced: bool) -> Vec<ListWatchOptions> {
        let non_empty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
        let base = ListWatchOptions {
            namespace: None,
            label_selector: non_empty(&self.label_selector),
            field_selector: non_empty(&self.field_selector),
            skip_managed_fields: self
                .transform
                .as_ref()
                .is_some_and(crate::transform::is_drop_managed_fields),
        };
        let namespaces = self.effective_namespaces();
        if !namespaced || namespaces.is_empty() {
            return vec![base];
        }
        namespaces
            .into_iter()
            .map(|ns| ListWatchOptions {
                namespace: Some(ns),
                ..base.clone()
            })
            .collect()
    }
}

/// client-go's `SharedInformerFactory`, and the registry behind rein-client's cache: hands out
/// one shared informer per type (or dynamic resource), each built from the default
/// [`InformerSpec`] merged with its kind's own, and runs them all from one [`start`] to one
/// [`shutdown`].
///
/// [`start`]: SharedInformerFactory::start
/// [`shutdown`]: SharedInformerFactory::shutdown
pub struct SharedInformerFactory {
    client: Client,
    defaults: InformerSpec,
    specs: HashMap<GroupVersionKind, InformerSpec>,
    tweak: Option<TweakListOptions>,
    options: InformerOptions,
    informers: Mutex<HashMap<InformerKey, Entry>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .field("defaults", &self.defaults)
            .field("specs", &self.specs)
            .field("informers", &self.informers.lock().len())
            .finish()
    }
}

impl SharedInformerFactory {
    /// A factory watching all namespaces, with `default_resync` for every informer.
    pub fn new(client: Client, default_resync: Duration) -> Self {
        SharedInformerFactory {
            client,
            defaults: InformerSpec {
                resync_period: Some(default_resync),
                ..InformerSpec::default()
            },
            specs: HashMap::new(),
            tweak: None,
            options: InformerOptions::default(),
            informers: Mutex::new(HashMap::new()),
            tasks: Mutex::new(Vec::new()),
        }
    }

    /// Restricts namespaced resources to one namespace (cluster-scoped ones are unaffected).
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.defaults.namespace = Some(namespace.into());
        self
    }

    /// Sets the defaults of every informer: fields set in `spec` replace the current defaults.
    pub fn with_default_spec(mut self, spec: InformerSpec) -> Self {
        self.defaults = spec.or(&self.defaults);
        self
    }

    /// Sets the settings of one kind (typed or dynamic); its unset fields fall back to the
    /// defaults.
    pub fn with_spec(mut self, gvk: GroupVersionKind, spec: InformerSpec) -> Self {
        self.specs.insert(gvk, spec);
        self
    }

    /// Adjusts every informer's list/watch options after its spec is applied.
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

    /// A different resync period for the informer of `K` (sets its spec's `resync_period`).
    pub fn with_custom_resync<K: Resource<DynamicType = ()>>(mut self, period: Duration) -> Self {
        self.specs
            .entry(static_gvk::<K>())
            .or_default()
            .resync_period = Some(period);
        self
    }

    /// The effective spec of `gvk`: its own settings over the defaults.
    pub fn spec_for(&self, gvk: &GroupVersionKind) -> InformerSpec {
        match self.specs.get(gvk) {
            Some(spec) => spec.clone().or(&self.defaults),
            None => self.defaults.clone(),
        }
    }

    /// The shared informer for the typed resource `K` (created on first use).
    pub fn informer<K: Object>(&self) -> Arc<SharedIndexInformer<K>> {
        let namespaced = TypeId::of::<K::Scope>() != TypeId::of::<ClusterResourceScope>();
        self.get_or_create(
            InformerKey::typed::<K>(),
            static_gvk::<K>(),
            namespaced,
            |opts| Arc::new(ApiListerWatcher::<K>::new(self.client.clone(), opts)),
            Indexer::with_store,
        )
    }

    /// The shared informer for a dynamic resource (`namespaced`: whether the namespace
    /// restriction applies to it).
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        namespaced: bool,
    ) -> Arc<SharedIndexInformer<DynamicObject>> {
        let gvk = GroupVersionKind::new(&resource.group, &resource.version, &resource.kind);
        self.get_or_create(
            InformerKey::dynamic(resource),
            gvk,
            namespaced,
            |opts| {
                Arc::new(ApiListerWatcher::<DynamicObject>::new_with(
                    self.client.clone(),
                    resource,
                    opts,
                ))
            },
            Indexer::with_store,
        )
    }

    /// A lister over the shared informer of `K`.
    pub fn lister<K: Object>(&self) -> Lister<K> {
        Lister::new(self.informer::<K>().indexer())
    }

    /// The informer of `K` if it has been created; never creates one.
    pub fn existing_informer<K: Object>(&self) -> Option<Arc<SharedIndexInformer<K>>> {
        let informer = self
            .informers
            .lock()
            .get(&InformerKey::typed::<K>())
            .map(|e| e.informer.clone())?;
        informer.as_any().downcast::<SharedIndexInformer<K>>().ok()
    }

    /// Whether the informer of `K` has been created.
    pub fn has_informer<K: 'static>(&self) -> bool {
        self.informers
            .lock()
            .contains_key(&InformerKey::typed::<K>())
    }

    /// Whether the informer of a dynamic resource has been created.
    pub fn has_dynamic_informer(&self, resource: &ApiResource) -> bool {
        self.informers
            .lock()
            .contains_key(&InformerKey::dynamic(resource))
    }

    /// Every informer created so far, with its kind and what it is doing now, sorted by kind.
    pub fn informer_statuses(&self) -> Vec<(GroupVersionKind, InformerStatus)> {
        let entries: Vec<(GroupVersionKind, Arc<dyn FactoryInformer>)> = self
            .informers
            .lock()
            .values()
            .map(|e| (e.kind.clone(), e.informer.clone()))
            .collect();
        let mut all: Vec<_> = entries
            .into_iter()
            .map(|(kind, informer)| (kind, informer.status()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
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

    /// The one creation path, typed or dynamic: the kind's spec becomes the list/watch options
    /// (then the tweak), the resync period, the store and the transform of a new informer.
    fn get_or_create<K>(
        &self,
        key: InformerKey,
        kind: GroupVersionKind,
        namespaced: bool,
        lister_watcher: impl Fn(ListWatchOptions) -> Arc<dyn ListerWatcher<K>>,
        indexer: impl FnOnce(StoreKind) -> Indexer<K>,
    ) -> Arc<SharedIndexInformer<K>>
    where
        K: Resource + Clone + Send + Sync + 'static,
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
        let spec = self.spec_for(&kind);
        let mut per_namespace = Vec::new();
        for mut list_options in spec.list_options(namespaced) {
            if let Some(t) = &self.tweak {
                t(&mut list_options);
            }
            let ns = list_options.namespace.clone().unwrap_or_default();
            per_namespace.push((ns, lister_watcher(list_options)));
        }
        let mut options = self.options.clone();
        options.resync_period = spec.resync_period.unwrap_or_default();
        options.reflector.name = std::any::type_name::<K>().to_string();
        let informer = Arc::new(SharedIndexInformer::per_namespace_with_indexer(
            per_namespace,
            options,
            indexer(spec.store.unwrap_or_default()),
        ));
        if let Some(transform) = spec.transform {
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
                kind,
                started: false,
            },
        );
        informer
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

/// The group, version and kind of a statically typed resource.
fn static_gvk<K: Resource<DynamicType = ()>>() -> GroupVersionKind {
    GroupVersionKind::new(K::group(&()), K::version(&()), K::kind(&()))
}

/// An informer of any type, as the registry holds it.
trait FactoryInformer: Send + Sync {
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
    fn spawn(self: Arc<Self>, stop: CancellationToken) -> tokio::task::JoinHandle<()>;
    fn synced(&self) -> bool;
    fn wait(self: Arc<Self>) -> BoxFuture<'static, ()>;
    fn status(&self) -> InformerStatus;
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
    fn status(&self) -> InformerStatus {
        SharedIndexInformer::status(self)
    }
}

/// An informer's identity in the registry: its Rust type, plus the resource for dynamic ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InformerKey {
    type_id: TypeId,
    resource: String,
}

impl InformerKey {
    fn typed<K: 'static>() -> Self {
        InformerKey {
            type_id: TypeId::of::<K>(),
            resource: String::new(),
        }
    }

    fn dynamic(resource: &ApiResource) -> Self {
        InformerKey {
            type_id: TypeId::of::<DynamicObject>(),
            resource: format!("{}/{}", resource.api_version, resource.plural),
        }
    }
}

struct Entry {
    informer: Arc<dyn FactoryInformer>,
    /// The kind, for status reports.
    kind: GroupVersionKind,
    started: bool,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{InformerSpec, MetaTransform};

    fn skips(transform: Option<MetaTransform>) -> Vec<bool> {
        let spec = InformerSpec {
            namespaces: Some(vec!["a".into(), "b".into()]),
            transform,
            ..InformerSpec::default()
        };
        spec.list_options(true)
            .iter()
            .map(|o| o.skip_managed_fields)
            .collect()
    }

    #[test]
    fn only_the_drop_managed_fields_transform_skips_them_while_decoding() {
        assert_eq!(skips(Some(crate::drop_managed_fields())), [true, true]);
        assert_eq!(skips(None), [false, false]);
        // An equivalent closure is not recognised: it may read managedFields first.
        let own: MetaTransform = Arc::new(|meta| meta.managed_fields = None);
        assert_eq!(skips(Some(own)), [false, false]);
    }
}
