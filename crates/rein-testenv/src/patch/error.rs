//! Errors from patching and server-side apply, each mapping to the status kube-apiserver returns.

use std::fmt::Write as _;

use serde_json::{Value, json};

/// Why a patch or apply was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PatchError {
    /// The body could not be decoded (400 BadRequest).
    #[error("decoding the {patch_type} patch body")]
    Decode {
        /// Which patch format was being decoded.
        patch_type: &'static str,
        /// The decoder's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// The apply configuration could not be decoded as YAML or JSON (400 BadRequest).
    #[error("decoding the apply configuration")]
    DecodeYaml(#[source] crate::yaml::YamlError),
    /// The patch is well-formed JSON but not a valid patch (400 BadRequest).
    #[error("malformed patch: {0}")]
    Malformed(String),
    /// A merge patch that is neither an object nor an array (`null`, a scalar): json-patch's
    /// `ErrBadJSONPatch` (400 BadRequest).
    #[error("Invalid JSON Patch")]
    BadMergePatch,
    /// A merge patch that is an array: RFC 7386 makes it the whole patched document, which
    /// does not decode as an object (422 Invalid on `patch`, as kube-apiserver's jsonPatcher
    /// answers; the decoder's words are Go's `encoding/json` ones, approximately).
    #[error(
        " \"\" is invalid: patch: {}",
        not_an_object_cause(.0)
    )]
    NotAnObject(String),
    /// The patch could not be applied or gave an invalid object (422 Invalid).
    #[error("{0}")]
    Invalid(String),
    /// A JSON patch `test` operation failed (422 Invalid).
    #[error("the JSON patch test operation failed: {0}")]
    TestFailed(String),
    /// Server-side apply touched fields other managers own (409 Conflict).
    #[error("{}", conflict_message(.0))]
    Conflict(Vec<FieldConflict>),
    /// A JSON patch of more operations than kube-apiserver takes (413 RequestEntityTooLarge;
    /// apimachinery's `NewRequestEntityTooLargeError` words it).
    #[error("Request entity too large: {0}")]
    TooLarge(String),
    /// A request kube-apiserver answers with a plain 400 BadRequest carrying just this
    /// message (a strategic merge patch directive of the wrong shape, an apply configuration
    /// with `managedFields`).
    #[error("{0}")]
    BadRequest(String),
    /// The patch type is not supported for this kind (415), e.g. strategic merge on a CRD.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// An apply configuration that does not fit its schema's list types (duplicate or
    /// keyless elements): kube-apiserver answers 500 with no reason, the
    /// message naming the object (`failed to create typed patch object (ns/name; gvk): …`).
    #[error("{0}")]
    TypedPatch(String),
}

/// One field that an apply would take from another manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldConflict {
    /// The manager that owns the field now.
    pub(crate) manager: String,
    /// The API version that manager used.
    pub(crate) api_version: String,
    /// Its operation, `Apply` or `Update`.
    pub(crate) operation: String,
    /// The subresource it wrote through, if any.
    pub(crate) subresource: Option<String>,
    /// The field, in kube-apiserver's notation (`.spec.replicas`,
    /// `.spec.containers[name="app"].image`).
    pub(crate) field: String,
}

impl PatchError {
    pub(super) fn from_json_patch(err: json_patch::PatchError) -> PatchError {
        match err.kind {
            json_patch::PatchErrorKind::TestFailed => PatchError::TestFailed(err.to_string()),
            _ => PatchError::Invalid(format!("the JSON patch could not be applied: {err}")),
        }
    }

    /// The HTTP status code kube-apiserver answers with.
    pub(crate) fn code(&self) -> u16 {
        match self {
            PatchError::Decode { .. }
            | PatchError::DecodeYaml(_)
            | PatchError::Malformed(_)
            | PatchError::BadRequest(_)
            | PatchError::BadMergePatch => 400,
            PatchError::Invalid(_) | PatchError::TestFailed(_) | PatchError::NotAnObject(_) => 422,
            PatchError::Conflict(_) => 409,
            PatchError::TooLarge(_) => 413,
            PatchError::UnsupportedMediaType(_) => 415,
            PatchError::TypedPatch(_) => 500,
        }
    }

