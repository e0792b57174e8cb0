//! kube-apiserver's printer columns for built-in kinds (kube's
//! `pkg/printers/internalversion/printers.go`): each kind's column definitions (with
//! `priority: 1` for the columns `kubectl get -o wide` adds) and the cells of one object's row.

use std::borrow::Cow;

use serde_json::{Value, json};

use super::format::{
    access_modes, containers, human_duration, int, label_selector, labels, list, or, selector,
    since, storage_class, text, time, with_more,
};
use crate::openapi::field_description;

mod cluster;
mod core_kinds;
mod workloads;

/// One column definition.
#[derive(Debug, Clone)]
pub(super) struct Column {
    pub(super) name: &'static str,
    pub(super) kind: &'static str,
    pub(super) format: &'static str,
    pub(super) description: Cow<'static, str>,
    pub(super) priority: u8,
}

/// One row's cells and, for finished Pods, its conditions.
#[derive(Debug, Default)]
pub(super) struct Row {
    pub(super) cells: Vec<Value>,
    pub(super) conditions: Option<Value>,
}

/// How one object's row is printed, given the time now.
pub(super) type RowFn = fn(&Value, jiff::Timestamp) -> Row;

/// A kind's columns and its row function.
#[derive(Debug)]
pub(super) struct Printer {
    pub(super) columns: Vec<Column>,
    pub(super) row: RowFn,
}

/// The printer kube-apiserver has for `group`/`plural`, if any (others get the default
/// Name and Created At columns).
pub(super) fn printer(group: &str, plural: &str) -> Option<Printer> {
    core_kinds::printer(group, plural)
        .or_else(|| workloads::printer(group, plural))
        .or_else(|| cluster::printer(group, plural))
}

/// The `Created At` cell of kube-apiserver's default table convertor (RFC 3339, UTC).
pub(super) fn created_at(o: &Value) -> Value {
    match time(o, "/metadata/creationTimestamp") {
        Some(t) => json!(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
        None => json!("0001-01-01T00:00:00Z"),
    }
}

/// ObjectMeta's description of `field`.
pub(super) fn meta(field: &str) -> &'static str {
    field_description("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", field)
}

/// The description of `field` in `io.k8s.api.<definition>`.
fn doc(definition: &str, field: &str) -> &'static str {
    field_description(&format!("io.k8s.api.{definition}"), field)
}

fn name() -> Column {
    Column {
        name: "Name",
        kind: "string",
        format: "name",
        description: meta("name").into(),
        priority: 0,
    }
}

fn age() -> Column {
    col("Age", "string", meta("creationTimestamp"))
}

fn col(
    name: &'static str,
    kind: &'static str,
    description: impl Into<Cow<'static, str>>,
) -> Column {
    Column {
        name,
        kind,
        format: "",
        description: description.into(),
        priority: 0,
    }
}

fn wide(
    name: &'static str,
    kind: &'static str,
    description: impl Into<Cow<'static, str>>,
) -> Column {
    Column {
        priority: 1,
        ..col(name, kind, description)
    }
}

/// `columns`, then the wide Containers and Images (and Selector when described).
fn workload(mut columns: Vec<Column>, selector: Option<&'static str>) -> Vec<Column> {
    columns.push(wide(
        "Containers",
        "string",
        "Names of each container in the template.",
    ));
    columns.push(wide(
        "Images",
        "string",
        "Images referenced by each container in the template.",
    ));
    if let Some(description) = selector {
        columns.push(wide("Selector", "string", description));
    }
    columns
}

fn template_cells(c: &mut Vec<Value>, o: &Value, spec: &str) {
    let (names, images) = o.pointer(spec).map(containers).unwrap_or_default();
    c.push(s(&names));
    c.push(s(&images));
}

fn cells(cells: Vec<Value>) -> Row {
    Row {
        cells,
        conditions: None,
    }
}

fn n(o: &Value) -> Value {
    o.pointer("/metadata/name").cloned().unwrap_or(Value::Null)
}

fn s(v: &str) -> Value {
    json!(v)
}

fn a(o: &Value, now: jiff::Timestamp) -> Value {
    json!(since(o, "/metadata/creationTimestamp", now))
}

fn keys(o: &Value, at: &str) -> usize {
    o.pointer(at)
        .and_then(Value::as_object)
        .map_or(0, |m| m.len())
}

fn replicas(o: &Value) -> i64 {
    int(o, "/spec/replicas")
}

/// The integer at `at` (0 when absent), as a cell.
fn num(o: &Value, at: &str) -> Value {
    json!(int(o, at))
}

/// An integer column described by `field` of `io.k8s.api.<definition>`.
fn int_col(name: &'static str, definition: &str, field: &str) -> Column {
    col(name, "integer", doc(definition, field))
}

/// The columns of a controller keeping `spec.replicas` copies of a Pod template, described by
/// `io.k8s.api.<api>Spec` and `<api>Status` (`apps.v1.ReplicaSet`,
/// `core.v1.ReplicationController`).
fn replica_columns(api: &str) -> Vec<Column> {
    let (spec, status) = (format!("{api}Spec"), format!("{api}Status"));
    workload(
        vec![
            name(),
            int_col("Desired", &spec, "replicas"),
            int_col("Current", &status, "replicas"),
            int_col("Ready", &status, "readyReplicas"),
            age(),
        ],
        Some(doc(&spec, "selector")),
    )
}

/// The row of such a controller, its `spec.selector` printed by `selector`.
fn replica_row(o: &Value, now: jiff::Timestamp, selector: fn(Option<&Value>) -> String) -> Row {
    let mut c = vec![
        n(o),
        json!(replicas(o)),
        num(o, "/status/replicas"),
        num(o, "/status/readyReplicas"),
        a(o, now),
    ];
    template_cells(&mut c, o, "/spec/template/spec");
    c.push(s(&selector(o.pointer("/spec/selector"))));
    cells(c)
}

#[cfg(test)]
mod tests;
