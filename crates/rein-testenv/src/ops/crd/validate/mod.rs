//! Validation of a CustomResourceDefinition on create and update, after
//! `apiextensions/validation/validation.go`: the same checks in the same order, with the
//! field paths of the internal type the real server validates (a v1 object is converted
//! first, so a subresource, schema or column list that is the same in every version is
//! reported at `spec.subresources`, `spec.validation` or `spec.additionalPrinterColumns`).

mod conversion;
mod version;

use serde_json::Value;

use super::field::{FieldError, dns1035_label, dns1123_subdomain, quote, string_slice};

/// `ValidateCustomResourceDefinition`: everything wrong with a CRD about to be created
/// (defaulted, with the status the strategy gives a new object).
pub(crate) fn create(crd: &Value) -> Vec<FieldError> {
    let mut errs = metadata_name(crd);
    errs.extend(spec(crd, &Opts::default()));
    errs.extend(status(crd));
    errs.extend(stored_versions(crd));
    errs.extend(preserve_unknown_fields(crd, None));
    errs
}

/// `ValidateCustomResourceDefinitionUpdate`: everything wrong with `new` replacing `old`.
pub(crate) fn update(new: &Value, old: &Value) -> Vec<FieldError> {
    let opts = Opts {
        require_schema: all_versions_have_schema(old),
        require_recognized_review_version: conversion::has_recognized_review_version_or_none(old),
    };
    let mut errs = spec(new, &opts);
    let established = super::names::condition_true(old, "Established");
    let immutable = |errs: &mut Vec<FieldError>, pointer: &str, path: &str| {
        let now = str_at(new, pointer);
        if now != str_at(old, pointer) {
            errs.push(FieldError::invalid_str(path, now, "field is immutable"));
        }
    };
    if established {
        immutable(&mut errs, "/spec/scope", "spec.scope");
        immutable(&mut errs, "/spec/names/kind", "spec.names.kind");
    }
    immutable(&mut errs, "/spec/group", "spec.group");
    immutable(&mut errs, "/spec/names/plural", "spec.names.plural");
    errs.extend(status(new));
    errs.extend(stored_versions(new));
    errs.extend(preserve_unknown_fields(new, Some(old)));
    errs
}

/// `ValidateUpdateCustomResourceDefinitionStatus`: a `/status` write checks the accepted names.
pub(crate) fn status_update(new: &Value) -> Vec<FieldError> {
    status(new)
}

/// Options that relax checks on update so that stored objects stay writable.
#[derive(Debug, Clone, Copy)]
struct Opts {
    /// Every version must have `schema.openAPIV3Schema` (false on update when the old object
    /// already lacked one).
    require_schema: bool,
    /// A webhook's `conversionReviewVersions` must include one this server understands.
    require_recognized_review_version: bool,
}

impl Default for Opts {
    fn default() -> Opts {
        Opts {
            require_schema: true,
            require_recognized_review_version: true,
        }
    }
}

