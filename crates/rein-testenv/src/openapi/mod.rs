//! OpenAPI v2 and v3 documents for the served types, and strict field validation against them.
//!
//! Built-in schemas come from k8s-openapi's `schemars` support, generated once on the first
//! OpenAPI request (never at server start-up) and cached; each CustomResourceDefinition
//! contributes its `openAPIV3Schema`. The documents carry what kubectl looks for:
//! `x-kubernetes-group-version-kind` on definitions and operations, the `fieldValidation`
//! query parameter on PATCH operations (so kubectl leaves validation to the server), the
//! `x-kubernetes-patch-*` list extensions (for client-side apply) and descriptions (for
//! `kubectl explain`).

mod builtin;
mod document;
mod protobuf;
#[cfg(test)]
mod tests;
mod validate;

pub(crate) use document::{v2_document, v3_group_version, v3_index};
pub(crate) use protobuf::v2_document as v2_protobuf;
pub(crate) use validate::unknown_fields;

/// The definition name of a built-in kind (`io.k8s.api.apps.v1.Deployment`) and every
/// built-in definition by name, for type-checking writes against them.
pub(crate) fn builtin_schema(
    group: &str,
    version: &str,
    kind: &str,
) -> Option<(
    &'static str,
    &'static serde_json::Map<String, serde_json::Value>,
)> {
    let builtins = builtin::builtins();
    builtins
        .resources
        .iter()
        .find(|r| r.gvk.group == group && r.gvk.version == version && r.gvk.kind == kind)
        .map(|r| (r.definition.as_str(), &builtins.definitions))
}

/// The description of `field` in built-in definition `definition` (as Go's `SwaggerDoc()`
/// gives it; Table column descriptions quote these), or `""`.
pub(crate) fn field_description(definition: &str, field: &str) -> &'static str {
    builtin::builtins()
        .definitions
        .get(definition)
        .and_then(|d| d.pointer(&format!("/properties/{field}/description")))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
}

/// Every built-in definition by name (the protobuf table generator checks JSON names here).
#[cfg(test)]
pub(crate) fn definitions() -> &'static serde_json::Map<String, serde_json::Value> {
    &builtin::builtins().definitions
}

/// The schema of one served version of a CustomResourceDefinition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CrdSchema {
    /// API group, e.g. `stable.example.com`.
    pub(crate) group: String,
    /// Served version, e.g. `v1`.
    pub(crate) version: String,
    /// Kind, e.g. `CronTab`.
    pub(crate) kind: String,
    /// Plural resource name, e.g. `crontabs`.
    pub(crate) plural: String,
    /// Whether the resource lives in namespaces.
    pub(crate) namespaced: bool,
    /// The version's `schema.openAPIV3Schema`.
    pub(crate) schema: serde_json::Value,
    /// Whether the version serves the `status` subresource.
    pub(crate) status: bool,
    /// Whether the version serves the `scale` subresource.
    pub(crate) scale: bool,
}

impl CrdSchema {
    /// The definition name kube-apiserver uses: the group reversed, then version and kind
    /// (`com.example.stable.v1.CronTab`).
    pub(crate) fn definition_name(&self) -> String {
        let mut parts: Vec<&str> = self.group.split('.').collect();
        parts.reverse();
        format!("{}.{}.{}", parts.join("."), self.version, self.kind)
    }
}
