//! Per-version checks of a CRD: deprecation warnings, the schema's root, the `status` and
//! `scale` subresources, and additional printer columns — each reported at the version's
//! path, or at the top-level path when every version has the same value (as the v1 →
//! internal conversion hoists it).

use serde_json::Value;

use super::super::field::{FieldError, Kind, quote};
use super::str_at;

/// Which per-version fields are the same in every version (the internal type then holds
/// them at the top level and errors name `spec.validation`, `spec.subresources`,
/// `spec.additionalPrinterColumns`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    schema: bool,
    subresources: bool,
    columns: bool,
}

impl Layout {
    /// The layout of `versions`.
    pub(super) fn of(versions: &[Value]) -> Layout {
        let same = |field: &str| {
            let first = versions.first().map(|v| normalized(v.get(field)));
            !versions.is_empty()
                && versions
                    .iter()
                    .all(|v| Some(normalized(v.get(field))) == first)
        };
        Layout {
            schema: same("schema"),
            subresources: same("subresources"),
            columns: same("additionalPrinterColumns"),
        }
    }
}

/// Absent, `null` and empty lists compare equal, as `apiequality.Semantic` treats them.
fn normalized(v: Option<&Value>) -> Option<&Value> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(other) => Some(other),
    }
}

/// `validateCustomResourceDefinitionVersion` for version `i`, for the fields not hoisted.
pub(super) fn validate(i: usize, version: &Value, layout: &Layout) -> Vec<FieldError> {
    let path = format!("spec.versions[{i}]");
    let mut errs = deprecation_warning(version, &path);
    if !layout.schema {
        let status = version
            .pointer("/subresources/status")
            .is_some_and(|s| !s.is_null());
        if let Some(schema) = version.get("schema").filter(|s| !s.is_null()) {
            errs.extend(version_schema_causes(Some(i), schema, status));
        }
    }
    if !layout.subresources
        && let Some(subresources) = version.get("subresources")
    {
        errs.extend(subresources_causes(
            subresources,
            &format!("{path}.subresources"),
        ));
    }
    if !layout.columns {
        errs.extend(columns(
            version,
            &format!("{path}.additionalPrinterColumns"),
        ));
    }
    errs
}

/// The checks of the fields every version shares, at their top-level paths.
pub(super) fn validate_hoisted(versions: &[Value], layout: &Layout) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(first) = versions.first() else {
        return errs;
    };
    if layout.schema
        && let Some(schema) = first.get("schema").filter(|s| !s.is_null())
    {
        let any_status = versions.iter().any(|v| {
            v.pointer("/subresources/status")
                .is_some_and(|s| !s.is_null())
        });
        errs.extend(version_schema_causes(None, schema, any_status));
    }
    if layout.subresources
        && let Some(subresources) = first.get("subresources")
    {
        errs.extend(subresources_causes(subresources, "spec.subresources"));
    }
    if layout.columns {
        errs.extend(columns(first, "spec.additionalPrinterColumns"));
    }
    errs
}

