//! `Endpoint`: one kind's REST collection, and the raw verbs on it shared by the typed and
//! dynamic clients.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

use futures::StreamExt;
use futures::stream::BoxStream;
use kube_client::core::{
    ApiResource, DynamicObject, ObjectList, Request, Resource, WatchEvent,
    params::{
        DeleteParams, GetParams, Patch, PatchParams, PostParams, ValidationDirective, WatchParams,
    },
};
use rein_scheme::{GroupVersionKind, ObjectKey, RestMapping, Scope};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Error, ListOptions};
use rein_scheme::Object;

/// A kind's REST collection: where its objects live and whether URLs carry a namespace.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) resource: ApiResource,
    pub(crate) scope: Scope,
    pub(crate) gvk: GroupVersionKind,
    /// Reads and patches ask for metadata only (`PartialObjectMeta<K>`): the server answers
    /// with `PartialObjectMetadata` / `PartialObjectMetadataList`.
    pub(crate) metadata_only: bool,
}

/// Every typed kind's endpoint, built once per type: a cached read asks for its kind's
/// endpoint on every call, and building one allocates every name.
static TYPED: LazyLock<RwLock<HashMap<TypeId, Arc<Endpoint>>>> = LazyLock::new(RwLock::default);

impl Endpoint {
    pub(crate) fn of<K: Object>() -> Arc<Self> {
        let id = TypeId::of::<K>();
        if let Some(found) = TYPED
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
        {
            return found.clone();
        }
        let resource = ApiResource::erase::<K>(&());
        let gvk = GroupVersionKind::new(&resource.group, &resource.version, &resource.kind);
        let endpoint = Arc::new(Self {
            resource,
            scope: Scope::of::<K>(),
            gvk,
            metadata_only: K::metadata_api(),
        });
        TYPED
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(id)
            .or_insert(endpoint)
            .clone()
    }

    pub(crate) fn from_mapping(mapping: &RestMapping) -> Self {
        Self {
            resource: mapping.api_resource(),
            scope: mapping.scope,
            gvk: mapping.gvk.clone(),
            metadata_only: false,
        }
    }

    pub(crate) fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    pub(crate) fn action(&self, verb: &str, target: &dyn std::fmt::Display) -> String {
        format!("{verb} {} {target}", self.gvk)
    }

    /// The collection URL for one object's namespace: required for namespaced kinds, ignored
    /// for cluster-scoped ones.
    fn object_request(&self, namespace: Option<&str>, action: &str) -> Result<Request, Error> {
        match (self.scope, namespace) {
            (Scope::Namespaced, Some(ns)) if !ns.is_empty() => Ok(Request::new(
                DynamicObject::url_path(&self.resource, Some(ns)),
            )),
            (Scope::Namespaced, _) => Err(Error::InvalidInput {
                action: action.to_owned(),
                problem: format!(
                    "{} is namespaced, so a namespace is required",
                    self.gvk.kind
                ),
            }),
            (Scope::Cluster, _) => Ok(Request::new(DynamicObject::url_path(&self.resource, None))),
            (Scope::Subresource, _) => Err(Error::InvalidInput {
                action: action.to_owned(),
                problem: format!("{} is only served as a sub-resource", self.gvk.kind),
            }),
        }
    }

    fn collection_request(&self, namespace: Option<&str>) -> Request {
        let ns = namespace.filter(|ns| !ns.is_empty() && self.namespaced());
        Request::new(DynamicObject::url_path(&self.resource, ns))
    }

