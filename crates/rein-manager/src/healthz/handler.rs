//! Answers `/healthz`, `/readyz` and their per-check sub-paths, with `?verbose` and
//! `?exclude=` as Kubernetes components do.

use std::collections::BTreeSet;
use std::sync::Arc;

use hyper::{Response, StatusCode};
use rein_serve::{Body, text};

use super::checker::Checker;

/// The named checks of one endpoint, in name order.
pub(crate) type NamedChecks = Vec<(String, Arc<dyn Checker>)>;

/// The outcome of one check in an aggregated answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CheckStatus {
    /// The check passed.
    Ok(String),
    /// The check failed (the reason is withheld from the aggregated answer and logged).
    Failed(String),
    /// The check was skipped through `?exclude=`.
    Excluded(String),
}

/// The query parameters the probe endpoints understand.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ProbeQuery {
    /// `?verbose` was given.
    pub(crate) verbose: bool,
    /// Every `?exclude=name`.
    pub(crate) exclude: BTreeSet<String>,
}

impl ProbeQuery {
    /// Parses a raw query string such as `verbose&exclude=ping`.
    pub(crate) fn parse(query: Option<&str>) -> Self {
        let mut out = ProbeQuery::default();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "verbose" => out.verbose = true,
                "exclude" if !value.is_empty() => {
                    out.exclude.insert(value.to_owned());
                }
                _ => {}
            }
        }
        out
    }
}

/// Runs every check (skipping excluded ones) and renders the aggregated answer.
pub(crate) async fn aggregated(checks: NamedChecks, query: &ProbeQuery) -> Response<Body> {
    let mut unknown_excludes = query.exclude.clone();
    let mut statuses = Vec::with_capacity(checks.len().max(1));
    if checks.is_empty() {
        statuses.push(CheckStatus::Ok("ping".to_owned()));
    }
    for (name, checker) in checks {
        if unknown_excludes.remove(&name) {
            statuses.push(CheckStatus::Excluded(name));
            continue;
        }
        match checker.check().await {
            Ok(()) => statuses.push(CheckStatus::Ok(name)),
            Err(err) => {
                tracing::info!(checker = %name, error = %err, "health check failed");
                statuses.push(CheckStatus::Failed(name));
            }
        }
    }
    let (status, body) = render(&statuses, &unknown_excludes, query.verbose);
    text(status, body)
}

/// Runs the single check `name`: `200 ok`, `500 internal server error: <reason>`, or `404`.
pub(crate) async fn single(checks: NamedChecks, name: &str) -> Response<Body> {
    let Some((_, checker)) = checks.into_iter().find(|(n, _)| n == name) else {
        return text(StatusCode::NOT_FOUND, format!("no check named {name:?}\n"));
    };
    match checker.check().await {
        Ok(()) => text(StatusCode::OK, "ok"),
        Err(err) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal server error: {err}\n"),
        ),
    }
}

/// Renders an aggregated answer exactly like controller-runtime's `writeStatusesAsText`:
/// always verbose on failure, plain `ok` on success unless `verbose`.
pub(crate) fn render(
    statuses: &[CheckStatus],
    unknown_excludes: &BTreeSet<String>,
    verbose: bool,
) -> (StatusCode, String) {
    let failed = statuses.iter().any(|s| matches!(s, CheckStatus::Failed(_)));
    let status = if failed {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    };
    if !failed && !verbose {
        return (status, "ok".to_owned());
    }
    let mut body = String::new();
    for s in statuses {
        match s {
            CheckStatus::Ok(name) => body.push_str(&format!("[+]{name} ok\n")),
            CheckStatus::Excluded(name) => body.push_str(&format!("[+]{name} excluded: ok\n")),
            CheckStatus::Failed(name) => {
                body.push_str(&format!("[-]{name} failed: reason withheld\n"));
            }
        }
    }
    if !unknown_excludes.is_empty() {
        let quoted: Vec<String> = unknown_excludes.iter().map(|n| format!("{n:?}")).collect();
        body.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            quoted.join(",")
        ));
    }
    if failed {
        body.push_str("healthz check failed\n");
    } else {
        body.push_str("healthz check passed\n");
    }
    (status, body)
}
