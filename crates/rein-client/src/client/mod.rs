//! The delegating `Client`: reads from the shared cache (or the API server for uncached kinds),
//! writes to the API server.

mod options;
mod read_your_writes;
mod subresource;

use std::sync::Arc;

use futures::stream::BoxStream;
use kube_client::core::params::ValidationDirective;
use kube_client::core::{ObjectList, WatchEvent};
use rein_scheme::{GroupVersionKind, ObjectKey, RestMapper, RestMapping, Scheme};
use serde::Serialize;

pub use options::ClientOptions;
pub use read_your_writes::{OnTimeout, ReadYourWrites, WaitOutcome, read_your_writes_waits};
pub use subresource::SubResourceClient;

use crate::Error;
use crate::cache::Cache;
use crate::discovery::DiscoveryClient;
use crate::dynamic::DynamicClient;
use crate::endpoint::Endpoint;
use crate::metrics::{self, ReadSource};
use crate::options::{DeleteParams, ListOptions, Patch, PatchParams, PostParams};
use read_your_writes::{Scope, Tracker, store_key};
use rein_scheme::Object;

/// controller-runtime's client: typed CRUD for every kind, a status and sub-resource writer,
/// a dynamic client and a discovery client. A cheap `Clone` handle.
///
/// Built with a [`Cache`], reads of a kind are served from the shared informer cache (an
/// informer for the kind is started and synced on first use) unless the kind was declared
/// uncached in [`ClientOptions`]; built without one, every read goes to the API server.
/// Writes always go to the API server. Each read logs at debug level and counts in the
/// `rein_client_reads_total{source=…}` metric which path served it.
///
/// Cached reads see this client's own writes: after a write returns, a `get` of that object
/// or a `list` of that kind through this client (or a clone) waits, bounded, until the cache
/// has caught up with the write ([`ReadYourWrites`], on by default, says exactly what is and
/// is not guaranteed).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    kube: kube_client::Client,
    scheme: Arc<Scheme>,
    mapper: RestMapper,
    cache: Option<Cache>,
    options: ClientOptions,
    /// This client's writes not yet seen by the cache (shared by its clones).
    tracker: Tracker,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("cached", &self.inner.cache.is_some())
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client reading straight from the API server, with the built-in scheme.
    pub fn new(kube: kube_client::Client) -> Self {
        Self::builder(kube).build()
    }

    /// A builder to set the scheme, cache and options.
    pub fn builder(kube: kube_client::Client) -> ClientBuilder {
        ClientBuilder {
            kube,
            scheme: None,
            cache: None,
            options: ClientOptions::default(),
        }
    }

    /// The underlying kube-client.
    pub fn kube(&self) -> &kube_client::Client {
        &self.inner.kube
    }

    /// The scheme.
    pub fn scheme(&self) -> &Arc<Scheme> {
        &self.inner.scheme
    }

    /// The REST mapper (seeded from the scheme, grown by discovery).
    pub fn rest_mapper(&self) -> &RestMapper {
        &self.inner.mapper
    }

    /// The cache reads are served from, if any.
    pub fn cache(&self) -> Option<&Cache> {
        self.inner.cache.as_ref()
    }

    /// The options.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// The same client without a cache: every read goes to the API server
    /// (controller-runtime's `GetAPIReader`).
    pub fn api_reader(&self) -> Client {
        Client {
            inner: Arc::new(Inner {
                kube: self.inner.kube.clone(),
                scheme: self.inner.scheme.clone(),
                mapper: self.inner.mapper.clone(),
                cache: None,
                options: self.inner.options.clone(),
                tracker: Tracker::new(self.inner.options.read_your_writes.clone()),
            }),
        }
    }

    /// The kind of `K` according to the scheme.
    pub fn gvk_for<K: Object>(&self) -> Result<GroupVersionKind, Error> {
        self.inner
            .scheme
            .gvk_for::<K>()
            .map_err(|source| Error::Scheme {
                action: "looking up a kind".into(),
                source,
            })
    }

    /// Whether objects of `K` live in namespaces.
    pub fn is_namespaced<K: Object>(&self) -> bool {
        Endpoint::of::<K>().namespaced()
    }

    /// The REST mapping of a kind: the scheme's static mapping when known, else discovery
    /// (which also records the kind's whole group/version in the mapper).
    pub async fn rest_mapping(&self, gvk: &GroupVersionKind) -> Result<RestMapping, Error> {
        match self.inner.mapper.mapping(gvk) {
            Ok(mapping) => Ok(mapping),
            Err(_) => self.discovery().mapping_for(gvk, &self.inner.mapper).await,
        }
    }

    /// The sub-resource client for `status`.
    pub fn status(&self) -> SubResourceClient {
        self.sub_resource("status")
    }

    /// A client for any named sub-resource (`scale`, `eviction`, `binding`, …).
    pub fn sub_resource(&self, name: impl Into<String>) -> SubResourceClient {
        SubResourceClient {
            client: self.clone(),
            name: name.into(),
        }
    }

    /// A dynamic client for kinds without a Rust type.
    pub fn dynamic(&self) -> DynamicClient {
        DynamicClient::new(self.clone())
    }

    /// A discovery client.
    pub fn discovery(&self) -> DiscoveryClient {
        DiscoveryClient::new(self.inner.kube.clone())
    }

    pub(crate) fn reads_from_cache(&self, gvk: &GroupVersionKind) -> Option<&Cache> {
        let cache = self.inner.cache.as_ref()?;
        (!self.inner.options.uncached.contains(gvk)).then_some(cache)
    }

    pub(crate) fn record_read(
        gvk: &GroupVersionKind,
        verb: &str,
        target: &dyn std::fmt::Display,
        source: ReadSource,
    ) {
        tracing::debug!(kind = %gvk, verb, target = %target, source = source.as_str(), "read served");
        metrics::record_read(&gvk.kind, verb, source);
    }

    /// Reads one object; cluster-scoped kinds ignore the key's namespace.
    ///
    /// A cached read hands out the cached object itself, shared: no copy is made (the cache is
    /// read-only, and an `Arc` only lends `&K`). To modify it, take an owned copy with
    /// [`Arc::unwrap_or_clone`] (free when the object came from the API server) or
    /// [`Arc::make_mut`]:
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use rein_client::{Client, PostParams};
    /// # use rein_scheme::ObjectKey;
    /// # async fn f(client: Client) -> Result<(), rein_client::Error> {
    /// let key = ObjectKey::new("default", "settings");
    /// let mut cm = Arc::unwrap_or_clone(client.get::<ConfigMap>(&key).await?);
    /// cm.data.get_or_insert_default().insert("mode".into(), "fast".into());
    /// client.update(&cm, &PostParams::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn get<K: Object>(&self, key: &ObjectKey) -> Result<Arc<K>, Error> {
        let endpoint = Endpoint::of::<K>();
        if let Some(cache) = self.reads_from_cache(&endpoint.gvk) {
            let scope = Scope::Key(store_key::<K>(key));
            self.inner
                .tracker
                .before_read::<K>(cache, "get", scope, key)
                .await?;
            Self::record_read(&endpoint.gvk, "get", key, ReadSource::Cache);
            return cache.get::<K>(key).await;
        }
        Self::record_read(&endpoint.gvk, "get", key, ReadSource::ApiServer);
        endpoint.get(self.kube(), key).await.map(Arc::new)
    }

    /// Lists objects matching the options. As with [`Client::get`], cached items are the
    /// cached objects themselves, shared, never copies.
    pub async fn list<K: Object>(&self, opts: &ListOptions) -> Result<ObjectList<Arc<K>>, Error> {
        let endpoint = Endpoint::of::<K>();
        let target = opts.namespace.as_deref().unwrap_or("(all namespaces)");
        if let Some(cache) = self.reads_from_cache(&endpoint.gvk) {
            let namespace = opts
                .namespace
                .clone()
                .filter(|ns| !ns.is_empty() && endpoint.namespaced());
            self.inner
                .tracker
                .before_read::<K>(cache, "list", Scope::Namespace(namespace), &target)
                .await?;
            Self::record_read(&endpoint.gvk, "list", &target, ReadSource::Cache);
            return cache.list::<K>(opts).await;
        }
        Self::record_read(&endpoint.gvk, "list", &target, ReadSource::ApiServer);
        if opts.label_selector.is_nothing() {
            return Ok(empty_list());
        }
        let list: ObjectList<K> = endpoint.list(self.kube(), opts).await?;
        Ok(ObjectList {
            types: list.types,
            metadata: list.metadata,
            items: list.items.into_iter().map(Arc::new).collect(),
        })
    }

    /// Watches the kind on the API server from `resource_version` (controller-runtime's
    /// `WithWatch` client): the namespace and selectors of `opts` apply, bookmarks are asked
    /// for, and the server ends the watch after `timeout_seconds` (its own default when
    /// `None`). Watches never go through the cache; a controller watches through its sources.
    pub async fn watch<K: Object>(
        &self,
        opts: &ListOptions,
        resource_version: &str,
        timeout_seconds: Option<u32>,
    ) -> Result<BoxStream<'static, Result<WatchEvent<K>, Error>>, Error> {
        Endpoint::of::<K>()
            .watch(self.kube(), opts, resource_version, timeout_seconds)
            .await
    }

    /// Creates the object; returns what the server stored. Metadata-only objects
    /// (`PartialObjectMeta<K>`) cannot be created ([`Error::InvalidInput`]).
    pub async fn create<K: Object>(&self, obj: &K, pp: &PostParams) -> Result<K, Error> {
        only_with_a_body::<K>("creating", obj)?;
        let pp = self.post_params(pp);
        let stored = Endpoint::of::<K>()
            .create(
                self.kube(),
                &ObjectKey::from_object(obj),
                obj,
                &pp,
                self.field_validation(),
            )
            .await?;
        self.wrote(&stored, pp.dry_run);
        Ok(stored)
    }

    /// Replaces the object (optimistic concurrency on its resourceVersion); returns what the
    /// server stored. Metadata-only objects (`PartialObjectMeta<K>`) cannot be updated
    /// ([`Error::InvalidInput`]): patch their metadata instead.
    pub async fn update<K: Object>(&self, obj: &K, pp: &PostParams) -> Result<K, Error> {
        only_with_a_body::<K>("updating", obj)?;
        let pp = self.post_params(pp);
        let stored = Endpoint::of::<K>()
            .replace(
                self.kube(),
                &ObjectKey::from_object(obj),
                obj,
                &pp,
                self.field_validation(),
                None,
            )
            .await?;
        self.wrote(&stored, pp.dry_run);
        Ok(stored)
    }

    /// Patches the object at `key` (merge, JSON, strategic or server-side apply).
    pub async fn patch<K: Object, P: Serialize + std::fmt::Debug>(
        &self,
        key: &ObjectKey,
        patch: &Patch<P>,
        pp: &PatchParams,
    ) -> Result<K, Error> {
        let pp = self.patch_params(pp);
        let stored = Endpoint::of::<K>()
            .patch(self.kube(), key, patch, &pp, None)
            .await?;
        self.wrote(&stored, pp.dry_run);
        Ok(stored)
    }

    /// Server-side applies the whole object under `field_owner` (or the client's default owner).
    pub async fn apply<K: Object>(
        &self,
        obj: &K,
        field_owner: Option<&str>,
        force: bool,
    ) -> Result<K, Error> {
        let key = ObjectKey::from_object(obj);
        let owner = field_owner
            .map(str::to_owned)
            .or_else(|| self.inner.options.field_owner.clone())
            .ok_or_else(|| Error::InvalidInput {
                action: format!("applying {key}"),
                problem: "server-side apply needs a field owner".into(),
            })?;
        let mut pp = PatchParams::apply(&owner);
        pp.force = force;
        self.patch(&key, &Patch::Apply(obj), &pp).await
    }

    /// Deletes the object at `key` (propagation policy, preconditions, grace period via `dp`).
    pub async fn delete<K: Object>(&self, key: &ObjectKey, dp: &DeleteParams) -> Result<(), Error> {
        let mut dp = dp.clone();
        dp.dry_run |= self.inner.options.dry_run;
        let endpoint = Endpoint::of::<K>();
        let Some(cache) = self.tracked_cache(&endpoint.gvk, dp.dry_run) else {
            return endpoint.delete(self.kube(), key, &dp).await;
        };
        let answer: serde_json::Value = endpoint.delete_returning(self.kube(), key, &dp).await?;
        self.inner.tracker.deleted::<K>(cache, key, &answer);
        Ok(())
    }

    /// Deletes every object matching the list options (namespace and selectors).
    pub async fn delete_all_of<K: Object>(
        &self,
        opts: &ListOptions,
        dp: &DeleteParams,
    ) -> Result<(), Error> {
        let endpoint = Endpoint::of::<K>();
        if endpoint.namespaced() && opts.namespace.is_none() {
            return Err(Error::InvalidInput {
                action: endpoint.action("deleting all of", &"(all namespaces)"),
                problem: "deleting a collection of a namespaced kind needs a namespace".into(),
            });
        }
        let mut dp = dp.clone();
        dp.dry_run |= self.inner.options.dry_run;
        endpoint.delete_collection(self.kube(), opts, &dp).await
    }

    /// The cache whose reads wait for this client's writes of `gvk`, unless the write is a
    /// dry run or the kind is read uncached.
    fn tracked_cache(&self, gvk: &GroupVersionKind, dry_run: bool) -> Option<&Cache> {
        if dry_run || !self.inner.options.read_your_writes.enabled {
            return None;
        }
        self.reads_from_cache(gvk)
    }

    /// Records a write answered with `stored`, for read-your-own-writes.
    pub(crate) fn wrote<K: Object>(&self, stored: &K, dry_run: bool) {
        if let Some(cache) = self.tracked_cache(&Endpoint::of::<K>().gvk, dry_run) {
            self.inner.tracker.wrote(cache, stored);
        }
    }

    pub(crate) fn post_params(&self, pp: &PostParams) -> PostParams {
        let mut pp = pp.clone();
        pp.dry_run |= self.inner.options.dry_run;
        if pp.field_manager.is_none() {
            pp.field_manager = self.inner.options.field_owner.clone();
        }
        pp
    }

    pub(crate) fn patch_params(&self, pp: &PatchParams) -> PatchParams {
        let mut pp = pp.clone();
        pp.dry_run |= self.inner.options.dry_run;
        if pp.field_manager.is_none() {
            pp.field_manager = self.inner.options.field_owner.clone();
        }
        if pp.field_validation.is_none() {
            pp.field_validation = self.inner.options.field_validation.clone();
        }
        pp
    }

    /// The `fieldValidation` sent with creates and updates, if the options set one.
    pub(crate) fn field_validation(&self) -> Option<&ValidationDirective> {
        self.inner.options.field_validation.as_ref()
    }
}