    async fn send<T: DeserializeOwned>(
        kube: &kube_client::Client,
        action: String,
        request: Result<http::Request<Vec<u8>>, kube_client::core::request::Error>,
    ) -> Result<T, Error> {
        let request = request.map_err(|e| Error::InvalidInput {
            action: action.clone(),
            problem: e.to_string(),
        })?;
        kube.request::<T>(request)
            .await
            .map_err(|e| Error::from_kube(action, e))
    }

    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        kube: &kube_client::Client,
        key: &ObjectKey,
    ) -> Result<T, Error> {
        let action = self.action("getting", key);
        let req = self.object_request(key.namespace.as_deref(), &action)?;
        let built = if self.metadata_only {
            req.get_metadata(&key.name, &GetParams::default())
        } else {
            req.get(&key.name, &GetParams::default())
        };
        Self::send(kube, action, built).await
    }

    pub(crate) async fn list<T: DeserializeOwned + Clone>(
        &self,
        kube: &kube_client::Client,
        opts: &ListOptions,
    ) -> Result<ObjectList<T>, Error> {
        let action = self.action(
            "listing",
            &opts.namespace.as_deref().unwrap_or("(all namespaces)"),
        );
        let req = self.collection_request(opts.namespace.as_deref());
        let built = if self.metadata_only {
            req.list_metadata(&opts.to_list_params())
        } else {
            req.list(&opts.to_list_params())
        };
        Self::send(kube, action, built).await
    }

    /// A watch of the collection from `resource_version`, with the list options' selectors.
    pub(crate) async fn watch<T: DeserializeOwned + Clone + Send + 'static>(
        &self,
        kube: &kube_client::Client,
        opts: &ListOptions,
        resource_version: &str,
        timeout: Option<u32>,
    ) -> Result<BoxStream<'static, Result<WatchEvent<T>, Error>>, Error> {
        let target = opts.namespace.as_deref().unwrap_or("(all namespaces)");
        let action = self.action("watching", &target);
        let lp = opts.to_list_params();
        let wp = WatchParams {
            label_selector: lp.label_selector,
            field_selector: lp.field_selector,
            timeout,
            bookmarks: true,
            ..WatchParams::default()
        };
        let req = self.collection_request(opts.namespace.as_deref());
        let request = if self.metadata_only {
            req.watch_metadata(&wp, resource_version)
        } else {
            req.watch(&wp, resource_version)
        }
        .map_err(|e| Error::InvalidInput {
            action: action.clone(),
            problem: e.to_string(),
        })?;
        let events = kube
            .request_events::<T>(request)
            .await
            .map_err(|e| Error::from_kube(action.clone(), e))?;
        Ok(events
            .map(move |event| event.map_err(|e| Error::from_kube(action.clone(), e)))
            .boxed())
    }

    pub(crate) async fn create<T: Serialize + DeserializeOwned>(
        &self,
        kube: &kube_client::Client,
        key: &ObjectKey,
        obj: &T,
        pp: &PostParams,
        validation: Option<&ValidationDirective>,
    ) -> Result<T, Error> {
        let action = self.action("creating", key);
        let req = self.object_request(key.namespace.as_deref(), &action)?;
        let body = serde_json::to_vec(obj).map_err(|source| Error::Json {
            action: action.clone(),
            source,
        })?;
        let built = with_field_validation(req.create(pp, body), validation);
        Self::send(kube, action, built).await
    }

    pub(crate) async fn replace<T: Serialize + DeserializeOwned>(
        &self,
        kube: &kube_client::Client,
        key: &ObjectKey,
        obj: &T,
        pp: &PostParams,
        validation: Option<&ValidationDirective>,
        subresource: Option<&str>,
    ) -> Result<T, Error> {
        let action = match subresource {
            Some(sub) => self.action(&format!("updating sub-resource {sub} of"), key),
            None => self.action("updating", key),
        };
        let req = self.object_request(key.namespace.as_deref(), &action)?;
        let body = serde_json::to_vec(obj).map_err(|source| Error::Json {
            action: action.clone(),
            source,
        })?;
        let built = match subresource {
            Some(sub) => req.replace_subresource(sub, &key.name, pp, body),
            None => req.replace(&key.name, pp, body),
        };
        Self::send(kube, action, with_field_validation(built, validation)).await
    }

    pub(crate) async fn patch<T: DeserializeOwned, P: Serialize + std::fmt::Debug>(
        &self,
        kube: &kube_client::Client,
        key: &ObjectKey,
        patch: &Patch<P>,
        pp: &PatchParams,
        subresource: Option<&str>,
    ) -> Result<T, Error> {
        let action = match subresource {
            Some(sub) => self.action(&format!("patching sub-resource {sub} of"), key),
            None => self.action("patching", key),
        };
        let req = self.object_request(key.namespace.as_deref(), &action)?;
        let built = match subresource {
            Some(sub) => req.patch_subresource(sub, &key.name, pp, patch),
            None if self.metadata_only => req.patch_metadata(&key.name, pp, patch),
            None => req.patch(&key.name, pp, patch),
        };
        Self::send(kube, action, built).await
    }

    pub(crate) async fn delete(
        &self,
        kube: &kube_client::Client,
        key: &ObjectKey,
        dp: &DeleteParams,
    ) -> Result<(), Error> {
        self.delete_returning::<serde_json::Value>(kube, key, dp)
            .await
            .map(drop)
    }

    /// Deletes and decodes the answer: the object (still terminating, or as deleted) or a
    /// `Status`, depending on the kind and the server.
    pub(crate) async fn delete_returning<T: DeserializeOwned>(
        &self,
        kube: &kube_client::Client,
        key: &ObjectKey,
        dp: &DeleteParams,
    ) -> Result<T, Error> {
        let action = self.action("deleting", key);
        let req = self.object_request(key.namespace.as_deref(), &action)?;
        Self::send::<T>(kube, action, req.delete(&key.name, dp)).await
    }

    pub(crate) async fn delete_collection(
        &self,
        kube: &kube_client::Client,
        opts: &ListOptions,
        dp: &DeleteParams,
    ) -> Result<(), Error> {
        let action = self.action(
            "deleting all of",
            &opts.namespace.as_deref().unwrap_or("(all namespaces)"),
        );
        let req = self.collection_request(opts.namespace.as_deref());
        Self::send::<serde_json::Value>(
            kube,
            action,
            req.delete_collection(dp, &opts.to_list_params()),
        )
        .await
        .map(drop)
    }

    pub(crate) async fn get_subresource<T: DeserializeOwned>(
        &self,
        kube: &kube_client::Client,
        subresource: &str,
        key: &ObjectKey,
    ) -> Result<T, Error> {
        let action = self.action(&format!("getting sub-resource {subresource} of"), key);
        let req = self.object_request(key.namespace.as_deref(), &action)?;
        Self::send(kube, action, req.get_subresource(subresource, &key.name)).await
    }

    pub(crate) async fn create_subresource<B: Serialize, T: DeserializeOwned>(
        &self,
        kube: &kube_client::Client,
        subresource: &str,
        key: &ObjectKey,
        body: &B,
        pp: &PostParams,
        validation: Option<&ValidationDirective>,
    ) -> Result<T, Error> {
        let action = self.action(&format!("creating sub-resource {subresource} of"), key);
        let req = self.object_request(key.namespace.as_deref(), &action)?;
        let body = serde_json::to_vec(body).map_err(|source| Error::Json {
            action: action.clone(),
            source,
        })?;
        let built = req.create_subresource(subresource, &key.name, pp, body);
        Self::send(kube, action, with_field_validation(built, validation)).await
    }
}

/// Adds `fieldValidation` to a built create or update request: kube's `PostParams` has no
/// field for it (its `PatchParams` has).
fn with_field_validation<E>(
    request: Result<http::Request<Vec<u8>>, E>,
    validation: Option<&ValidationDirective>,
) -> Result<http::Request<Vec<u8>>, E> {
    let Some(validation) = validation else {
        return request;
    };
    let mut request = request?;
    let uri = request.uri().to_string();
    let separator = if uri.contains('?') { '&' } else { '?' };
    let with = format!("{uri}{separator}fieldValidation={}", validation.as_str());
    if let Ok(parsed) = with.parse() {
        *request.uri_mut() = parsed;
    }
    Ok(request)
}
