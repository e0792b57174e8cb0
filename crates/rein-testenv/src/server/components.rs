//! The virtual, read-only `v1/componentstatuses`: worked out on each request and never
//! stored, as kube-apiserver's `componentstatus` REST does (get and list only; every entry is
//! a healthy control-plane component, since rein-testenv is all of them).

use http::{HeaderMap, HeaderValue, Method, Response, header};
use serde_json::{Value, json};

use super::body::{self, Body};
use super::query::Query;
use super::route::ResourcePath;
use crate::resources::ResourceDef;
use crate::selectors::{FieldLabels, FieldSelector, LabelSelector};
use crate::status::ApiError;

/// The components kube-apiserver 1.33 reports, sorted by name as it sorts them.
const COMPONENTS: [&str; 3] = ["controller-manager", "etcd-0", "scheduler"];

/// kube-apiserver's deprecation warning for every request on the resource.
const DEPRECATED: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// Whether `def` is `componentstatuses`, which this module answers.
pub(super) fn applies(def: &ResourceDef) -> bool {
    def.group.is_empty() && def.plural == "componentstatuses"
}

/// Answers any request on `componentstatuses`: get and list (JSON or a Table); any other verb
/// (watch included) is 405, as the REST storage implements only `Getter` and `Lister`.
pub(super) fn serve(
    method: &Method,
    path: &ResourcePath,
    q: &Query,
    headers: &HeaderMap,
) -> Response<Body> {
    let mut resp = match answer(method, path, q, super::table::wanted(headers)) {
        Ok(value) => body::json(200, &value),
        Err(e) => body::error(&e),
    };
    if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{DEPRECATED}\"")) {
        resp.headers_mut().append(header::WARNING, v);
    }
    resp
}

fn answer(method: &Method, path: &ResourcePath, q: &Query, table: bool) -> Result<Value, ApiError> {
    if *method != Method::GET || q.watch || path.watch_prefix || path.subresource.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    if let Some(name) = path.name.as_deref() {
        if !COMPONENTS.contains(&name) {
            return Err(ApiError::not_found(&path.def, name));
        }
        let obj = component(name);
        return Ok(if table { self::table(&[obj]) } else { obj });
    }
    let labels = LabelSelector::parse(q.label_selector.as_deref().unwrap_or(""))?;
    let fields = FieldSelector::parse(
        q.field_selector.as_deref().unwrap_or(""),
        &FieldLabels::builtin(&path.def.group, &path.def.plural),
    )?;
    let items: Vec<Value> = COMPONENTS
        .iter()
        .map(|name| component(name))
        .filter(|c| labels.matches(c) && fields.matches(c))
        .collect();
    if table {
        return Ok(self::table(&items));
    }
    let items: Vec<Value> = items.into_iter().map(without_type).collect();
    Ok(json!({
        "kind": "ComponentStatusList",
        "apiVersion": "v1",
        "metadata": {},
        "items": items,
    }))
}

/// One healthy component, as kube-apiserver serialises it (`creationTimestamp: null`: the
/// object is built, never stored).
fn component(name: &str) -> Value {
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": null},
        "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
    })
}

/// A list item: kube-apiserver leaves built-in kinds' items without `kind` and `apiVersion`.
fn without_type(mut obj: Value) -> Value {
    if let Some(map) = obj.as_object_mut() {
        map.remove("kind");
        map.remove("apiVersion");
    }
    obj
}

/// kube's printer for ComponentStatus: Name, Status (`Healthy`/`Unhealthy`), Message, Error.
fn table(items: &[Value]) -> Value {
    let column = |name: &str, format: &str, description: &str| json!({"name": name, "type": "string", "format": format, "description": description, "priority": 0});
    let rows: Vec<Value> = items
        .iter()
        .map(|c| {
            let condition = c.pointer("/conditions/0");
            let text = |field: &str| {
                condition
                    .and_then(|k| k.get(field))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let status = if text("status") == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            };
            json!({
                "cells": [c["metadata"]["name"], status, text("message"), text("error")],
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": c["metadata"],
                },
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [
            column("Name", "name", "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"),
            column("Status", "", "Status of the component conditions"),
            column("Message", "", "Message of the component conditions"),
            column("Error", "", "Error of the component conditions"),
        ],
        "rows": rows,
    })
}
