//! Patch handling for the API server: JSON merge patch, JSON patch, strategic merge patch and
//! server-side apply with `managedFields` tracking.
//!
//! The server's PATCH handler picks a [`PatchType`] from the request's `Content-Type`, then calls
//! [`apply_patch`] (or [`server_side_apply`] for apply patches, which need the field manager).
//! PUT, POST and non-apply PATCH requests call [`record_update_managed_fields`] so that later
//! applies see who owns what. All list semantics (which lists merge by which key) come from one
//! table in `strategy.rs`, shared by strategic merge patch, server-side apply and the OpenAPI
//! documents' `x-kubernetes-patch-*` extensions.

mod apply;
mod error;
mod fieldset;
mod scale;
mod schema;
mod strategic;
pub(crate) mod strategy;
#[cfg(test)]
mod tests;

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::Value;

pub(crate) use apply::{
    ApplyScope, record_update_managed_fields, record_update_managed_fields_at, server_side_apply,
    server_side_apply_at,
};
pub(crate) use error::{FieldConflict, PatchError};
pub(crate) use scale::{
    parent_entries as scale_parent_entries, pointer_path as scale_pointer_path, scale_entries,
};

/// A group, version and kind: which schema and list semantics a patch is applied with.
///
/// For a custom resource it also carries the version's `openAPIV3Schema`, whose
/// `x-kubernetes-list-type` / `x-kubernetes-map-type` extensions drive server-side apply.
/// Equality and hashing look at the group, version and kind only.
#[derive(Debug, Clone)]
pub(crate) struct Gvk {
    /// API group, empty for the core group.
    pub(crate) group: String,
    /// API version, e.g. `v1`.
    pub(crate) version: String,
    /// Kind, e.g. `Pod`.
    pub(crate) kind: String,
    /// A custom resource's structural schema (`None` for built-ins).
    schema: Option<Arc<Value>>,
}

impl PartialEq for Gvk {
    fn eq(&self, other: &Gvk) -> bool {
        (&self.group, &self.version, &self.kind) == (&other.group, &other.version, &other.kind)
    }
}

impl Eq for Gvk {}

impl Hash for Gvk {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (&self.group, &self.version, &self.kind).hash(state);
    }
}

impl Gvk {
    /// A GVK from its parts.
    pub(crate) fn new(group: &str, version: &str, kind: &str) -> Gvk {
        Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            schema: None,
        }
    }

    /// The same GVK with a custom resource's schema attached.
    pub(crate) fn with_schema(mut self, schema: Option<Arc<Value>>) -> Gvk {
        self.schema = schema;
        self
    }

    /// The custom resource's schema, if one is attached.
    pub(crate) fn schema(&self) -> Option<&Value> {
        self.schema.as_deref()
    }

    /// The `apiVersion` string: `v1` for the core group, `group/version` otherwise.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Kind={}", self.api_version(), self.kind)
    }
}

/// The four patch formats kube-apiserver accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    /// RFC 7386 JSON merge patch (`application/merge-patch+json`).
    Merge,
    /// RFC 6902 JSON patch (`application/json-patch+json`).
    Json,
    /// Kubernetes strategic merge patch (`application/strategic-merge-patch+json`).
    StrategicMerge,
    /// Server-side apply (`application/apply-patch+yaml`).
    Apply,
}

