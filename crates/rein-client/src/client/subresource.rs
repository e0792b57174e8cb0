//! `SubResourceClient`: `status()` and other sub-resources (`scale`, `eviction`, `binding`, …).

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Client;
use crate::Error;
use crate::endpoint::Endpoint;
use crate::options::{Patch, PatchParams, PostParams};
use rein_scheme::{Object, ObjectKey};

/// Reads and writes one sub-resource of objects; from [`Client::status`] or
/// [`Client::sub_resource`].
#[derive(Debug, Clone)]
pub struct SubResourceClient {
    pub(crate) client: Client,
    pub(crate) name: String,
}

impl SubResourceClient {
    /// The sub-resource's name, e.g. `status`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads the sub-resource of `key` (e.g. `scale` into an `autoscaling/v1` `Scale`).
    pub async fn get<K: Object, S: DeserializeOwned>(&self, key: &ObjectKey) -> Result<S, Error> {
        Endpoint::of::<K>()
            .get_subresource(self.client.kube(), &self.name, key)
            .await
    }

    /// Creates the sub-resource of `key` with a body (e.g. an `Eviction` or a `TokenRequest`).
    pub async fn create<K: Object, B: Serialize, S: DeserializeOwned>(
        &self,
        key: &ObjectKey,
        body: &B,
        pp: &PostParams,
    ) -> Result<S, Error> {
        let pp = self.client.post_params(pp);
        Endpoint::of::<K>()
            .create_subresource(
                self.client.kube(),
                &self.name,
                key,
                body,
                &pp,
                self.client.field_validation(),
            )
            .await
    }

    /// Replaces the sub-resource from the whole object (`status` update); returns the object.
    pub async fn update<K: Object>(&self, obj: &K, pp: &PostParams) -> Result<K, Error> {
        let key = ObjectKey::from_object(obj);
        let pp = self.client.post_params(pp);
        let stored = Endpoint::of::<K>()
            .replace(
                self.client.kube(),
                &key,
                obj,
                &pp,
                self.client.field_validation(),
                Some(&self.name),
            )
            .await?;
        self.client.wrote(&stored, pp.dry_run);
        Ok(stored)
    }

    /// Patches the sub-resource of `key`; returns the object.
    pub async fn patch<K: Object, P: Serialize + std::fmt::Debug>(
        &self,
        key: &ObjectKey,
        patch: &Patch<P>,
        pp: &PatchParams,
    ) -> Result<K, Error> {
        let pp = self.client.patch_params(pp);
        let stored = Endpoint::of::<K>()
            .patch(self.client.kube(), key, patch, &pp, Some(&self.name))
            .await?;
        self.client.wrote(&stored, pp.dry_run);
        Ok(stored)
    }

    /// Replaces the sub-resource of `key` with a body of its own type (e.g. a `Scale`).
    pub async fn update_as<K: Object, S: Serialize + DeserializeOwned>(
        &self,
        key: &ObjectKey,
        body: &S,
        pp: &PostParams,
    ) -> Result<S, Error> {
        let pp = self.client.post_params(pp);
        Endpoint::of::<K>()
            .replace(
                self.client.kube(),
                key,
                body,
                &pp,
                self.client.field_validation(),
                Some(&self.name),
            )
            .await
    }

    /// Patches the sub-resource of `key`, decoding the answer as `S` (e.g. a `Scale`).
    pub async fn patch_as<K: Object, S: DeserializeOwned, P: Serialize + std::fmt::Debug>(
        &self,
        key: &ObjectKey,
        patch: &Patch<P>,
        pp: &PatchParams,
    ) -> Result<S, Error> {
        let pp = self.client.patch_params(pp);
        Endpoint::of::<K>()
            .patch(self.client.kube(), key, patch, &pp, Some(&self.name))
            .await
    }
}
