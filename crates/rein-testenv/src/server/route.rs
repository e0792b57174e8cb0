//! Request paths parsed into routes: discovery, OpenAPI, health, and resource paths.

use std::sync::Arc;

use percent_encoding::percent_decode_str;

use crate::resources::{Catalogue, ResourceDef};

/// What a path addresses.
#[derive(Debug)]
pub(crate) enum Route {
    /// `/` (and `/index.html`): the listed paths.
    Root,
    /// `/version`.
    Version,
    /// `/healthz`, `/readyz`, `/livez` (and their sub-checks).
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1`, `/apis/{group}/{version}`.
    ResourceList {
        /// API group.
        group: String,
        /// API version.
        version: String,
    },
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`.
    OpenApiV3,
    /// `/openapi/v3/api/v1`, `/openapi/v3/apis/{group}/{version}`.
    OpenApiV3Gv {
        /// API group.
        group: String,
        /// API version.
        version: String,
    },
    /// A resource path.
    Resource(ResourcePath),
}

/// A path under a served resource.
#[derive(Debug)]
pub(crate) struct ResourcePath {
    /// The resource.
    pub(crate) def: Arc<ResourceDef>,
    /// The API version in the path.
    pub(crate) version: String,
    /// `namespaces/{ns}` in the path.
    pub(crate) namespace: Option<String>,
    /// The object name.
    pub(crate) name: Option<String>,
    /// The subresource (`status`, `scale`, ...).
    pub(crate) subresource: Option<String>,
    /// Whether the legacy `/watch/` prefix was used.
    pub(crate) watch_prefix: bool,
}

/// Parses `path`; `None` means nothing is served there.
pub(crate) fn parse(path: &str, catalogue: &Catalogue) -> Option<Route> {
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    match s.as_slice() {
        [] | ["index.html"] => Some(Route::Root),
        ["version"] => Some(Route::Version),
        ["healthz" | "readyz" | "livez", ..] => Some(Route::Health),
        ["api"] => Some(Route::CoreVersions),
        ["apis"] => Some(Route::Groups),
        ["apis", group] => Some(Route::Group(group.to_string())),
        ["openapi", "v2"] => Some(Route::OpenApiV2),
        ["openapi", "v3"] => Some(Route::OpenApiV3),
        ["openapi", "v3", "api", version] => Some(Route::OpenApiV3Gv {
            group: String::new(),
            version: version.to_string(),
        }),
        ["openapi", "v3", "apis", group, version] => Some(Route::OpenApiV3Gv {
            group: group.to_string(),
            version: version.to_string(),
        }),
        ["api", version, rest @ ..] => resource_route("", version, rest, catalogue),
        ["apis", group, version, rest @ ..] => resource_route(group, version, rest, catalogue),
        _ => None,
    }
}

fn resource_route(
    group: &str,
    version: &str,
    rest: &[&str],
    catalogue: &Catalogue,
) -> Option<Route> {
    if rest.is_empty() {
        return Some(Route::ResourceList {
            group: group.to_string(),
            version: version.to_string(),
        });
    }
    let (watch_prefix, rest) = match rest {
        ["watch", tail @ ..] => (true, tail),
        _ => (false, rest),
    };
    if let ["namespaces", ns, plural, tail @ ..] = rest
        && let Some(def) = catalogue.lookup(group, version, plural)
        && def.namespaced
        && tail.len() <= 2
    {
        return Some(Route::Resource(ResourcePath {
            def,
            version: version.to_string(),
            namespace: Some(ns.to_string()),
            name: tail.first().map(|s| s.to_string()),
            subresource: tail.get(1).map(|s| s.to_string()),
            watch_prefix,
        }));
    }
    let [plural, tail @ ..] = rest else {
        return None;
    };
    if tail.len() > 2 {
        return None;
    }
    let def = catalogue.lookup(group, version, plural)?;
    if def.namespaced && !tail.is_empty() {
        return None;
    }
    Some(Route::Resource(ResourcePath {
        def,
        version: version.to_string(),
        namespace: None,
        name: tail.first().map(|s| s.to_string()),
        subresource: tail.get(1).map(|s| s.to_string()),
        watch_prefix,
    }))
}
