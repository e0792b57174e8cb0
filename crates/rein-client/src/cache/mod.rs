//! The shared informer cache (controller-runtime's `pkg/cache`): one informer per kind,
//! created on first use, with namespace restriction, per-kind selectors, a metadata transform,
//! field indexes, and `get`/`list` answered from memory.

mod metrics;
mod options;
mod reader;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use kube_client::core::{DynamicObject, ObjectList};
use rein_informer::{HasSynced, InformerStatus, SharedIndexInformer, SharedInformerFactory};
use rein_scheme::{GroupVersionKind, ObjectKey, RestMapping, Scope};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use options::{ByObject, CacheOptions, Transform, strip_managed_fields};

use crate::endpoint::Endpoint;
use crate::{Error, ListOptions};
use reader::KindRef;
use rein_scheme::Object;

/// The shared informer cache. A cheap `Clone` handle.
///
/// A reader over one [`SharedInformerFactory`], which owns every informer (typed and dynamic)
/// and builds each from the [`CacheOptions`] (defaults, overridden per kind by [`ByObject`]).
/// Informers are created lazily by [`Cache::informer_for`] (and by reads through the cache or a
/// cache-backed [`Client`](crate::Client)); [`Cache::start`] runs every informer created
/// before or after it, until its stop token is cancelled. Once started, asking for a new
/// informer waits until it has synced.
#[derive(Clone)]
pub struct Cache {
    inner: Arc<Inner>,
}

struct Inner {
    options: CacheOptions,
    factory: SharedInformerFactory,
    started: watch::Sender<Option<CancellationToken>>,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("options", &self.inner.options)
            .field("factory", &self.inner.factory)
            .field("started", &self.is_started())
            .finish()
    }
}

