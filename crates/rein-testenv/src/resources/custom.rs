//! What a CustomResourceDefinition says about serving each of its versions: the schema (for
//! server-side apply's list and map types), the printer columns of `kubectl get`, and the
//! deprecation warning, read once when the CRD is registered.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::compare_versions;

/// The description kube-apiserver gives the default `Age` column (ObjectMeta's
/// `creationTimestamp` documentation).
const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the \
    server time when this object was created. It is not guaranteed to be set in happens-before \
    order across separate operations. Clients may not set this value. It is represented in \
    RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More \
    info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// One served version of a custom resource.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CustomVersion {
    /// The version's `schema.openAPIV3Schema`, if it has one.
    pub(crate) schema: Option<Arc<Value>>,
    /// The `additionalPrinterColumns`, or kube-apiserver's default `Age` column when there
    /// are none.
    pub(crate) columns: Vec<PrinterColumn>,
    /// The `Warning` every request to a deprecated version gets.
    pub(crate) warning: Option<String>,
}

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrinterColumn {
    /// Column header.
    pub(crate) name: String,
    /// OpenAPI type: `integer`, `number`, `string`, `boolean` or `date`.
    pub(crate) kind: String,
    /// OpenAPI format, e.g. `int32`; may be empty.
    pub(crate) format: String,
    /// Column description (kube-apiserver fills in one naming the JSONPath).
    pub(crate) description: String,
    /// 0 for `kubectl get`, more for `-o wide` only.
    pub(crate) priority: i64,
    /// The JSONPath evaluated on each object, e.g. `.spec.replicas`.
    pub(crate) json_path: String,
}

/// Each served version of the CRD with spec `spec`, by version name.
pub(crate) fn custom_versions(spec: &Value) -> BTreeMap<String, Arc<CustomVersion>> {
    let versions: Vec<&Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
                .collect()
        })
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for version in &versions {
        let Some(name) = text(version, "name") else {
            continue;
        };
        let info = CustomVersion {
            schema: version
                .pointer("/schema/openAPIV3Schema")
                .cloned()
                .map(Arc::new),
            columns: columns(version),
            warning: flag(version, "deprecated").then(|| {
                match text(version, "deprecationWarning") {
                    Some(warning) => warning.to_string(),
                    None => default_deprecation_warning(spec, name, &versions),
                }
            }),
        };
        out.insert(name.to_string(), Arc::new(info));
    }
    out
}

fn columns(version: &Value) -> Vec<PrinterColumn> {
    let declared: Vec<PrinterColumn> = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|column| {
            let json_path = text(column, "jsonPath")?.to_string();
            let description = match text(column, "description") {
                Some(d) if !d.is_empty() => d.to_string(),
                _ => format!("Custom resource definition column (in JSONPath format): {json_path}"),
            };
            Some(PrinterColumn {
                name: text(column, "name")?.to_string(),
                kind: text(column, "type").unwrap_or("string").to_string(),
                format: text(column, "format").unwrap_or_default().to_string(),
                description,
                priority: column.get("priority").and_then(Value::as_i64).unwrap_or(0),
                json_path,
            })
        })
        .collect();
    if !declared.is_empty() {
        return declared;
    }
    vec![PrinterColumn {
        name: "Age".to_string(),
        kind: "date".to_string(),
        format: String::new(),
        description: CREATION_TIMESTAMP_DESCRIPTION.to_string(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".to_string(),
    }]
}

/// kube-apiserver's wording: `<group>/<version> <Kind> is deprecated`, plus `; use
/// <group>/<newer> <Kind>` naming the most preferred served, non-deprecated version that is
/// newer than the deprecated one.
fn default_deprecation_warning(spec: &Value, deprecated: &str, versions: &[&Value]) -> String {
    let group = text(spec, "group").unwrap_or_default();
    let kind = spec
        .pointer("/names/kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut message = format!("{group}/{deprecated} {kind} is deprecated");
    let newer = versions
        .iter()
        .filter(|v| !flag(v, "deprecated"))
        .filter_map(|v| text(v, "name"))
        .filter(|name| compare_versions(name, deprecated).is_lt())
        .min_by(|a, b| compare_versions(a, b));
    if let Some(newer) = newer {
        message.push_str(&format!("; use {group}/{newer} {kind}"));
    }
    message
}

fn text<'a>(value: &'a Value, field: &str) -> Option<&'a str> {
    value.get(field).and_then(Value::as_str)
}

fn flag(value: &Value, field: &str) -> bool {
    value.get(field).and_then(Value::as_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn deprecation_names_the_newest_served_version() {
        let spec = json!({
            "group": "example.com",
            "names": {"kind": "Widget"},
            "versions": [
                {"name": "v1alpha1", "served": true, "deprecated": true},
                {"name": "v1beta1", "served": true},
                {"name": "v1", "served": true},
                {"name": "v2", "served": false},
                {"name": "v1beta2", "served": true, "deprecated": true,
                 "deprecationWarning": "use v1"},
            ],
        });
        let versions = custom_versions(&spec);
        assert_eq!(
            versions["v1alpha1"].warning.as_deref(),
            Some("example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget")
        );
        assert_eq!(versions["v1beta2"].warning.as_deref(), Some("use v1"));
        assert_eq!(versions["v1"].warning, None);
        assert!(!versions.contains_key("v2"));
        assert_eq!(versions["v1"].columns[0].name, "Age");
    }
}