impl PatchType {
    /// The patch type named by a request's `Content-Type` header (parameters ignored).
    pub(crate) fn from_content_type(content_type: &str) -> Option<PatchType> {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        match essence.to_ascii_lowercase().as_str() {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                Some(PatchType::Apply)
            }
            _ => None,
        }
    }

    /// Whether kube-apiserver accepts this patch type for `gvk` (custom resources take no
    /// strategic merge patch).
    pub(crate) fn accepted_for(self, gvk: &Gvk) -> bool {
        self != PatchType::StrategicMerge || strategy::is_builtin(gvk)
    }

    /// The content type a client sends for this patch type.
    #[cfg(test)]
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Json => "application/json-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// Applies a patch of `patch_type` to `current` and returns the patched object.
///
/// `PatchType::Apply` needs a field manager, so it goes through [`server_side_apply`]; called
/// here it fails like kube-apiserver does without `fieldManager`.
pub(crate) fn apply_patch(
    patch_type: PatchType,
    current: &Value,
    body: &[u8],
    gvk: &Gvk,
) -> Result<Value, PatchError> {
    let patched = match patch_type {
        PatchType::Merge => {
            let patch: Value = parse_json(body, "merge")?;
            match &patch {
                Value::Object(_) => {}
                Value::Array(_) => return Err(PatchError::NotAnObject(patch.to_string())),
                _ => return Err(PatchError::BadMergePatch),
            }
            let mut doc = current.clone();
            json_patch::merge(&mut doc, &patch);
            doc
        }
        PatchType::Json => {
            let ops: json_patch::Patch =
                serde_json::from_slice(body).map_err(|source| PatchError::Decode {
                    patch_type: "json",
                    source,
                })?;
            if ops.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(PatchError::TooLarge(format!(
                    "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                    ops.len()
                )));
            }
            // `patch_unsafe` on a copy, not `patch`: a failed patch leaves only the copy
            // half-applied (it is dropped), whereas `patch`'s undo panics on some inputs
            // (json-patch 4.2 hits `unreachable!` undoing a move of a value into itself).
            let mut doc = current.clone();
            apply_json_patch(&mut doc, &ops)?;
            doc
        }
        PatchType::StrategicMerge => {
            if !strategy::is_builtin(gvk) {
                return Err(PatchError::UnsupportedMediaType(unsupported_patch_message(
                    gvk,
                )));
            }
            let patch: Value = parse_json(body, "strategic merge")?;
            strategic::apply(current, &patch, gvk)?
        }
        PatchType::Apply => return server_side_apply(Some(current), body, "", false, gvk),
    };
    check_result(&patched, gvk)?;
    Ok(patched)
}

/// Applies RFC 6902 operations one by one, as evanphx/json-patch (kube-apiserver's library)
/// does: a `test` of `null` passes when the tested member is absent from an existing object
/// (kube-runtime's finalizer helper sends exactly that before adding the first finalizer).
///
/// Bounded as kube-apiserver bounds it: copies may add at most [`MAX_JSON_PATCH_COPY_BYTES`]
/// in all (evanphx/json-patch's `AccumulatedCopySizeLimit`, which kube-apiserver sets to its
/// `JSONPatchMaxCopyBytes`), and no operation may nest the document deeper than
/// [`crate::yaml::MAX_DEPTH`] levels, so no later step recurses on hostile depth.
fn apply_json_patch(doc: &mut Value, ops: &[json_patch::PatchOperation]) -> Result<(), PatchError> {
    use json_patch::PatchOperation as Op;
    let mut copied = 0usize;
    for (index, op) in ops.iter().enumerate() {
        if let Op::Test(test) = op
            && test.value.is_null()
            && absent_member(doc, &test.path)
        {
            continue;
        }
        // The value the operation puts at its path, and how deep that path is.
        let placed = match op {
            Op::Add(o) => Some((&o.path, Some(&o.value))),
            Op::Replace(o) => Some((&o.path, Some(&o.value))),
            Op::Copy(o) => Some((&o.path, doc.pointer(o.from.as_str()))),
            Op::Move(o) => Some((&o.path, doc.pointer(o.from.as_str()))),
            _ => None,
        };
        if let Some((path, Some(value))) = placed {
            let levels = path.as_str().matches('/').count();
            if levels + depth_of(value, crate::yaml::MAX_DEPTH) > crate::yaml::MAX_DEPTH {
                return Err(PatchError::Invalid(format!(
                    "the JSON patch could not be applied: operation {index} would nest the \
                     object deeper than {} levels",
                    crate::yaml::MAX_DEPTH
                )));
            }
            if let Op::Copy(_) = op {
                let limit = MAX_JSON_PATCH_COPY_BYTES - copied;
                match encoded_size_within(value, limit) {
                    Some(size) => copied += size,
                    None => {
                        return Err(PatchError::Invalid(format!(
                            "Unable to complete the copy, the accumulated size increase of copy \
                             is more than {MAX_JSON_PATCH_COPY_BYTES}, exceeding the limit \
                             {MAX_JSON_PATCH_COPY_BYTES}"
                        )));
                    }
                }
            }
        }
        json_patch::patch_unsafe(doc, std::slice::from_ref(op))
            .map_err(|mut err| {
                err.operation = index;
                err
            })
            .map_err(PatchError::from_json_patch)?;
    }
    Ok(())
}

