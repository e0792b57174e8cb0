//! Typed webhooks for one resource type: `CustomDefaulter` (mutating, answered with a JSON
//! patch) and `CustomValidator` (validating), and controller-runtime's webhook paths.

use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

use async_trait::async_trait;
use json_patch::{Patch, PatchOperation};
use kube_core::admission::{AdmissionResponse, Operation};
use kube_core::{DynamicObject, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::admission::{AdmissionError, AdmissionHandler, AdmissionRequest, Warnings, allowed};

/// The object bound of the typed webhooks: a static Kubernetes type (de)serialisable as JSON.
pub trait WebhookObject:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

impl<K> WebhookObject for K where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

/// Fills in defaults on objects of type `K` being created or updated
/// (controller-runtime's `CustomDefaulter`).
#[async_trait]
pub trait CustomDefaulter<K>: Send + Sync + 'static {
    /// Sets defaults on `obj` in place; an error denies the request.
    async fn default(&self, obj: &mut K) -> Result<(), AdmissionError>;
}

/// Validates objects of type `K` (controller-runtime's `CustomValidator`). `Ok` carries
/// warnings for the user; `Err` denies the request.
#[async_trait]
pub trait CustomValidator<K>: Send + Sync + 'static {
    /// Validates a new object.
    async fn validate_create(&self, obj: &K) -> Result<Warnings, AdmissionError>;
    /// Validates a change from `old` to `new`.
    async fn validate_update(&self, old: &K, new: &K) -> Result<Warnings, AdmissionError>;
    /// Validates a deletion (allowed by default).
    async fn validate_delete(&self, obj: &K) -> Result<Warnings, AdmissionError> {
        let _ = obj;
        Ok(Vec::new())
    }
}

/// controller-runtime's mutating path for `K`: `/mutate-<group with '.'→'-'>-<version>-<kind>`.
pub fn mutate_path<K: Resource<DynamicType = ()>>() -> String {
    path_for::<K>("mutate")
}

/// controller-runtime's validating path for `K`: `/validate-<group>-<version>-<kind>`.
pub fn validate_path<K: Resource<DynamicType = ()>>() -> String {
    path_for::<K>("validate")
}

fn path_for<K: Resource<DynamicType = ()>>(prefix: &str) -> String {
    format!(
        "/{prefix}-{}-{}-{}",
        K::group(&()).replace('.', "-"),
        K::version(&()),
        K::kind(&()).to_lowercase()
    )
}

/// Options of a defaulting webhook.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DefaulterOptions {
    /// Keep `remove` operations that only come from the round trip through `K` (fields `K`
    /// does not know, omitted empty values). Off by default, as in controller-runtime
    /// (`DefaulterRemoveUnknownOrOmitableFields`).
    pub remove_unknown_or_omittable_fields: bool,
}

/// A mutating [`AdmissionHandler`] built from a [`CustomDefaulter`].
pub struct DefaultingWebhook<K, D> {
    defaulter: D,
    options: DefaulterOptions,
    _kind: PhantomData<fn() -> K>,
}

impl<K, D> fmt::Debug for DefaultingWebhook<K, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultingWebhook")
            .field("kind", &std::any::type_name::<K>())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<K: WebhookObject, D: CustomDefaulter<K>> DefaultingWebhook<K, D> {
    /// Wraps `defaulter` with the default options.
    pub fn new(defaulter: D) -> Self {
        Self::with_options(defaulter, DefaulterOptions::default())
    }

    /// Wraps `defaulter` with `options`.
    pub fn with_options(defaulter: D, options: DefaulterOptions) -> Self {
        Self {
            defaulter,
            options,
            _kind: PhantomData,
        }
    }

    async fn decide(&self, req: &AdmissionRequest) -> Result<AdmissionResponse, AdmissionError> {
        // Deletes (and connects) carry nothing to default.
        if matches!(req.operation, Operation::Delete | Operation::Connect) {
            return Ok(allowed(req, Vec::new()));
        }
        let object = req
            .object
            .as_ref()
            .ok_or_else(|| AdmissionError::bad_request("the admission request has no object"))?;
        let raw = to_value(object)?;
        let typed: K = decode(&raw)?;
        let round_trip = to_value(&typed)?;
        let mut defaulted = typed;
        self.defaulter.default(&mut defaulted).await?;
        let after = to_value(&defaulted)?;
        let mut patch = json_patch::diff(&raw, &after);
        if !self.options.remove_unknown_or_omittable_fields {
            patch = drop_round_trip_removals(patch, &raw, &round_trip);
        }
        if patch.0.is_empty() {
            return Ok(allowed(req, Vec::new()));
        }
        allowed(req, Vec::new()).with_patch(patch).map_err(|err| {
            AdmissionError::internal(format!("encoding the JSON patch failed: {err}"))
        })
    }
}