impl Cache {
    /// A cache reading through `kube` with the given options; nothing runs until
    /// [`Cache::start`].
    pub fn new(kube: kube_client::Client, options: CacheOptions) -> Self {
        let mut factory = SharedInformerFactory::new(kube, options.sync_period)
            .with_default_spec(options.default_spec());
        for (gvk, by) in &options.by_object {
            factory = factory.with_spec(gvk.clone(), by.spec());
        }
        let (started, _) = watch::channel(None);
        let inner = Arc::new(Inner {
            options,
            factory,
            started,
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

    /// Resolves once the cache has been started and then stopped (its token cancelled); never
    /// before. Reads waiting on the cache end their waits with it.
    pub(crate) async fn stopped(&self) {
        let mut rx = self.inner.started.subscribe();
        let token = match rx.wait_for(|t| t.is_some()).await {
            Ok(token) => token.clone(),
            Err(_) => None,
        };
        match token {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
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
        self.inner.factory.start(stop.clone());
        stop.cancelled().await;
        self.inner.factory.shutdown().await;
        Ok(())
    }

    /// Waits until the cache is started and every informer has synced; `false` if the cache
    /// is stopped first.
    pub async fn wait_for_cache_sync(&self) -> bool {
        let Some(stop) = self.wait_started().await else {
            return false;
        };
        self.inner.factory.wait_for_cache_sync(&stop).await
    }

    async fn wait_started(&self) -> Option<CancellationToken> {
        let mut rx = self.inner.started.subscribe();
        let token = rx.wait_for(|t| t.is_some()).await.ok()?.clone()?;
        (!token.is_cancelled()).then_some(token)
    }

    /// Every informer the cache holds, by kind (`group/version, Kind=...`), with what it is
    /// doing now: whether it has synced, its reflector's step and for how long, and what
    /// waits in its queue and handler buffers. Sorted by kind. For diagnosing a cache that
    /// stopped following the server.
    pub fn informer_statuses(&self) -> Vec<(String, InformerStatus)> {
        self.inner
            .factory
            .informer_statuses()
            .into_iter()
            .map(|(kind, status)| (kind.to_string(), status))
            .collect()
    }

    /// The shared informer for `K`, created on first use. If the cache is running, it is
    /// started and this waits until it has synced.
    pub async fn informer_for<K: Object>(&self) -> Result<Arc<SharedIndexInformer<K>>, Error> {
        let informer = self.inner.factory.informer::<K>();
        self.ensure_running(&informer, &Endpoint::of::<K>().gvk.to_string())
            .await?;
        Ok(informer)
    }

    /// The shared informer for `K` if one exists already (made by a read, a controller's
    /// watch or [`Cache::informer_for`]); never creates, starts or waits for one.
    pub fn existing_informer_for<K: Object>(&self) -> Option<Arc<SharedIndexInformer<K>>> {
        self.inner.factory.existing_informer::<K>()
    }

    /// The shared informer for a dynamic kind (as [`Cache::informer_for`]).
    pub async fn dynamic_informer_for(
        &self,
        mapping: &RestMapping,
    ) -> Result<Arc<SharedIndexInformer<DynamicObject>>, Error> {
        let informer = self
            .inner
            .factory
            .dynamic_informer(&mapping.api_resource(), mapping.scope == Scope::Namespaced);
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
        self.inner.factory.start(stop.clone());
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

    /// Adds a field index for `K` (controller-runtime's `IndexField`): `extract` returns the
    /// values of `field` for an object; `list` with `matching_fields([(field, v)])` then finds
    /// objects by value. Allowed before and after start.
    pub fn index_field<K: Object>(
        &self,
        field: &str,
        extract: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Result<(), Error> {
        let informer = self.inner.factory.informer::<K>();
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

    /// Fails unless a read of `gvk` may be answered: the cache is started, and (with
    /// `reader_fail_on_missing_informer`) the kind already has an informer (`has_informer`).
    fn check_readable(
        &self,
        has_informer: bool,
        gvk: &GroupVersionKind,
        verb: &str,
    ) -> Result<(), Error> {
        if self.inner.options.reader_fail_on_missing_informer && !has_informer {
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

    /// Fails with [`Error::NamespaceNotCached`] when the cache restricts `gvk` to some
    /// namespaces and `namespace` is another one (as controller-runtime's multi-namespace
    /// cache); cluster-scoped kinds and reads across all namespaces pass.
    fn check_namespace(
        &self,
        gvk: &GroupVersionKind,
        namespaced: bool,
        namespace: Option<&str>,
        verb: &str,
    ) -> Result<(), Error> {
        if !self.inner.options.restricts_namespaces() || !namespaced {
            return Ok(());
        }
        let Some(namespace) = namespace.filter(|ns| !ns.is_empty()) else {
            return Ok(());
        };
        let cached = self.inner.factory.spec_for(gvk).effective_namespaces();
        if cached.is_empty() || cached.iter().any(|ns| ns == namespace) {
            return Ok(());
        }
        Err(Error::NamespaceNotCached {
            action: format!("{verb} {gvk} in {namespace} from the cache"),
            namespace: namespace.to_owned(),
            cached,
        })
    }

    /// Reads one object from the cache: the cached object itself, shared, not a copy
    /// ([`Arc::unwrap_or_clone`] gives an owned one to modify); cluster-scoped kinds ignore
    /// the namespace.
    ///
    /// Before [`Cache::start`] this fails with [`Error::CacheNotRunning`] (as controller-runtime's
    /// `ErrCacheNotStarted`); when starting the cache on a spawned task, await
    /// [`Cache::wait_for_cache_sync`] before the first read.
    pub async fn get<K: Object>(&self, key: &ObjectKey) -> Result<Arc<K>, Error> {
        let endpoint = Endpoint::of::<K>();
        let informer = self
            .readable_informer::<K>(&endpoint, key.namespace.as_deref(), "getting")
            .await?;
        let kind = KindRef {
            kind: &endpoint.gvk.kind,
            namespaced: endpoint.namespaced(),
        };
        reader::get(&informer.indexer(), kind, key)
    }

    /// The synced informer a read of `K` is answered from, after the read's checks: started
    /// cache, informer allowed, namespace cached. A synced informer is used as it is; otherwise
    /// it is made, started and waited for.
    async fn readable_informer<K: Object>(
        &self,
        endpoint: &Endpoint,
        namespace: Option<&str>,
        verb: &str,
    ) -> Result<Arc<SharedIndexInformer<K>>, Error> {
        let existing = self.inner.factory.existing_informer::<K>();
        self.check_readable(existing.is_some(), &endpoint.gvk, verb)?;
        self.check_namespace(&endpoint.gvk, endpoint.namespaced(), namespace, verb)?;
        match existing {
            Some(informer) if informer.has_synced() => Ok(informer),
            _ => self.informer_for::<K>().await,
        }
    }

    /// Lists objects from the cache: namespace, label selector, exact field matches through
    /// field indexes, and limit (`continue` is not supported). The items are the cached
    /// objects themselves, shared.
    pub async fn list<K: Object>(&self, opts: &ListOptions) -> Result<ObjectList<Arc<K>>, Error> {
        let endpoint = Endpoint::of::<K>();
        let informer = self
            .readable_informer::<K>(&endpoint, opts.namespace.as_deref(), "listing")
            .await?;
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
        self.check_readable(
            self.inner
                .factory
                .has_dynamic_informer(&mapping.api_resource()),
            &mapping.gvk,
            "getting",
        )?;
        self.check_namespace(
            &mapping.gvk,
            mapping.scope == Scope::Namespaced,
            key.namespace.as_deref(),
            "getting",
        )?;
        let informer = self.dynamic_informer_for(mapping).await?;
        let kind = KindRef {
            kind: &mapping.gvk.kind,
            namespaced: mapping.scope == Scope::Namespaced,
        };
        reader::get(&informer.indexer(), kind, key).map(Arc::unwrap_or_clone)
    }

    pub(crate) async fn list_dynamic(
        &self,
        mapping: &RestMapping,
        opts: &ListOptions,
    ) -> Result<ObjectList<DynamicObject>, Error> {
        self.check_readable(
            self.inner
                .factory
                .has_dynamic_informer(&mapping.api_resource()),
            &mapping.gvk,
            "listing",
        )?;
        self.check_namespace(
            &mapping.gvk,
            mapping.scope == Scope::Namespaced,
            opts.namespace.as_deref(),
            "listing",
        )?;
        let informer = self.dynamic_informer_for(mapping).await?;
        let kind = KindRef {
            kind: &mapping.gvk.kind,
            namespaced: mapping.scope == Scope::Namespaced,
        };
        let list = reader::list(&informer.indexer(), kind, opts)?;
        Ok(ObjectList {
            types: list.types,
            metadata: list.metadata,
            items: list.items.into_iter().map(Arc::unwrap_or_clone).collect(),
        })
    }
}
