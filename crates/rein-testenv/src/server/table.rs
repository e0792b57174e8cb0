//! `meta.k8s.io/v1` Table answers for `kubectl get`: kube-apiserver's columns for common
//! kinds, CRD `additionalPrinterColumns`-free defaults (Name, Age) for the rest.

use std::sync::Arc;

use http::{HeaderMap, header};
use serde_json::{Value, json};

use crate::resources::ResourceDef;

/// Whether the client asked for a Table (kubectl get does).
pub(crate) fn wanted(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"))
}

/// A Table of `items`.
pub(crate) fn table(
    def: &ResourceDef,
    items: &[&Arc<Value>],
    rv: u64,
    continue_token: Option<&str>,
) -> Value {
    let extra = extra_columns(def);
    let mut columns = vec![column(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace.",
    )];
    for (name, kind, _) in &extra {
        columns.push(column(name, kind, "", ""));
    }
    columns.push(column("Age", "string", "", "CreationTimestamp is a timestamp representing the server time when this object was created."));
    let now = jiff::Timestamp::now();
    let rows: Vec<Value> = items
        .iter()
        .map(|obj| {
            let mut cells = vec![obj.pointer("/metadata/name").cloned().unwrap_or(Value::Null)];
            for (_, _, cell) in &extra {
                cells.push(cell(obj));
            }
            cells.push(json!(age(obj, now)));
            let mut meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                m.remove("managedFields");
            }
            json!({
                "cells": cells,
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta},
            })
        })
        .collect();
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
