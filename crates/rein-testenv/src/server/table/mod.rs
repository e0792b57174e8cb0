//! `meta.k8s.io/v1` Table answers for `kubectl get`: kube-apiserver's printer columns for
//! built-in kinds (`printers.rs`, wide columns at `priority: 1`), its default convertor's
//! Name and Created At for the others, and for custom resources what its CRD table convertor
//! makes of the version's `additionalPrinterColumns`. Each row carries the object as
//! `includeObject` asks: `PartialObjectMetadata` (the default), the whole object, or none.

mod format;
mod printers;

use std::sync::Arc;

use http::{HeaderMap, header};
use serde_json::{Value, json};

use super::jsonpath::JsonPath;
use super::query::Query;
use crate::resources::{PrinterColumn, ResourceDef};
use crate::status::ApiError;

/// What each row's `object` holds (`TableOptions.includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Include {
    /// `None`: no object.
    Nothing,
    /// `Metadata` (the default): the object's `PartialObjectMetadata`.
    Metadata,
    /// `Object`: the whole object.
    Object,
}

/// Whether the client asked for a Table (kubectl get does).
pub(crate) fn wanted(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"))
}

/// The Table the request asks for, if any, with its `includeObject`; 400 for an unknown
/// `includeObject`, as kube-apiserver answers.
pub(crate) fn requested(headers: &HeaderMap, q: &Query) -> Result<Option<Include>, ApiError> {
    if !wanted(headers) {
        return Ok(None);
    }
    match q.include_object.as_deref() {
        None | Some("" | "Metadata") => Ok(Some(Include::Metadata)),
        Some("Object") => Ok(Some(Include::Object)),
        Some("None") => Ok(Some(Include::Nothing)),
        Some(other) => Err(ApiError::bad_request(format!(
            "unrecognized includeObject value: {other:?}"
        ))),
    }
}

/// The list metadata a Table carries: kube copies the list's, or a single object's
/// `resourceVersion`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Page<'a> {
    /// `metadata.resourceVersion`.
    pub(crate) rv: u64,
    /// `metadata.continue`, when there are more items.
    pub(crate) continue_token: Option<&'a str>,
    /// `metadata.remainingItemCount`, when known.
    pub(crate) remaining: Option<usize>,
}

impl Page<'_> {
    /// The metadata of a one-object Table: the object's `resourceVersion`.
    pub(crate) fn of_object(obj: &Value) -> Page<'static> {
        let rv = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .and_then(|rv| rv.parse().ok())
            .unwrap_or_default();
        Page {
            rv,
            continue_token: None,
            remaining: None,
        }
    }
}

/// A Table of `items` of `def` served at `version`.
pub(crate) fn table(
    def: &ResourceDef,
    version: &str,
    items: &[&Arc<Value>],
    page: Page<'_>,
    include: Include,
) -> Value {
    let api_version = def.api_version(version);
    let object = |obj: &Value| row_object(obj, include, &def.kind, &api_version);
    if let Some(custom) = def.custom_version(version) {
        return custom_table(&custom.columns, items, page, &object);
    }
    let now = jiff::Timestamp::now();
    let Some(printer) = printers::printer(&def.group, &def.plural) else {
        // kube-apiserver's default table convertor.
        let columns = vec![
            column("Name", "string", "name", printers::meta("name")),
            column(
                "Created At",
                "date",
                "",
                printers::meta("creationTimestamp"),
            ),
        ];
        let rows = items
            .iter()
            .map(|obj| {
                row(
                    vec![name_cell(obj), printers::created_at(obj)],
                    None,
                    object(obj),
                )
            })
            .collect();
        return assemble(columns, rows, page);
    };
    let columns = printer
        .columns
        .iter()
        .map(|c| {
            let mut definition = column(c.name, c.kind, c.format, &c.description);
            definition["priority"] = json!(c.priority);
            definition
        })
        .collect();
    let rows = items
        .iter()
        .map(|obj| {
            let printed = (printer.row)(obj, now);
            row(printed.cells, printed.conditions, object(obj))
        })
        .collect();
    assemble(columns, rows, page)
}

/// A row's `object`: as kube-apiserver's `asTable` fills it for `include`.
fn row_object(obj: &Value, include: Include, kind: &str, api_version: &str) -> Value {
    match include {
        Include::Nothing => Value::Null,
        Include::Object => {
            let mut full = obj.clone();
            if let Some(map) = full.as_object_mut() {
                map.insert("kind".into(), json!(kind));
                map.insert("apiVersion".into(), json!(api_version));
            }
            full
        }
        // `meta.AsPartialObjectMetadata`: all of ObjectMeta, managedFields included.
        Include::Metadata => super::represent::partial_object(obj),
    }
}

/// A custom resource's Table: Name, then one column per printer column (kube-apiserver's
/// `tableconvertor`), cells computed by JSONPath and typed by the column's `type`.
fn custom_table(
    printer_columns: &[PrinterColumn],
    items: &[&Arc<Value>],
    page: Page<'_>,
    object: &dyn Fn(&Value) -> Value,
) -> Value {
    let mut columns = vec![column("Name", "string", "name", printers::meta("name"))];
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
            row(cells, None, object(obj))
        })
        .collect();
    assemble(columns, rows, page)
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
            Ok(at) => json!(format::human_duration(now.as_second() - at.as_second())),
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

/// A row: its cells, kube's row conditions (finished Pods) and the object.
fn row(cells: Vec<Value>, conditions: Option<Value>, object: Value) -> Value {
    let mut row = json!({"cells": cells});
    if let Some(conditions) = conditions {
        row["conditions"] = conditions;
    }
    row["object"] = object;
    row
}

fn assemble(columns: Vec<Value>, rows: Vec<Value>, page: Page<'_>) -> Value {
    let mut meta = json!({"resourceVersion": page.rv.to_string()});
    if let Some(c) = page.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(n) = page.remaining {
        meta["remainingItemCount"] = json!(n);
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
