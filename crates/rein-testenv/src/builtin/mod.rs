//! What kube-apiserver checks of a write to a built-in resource before it stores it, from
//! the decoder to the registry strategies:
//!
//! - `decode.rs` type-checks the body against the kind's schema with Go's decoder messages
//!   (400), collects unknown fields and drops them (`fieldValidation`: Strict answers 400,
//!   Warn — the default — a `Warning` header per field, Ignore nothing); `typed.rs` then
//!   decodes it into its k8s-openapi type, so nothing is stored a typed client cannot read.
//! - `meta.rs` validates `metadata` for every kind (custom resources included): labels,
//!   annotations and their total size, ownerReferences, finalizers (the update path keeps
//!   identity fields and sets `generation` itself).
//! - `kinds/` is the one table of per-kind validation (422 Invalid with kube's causes).
//! - Size limits: request bodies over 3 MiB (413), ConfigMap and Secret data over 1 MiB (422).
//!
//! The server calls [`decode`] where it reads a body or a patch result, [`validate_create`]
//! and [`validate_update`] once per write, after defaulting.

mod decode;
mod field;
mod kinds;
mod meta;
pub(crate) mod names;
pub(crate) mod selector;
#[cfg(test)]
mod tests;
mod typed;

use serde_json::{Value, json};

use crate::resources::ResourceDef;
use crate::status::ApiError;

/// The largest request body kube-apiserver reads (`MaxRequestBodyBytes`, 3 MiB).
pub(crate) const MAX_REQUEST_BODY: usize = 3 * 1024 * 1024;

/// 413 RequestEntityTooLarge, for a body over [`MAX_REQUEST_BODY`].
pub(crate) fn body_too_large() -> ApiError {
    ApiError::new(
        413,
        "RequestEntityTooLarge",
        format!("Request entity too large: limit is {MAX_REQUEST_BODY}"),
    )
}

/// Where the object being decoded came from: a request body, or the result of a JSON, merge
/// or strategic-merge patch (whose decode errors kube-apiserver words as an invalid `patch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A create or update body, or an apply configuration's result.
    Body,
    /// A patched object.
    Patch,
}

/// Decodes a write of a built-in kind as kube-apiserver's decoder does: type errors answer
/// 400 (422 `patch` for a patched object), unknown fields are dropped from `obj` and, by
/// `fieldValidation` (`mode`, default `Warn`), refused or answered as warnings. Custom
/// resources pass untouched.
pub(crate) fn decode(
    def: &ResourceDef,
    version: &str,
    obj: &mut Value,
    mode: Option<&str>,
    source: Source,
) -> Result<Vec<String>, ApiError> {
    if def.custom {
        return Ok(Vec::new());
    }
    let Some((root, definitions)) = crate::openapi::builtin_schema(&def.group, version, &def.kind)
    else {
        return Ok(Vec::new());
    };
    let decode_error = |message: String, obj: &Value| match source {
        Source::Body => ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {message}",
            kind = def.kind
        )),
        Source::Patch => {
            let error = field::FieldError::invalid_str(
                "patch",
                &serde_json::to_string(obj).unwrap_or_default(),
                message,
            );
            ApiError::new(
                422,
                "Invalid",
                // `NewInvalid(schema.GroupKind{}, "", …)`: an empty kind, then ` "" is invalid`.
                format!(" \"\" is invalid: {}", error.message()),
            )
            .with_details(json!({"causes": [{
                "reason": error.reason(),
                "message": error.body(),
                "field": error.field(),
            }]}))
        }
    };
    let unknown = match decode::check(root, definitions, obj) {
        Ok(unknown) => unknown,
        Err(message) => return Err(decode_error(message, obj)),
    };
    if let Err(message) = typed::decodes(&def.group, version, &def.kind, obj) {
        return Err(decode_error(message, obj));
    }
    let warnings: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field {}", field::quote(f)))
        .collect();
    match mode.unwrap_or("Warn") {
        "Strict" if !warnings.is_empty() => Err(ApiError::bad_request(format!(
            "strict decoding error: {}",
            warnings.join(", ")
        ))),
        "Ignore" => Ok(Vec::new()),
        _ => Ok(warnings),
    }
}

/// Validates an object about to be created (after defaulting): 422 Invalid with every cause.
pub(crate) fn validate_create(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    meta::validate(
        obj.get("metadata").unwrap_or(&Value::Null),
        !def.custom,
        &mut errs,
    );
    if !def.custom {
        kinds::validate(def, obj, None, &mut errs);
    }
    field::invalid(def, name(obj), &errs)
}

/// Validates an update of `old` to `obj` (after defaulting); `status` for writes through the
/// status subresource, which check only metadata.
pub(crate) fn validate_update(
    def: &ResourceDef,
    obj: &Value,
    old: &Value,
    status: bool,
) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    meta::validate(
        obj.get("metadata").unwrap_or(&Value::Null),
        !def.custom,
        &mut errs,
    );
    if !def.custom && !status {
        kinds::validate(def, obj, Some(old), &mut errs);
    }
    field::invalid(def, name(obj), &errs)
}

fn name(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}
