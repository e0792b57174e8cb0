//! `/healthz`, `/livez` and `/readyz`: `ok`, or with `?verbose` the per-check list kube-apiserver
//! prints (`[+]ping ok` … `livez check passed`); `/livez/<check>` answers one check.

use http::Response;

use super::body::{self, Body};
use crate::status::ApiError;

/// The checks every endpoint runs, in kube-apiserver's order (a subset of its post-start hooks:
/// the ones that have a counterpart here).
const LIVE: &[&str] = &[
    "ping",
    "log",
    "etcd",
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
];

/// The checks only `/readyz` adds (`shutdown` comes last).
const READY_ONLY: &[&str] = &["etcd-readiness", "informer-sync"];

/// Every health path kube-apiserver lists at `/`: each endpoint and each of its checks.
pub(crate) fn paths() -> Vec<String> {
    let mut paths = Vec::new();
    for endpoint in ["healthz", "livez", "readyz"] {
        paths.push(format!("/{endpoint}"));
        let extra: &[&str] = if endpoint == "readyz" {
            &["etcd-readiness", "informer-sync", "shutdown"]
        } else {
            &[]
        };
        for check in LIVE.iter().chain(extra) {
            paths.push(format!("/{endpoint}/{check}"));
        }
    }
    paths
}

/// Answers a health path with its query.
pub(crate) fn answer(path: &str, query: Option<&str>) -> Response<Body> {
    let mut segments = path.trim_matches('/').splitn(2, '/');
    let endpoint = segments.next().unwrap_or_default();
    let checks: Vec<&str> = match endpoint {
        "readyz" => LIVE
            .iter()
            .chain(READY_ONLY)
            .chain(&["shutdown"])
            .copied()
            .collect(),
        _ => LIVE.to_vec(),
    };
    if let Some(check) = segments.next().filter(|c| !c.is_empty()) {
        return if checks.contains(&check) {
            body::text(200, "ok")
        } else {
            body::error(&ApiError::no_route())
        };
    }
    let mut verbose = false;
    let mut excluded: Vec<String> = Vec::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match key.as_ref() {
            "verbose" => verbose = true,
            "exclude" => excluded.push(value.into_owned()),
            _ => {}
        }
    }
    if !verbose {
        return body::text(200, "ok");
    }
    let mut report = String::new();
    for check in checks {
        if excluded.iter().any(|e| e == check) {
            report.push_str(&format!("[+]{check} excluded: ok\n"));
        } else {
            report.push_str(&format!("[+]{check} ok\n"));
        }
    }
    report.push_str(&format!("{endpoint} check passed\n"));
    body::text_owned(200, report)
}
