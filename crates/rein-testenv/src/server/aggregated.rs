//! Aggregated discovery (`apidiscovery.k8s.io/v2`): `/api` and `/apis` answer one
//! `APIGroupDiscoveryList` with every group, version and resource when the client asks for it
//! in `Accept`, as kube-apiserver's `WrapAggregatedDiscoveryToHandler` does.
//!
//! Each version's resources are the legacy `APIResourceList` converted as kube-apiserver's
//! `ConvertGroupVersionIntoToDiscovery` converts it, so both forms always agree.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty};
use serde_json::{Map, Value, json};

use super::accept;
use super::body::{self, Body};
use super::discovery::{self, StorageVersions};
use crate::resources::Catalogue;

/// The media type of the aggregated document, echoed in `Content-Type`.
const MEDIA_TYPE: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Which form of `/api` or `/apis` a request negotiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `APIVersions` / `APIGroupList`.
    Legacy,
    /// `APIGroupDiscoveryList` (v2).
    Aggregated,
}

/// Picks the form from an `Accept` header: the first acceptable clause by quality wins. A
/// clause naming `g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList` selects the aggregated
/// form; `v2beta1` is no longer served (Kubernetes 1.33 turns `AggregatedDiscoveryRemoveBetaType`
/// on), so such a clause is skipped like any other this server cannot produce (protobuf, CBOR).
pub(crate) fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Legacy;
    };
    for clause in accept::clauses(accept) {
        if !matches!(
            accept::essence(clause).as_str(),
            "application/json" | "application/*" | "*/*"
        ) {
            continue;
        }
        let param = |name| accept::param(clause, name);
        match (param("g"), param("v"), param("as")) {
            (None, None, None) => return Format::Legacy,
            (Some("apidiscovery.k8s.io"), Some("v2"), Some("APIGroupDiscoveryList")) => {
                return Format::Aggregated;
            }
            _ => continue,
        }
    }
    Format::Legacy
}

/// `/api` in the aggregated form: the core group, unnamed.
pub(crate) fn core(catalogue: &Catalogue, storage: &StorageVersions) -> Value {
    let versions: Vec<Value> = discovery::resource_list(catalogue, storage, "", "v1")
        .map(|list| version_entry(&list, "", "v1"))
        .into_iter()
        .collect();
    list(vec![
        json!({"metadata": {"creationTimestamp": null}, "versions": versions}),
    ])
}

/// `/apis` in the aggregated form: every named group, versions preferred first.
pub(crate) fn groups(catalogue: &Catalogue, storage: &StorageVersions) -> Value {
    let items = discovery::group_versions(catalogue)
        .into_iter()
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .filter_map(|version| {
                    let list = discovery::resource_list(catalogue, storage, &group, version)?;
                    Some(version_entry(&list, &group, version))
                })
                .collect();
            json!({
                "metadata": {"name": group, "creationTimestamp": null},
                "versions": versions,
            })
        })
        .collect();
    list(items)
}

fn list(items: Vec<Value>) -> Value {
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

/// One `APIVersionDiscovery` from a legacy `APIResourceList`: top-level resources first, then
/// each subresource attached to its parent (a parent-less one gets an empty parent).
fn version_entry(list: &Value, group: &str, version: &str) -> Value {
    let legacy = list["resources"].as_array().map_or(&[][..], Vec::as_slice);
    let mut resources: Vec<Map<String, Value>> = Vec::new();
    let scope = |r: &Value| {
        if r["namespaced"].as_bool() == Some(true) {
            "Namespaced"
        } else {
            "Cluster"
        }
    };
    let response_kind = |r: &Value| {
        json!({
            "group": r.get("group").and_then(Value::as_str).unwrap_or(group),
            "version": r.get("version").and_then(Value::as_str).unwrap_or(version),
            "kind": r["kind"],
        })
    };
    for r in legacy {
        let Some(name) = r["name"].as_str().filter(|n| !n.contains('/')) else {
            continue;
        };
        let mut entry = Map::new();
        entry.insert("resource".into(), json!(name));
        entry.insert("responseKind".into(), response_kind(r));
        entry.insert("scope".into(), json!(scope(r)));
        entry.insert("singularResource".into(), r["singularName"].clone());
        entry.insert("verbs".into(), r["verbs"].clone());
        for field in ["shortNames", "categories"] {
            if let Some(value) = r.get(field) {
                entry.insert(field.into(), value.clone());
            }
        }
        resources.push(entry);
    }
    for r in legacy {
        let Some((parent, sub)) = r["name"].as_str().and_then(|n| n.split_once('/')) else {
            continue;
        };
        let index = match resources.iter().position(|e| e["resource"] == parent) {
            Some(index) => index,
            None => {
                let mut entry = Map::new();
                entry.insert("resource".into(), json!(parent));
                entry.insert("responseKind".into(), json!({}));
                entry.insert("scope".into(), json!(scope(r)));
                resources.push(entry);
                resources.len() - 1
            }
        };
        let subresource = json!({
            "subresource": sub,
            "responseKind": response_kind(r),
            "verbs": r["verbs"],
        });
        let entry = &mut resources[index];
        match entry.get_mut("subresources") {
            Some(Value::Array(subs)) => subs.push(subresource),
            _ => {
                entry.insert("subresources".into(), json!([subresource]));
            }
        }
    }
    json!({
        "version": version,
        "resources": resources,
        "freshness": "Current",
    })
}

/// The response: the document with kube-apiserver's caching headers (`ETag` = upper-case hex
/// SHA-512 of the document, `Vary: Accept`, `Cache-Control: public`), or 304 Not Modified when
/// `If-None-Match` names the current `ETag`.
pub(crate) fn respond(document: &Value, if_none_match: Option<&str>) -> Response<Body> {
    let bytes = serde_json::to_vec(document).unwrap_or_default();
    let digest = ring::digest::digest(&ring::digest::SHA512, &bytes);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
    let etag = format!("\"{hex}\"");
    let mut resp = if if_none_match == Some(etag.as_str()) {
        let mut resp = Response::new(Empty::<Bytes>::new().map_err(|e| match e {}).boxed());
        *resp.status_mut() = StatusCode::NOT_MODIFIED;
        resp
    } else {
        let mut resp = body::json_bytes(200, bytes);
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
        resp
    };
    let headers = resp.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    headers.insert(header::VARY, HeaderValue::from_static("Accept"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_follows_the_accept_clauses() {
        let kube_rs = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
                       application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,\
                       application/json";
        assert_eq!(negotiate(Some(kube_rs)), Format::Aggregated);
        let kubectl = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
                       application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
                       application/json;q=0.9";
        assert_eq!(negotiate(Some(kubectl)), Format::Aggregated);
        let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(negotiate(Some(beta)), Format::Legacy);
        assert_eq!(negotiate(Some("application/json")), Format::Legacy);
        assert_eq!(negotiate(None), Format::Legacy);
        let preferred_legacy = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5,application/json";
        assert_eq!(negotiate(Some(preferred_legacy)), Format::Legacy);
        assert_eq!(negotiate(Some("garbage;;;q=x,,")), Format::Legacy);
    }
}
