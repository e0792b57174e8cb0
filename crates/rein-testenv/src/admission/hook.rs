//! One webhook of a stored Mutating/ValidatingWebhookConfiguration, read from its JSON with
//! the v1 API's defaults (`failurePolicy: Fail`, `matchPolicy: Equivalent`,
//! `timeoutSeconds: 10`, `reinvocationPolicy: Never`, selectors that select everything).

use serde_json::Value;

/// Where a webhook is reached.
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`.
    Service {
        /// The service's namespace.
        namespace: String,
        /// The service's name.
        name: String,
        /// `path`, `/` when absent.
        path: String,
        /// `port`, 443 when absent.
        port: u16,
    },
}

/// A webhook as the admission plugins use it.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    /// `name`, which every error message names.
    pub(super) name: String,
    /// `rules`.
    pub(super) rules: Vec<Value>,
    /// `namespaceSelector`.
    pub(super) namespace_selector: Option<Value>,
    /// `objectSelector`.
    pub(super) object_selector: Option<Value>,
    /// `matchPolicy: Exact` (otherwise Equivalent).
    pub(super) exact: bool,
    /// `failurePolicy: Ignore` (otherwise Fail).
    pub(super) fail_open: bool,
    /// `timeoutSeconds`.
    pub(super) timeout_seconds: u64,
    /// `sideEffects`, as given.
    pub(super) side_effects: Option<String>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks only).
    pub(super) reinvoke: bool,
    /// `admissionReviewVersions`.
    pub(super) review_versions: Vec<String>,
    /// `matchConditions`: (name, CEL expression).
    pub(super) match_conditions: Vec<(String, String)>,
    /// `clientConfig`, when it names an endpoint.
    pub(super) endpoint: Option<Endpoint>,
    /// `clientConfig.caBundle`, base64 of PEM certificates.
    pub(super) ca_bundle: Option<String>,
    /// Whether the URL carries `?timeout=<n>s` (admission webhooks; conversion webhooks are
    /// called without it).
    pub(super) timeout_query: bool,
}

impl Hook {
    /// Whether the webhook may be called on a dry-run request.
    pub(super) fn dry_run_safe(&self) -> bool {
        matches!(self.side_effects.as_deref(), Some("None" | "NoneOnDryRun"))
    }
}

/// The webhooks of `configurations`, ordered by configuration name and then by position, as
/// kube-apiserver's webhook sources sort them.
pub(super) fn hooks_of(mut configurations: Vec<std::sync::Arc<Value>>) -> Vec<Hook> {
    let name_of = |c: &Value| {
        c.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    configurations.sort_by_key(|c| name_of(c));
    let mut out = Vec::new();
    for config in &configurations {
        let webhooks = config
            .get("webhooks")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        out.extend(webhooks.iter().map(parse));
    }
    out
}

impl Hook {
    /// A hook that is only called, not matched: a CRD's conversion webhook, named `name`,
    /// reached through `client` (a `clientConfig`), given `timeout_seconds` to answer.
    pub(crate) fn endpoint_only(name: &str, client: Option<&Value>, timeout_seconds: u64) -> Hook {
        Hook {
            name: name.to_string(),
            rules: Vec::new(),
            namespace_selector: None,
            object_selector: None,
            exact: false,
            fail_open: false,
            timeout_seconds,
            side_effects: None,
            reinvoke: false,
            review_versions: Vec::new(),
            match_conditions: Vec::new(),
            endpoint: endpoint(client),
            ca_bundle: ca_bundle(client),
            timeout_query: false,
        }
    }
}

/// `clientConfig.url` or `clientConfig.service`.
fn endpoint(client: Option<&Value>) -> Option<Endpoint> {
    client.and_then(|c| {
        if let Some(url) = c.get("url").and_then(Value::as_str) {
            return Some(Endpoint::Url(url.to_string()));
        }
        let s = c.get("service")?;
        let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or_default();
        Some(Endpoint::Service {
            namespace: field("namespace").to_string(),
            name: field("name").to_string(),
            path: s
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("/")
                .to_string(),
            port: s
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        })
    })
}

/// `clientConfig.caBundle`; whitespace only counts as none, as kube-apiserver treats it.
fn ca_bundle(client: Option<&Value>) -> Option<String> {
    client
        .and_then(|c| c.get("caBundle"))
        .and_then(Value::as_str)
        .filter(|b| !b.trim().is_empty())
        .map(str::to_string)
}

fn parse(w: &Value) -> Hook {
    let text = |key: &str| w.get(key).and_then(Value::as_str).map(str::to_string);
    let client = w.get("clientConfig");
    let endpoint = endpoint(client);
    Hook {
        name: text("name").unwrap_or_default(),
        rules: w
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        namespace_selector: w.get("namespaceSelector").cloned(),
        object_selector: w.get("objectSelector").cloned(),
        exact: text("matchPolicy").as_deref() == Some("Exact"),
        fail_open: text("failurePolicy").as_deref() == Some("Ignore"),
        timeout_seconds: w
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(10),
        side_effects: text("sideEffects"),
        reinvoke: text("reinvocationPolicy").as_deref() == Some("IfNeeded"),
        review_versions: w
            .get("admissionReviewVersions")
            .and_then(Value::as_array)
            .map(|v| {
                v.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        match_conditions: w
            .get("matchConditions")
            .and_then(Value::as_array)
            .map(|conditions| {
                conditions
                    .iter()
                    .map(|c| {
                        let field = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
                        (field("name").to_string(), field("expression").to_string())
                    })
                    .collect()
            })
            .unwrap_or_default(),
        endpoint,
        ca_bundle: ca_bundle(client),
        timeout_query: true,
    }
}
