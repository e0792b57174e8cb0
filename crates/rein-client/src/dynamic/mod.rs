//! The dynamic client: CRUD on `DynamicObject`s of any kind, resolved through the REST mapper
//! and discovery (client-go's `dynamic` package).

use kube_client::core::{DynamicObject, ObjectList};
use rein_scheme::{GroupVersionKind, GroupVersionResource, ObjectKey, RestMapping};
use serde::Serialize;

use crate::Error;
use crate::client::{Client, empty_list};
use crate::endpoint::Endpoint;
use crate::metrics::ReadSource;
use crate::options::{DeleteParams, ListOptions, Patch, PatchParams, PostParams};

/// Resolves kinds and resources to [`DynamicResource`] handles.
#[derive(Debug, Clone)]
pub struct DynamicClient {
    client: Client,
}

impl DynamicClient {
    pub(crate) fn new(client: Client) -> Self {
        Self { client }
    }

    /// The handle for a kind: the scheme's static mapping, else the mapper's, else discovery.
    pub async fn resource(&self, gvk: &GroupVersionKind) -> Result<DynamicResource, Error> {
        let mapping = self.client.rest_mapping(gvk).await?;
        Ok(self.resource_for(mapping))
    }

    /// The handle for a resource collection (`apps/v1`, `deployments`), resolved by discovery.
    pub async fn resource_by_gvr(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<DynamicResource, Error> {
        let mapper = self.client.rest_mapper();
        let mapping = match mapper
            .kind_for(gvr)
            .and_then(|gvk| mapper.mapping(&gvk).ok())
        {
            Some(m) => m,
            None => {
                self.client
                    .discovery()
                    .mapping_for_resource(gvr, mapper)
                    .await?
            }
        };
        Ok(self.resource_for(mapping))
    }

    /// The handle for a known mapping (no lookup).
    pub fn resource_for(&self, mapping: RestMapping) -> DynamicResource {
        DynamicResource {
            client: self.client.clone(),
            endpoint: Endpoint::from_mapping(&mapping),
            mapping,
        }
    }
}

/// CRUD on one kind's objects as `DynamicObject`s.
#[derive(Debug, Clone)]
pub struct DynamicResource {
    client: Client,
    endpoint: Endpoint,
    mapping: RestMapping,
}

impl DynamicResource {
    /// The kind, resource and scope.
    pub fn mapping(&self) -> &RestMapping {
        &self.mapping
    }

    /// A new empty object of this kind named `name` in `namespace` (ignored if cluster-scoped).
    pub fn new_object(&self, key: &ObjectKey) -> DynamicObject {
        let mut obj = DynamicObject::new(&key.name, &self.endpoint.resource);
        if self.endpoint.namespaced() {
            obj.metadata.namespace = key.namespace.clone();
        }
        obj
    }

    fn cache(&self) -> Option<&crate::cache::Cache> {
        if !self.client.options().cache_unstructured {
            return None;
        }
        self.client.reads_from_cache(&self.mapping.gvk)
    }

    /// Reads one object (from the cache only if `cache_unstructured` is on).
    pub async fn get(&self, key: &ObjectKey) -> Result<DynamicObject, Error> {
        if let Some(cache) = self.cache() {
            Client::record_read(&self.mapping.gvk, "get", key, ReadSource::Cache);
            return cache.get_dynamic(&self.mapping, key).await;
        }
        Client::record_read(&self.mapping.gvk, "get", key, ReadSource::ApiServer);
        self.endpoint.get(self.client.kube(), key).await
    }

    /// Lists objects (from the cache only if `cache_unstructured` is on).
    pub async fn list(&self, opts: &ListOptions) -> Result<ObjectList<DynamicObject>, Error> {
        let target = opts.namespace.as_deref().unwrap_or("(all namespaces)");
        if let Some(cache) = self.cache() {
            Client::record_read(&self.mapping.gvk, "list", &target, ReadSource::Cache);
            return cache.list_dynamic(&self.mapping, opts).await;
        }
        Client::record_read(&self.mapping.gvk, "list", &target, ReadSource::ApiServer);
        if opts.label_selector.is_nothing() {
            return Ok(empty_list());
        }
        self.endpoint.list(self.client.kube(), opts).await
    }

    /// Creates the object.
    pub async fn create(
        &self,
        obj: &DynamicObject,
        pp: &PostParams,
    ) -> Result<DynamicObject, Error> {
        let pp = self.client.post_params(pp);
        self.endpoint
            .create(
                self.client.kube(),
                &ObjectKey::from_object(obj),
                obj,
                &pp,
                self.client.field_validation(),
            )
            .await
    }

    /// Replaces the object.
    pub async fn update(
        &self,
        obj: &DynamicObject,
        pp: &PostParams,
    ) -> Result<DynamicObject, Error> {
        let pp = self.client.post_params(pp);
        self.endpoint
            .replace(
                self.client.kube(),
                &ObjectKey::from_object(obj),
                obj,
                &pp,
                self.client.field_validation(),
                None,
            )
            .await
    }

    /// Replaces the object's status.
    pub async fn update_status(
        &self,
        obj: &DynamicObject,
        pp: &PostParams,
    ) -> Result<DynamicObject, Error> {
        let pp = self.client.post_params(pp);
        self.endpoint
            .replace(
                self.client.kube(),
                &ObjectKey::from_object(obj),
                obj,
                &pp,
                self.client.field_validation(),
                Some("status"),
            )
            .await
    }

    /// Patches the object.
    pub async fn patch<P: Serialize + std::fmt::Debug>(
        &self,
        key: &ObjectKey,
        patch: &Patch<P>,
        pp: &PatchParams,
    ) -> Result<DynamicObject, Error> {
        let pp = self.client.patch_params(pp);
        self.endpoint
            .patch(self.client.kube(), key, patch, &pp, None)
            .await
    }

    /// Patches the object's status.
    pub async fn patch_status<P: Serialize + std::fmt::Debug>(
        &self,
        key: &ObjectKey,
        patch: &Patch<P>,
        pp: &PatchParams,
    ) -> Result<DynamicObject, Error> {
        let pp = self.client.patch_params(pp);
        self.endpoint
            .patch(self.client.kube(), key, patch, &pp, Some("status"))
            .await
    }

    /// Deletes the object.
    pub async fn delete(&self, key: &ObjectKey, dp: &DeleteParams) -> Result<(), Error> {
        let mut dp = dp.clone();
        dp.dry_run |= self.client.options().dry_run;
        self.endpoint.delete(self.client.kube(), key, &dp).await
    }

    /// Deletes every object matching the list options.
    pub async fn delete_all_of(&self, opts: &ListOptions, dp: &DeleteParams) -> Result<(), Error> {
        let mut dp = dp.clone();
        dp.dry_run |= self.client.options().dry_run;
        self.endpoint
            .delete_collection(self.client.kube(), opts, &dp)
            .await
    }
}
