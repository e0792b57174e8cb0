//! Per-call options: `ListOptions` (namespace, selectors, paging) and re-exported kube-core
//! parameters for writes.

use std::collections::BTreeMap;

pub use kube_client::core::params::{
    DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
    ValidationDirective, VersionMatch,
};
use rein_scheme::{fields, labels};

/// Options for `list` and `delete_all_of` (controller-runtime's `ListOptions`).
///
/// ```
/// use rein_client::ListOptions;
///
/// let opts = ListOptions::default()
///     .namespace("default")
///     .matching_labels([("app", "web")])
///     .matching_fields([("spec.nodeName", "node-1")])
///     .limit(10);
/// assert_eq!(opts.label_selector.to_string(), "app=web");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Only this namespace (`None`: all namespaces).
    pub namespace: Option<String>,
    /// Only objects whose labels match.
    pub label_selector: labels::Selector,
    /// Only objects whose fields match (the cache answers exact matches from field indexes).
    pub field_selector: fields::Selector,
    /// At most this many items (server-side paging; the cache truncates).
    pub limit: Option<u32>,
    /// Continue a paged list (server only).
    pub continue_token: Option<String>,
    /// `resourceVersion` for the list (server only).
    pub resource_version: Option<String>,
    /// How `resource_version` applies (`resourceVersionMatch`, server only): `Exact` lists
    /// the collection as it was at that version, `NotOlderThan` at that version or newer.
    pub resource_version_match: Option<VersionMatch>,
}

impl ListOptions {
    /// Restricts to one namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Sets the label selector.
    pub fn labels(mut self, selector: labels::Selector) -> Self {
        self.label_selector = selector;
        self
    }

    /// Requires each `key=value` label; pairs that are not valid labels match nothing.
    pub fn matching_labels<K: Into<String>, V: Into<String>>(
        mut self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let map: BTreeMap<String, String> = pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self.label_selector = match labels::Selector::from_map(&map) {
            Ok(sel) => merge_labels(self.label_selector, sel),
            Err(_) => labels::Selector::nothing(),
        };
        self
    }

    /// Sets the field selector.
    pub fn fields(mut self, selector: fields::Selector) -> Self {
        self.field_selector = selector;
        self
    }

    /// Requires each `field=value` (`MatchingFields`).
    pub fn matching_fields<K: Into<String>, V: Into<String>>(
        mut self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        for (k, v) in pairs {
            self.field_selector = self.field_selector.and(k, fields::Operator::Equals, v);
        }
        self
    }

    /// Limits the number of items.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Lists as of `resource_version` with `resourceVersionMatch` (server only; kube-apiserver
    /// refuses `Exact` with `"0"`).
    pub fn resource_version(
        mut self,
        resource_version: impl Into<String>,
        version_match: VersionMatch,
    ) -> Self {
        self.resource_version = Some(resource_version.into());
        self.resource_version_match = Some(version_match);
        self
    }

    /// Continues a paged list.
    pub fn continue_token(mut self, token: impl Into<String>) -> Self {
        self.continue_token = Some(token.into());
        self
    }

    pub(crate) fn to_list_params(&self) -> kube_client::core::params::ListParams {
        let mut lp = kube_client::core::params::ListParams::default();
        // A "nothing" selector never reaches here: the client answers it with an empty list.
        if !self.label_selector.is_everything() {
            lp.label_selector = Some(self.label_selector.to_string());
        }
        if !self.field_selector.is_everything() {
            lp.field_selector = Some(self.field_selector.to_string());
        }
        lp.limit = self.limit;
        lp.continue_token = self.continue_token.clone();
        lp.resource_version = self.resource_version.clone();
        lp.version_match = self.resource_version_match.clone();
        lp
    }
}

fn merge_labels(a: labels::Selector, b: labels::Selector) -> labels::Selector {
    if a.is_nothing() || b.is_nothing() {
        return labels::Selector::nothing();
    }
    let mut reqs = a.requirements().to_vec();
    reqs.extend(b.requirements().iter().cloned());
    labels::Selector::from_requirements(reqs)
}
