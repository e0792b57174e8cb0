//! The `ListerWatcher` trait and its implementation over the API server for typed and dynamic objects.

use std::fmt;
use std::marker::PhantomData;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use kube_client::core::params::{ListParams, WatchParams};
use kube_client::core::{ObjectList, WatchEvent};
use kube_client::{Client, Resource};
use serde::de::DeserializeOwned;

use crate::decode::WithoutManagedFields;

/// A stream of watch events.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, kube_client::Error>>;

/// One page of a list response.
#[derive(Debug, Clone)]
pub struct ListPage<K> {
    /// The objects.
    pub items: Vec<K>,
    /// The list's resource version.
    pub resource_version: String,
    /// Token for the next page, if there is one.
    pub continue_token: Option<String>,
}

/// Lists and watches one kind of object (client-go's `ListerWatcher`).
///
/// Implementations apply their own namespace and selectors; the reflector supplies resource
/// versions, paging, timeouts and the streaming-list flags.
#[async_trait]
pub trait ListerWatcher<K>: Send + Sync {
    /// One list call (one page when `params.limit` is set).
    async fn list(&self, params: &ListParams) -> Result<ListPage<K>, kube_client::Error>;
    /// Opens a watch from `resource_version`.
    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, kube_client::Error>;
    /// False if the server is known not to support streaming lists (`sendInitialEvents`).
    fn supports_watch_list(&self) -> bool {
        true
    }
    /// Rewrites a decoded object into its smallest in-memory form before the reflector keeps
    /// it (when [`ReflectorOptions::compact_objects`](crate::ReflectorOptions) is on).
    ///
    /// serde decodes a JSON array into a `Vec` grown by doubling, so a decoded object carries
    /// up to twice its lists' length in spare capacity; a clone allocates every `Vec` at
    /// exactly its length. The default keeps the object as decoded; [`ApiListerWatcher`]
    /// clones it and drops the decoded original.
    fn compact(&self, obj: K) -> K {
        obj
    }
}

/// Which objects an [`ApiListerWatcher`] sees.
#[derive(Debug, Clone, Default)]
pub struct ListWatchOptions {
    /// Restrict to one namespace (ignored for cluster-scoped resources by the factory).
    pub namespace: Option<String>,
    /// Label selector in Kubernetes syntax.
    pub label_selector: Option<String>,
    /// Field selector in Kubernetes syntax.
    pub field_selector: Option<String>,
    /// Decode objects without `metadata.managedFields`: the JSON is passed over, never built
    /// ([`WithoutManagedFields`]). For caches that drop them anyway; a shared informer factory
    /// sets it when the kind's transform is [`drop_managed_fields`](crate::drop_managed_fields).
    pub skip_managed_fields: bool,
}

/// A [`ListerWatcher`] that talks to the API server through a `kube_client::Client`.
///
/// For a metadata-only type (`PartialObjectMeta<K>`, whose `Resource::metadata_api()` is
/// true) it lists and watches with client-go's metadata content types
/// (`Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` and
/// `as=PartialObjectMetadata`): the server sends each object's metadata only.
pub struct ApiListerWatcher<K: Resource> {
    client: Client,
    request: kube_client::core::Request,
    options: ListWatchOptions,
    _kind: PhantomData<fn() -> K>,
}

impl<K: Resource> fmt::Debug for ApiListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiListerWatcher")
            .field("path", &self.request.url_path)
            .field("options", &self.options)
            .finish()
    }
}

impl<K: Resource> ApiListerWatcher<K>
where
    K::DynamicType: Default,
{
    /// Lists and watches `K` (a typed resource) with the given options.
    pub fn new(client: Client, options: ListWatchOptions) -> Self {
        Self::new_with(client, &K::DynamicType::default(), options)
    }
}