/// Refuses to create or update from a metadata-only object (controller-runtime: "cannot update
/// using only metadata -- did you mean to patch?").
pub(crate) fn only_with_a_body<K: Object>(verb: &str, obj: &K) -> Result<(), Error> {
    if !K::metadata_api() {
        return Ok(());
    }
    Err(Error::InvalidInput {
        action: format!("{verb} {}", ObjectKey::from_object(obj)),
        problem: "a metadata-only object (PartialObjectMeta) cannot be written whole; \
                  did you mean to patch it?"
            .into(),
    })
}

pub(crate) fn empty_list<K: Clone>() -> ObjectList<K> {
    ObjectList {
        types: Default::default(),
        metadata: Default::default(),
        items: Vec::new(),
    }
}

/// Builds a [`Client`].
pub struct ClientBuilder {
    kube: kube_client::Client,
    scheme: Option<Arc<Scheme>>,
    cache: Option<Cache>,
    options: ClientOptions,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("cached", &self.cache.is_some())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// The scheme (default: every built-in kind).
    pub fn scheme(mut self, scheme: Arc<Scheme>) -> Self {
        self.scheme = Some(scheme);
        self
    }

    /// Serve reads from this cache.
    pub fn cache(mut self, cache: Cache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Routing and write options.
    pub fn options(mut self, options: ClientOptions) -> Self {
        self.options = options;
        self
    }

    /// Builds the client.
    pub fn build(self) -> Client {
        let scheme = self
            .scheme
            .unwrap_or_else(|| Arc::new(Scheme::with_builtins()));
        let mapper = scheme.rest_mapper();
        Client {
            inner: Arc::new(Inner {
                kube: self.kube,
                scheme,
                mapper,
                tracker: Tracker::new(self.options.read_your_writes.clone()),
                cache: self.cache,
                options: self.options,
            }),
        }
    }
}