/// The causes of one version's `schema` (`CustomResourceValidation`): version `index`, or
/// the schema every version shares (`None`, reported at `spec.validation`). This is where
/// per-version schema causes are gathered: the root checks here (type `object` and the
/// allowed root fields when `status` is a subresource; no `nullable` root), then the
/// structural-schema and CEL rule checks of `crate::schema`.
pub(crate) fn version_schema_causes(
    index: Option<usize>,
    validation: &Value,
    status_enabled: bool,
) -> Vec<FieldError> {
    let base = match index {
        Some(i) => format!("spec.versions[{i}].schema"),
        None => "spec.validation".to_string(),
    };
    let mut errs = Vec::new();
    let Some(schema) = validation.get("openAPIV3Schema").filter(|s| s.is_object()) else {
        return errs;
    };
    if status_enabled {
        for (json, go) in ROOT_FIELDS {
            let Some(value) = schema.get(*json).filter(|v| !is_zero(v)) else {
                continue;
            };
            if *json == "type" {
                if value.as_str() != Some("object") {
                    errs.push(FieldError::invalid(
                        format!("{base}.openAPIV3Schema.type"),
                        quote(value.as_str().unwrap_or_default()),
                        "only \"object\" is allowed as the type at the root of the schema if the \
                         status subresource is enabled",
                    ));
                    break;
                }
                continue;
            }
            if !ALLOWED_AT_ROOT.contains(go) {
                errs.push(FieldError::invalid(
                    format!("{base}.openAPIV3Schema"),
                    "apiextensions.JSONSchemaProps{...}",
                    format!(
                        "only [{}] fields are allowed at the root of the schema if the status \
                         subresource is enabled",
                        ALLOWED_AT_ROOT.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if schema.get("nullable") == Some(&Value::Bool(true)) {
        errs.push(FieldError::forbidden(
            format!("{base}.openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let structural = match index {
        Some(i) => crate::schema::crd_schema_causes(i, schema),
        None => crate::schema::crd_schema_causes_at(&format!("{base}.openAPIV3Schema"), schema),
    };
    errs.extend(structural.into_iter().map(from_schema_cause));
    errs
}

/// A structural-schema or CEL cause of `crate::schema` as a CRD field error.
fn from_schema_cause(cause: crate::schema::Cause) -> FieldError {
    match cause.reason {
        "FieldValueRequired" => FieldError::required(cause.field, cause.detail),
        "FieldValueForbidden" => FieldError::forbidden(cause.field, cause.detail),
        "FieldValueNotSupported" => FieldError {
            kind: Kind::NotSupported,
            field: cause.field,
            value: cause.value.unwrap_or_default(),
            detail: cause.detail,
        },
        _ => FieldError::invalid(cause.field, cause.value.unwrap_or_default(), cause.detail),
    }
}

/// `JSONSchemaProps` fields in declaration order: (JSON name, Go name).
const ROOT_FIELDS: &[(&str, &str)] = &[
    ("id", "ID"),
    ("$schema", "Schema"),
    ("$ref", "Ref"),
    ("description", "Description"),
    ("type", "Type"),
    ("nullable", "Nullable"),
    ("format", "Format"),
    ("title", "Title"),
    ("default", "Default"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("enum", "Enum"),
    ("maxProperties", "MaxProperties"),
    ("minProperties", "MinProperties"),
    ("required", "Required"),
    ("items", "Items"),
    ("allOf", "AllOf"),
    ("oneOf", "OneOf"),
    ("anyOf", "AnyOf"),
    ("not", "Not"),
    ("properties", "Properties"),
    ("additionalProperties", "AdditionalProperties"),
    ("patternProperties", "PatternProperties"),
    ("dependencies", "Dependencies"),
    ("additionalItems", "AdditionalItems"),
    ("definitions", "Definitions"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-embedded-resource", "XEmbeddedResource"),
    ("x-kubernetes-int-or-string", "XIntOrString"),
    ("x-kubernetes-list-map-keys", "XListMapKeys"),
    ("x-kubernetes-list-type", "XListType"),
    ("x-kubernetes-map-type", "XMapType"),
    ("x-kubernetes-validations", "XValidations"),
];

/// `allowedFieldsAtRootSchema`.
const ALLOWED_AT_ROOT: &[&str] = &[
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

/// Whether a decoded field holds Go's zero value (false, "", null).
fn is_zero(v: &Value) -> bool {
    matches!(v, Value::Null | Value::Bool(false)) || v.as_str() == Some("")
}

/// `validateDeprecationWarning`.
fn deprecation_warning(version: &Value, path: &str) -> Vec<FieldError> {
    let Some(warning) = version.get("deprecationWarning").and_then(Value::as_str) else {
        return Vec::new();
    };
    let field = format!("{path}.deprecationWarning");
    let deprecated = version.get("deprecated").and_then(Value::as_bool) == Some(true);
    let mut problems = Vec::new();
    if !deprecated {
        problems.push("can only be set for deprecated versions".to_string());
    } else {
        if warning.len() > 256 {
            problems.push("must be <= 256 characters long".to_string());
        }
        if warning.is_empty() {
            problems.push("must not be an empty string".to_string());
        }
        if let Some((i, _)) = warning.char_indices().find(|(_, c)| c.is_control()) {
            problems.push(format!(
                "must only contain printable UTF-8 characters; control character found at \
                 index {i}"
            ));
        }
    }
    problems
        .into_iter()
        .map(|why| FieldError::invalid_str(field.clone(), warning, why))
        .collect()
}

/// `ValidateCustomResourceDefinitionSubresources`: the `scale` paths.
fn subresources_causes(subresources: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = subresources.get("scale").filter(|s| s.is_object()) else {
        return errs;
    };
    for (field, prefix, why) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let field_path = format!("{path}.scale.{field}");
        let value = str_at(scale, &format!("/{field}"));
        if value.is_empty() {
            errs.push(FieldError::required(field_path, ""));
        } else if let Some(e) = simple_json_path(value, &field_path) {
            errs.push(e);
        } else if !value.starts_with(prefix) {
            errs.push(FieldError::invalid_str(field_path, value, why));
        }
    }
    let selector = str_at(scale, "/labelSelectorPath");
    if !selector.is_empty() {
        let field_path = format!("{path}.scale.labelSelectorPath");
        if let Some(e) = simple_json_path(selector, &field_path) {
            errs.push(e);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errs.push(FieldError::invalid_str(
                field_path,
                selector,
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

/// `validateSimpleJSONPath`.
fn simple_json_path(s: &str, path: &str) -> Option<FieldError> {
    if s.is_empty() {
        return Some(FieldError::invalid_str(path, s, "must not be empty"));
    }
    if !s.starts_with('.') {
        return Some(FieldError::invalid_str(
            path,
            s,
            "must be a simple json path starting with .",
        ));
    }
    None
}

/// `ValidateCustomResourceColumnDefinition` for each of `version`'s printer columns.
fn columns(version: &Value, path: &str) -> Vec<FieldError> {
    const TYPES: &[&str] = &["boolean", "date", "integer", "number", "string"];
    const FORMATS: &[&str] = &[
        "byte",
        "date",
        "date-time",
        "double",
        "float",
        "int32",
        "int64",
        "password",
    ];
    let mut errs = Vec::new();
    for (j, col) in version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{path}[{j}]");
        if str_at(col, "/name").is_empty() {
            errs.push(FieldError::required(format!("{p}.name"), ""));
        }
        let kind = str_at(col, "/type");
        let one_of = format!("must be one of {}", TYPES.join(","));
        if kind.is_empty() {
            errs.push(FieldError::required(format!("{p}.type"), one_of));
        } else if !TYPES.contains(&kind) {
            errs.push(FieldError::invalid_str(format!("{p}.type"), kind, one_of));
        }
        let format = str_at(col, "/format");
        if !format.is_empty() && !FORMATS.contains(&format) {
            errs.push(FieldError::invalid_str(
                format!("{p}.format"),
                format,
                format!("must be one of {}", FORMATS.join(",")),
            ));
        }
        let json_path = str_at(col, "/jsonPath");
        let field = format!("{p}.JSONPath");
        if json_path.is_empty() {
            errs.push(FieldError::required(field, ""));
        } else if let Some(e) = simple_json_path(json_path, &field) {
            errs.push(e);
        }
    }
    errs
}
