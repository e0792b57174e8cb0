//! A sharded kind with its type erased: what the coordinator and the shards need of it.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;
use kube_client::core::{ApiResource, DynamicObject, PartialObjectMeta};
use rein_client::cache::Cache;
use rein_informer::ResourceEventHandlerFuncs;
use rein_scheme::Object;
use rein_scheme::{GroupVersionKind, ObjectKey};

use crate::Error;

/// One sharded kind of a ring: the reconciled kinds (assigned by hashing their own key) and
/// the kinds that follow their controller owner's assignment.
#[derive(Clone)]
pub struct ShardedKind {
    pub(crate) follows_owner: bool,
    /// On the kind itself: the replicas' (filtered) caches hold whole objects.
    pub(crate) ops: Arc<dyn KindOps>,
    /// On `PartialObjectMeta<K>`: the coordinator decides from metadata alone, so its cache
    /// of every object of the kind holds no spec or status.
    pub(crate) meta_ops: Arc<dyn KindOps>,
}

impl fmt::Debug for ShardedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedKind")
            .field("kind", &self.ops.gvk().to_string())
            .field("follows_owner", &self.follows_owner)
            .finish()
    }
}

impl ShardedKind {
    /// A kind whose objects are assigned by hashing their own key.
    pub fn new<K: Object>() -> Self {
        ShardedKind {
            follows_owner: false,
            ops: Arc::new(Typed::<K>(PhantomData)),
            meta_ops: Arc::new(Typed::<PartialObjectMeta<K>>(PhantomData)),
        }
    }

    /// A kind whose objects go to the shard of their controller owner (`ownerReferences`
    /// entry with `controller: true`) when that owner is of a sharded kind of the ring, and
    /// are hashed by their own key otherwise.
    pub fn following_owner<K: Object>() -> Self {
        ShardedKind {
            follows_owner: true,
            ops: Arc::new(Typed::<K>(PhantomData)),
            meta_ops: Arc::new(Typed::<PartialObjectMeta<K>>(PhantomData)),
        }
    }

    /// The kind.
    pub fn gvk(&self) -> GroupVersionKind {
        self.ops.gvk()
    }
}

/// What sharding reads of an object: its key, identity, version and labels.
#[derive(Debug, Clone)]
pub(crate) struct ObjMeta {
    pub(crate) key: ObjectKey,
    pub(crate) uid: String,
    pub(crate) resource_version: String,
    pub(crate) labels: BTreeMap<String, String>,
    /// The uid of the controller owner, if any.
    pub(crate) controller: Option<String>,
}

impl ObjMeta {
    fn of<K: kube_client::Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        ObjMeta {
            key: ObjectKey::from_object(obj),
            uid: meta.uid.clone().unwrap_or_default(),
            resource_version: meta.resource_version.clone().unwrap_or_default(),
            labels: meta.labels.clone().unwrap_or_default(),
            controller: meta
                .owner_references
                .iter()
                .flatten()
                .find(|r| r.controller == Some(true))
                .map(|r| r.uid.clone()),
        }
    }
}

/// What an informer saw happen to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Added,
    Updated,
    Deleted,
}

/// Called with every object an informer adds, updates or deletes.
pub(crate) type MetaHandler = Arc<dyn Fn(&ObjMeta, Change) + Send + Sync>;

/// The operations on one kind, typed inside, erased outside.
pub(crate) trait KindOps: Send + Sync {
    fn gvk(&self) -> GroupVersionKind;
    fn api_resource(&self) -> ApiResource;
    /// Creates (and, in a running cache, starts and syncs) the kind's informer.
    fn ensure_informer<'a>(&'a self, cache: &'a Cache) -> BoxFuture<'a, Result<(), Error>>;
    /// The object `key` in the cache (`None`: not there).
    fn get<'a>(
        &'a self,
        cache: &'a Cache,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<ObjMeta>, Error>>;
    /// Every object in the cache.
    fn list<'a>(&'a self, cache: &'a Cache) -> BoxFuture<'a, Result<Vec<ObjMeta>, Error>>;
    /// Calls `handler` for every add, update and delete.
    fn watch<'a>(
        &'a self,
        cache: &'a Cache,
        handler: MetaHandler,
    ) -> BoxFuture<'a, Result<(), Error>>;
}

struct Typed<K>(PhantomData<fn() -> K>);

impl<K: Object> Typed<K> {
    fn cache_error(source: rein_client::Error) -> Error {
        Error::Cache {
            kind: K::kind(&()).into_owned(),
            source,
        }
    }
}

impl<K: Object> KindOps for Typed<K> {
    fn gvk(&self) -> GroupVersionKind {
        let resource = ApiResource::erase::<K>(&());
        GroupVersionKind::new(resource.group, resource.version, resource.kind)
    }

    fn api_resource(&self) -> ApiResource {
        ApiResource::erase::<K>(&())
    }

    fn ensure_informer<'a>(&'a self, cache: &'a Cache) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            cache
                .informer_for::<K>()
                .await
                .map(drop)
                .map_err(Self::cache_error)
        })
    }

    fn get<'a>(
        &'a self,
        cache: &'a Cache,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<ObjMeta>, Error>> {
        Box::pin(async move {
            match cache.get::<K>(key).await {
                Ok(obj) => Ok(Some(ObjMeta::of(obj.as_ref()))),
                Err(err) if err.is_not_found() => Ok(None),
                Err(err) => Err(Self::cache_error(err)),
            }
        })
    }

    fn list<'a>(&'a self, cache: &'a Cache) -> BoxFuture<'a, Result<Vec<ObjMeta>, Error>> {
        Box::pin(async move {
            let informer = cache.informer_for::<K>().await.map_err(Self::cache_error)?;
            Ok(informer
                .indexer()
                .list()
                .iter()
                .map(|o| ObjMeta::of(o.as_ref()))
                .collect())
        })
    }

    fn watch<'a>(
        &'a self,
        cache: &'a Cache,
        handler: MetaHandler,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let informer = cache.informer_for::<K>().await.map_err(Self::cache_error)?;
            let (on_add, on_update, on_delete) = (handler.clone(), handler.clone(), handler);
            let funcs = ResourceEventHandlerFuncs::<K>::new()
                .on_add(move |obj, _| on_add(&ObjMeta::of(obj.as_ref()), Change::Added))
                .on_update(move |_, obj| on_update(&ObjMeta::of(obj.as_ref()), Change::Updated))
                .on_delete(move |deleted| {
                    on_delete(&ObjMeta::of(deleted.object().as_ref()), Change::Deleted)
                });
            informer
                .add_event_handler(funcs)
                .map(drop)
                .map_err(|source| Error::Informer {
                    kind: K::kind(&()).into_owned(),
                    source,
                })
        })
    }
}

/// A typed object as the dynamic object patches are sent for.
pub(crate) fn dynamic_api(
    kube: kube_client::Client,
    resource: &ApiResource,
    key: &ObjectKey,
) -> kube_client::Api<DynamicObject> {
    match &key.namespace {
        Some(ns) => kube_client::Api::namespaced_with(kube, ns, resource),
        None => kube_client::Api::all_with(kube, resource),
    }
}