#[async_trait]
impl<K: WebhookObject, D: CustomDefaulter<K>> AdmissionHandler for DefaultingWebhook<K, D> {
    async fn handle(&self, req: &AdmissionRequest) -> AdmissionResponse {
        match self.decide(req).await {
            Ok(resp) => resp,
            Err(err) => err.into_response(req),
        }
    }
}

/// A validating [`AdmissionHandler`] built from a [`CustomValidator`].
pub struct ValidatingWebhook<K, V> {
    validator: V,
    _kind: PhantomData<fn() -> K>,
}

impl<K, V> fmt::Debug for ValidatingWebhook<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValidatingWebhook")
            .field("kind", &std::any::type_name::<K>())
            .finish_non_exhaustive()
    }
}

impl<K: WebhookObject, V: CustomValidator<K>> ValidatingWebhook<K, V> {
    /// Wraps `validator`.
    pub fn new(validator: V) -> Self {
        Self {
            validator,
            _kind: PhantomData,
        }
    }

    async fn decide(&self, req: &AdmissionRequest) -> Result<Warnings, AdmissionError> {
        match req.operation {
            Operation::Create => {
                let obj = typed_object::<K>(req.object.as_ref(), "object")?;
                self.validator.validate_create(&obj).await
            }
            Operation::Update => {
                let new = typed_object::<K>(req.object.as_ref(), "object")?;
                let old = typed_object::<K>(req.old_object.as_ref(), "oldObject")?;
                self.validator.validate_update(&old, &new).await
            }
            Operation::Delete => {
                let old = typed_object::<K>(req.old_object.as_ref(), "oldObject")?;
                self.validator.validate_delete(&old).await
            }
            Operation::Connect => Ok(Vec::new()),
        }
    }
}

#[async_trait]
impl<K: WebhookObject, V: CustomValidator<K>> AdmissionHandler for ValidatingWebhook<K, V> {
    async fn handle(&self, req: &AdmissionRequest) -> AdmissionResponse {
        match self.decide(req).await {
            Ok(warnings) => allowed(req, warnings),
            Err(err) => err.into_response(req),
        }
    }
}

fn typed_object<K: WebhookObject>(
    object: Option<&DynamicObject>,
    field: &str,
) -> Result<K, AdmissionError> {
    let object = object.ok_or_else(|| {
        AdmissionError::bad_request(format!("the admission request has no {field}"))
    })?;
    decode(&to_value(object)?)
}

fn to_value<T: Serialize>(value: &T) -> Result<serde_json::Value, AdmissionError> {
    serde_json::to_value(value)
        .map_err(|err| AdmissionError::internal(format!("encoding the object failed: {err}")))
}

fn decode<K: WebhookObject>(raw: &serde_json::Value) -> Result<K, AdmissionError> {
    serde_json::from_value(raw.clone()).map_err(|err| {
        AdmissionError::bad_request(format!(
            "decoding the object as {} failed: {err}",
            K::kind(&())
        ))
    })
}

/// Drops the `remove` operations that the round trip through the typed object alone would
/// cause (controller-runtime's `dropSchemeRemovals`), keeping removals the defaulter made.
fn drop_round_trip_removals(
    patch: Patch,
    raw: &serde_json::Value,
    round_trip: &serde_json::Value,
) -> Patch {
    let by_round_trip: HashSet<String> = json_patch::diff(raw, round_trip)
        .0
        .into_iter()
        .filter_map(|op| match op {
            PatchOperation::Remove(remove) => Some(remove.path.to_string()),
            _ => None,
        })
        .collect();
    if by_round_trip.is_empty() {
        return patch;
    }
    Patch(
        patch
            .0
            .into_iter()
            .filter(|op| match op {
                PatchOperation::Remove(remove) => !by_round_trip.contains(&remove.path.to_string()),
                _ => true,
            })
            .collect(),
    )
}
