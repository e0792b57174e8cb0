//! `ValidateObjectMeta` and `ValidateObjectMetaUpdate` for every kind: labels, annotations
//! (keys and total size), ownerReferences, finalizers, and the immutable identity fields.

use serde_json::{Value, json};

use super::field::{FieldError, Path};
use super::names;

/// The most bytes of annotation keys and values an object may carry (256 KiB).
pub(crate) const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;

/// The checks of `metadata` shared by create and update. `builtin` adds core's rule that a
/// finalizer name without a `/` is a standard one.
pub(crate) fn validate(meta: &Value, builtin: bool, errs: &mut Vec<FieldError>) {
    let path = Path::new("metadata");
    labels(meta.get("labels"), &path.child("labels"), errs);
    annotations(meta.get("annotations"), &path.child("annotations"), errs);
    owner_references(
        meta.get("ownerReferences"),
        &path.child("ownerReferences"),
        errs,
    );
    finalizers(
        meta.get("finalizers"),
        &path.child("finalizers"),
        builtin,
        errs,
    );
}

/// `ValidateLabels`: each key a qualified name, each value a label value.
pub(crate) fn labels(labels: Option<&Value>, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(Value::Object(labels)) = labels else {
        return;
    };
    for (key, value) in labels {
        for msg in names::qualified_name(key) {
            errs.push(FieldError::invalid_str(path, key, msg));
        }
        let value = value.as_str().unwrap_or_default();
        for msg in names::label_value(value) {
            errs.push(FieldError::invalid_str(path, value, msg));
        }
    }
}

/// `ValidateAnnotations`: keys are qualified names (case aside), the total at most 256 KiB.
pub(crate) fn annotations(annotations: Option<&Value>, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(Value::Object(annotations)) = annotations else {
        return;
    };
    let mut total = 0;
    for (key, value) in annotations {
        for msg in names::qualified_name(&key.to_ascii_lowercase()) {
            errs.push(FieldError::invalid_str(path, key, msg));
        }
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE));
    }
}

/// `ValidateOwnerReferences`: required fields, no Event owners, one controller at most.
fn owner_references(refs: Option<&Value>, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(Value::Array(refs)) = refs else {
        return;
    };
    let mut first_controller: Option<String> = None;
    for (i, r) in refs.iter().enumerate() {
        let at = path.index(i);
        let text = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default();
        let api_version = text("apiVersion");
        if api_version.is_empty() {
            errs.push(FieldError::required(
                at.child("apiVersion"),
                "must not be empty",
            ));
        } else if api_version.split('/').count() > 2 || api_version.ends_with('/') {
            errs.push(FieldError::invalid_str(
                at.child("apiVersion"),
                api_version,
                "must be <group>/<version> or <version>",
            ));
        }
        for field in ["kind", "name", "uid"] {
            if text(field).is_empty() {
                errs.push(FieldError::required(at.child(field), "must not be empty"));
            }
        }
        if api_version == "v1" && text("kind") == "Event" {
            errs.push(FieldError::invalid(
                &at,
                &go_owner_reference(r),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{}/{}", text("kind"), text("name"));
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    path,
                    &Value::Array(refs.iter().map(go_owner_reference).collect()),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in \
                         references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
}

/// An owner reference as Go's JSON encoder writes the struct: every non-optional field.
fn go_owner_reference(r: &Value) -> Value {
    let text = |f: &str| json!(r.get(f).and_then(Value::as_str).unwrap_or_default());
    let mut out = json!({
        "apiVersion": text("apiVersion"),
        "kind": text("kind"),
        "name": text("name"),
        "uid": text("uid"),
    });
    for flag in ["controller", "blockOwnerDeletion"] {
        if let Some(v) = r.get(flag).filter(|v| v.is_boolean()) {
            out[flag] = v.clone();
        }
    }
    out
}

/// `ValidateFinalizers`: qualified names, not both `orphan` and `foregroundDeletion`; and, as
/// core's `validateKubeFinalizerName`, a name without a `/` must be a standard one.
fn finalizers(finalizers: Option<&Value>, path: &Path, builtin: bool, errs: &mut Vec<FieldError>) {
    let Some(Value::Array(list)) = finalizers else {
        return;
    };
    let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
    for name in &names {
        for msg in names::qualified_name(name) {
            errs.push(FieldError::invalid_str(path, name, msg));
        }
    }
    if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
        errs.push(FieldError::invalid(
            path,
            &Value::Array(list.clone()),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    for (i, name) in names.iter().enumerate() {
        if builtin
            && !name.contains('/')
            && names::qualified_name(name).is_empty()
            && !STANDARD.contains(name)
        {
            errs.push(FieldError::invalid_str(
                path.index(i),
                name,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
}

/// The finalizer names `validateKubeFinalizerName` accepts without a domain.
const STANDARD: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];
