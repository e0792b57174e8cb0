//! Query parameters of resource requests.

use crate::status::ApiError;

/// The query parameters kube-apiserver understands on resource paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query {
    pub(crate) label_selector: Option<String>,
    pub(crate) field_selector: Option<String>,
    pub(crate) limit: Option<usize>,
    pub(crate) continue_token: Option<String>,
    pub(crate) resource_version: Option<String>,
    pub(crate) resource_version_match: Option<String>,
    pub(crate) watch: bool,
    pub(crate) allow_bookmarks: bool,
    pub(crate) timeout_seconds: Option<u64>,
    /// `sendInitialEvents`, when given (apimachinery validates its presence).
    pub(crate) send_initial_events: Option<bool>,
    /// Whether `dryRun=All` was given.
    pub(crate) dry_run: bool,
    /// Every `dryRun` value, for validation.
    pub(crate) dry_run_values: Vec<String>,
    pub(crate) field_manager: Option<String>,
    /// `force`, when given (only apply patches may give it).
    pub(crate) force: Option<bool>,
    pub(crate) field_validation: Option<String>,
    pub(crate) propagation_policy: Option<String>,
    pub(crate) grace_period_seconds: Option<i64>,
    pub(crate) orphan_dependents: Option<bool>,
    /// `includeObject` of a Table request (`None`, `Metadata`, `Object`).
    pub(crate) include_object: Option<String>,
}

impl Query {
    /// Parses a raw query string.
    pub(crate) fn parse(raw: Option<&str>) -> Result<Query, ApiError> {
        let mut q = Query::default();
        let Some(raw) = raw else { return Ok(q) };
        for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
            let v = v.into_owned();
            match k.as_ref() {
                "labelSelector" => q.label_selector = Some(v),
                "fieldSelector" => q.field_selector = Some(v),
                "limit" => {
                    let n: i64 = v.parse().map_err(|_| bad("limit", &v))?;
                    q.limit = (n > 0).then_some(n as usize);
                }
                "continue" => q.continue_token = Some(v).filter(|s| !s.is_empty()),
                "resourceVersion" => q.resource_version = Some(v).filter(|s| !s.is_empty()),
                "resourceVersionMatch" => {
                    q.resource_version_match = Some(v).filter(|s| !s.is_empty())
                }
                "watch" => q.watch = truthy(&v),
                "includeObject" => q.include_object = Some(v),
                "allowWatchBookmarks" => q.allow_bookmarks = truthy(&v),
                "timeoutSeconds" => {
                    q.timeout_seconds = Some(v.parse().map_err(|_| bad("timeoutSeconds", &v))?)
                }
                "sendInitialEvents" => q.send_initial_events = Some(truthy(&v)),
                "dryRun" => {
                    q.dry_run |= v == "All";
                    q.dry_run_values.push(v);
                }
                "fieldManager" => q.field_manager = Some(v),
                "force" => q.force = Some(truthy(&v)),
                "fieldValidation" => q.field_validation = Some(v),
                "propagationPolicy" => q.propagation_policy = Some(v),
                "gracePeriodSeconds" => {
                    q.grace_period_seconds =
                        Some(v.parse().map_err(|_| bad("gracePeriodSeconds", &v))?)
                }
                "orphanDependents" => q.orphan_dependents = Some(truthy(&v)),
                _ => {}
            }
        }
        Ok(q)
    }
}

fn truthy(v: &str) -> bool {
    matches!(v, "true" | "1" | "True")
}

fn bad(param: &str, v: &str) -> ApiError {
    ApiError::bad_request(format!("invalid value for {param}: {v:?}"))
}