impl<K: Resource> ApiListerWatcher<K> {
    /// Lists and watches `K` with explicit dynamic type information (e.g. an `ApiResource` for
    /// `DynamicObject`).
    pub fn new_with(client: Client, dyntype: &K::DynamicType, options: ListWatchOptions) -> Self {
        let path = K::url_path(dyntype, options.namespace.as_deref());
        ApiListerWatcher {
            client,
            request: kube_client::core::Request::new(path),
            options,
            _kind: PhantomData,
        }
    }
}

fn build_error(e: kube_client::core::request::Error) -> kube_client::Error {
    kube_client::Error::BuildRequest(e)
}

/// Puts back the `resourceVersion=0` kube-core leaves out of a list that also sets `limit`:
/// client-go sends both on a reflector's first page, so it is served from the watch cache
/// rather than as a consistent read from etcd.
fn keep_resource_version_zero(
    mut req: http::Request<Vec<u8>>,
    params: &ListParams,
) -> Result<http::Request<Vec<u8>>, kube_client::Error> {
    let drops_it = params.limit.is_some()
        && params.continue_token.is_none()
        && params.resource_version.as_deref() == Some("0");
    let already = req.uri().query().is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.starts_with("resourceVersion="))
    });
    if !drops_it || already {
        return Ok(req);
    }
    let uri = match req.uri().query() {
        Some(_) => format!("{}&resourceVersion=0", req.uri()),
        None => format!("{}?resourceVersion=0", req.uri()),
    };
    *req.uri_mut() = uri.parse().map_err(|e: http::uri::InvalidUri| {
        kube_client::Error::BuildRequest(kube_client::core::request::Error::Validation(
            e.to_string(),
        ))
    })?;
    Ok(req)
}

#[async_trait]
impl<K> ListerWatcher<K> for ApiListerWatcher<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    async fn list(&self, params: &ListParams) -> Result<ListPage<K>, kube_client::Error> {
        let mut params = params.clone();
        params.label_selector = self.options.label_selector.clone();
        params.field_selector = self.options.field_selector.clone();
        let req = if K::metadata_api() {
            self.request.list_metadata(&params)
        } else {
            self.request.list(&params)
        }
        .map_err(build_error)?;
        let req = keep_resource_version_zero(req, &params)?;
        let list = if self.options.skip_managed_fields {
            let list = self
                .client
                .request::<ObjectList<WithoutManagedFields<K>>>(req)
                .await?;
            ObjectList {
                types: list.types,
                metadata: list.metadata,
                items: list.items.into_iter().map(|o| o.0).collect(),
            }
        } else {
            self.client.request::<ObjectList<K>>(req).await?
        };
        Ok(ListPage {
            items: list.items,
            resource_version: list.metadata.resource_version.unwrap_or_default(),
            continue_token: list.metadata.continue_.filter(|c| !c.is_empty()),
        })
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, kube_client::Error> {
        let mut params = params.clone();
        params.label_selector = self.options.label_selector.clone();
        params.field_selector = self.options.field_selector.clone();
        let req = if K::metadata_api() {
            self.request.watch_metadata(&params, resource_version)
        } else {
            self.request.watch(&params, resource_version)
        }
        .map_err(build_error)?;
        if self.options.skip_managed_fields {
            let stream = self
                .client
                .request_events::<WithoutManagedFields<K>>(req)
                .await?;
            return Ok(stream.map(|event| event.map(unwrap_event)).boxed());
        }
        let stream = self.client.request_events::<K>(req).await?;
        Ok(stream.boxed())
    }

    fn compact(&self, obj: K) -> K {
        obj.clone()
    }
}

/// A watch event of an object decoded without its managedFields, as one of the object.
fn unwrap_event<K>(event: WatchEvent<WithoutManagedFields<K>>) -> WatchEvent<K> {
    match event {
        WatchEvent::Added(o) => WatchEvent::Added(o.0),
        WatchEvent::Modified(o) => WatchEvent::Modified(o.0),
        WatchEvent::Deleted(o) => WatchEvent::Deleted(o.0),
        WatchEvent::Bookmark(b) => WatchEvent::Bookmark(b),
        WatchEvent::Error(e) => WatchEvent::Error(e),
    }
}