/// The most operations kube-apiserver takes in one JSON patch (`maxJSONPatchOperations`).
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The most bytes the copies of one JSON patch may add (kube-apiserver's
/// `JSONPatchMaxCopyBytes`, 3 MiB, its request body limit).
pub(crate) const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// How deep `value` nests (a scalar is 0, `{}` is 1), counted without recursion and no
/// further than `limit + 1`.
pub(crate) fn depth_of(value: &Value, limit: usize) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        let depth = depth + 1;
        deepest = deepest.max(depth);
        if deepest > limit {
            return deepest;
        }
        stack.extend(children.map(|child| (child, depth)));
    }
    deepest
}

/// The size of `value` as compact JSON, counted without recursion, or `None` once it passes
/// `limit` (the count stops there).
pub(crate) fn encoded_size_within(value: &Value, limit: usize) -> Option<usize> {
    let mut size = 0usize;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        size += match v {
            Value::Null => 4,
            Value::Bool(b) => 4 + usize::from(!b),
            Value::Number(n) => n.to_string().len(),
            Value::String(s) => s.len() + 2,
            Value::Array(items) => {
                stack.extend(items.iter());
                2 + items.len().saturating_sub(1)
            }
            Value::Object(map) => {
                stack.extend(map.values());
                2 + map.keys().map(|k| k.len() + 3).sum::<usize>() + map.len().saturating_sub(1)
            }
        };
        if size > limit {
            return None;
        }
    }
    Some(size)
}

/// Whether `path` names a missing member of an object that exists.
fn absent_member(doc: &Value, path: &json_patch::jsonptr::Pointer) -> bool {
    let Some(parent) = path.parent() else {
        return false;
    };
    doc.pointer(parent.as_str()).is_some_and(Value::is_object)
        && doc.pointer(path.as_str()).is_none()
}

/// The patch content types kube-apiserver accepts for `gvk`: custom resources have no
/// strategic merge patch.
pub(crate) fn accepted_patch_types(gvk: &Gvk) -> &'static [&'static str] {
    if strategy::is_builtin(gvk) {
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ]
    } else {
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]
    }
}

/// kube-apiserver's 415 message for a PATCH whose content type `gvk` does not accept
/// (apimachinery's `NewUnsupportedMediaTypeError`).
pub(crate) fn unsupported_patch_message(gvk: &Gvk) -> String {
    format!(
        "the body of the request was in an unknown format - accepted media types include: {}",
        accepted_patch_types(gvk).join(", ")
    )
}

fn parse_json(body: &[u8], patch_type: &'static str) -> Result<Value, PatchError> {
    serde_json::from_slice(body).map_err(|source| PatchError::Decode { patch_type, source })
}

/// Checks what kube-apiserver checks after patching: an object of the same kind.
fn check_result(patched: &Value, gvk: &Gvk) -> Result<(), PatchError> {
    let Some(object) = patched.as_object() else {
        return Err(PatchError::Invalid(
            "the patched document is not a JSON object".to_string(),
        ));
    };
    if let Some(kind) = object.get("kind")
        && kind.as_str() != Some(gvk.kind.as_str())
    {
        return Err(PatchError::Invalid(format!(
            "kind: Invalid value: {kind}: must be {:?}",
            gvk.kind
        )));
    }
    if let Some(api_version) = object.get("apiVersion")
        && api_version.as_str() != Some(gvk.api_version().as_str())
    {
        return Err(PatchError::Invalid(format!(
            "apiVersion: Invalid value: {api_version}: must be {:?}",
            gvk.api_version()
        )));
    }
    Ok(())
}