    /// The `metav1.Status` reason.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            PatchError::Decode { .. }
            | PatchError::DecodeYaml(_)
            | PatchError::Malformed(_)
            | PatchError::BadRequest(_)
            | PatchError::BadMergePatch => "BadRequest",
            PatchError::Invalid(_) | PatchError::TestFailed(_) | PatchError::NotAnObject(_) => {
                "Invalid"
            }
            PatchError::Conflict(_) => "Conflict",
            PatchError::TooLarge(_) => "RequestEntityTooLarge",
            PatchError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            PatchError::TypedPatch(_) => "",
        }
    }

    /// The message for the `metav1.Status`: this error and its causes.
    pub(crate) fn message(&self) -> String {
        let mut message = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let _ = write!(message, ": {cause}");
            source = cause.source();
        }
        message
    }

    /// A complete `metav1.Status` object for the response body.
    pub(crate) fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message(),
            "reason": self.reason(),
            "code": self.code(),
        });
        if let PatchError::NotAnObject(document) = self {
            status["details"] = json!({ "causes": [{
                "reason": "FieldValueInvalid",
                "message": not_an_object_cause(document),
                "field": "patch",
            }] });
        }
        if let PatchError::Conflict(conflicts) = self {
            let causes: Vec<Value> = conflicts
                .iter()
                .map(|c| {
                    json!({
                        "reason": "FieldManagerConflict",
                        "message": format!("conflict with {}", c.manager_label()),
                        "field": c.field,
                    })
                })
                .collect();
            status["details"] = json!({ "causes": causes });
        }
        status
    }
}

/// The cause of [`PatchError::NotAnObject`]: `Invalid value: "<document>": <decode error>`.
fn not_an_object_cause(document: &str) -> String {
    format!(
        "Invalid value: {}: json: cannot unmarshal array into Go value of type \
         map[string]interface {{}}",
        Value::String(document.to_string())
    )
}

impl FieldConflict {
    /// The manager as kube-apiserver's `printManager` names it: `"m"`, then
    /// ` with subresource "s"`, then ` using <apiVersion>` for an `Update` manager (an applier's
    /// identity has no apiVersion).
    fn manager_label(&self) -> String {
        let mut label = format!("{:?}", self.manager);
        if let Some(subresource) = self.subresource.as_deref().filter(|s| !s.is_empty()) {
            let _ = write!(label, " with subresource {subresource:?}");
        }
        if self.operation == "Update" {
            let _ = write!(label, " using {}", self.api_version);
        }
        label
    }

    /// The manager's identity as kube-apiserver encodes it (`BuildManagerIdentifier`: the
    /// entry as JSON without fields and time, and without apiVersion for an applier); the
    /// message lists managers in the order of these strings.
    fn identity(&self) -> String {
        let mut id = format!(
            "{{\"manager\":{},\"operation\":{}",
            Value::from(self.manager.as_str()),
            Value::from(self.operation.as_str())
        );
        if self.operation != "Apply" && !self.api_version.is_empty() {
            let _ = write!(
                id,
                ",\"apiVersion\":{}",
                Value::from(self.api_version.as_str())
            );
        }
        if let Some(subresource) = self.subresource.as_deref().filter(|s| !s.is_empty()) {
            let _ = write!(id, ",\"subresource\":{}", Value::from(subresource));
        }
        id.push('}');
        id
    }
}

/// kube-apiserver's wording (`getConflictMessage`): `Apply failed with 1 conflict: conflict
/// with "m": .spec.x`, or the conflicts grouped by manager, managers in identity order.
fn conflict_message(conflicts: &[FieldConflict]) -> String {
    let count = conflicts.len();
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager_label(),
            only.field
        );
    }
    let mut managers: Vec<(String, &FieldConflict)> = Vec::new();
    for c in conflicts {
        let id = c.identity();
        if !managers.iter().any(|(known, _)| *known == id) {
            managers.push((id, c));
        }
    }
    managers.sort_by(|a, b| a.0.cmp(&b.0));
    let mut lines = Vec::new();
    for (id, first) in &managers {
        lines.push(format!("conflicts with {}:", first.manager_label()));
        for c in conflicts.iter().filter(|c| c.identity() == *id) {
            lines.push(format!("- {}", c.field));
        }
    }
    format!("Apply failed with {count} conflicts: {}", lines.join("\n"))
}
