//! `meta.k8s.io/v1` Table answers for `kubectl get`: kube-apiserver's columns for common
//! kinds, Name and Age for other built-ins, and for custom resources what kube-apiserver's
//! CRD table convertor makes of the version's `additionalPrinterColumns`.

use std::sync::Arc;

use http::{HeaderMap, header};
use serde_json::{Value, json};

use super::jsonpath::JsonPath;
use crate::resources::{PrinterColumn, ResourceDef};

/// ObjectMeta's documentation of `name`, the description of every table's Name column.
const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when \
    creating resources, although some resources may allow a client to request the generation \
    of an appropriate name automatically. Name is primarily intended for creation idempotence \
    and configuration definition. Cannot be updated. More info: \
    https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// Whether the client asked for a Table (kubectl get does).
pub(crate) fn wanted(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"))
}

/// A Table of `items` of `def` served at `version`.
pub(crate) fn table(
    def: &ResourceDef,
    version: &str,
    items: &[&Arc<Value>],
    rv: u64,
    continue_token: Option<&str>,
) -> Value {
    if let Some(custom) = def.custom_version(version) {
        return custom_table(&custom.columns, items, rv, continue_token);
    }
    let extra = extra_columns(def);
    let mut columns = vec![column("Name", "string", "name", NAME_DESCRIPTION)];
    for (name, kind, _) in &extra {
        columns.push(column(name, kind, "", ""));
    }
    columns.push(column("Age", "string", "", "CreationTimestamp is a timestamp representing the server time when this object was created."));
    let now = jiff::Timestamp::now();
    let rows: Vec<Value> = items
        .iter()
        .map(|obj| {
            let mut cells = vec![name_cell(obj)];
            for (_, _, cell) in &extra {
                cells.push(cell(obj));
            }
            cells.push(json!(age(obj, now)));
            row(obj, cells)
        })
        .collect();
    assemble(columns, rows, rv, continue_token)
}

/// A custom resource's Table: Name, then one column per printer column (kube-apiserver's
/// `tableconvertor`), cells computed by JSONPath and typed by the column's `type`.
fn custom_table(
    printer_columns: &[PrinterColumn],
    items: &[&Arc<Value>],
    rv: u64,
    continue_token: Option<&str>,
) -> Value {
    let mut columns = vec![column("Name", "string", "name", NAME_DESCRIPTION)];
    let mut paths = Vec::new();
    for c in printer_columns {
        let mut definition = column(&c.name, &c.kind, &c.format, &c.description);
        definition["priority"] = json!(c.priority);
        columns.push(definition);
        paths.push(JsonPath::parse(&c.json_path));
    }
    let now = jiff::Timestamp::now();
    let rows: Vec<Value> = items
        .iter()
        .map(|obj| {
            let mut cells = vec![name_cell(obj)];
            for (c, path) in printer_columns.iter().zip(&paths) {
                let found = path.as_ref().and_then(|p| p.find(obj).into_iter().next());
                cells.push(found.map_or(Value::Null, |v| typed_cell(&c.kind, v, now)));
            }
            row(obj, cells)
        })
        .collect();
    assemble(columns, rows, rv, continue_token)
}

/// A printer column's cell for the value its JSONPath found, as kube-apiserver's
/// `cellForJSONValue` (and, for strings, JSONPath's printing) makes it; `null` when the value
/// does not fit the column's type.
fn typed_cell(kind: &str, value: &Value, now: jiff::Timestamp) -> Value {
    match (kind, value) {
        (_, Value::Null) => Value::Null,
        ("string", Value::String(s)) => json!(s),
        ("string", Value::Object(_) | Value::Array(_)) => json!(value.to_string()),
        ("string", other) => json!(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        ("number", Value::Number(n)) => match (n.as_i64(), n.as_f64()) {
            // Go encodes a whole float64 without a fraction.
            (Some(i), _) => json!(i),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => json!(f as i64),
            (None, Some(f)) => json!(f),
            _ => Value::Null,
        },
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => match s.parse::<jiff::Timestamp>() {
            Ok(at) => json!(human_duration(
                now.as_second().saturating_sub(at.as_second()).max(0)
            )),
            Err(_) => json!("<invalid>"),
        },
        _ => Value::Null,
    }
}

fn name_cell(obj: &Value) -> Value {
    obj.pointer("/metadata/name")
        .cloned()
        .unwrap_or(Value::Null)
}

/// A row: its cells and the object's metadata (managedFields dropped), as kube-apiserver
/// sends with the default `includeObject=Metadata`.
fn row(obj: &Value, cells: Vec<Value>) -> Value {
    let mut meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = meta.as_object_mut() {
        m.remove("managedFields");
    }
    json!({
        "cells": cells,
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta},
    })
}