/// The string at `pointer`, or "".
fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The list of strings at `pointer`.
fn strings_at(obj: &Value, pointer: &str) -> Vec<String> {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.name`: a DNS subdomain equal to `spec.names.plural + "." + spec.group`.
fn metadata_name(crd: &Value) -> Vec<FieldError> {
    let name = str_at(crd, "/metadata/name");
    let mut errs: Vec<FieldError> = dns1123_subdomain(name)
        .into_iter()
        .map(|why| FieldError::invalid_str("metadata.name", name, why))
        .collect();
    let required = format!(
        "{}.{}",
        str_at(crd, "/spec/names/plural"),
        str_at(crd, "/spec/group")
    );
    if name != required {
        errs.push(FieldError::invalid_str(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    errs
}

/// `validateCustomResourceDefinitionSpec`.
fn spec(crd: &Value, opts: &Opts) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Value::Null;
    let spec = crd.get("spec").unwrap_or(&empty);
    let group = str_at(spec, "/group");
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else if !dns1123_subdomain(group).is_empty() {
        let problems = dns1123_subdomain(group).join(",");
        errs.push(FieldError::invalid_str("spec.group", group, problems));
    } else if group.split('.').count() < 2 {
        errs.push(FieldError::invalid_str(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
    let scope = str_at(spec, "/scope");
    if scope.is_empty() {
        errs.push(FieldError::required("spec.scope", ""));
    } else if scope != "Cluster" && scope != "Namespaced" {
        errs.push(FieldError::not_supported(
            "spec.scope",
            scope,
            &["Cluster", "Namespaced"],
        ));
    }
    let versions: &[Value] = spec
        .get("versions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let layout = version::Layout::of(versions);
    if opts.require_schema {
        for (i, v) in versions.iter().enumerate() {
            if v.pointer("/schema/openAPIV3Schema")
                .is_none_or(Value::is_null)
            {
                errs.push(FieldError::required(
                    format!("spec.versions[{i}].schema.openAPIV3Schema"),
                    "",
                ));
            }
        }
    }
    let mut storage = 0;
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        let name = str_at(v, "/name");
        if seen.contains(&name) {
            unique = false;
        } else {
            seen.push(name);
        }
        let problems = dns1035_label(name);
        if !problems.is_empty() {
            errs.push(FieldError::invalid_str(
                format!("spec.versions[{i}].name"),
                name,
                problems.join(","),
            ));
        }
        errs.extend(version::validate(i, v, &layout));
    }
    let versions_value = "[]apiextensions.CustomResourceDefinitionVersion{...}";
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_value,
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_value,
            "must have exactly one version marked as storage version",
        ));
    }
    // The internal type's `spec.version` is the first version's name.
    if let Some(first) = versions.first() {
        let name = str_at(first, "/name");
        let problems = dns1035_label(name);
        if !name.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid_str(
                "spec.version",
                name,
                problems.join(","),
            ));
        }
    }
    for field in ["plural", "singular", "kind", "listKind"] {
        if str_at(spec, &format!("/names/{field}")).is_empty() {
            errs.push(FieldError::required(format!("spec.names.{field}"), ""));
        }
    }
    errs.extend(names(spec.get("names").unwrap_or(&empty), "spec.names"));
    errs.extend(version::validate_hoisted(versions, &layout));
    errs.extend(conversion::validate(
        crd,
        opts.require_recognized_review_version,
    ));
    errs
}

/// `ValidateCustomResourceDefinitionNames` for the names at `path`.
fn names(names: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let plural = str_at(names, "/plural");
    let singular = str_at(names, "/singular");
    let kind = str_at(names, "/kind");
    let list_kind = str_at(names, "/listKind");
    for (field, value) in [("plural", plural), ("singular", singular)] {
        let problems = dns1035_label(value);
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid_str(
                format!("{path}.{field}"),
                value,
                problems.join(","),
            ));
        }
    }
    for (field, value) in [("kind", kind), ("listKind", list_kind)] {
        let problems = dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid_str(
                format!("{path}.{field}"),
                value,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    problems.join(",")
                ),
            ));
        }
    }
    for (i, short) in strings_at(names, "/shortNames").iter().enumerate() {
        let problems = dns1035_label(short);
        if !problems.is_empty() {
            errs.push(FieldError::invalid_str(
                format!("{path}.shortNames[{i}]"),
                short,
                problems.join(","),
            ));
        }
    }
    if !kind.is_empty() && kind == list_kind {
        errs.push(FieldError::invalid_str(
            format!("{path}.listKind"),
            list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in strings_at(names, "/categories").iter().enumerate() {
        let problems = dns1035_label(category);
        if !problems.is_empty() {
            errs.push(FieldError::invalid_str(
                format!("{path}.categories[{i}]"),
                category,
                problems.join(","),
            ));
        }
    }
    errs
}

/// `ValidateCustomResourceDefinitionStatus`: the accepted names.
fn status(crd: &Value) -> Vec<FieldError> {
    match crd.pointer("/status/acceptedNames") {
        Some(accepted) => names(accepted, "status.acceptedNames"),
        None => Vec::new(),
    }
}

/// `ValidateCustomResourceDefinitionStoredVersions`.
fn stored_versions(crd: &Value) -> Vec<FieldError> {
    let stored = strings_at(crd, "/status/storedVersions");
    let path = "status.storedVersions";
    if stored.is_empty() {
        return vec![FieldError::invalid(
            path,
            string_slice(&stored),
            "must have at least one stored version",
        )];
    }
    let mut errs = Vec::new();
    let mut left: Vec<Option<&String>> = stored.iter().map(Some).collect();
    for v in crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = str_at(v, "/name");
        let listed = stored.iter().any(|s| s == name);
        if v.get("storage").and_then(Value::as_bool) == Some(true) && !listed {
            errs.push(FieldError::invalid(
                path,
                string_slice(&stored),
                format!("must have the storage version {name}"),
            ));
        }
        for slot in &mut left {
            if slot.is_some_and(|s| s == name) {
                *slot = None;
            }
        }
    }
    for (i, missing) in left.iter().enumerate() {
        if let Some(v) = missing {
            errs.push(FieldError::invalid(
                format!("{path}[{i}]"),
                quote(v),
                format!(
                    "missing from spec.versions; {v} was previously a storage version, and must \
                     remain in spec.versions until a storage migration ensures no data remains \
                     persisted in {v} and removes {v} from status.storedVersions"
                ),
            ));
        }
    }
    errs
}

/// `validatePreserveUnknownFields`: `spec.preserveUnknownFields` cannot become true.
fn preserve_unknown_fields(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let set = |o: &Value| o.pointer("/spec/preserveUnknownFields") == Some(&Value::Bool(true));
    if old.is_some_and(set) || !set(crd) {
        return Vec::new();
    }
    vec![FieldError::invalid(
        "spec.preserveUnknownFields",
        "true",
        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in \
         spec.versions[*].schema instead",
    )]
}

/// Whether every version (or the shared schema) has `openAPIV3Schema`.
fn all_versions_have_schema(crd: &Value) -> bool {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .is_none_or(|vs| {
            vs.iter().all(|v| {
                v.pointer("/schema/openAPIV3Schema")
                    .is_some_and(|s| !s.is_null())
            })
        })
}
