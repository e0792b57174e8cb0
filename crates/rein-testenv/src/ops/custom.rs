//! Custom resources' structural schemas on the write and read paths: pruning and defaulting
//! of what a client sends, validation of what would be stored, and the per-version view of
//! what is served.

use serde_json::Value;

use super::Target;
use crate::resources::ResourceDef;
use crate::status::ApiError;

/// Prunes unknown fields and applies defaults of the version the client wrote, as
/// kube-apiserver's decoder does (the unknown fields are reported by the server's
/// `fieldValidation` check, not here).
pub(crate) fn decode(target: Target<'_>, obj: &mut Value) {
    if let Some(schema) = target.def.schema(target.version) {
        schema.prune(obj);
        schema.default(obj);
    }
}

/// Converts a custom resource written in another version to its storage version, as
/// kube-apiserver's storage codec does with the `None` strategy: the `apiVersion` rewritten
/// and the object pruned by the storage version's schema (a field only the written version
/// knows is not stored). Webhook conversion is done elsewhere (`server/converted.rs`).
pub(crate) fn to_storage_version(def: &ResourceDef, obj: &mut Value) {
    if !def.custom || def.conversion.is_some() {
        return;
    }
    let Some(storage) = def.storage_version.as_deref() else {
        return;
    };
    let api_version = def.api_version(storage);
    if obj.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str()) {
        return;
    }
    obj["apiVersion"] = Value::String(api_version);
    if let Some(schema) = def.schema(storage) {
        schema.prune(obj);
    }
}

/// The paths of the fields the schema of the version the client wrote does not know
/// (`spec.foo`); `None` when the resource has no structural schema.
pub(crate) fn unknown_fields(target: Target<'_>, obj: &Value) -> Option<Vec<String>> {
    let schema = target.def.schema(target.version)?;
    Some(schema.prune(&mut obj.clone()))
}

/// Fails with 422 Invalid when `obj` breaks its schema or a CEL rule (`old` is the stored
/// object on updates, for transition rules).
pub(crate) fn validate(
    target: Target<'_>,
    obj: &Value,
    old: Option<&Value>,
    name: &str,
) -> Result<(), ApiError> {
    let Some(schema) = target.def.schema(target.version) else {
        return Ok(());
    };
    let causes = schema.validate(obj, old, target.def.scale.as_ref());
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid_causes(target.def, name, &causes))
    }
}

/// A stored object as served at `version`: pruned and defaulted by that version's schema
/// and labelled with its `apiVersion`; `None` when nothing changes (or when the resource has
/// webhook conversion and `obj` is in another version: `server/converted.rs` converts it).
pub(crate) fn serve(def: &ResourceDef, version: &str, obj: &Value) -> Option<Value> {
    if def.is_view() {
        return crate::resources::to_view(&def.group, &def.plural, obj);
    }
    let api_version = def.api_version(version);
    let same_version = obj.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str());
    // With webhook conversion, only the webhook turns one version into another.
    if def.conversion.is_some() && !same_version {
        return None;
    }
    let schema = def
        .schema(version)
        .filter(|s| s.has_defaults() || !same_version);
    let Some(schema) = schema else {
        return super::as_version(obj, &api_version);
    };
    let mut out = obj.clone();
    out["apiVersion"] = Value::String(api_version);
    if !same_version {
        schema.prune(&mut out);
    }
    schema.default(&mut out);
    (out != *obj).then_some(out)
}