fn assemble(columns: Vec<Value>, rows: Vec<Value>, rv: u64, continue_token: Option<&str>) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = continue_token {
        meta["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

fn column(name: &str, kind: &str, format: &str, description: &str) -> Value {
    json!({"name": name, "type": kind, "format": format, "description": description, "priority": 0})
}

type Cell = fn(&Value) -> Value;

fn extra_columns(def: &ResourceDef) -> Vec<(&'static str, &'static str, Cell)> {
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "namespaces") => vec![("Status", "string", |o| str_at(o, "/status/phase"))],
        ("", "pods") => vec![
            ("Ready", "string", |o| {
                let total = o
                    .pointer("/spec/containers")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                let ready = o
                    .pointer("/status/containerStatuses")
                    .and_then(Value::as_array)
                    .map_or(0, |cs| {
                        cs.iter()
                            .filter(|c| c.get("ready") == Some(&json!(true)))
                            .count()
                    });
                json!(format!("{ready}/{total}"))
            }),
            ("Status", "string", |o| str_at(o, "/status/phase")),
            ("Restarts", "string", |o| {
                let restarts: i64 = o
                    .pointer("/status/containerStatuses")
                    .and_then(Value::as_array)
                    .map_or(0, |cs| {
                        cs.iter()
                            .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                            .sum()
                    });
                json!(restarts.to_string())
            }),
        ],
        ("apps", "deployments") => vec![
            ("Ready", "string", |o| {
                json!(format!(
                    "{}/{}",
                    int_at(o, "/status/readyReplicas"),
                    o.pointer("/spec/replicas")
                        .and_then(Value::as_i64)
                        .unwrap_or(1)
                ))
            }),
            ("Up-to-date", "integer", |o| {
                json!(int_at(o, "/status/updatedReplicas"))
            }),
            ("Available", "integer", |o| {
                json!(int_at(o, "/status/availableReplicas"))
            }),
        ],
        ("", "configmaps") => vec![("Data", "integer", |o| {
            json!(
                o.get("data")
                    .and_then(Value::as_object)
                    .map_or(0, |d| d.len())
                    + o.get("binaryData")
                        .and_then(Value::as_object)
                        .map_or(0, |d| d.len())
            )
        })],
        ("", "secrets") => vec![
            ("Type", "string", |o| str_at(o, "/type")),
            ("Data", "integer", |o| {
                json!(
                    o.get("data")
                        .and_then(Value::as_object)
                        .map_or(0, |d| d.len())
                )
            }),
        ],
        ("", "services") => vec![
            ("Type", "string", |o| {
                let t = o
                    .pointer("/spec/type")
                    .and_then(Value::as_str)
                    .unwrap_or("ClusterIP");
                json!(t)
            }),
            ("Cluster-IP", "string", |o| {
                json!(
                    o.pointer("/spec/clusterIP")
                        .and_then(Value::as_str)
                        .unwrap_or("<none>")
                )
            }),
        ],
        _ => Vec::new(),
    }
}

fn str_at(obj: &Value, pointer: &str) -> Value {
    json!(obj.pointer(pointer).and_then(Value::as_str).unwrap_or(""))
}

fn int_at(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// kubectl's human duration since `creationTimestamp` (`5s`, `3m20s`, `4h`, `2d`).
fn age(obj: &Value, now: jiff::Timestamp) -> String {
    let Some(created) = obj
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    else {
        return "<unknown>".to_string();
    };
    let secs = now.as_second().saturating_sub(created.as_second()).max(0);
    human_duration(secs)
}

fn human_duration(secs: i64) -> String {
    let (m, h, d) = (60, 3600, 86_400);
    match secs {
        s if s < 2 * m => format!("{s}s"),
        s if s < 10 * m => {
            if s % m == 0 {
                format!("{}m", s / m)
            } else {
                format!("{}m{}s", s / m, s % m)
            }
        }
        s if s < 3 * h => format!("{}m", s / m),
        s if s < 8 * h => {
            if (s % h) / m == 0 {
                format!("{}h", s / h)
            } else {
                format!("{}h{}m", s / h, (s % h) / m)
            }
        }
        s if s < 48 * h => format!("{}h", s / h),
        s if s < 8 * d => {
            if (s % d) / h == 0 {
                format!("{}d", s / d)
            } else {
                format!("{}d{}h", s / d, (s % d) / h)
            }
        }
        s if s < 365 * 2 * d => format!("{}d", s / d),
        s => format!("{}y", s / (365 * d)),
    }
}

#[cfg(test)]
mod tests {
    use super::human_duration;

    #[test]
    fn durations_read_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(200), "3m20s");
        assert_eq!(human_duration(3 * 3600), "3h");
        assert_eq!(human_duration(3 * 86_400 + 7200), "3d2h");
    }
}
