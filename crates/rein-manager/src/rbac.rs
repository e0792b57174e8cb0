//! The API permissions a manager needs, derived from what its setup declares
//! ([`Manager::permissions`](crate::Manager::permissions)) instead of written by hand
//! (controller-runtime users write `+kubebuilder:rbac` markers, which nothing checks against
//! the code).
//!
//! What each declaration needs:
//!
//! | declared | rules |
//! |---|---|
//! | `for_::<K>()` (reconciles) | `K`: get, list, watch, update, patch; `K/status`: get, update, patch; `K/finalizers`: update |
//! | `owns::<K>()` | `K`: get, list, watch, create, update, patch, delete |
//! | `watches::<K>(..)` | `K`: get, list, watch |
//! | `mgr.event_recorder(..)` | `events` (core and `events.k8s.io`): create, patch |
//! | `Options::leader_election` | in its namespace: `leases`: get, create, update; `events`: create, patch |
//! | `Options::sharding` | in its namespace: `leases`: get, list, watch, create, update, patch, delete |
//! | secure metrics serving | `tokenreviews` and `subjectaccessreviews`: create |
//!
//! What a reconciler reads or writes beyond its declared kinds (a Secret it fetches by
//! name, say) is added with [`Permissions::allow`]; a test suite run on rein-testenv with its
//! request log exported (`cargo rein rbac --from-tests --check`) tells when the rules miss
//! something the code does.
//!
//! ```
//! use rein_manager::rbac::{Permissions, Scope};
//!
//! let mut permissions = Permissions::default();
//! permissions.allow(Scope::Cluster, "", &["configmaps"], &["get", "list", "watch"]);
//! permissions.allow(Scope::Cluster, "", &["configmaps"], &["create"]);
//! permissions.allow(Scope::Cluster, "", &["secrets"], &["get"]);
//! let rules = permissions.cluster_rules();
//! // One rule per group and set of verbs; each resource's verbs merged.
//! let verbs = |resource: &str| {
//!     let rule = rules.iter().find(|r| r.resources.as_ref().unwrap().contains(&resource.to_owned()));
//!     rule.map(|r| r.verbs.clone())
//! };
//! assert_eq!(rules.len(), 2);
//! assert_eq!(verbs("configmaps").unwrap(), ["get", "list", "watch", "create"]);
//! assert_eq!(verbs("secrets").unwrap(), ["get"]);
//! ```

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::PolicyRule;
use rein_controller::{Declaration, DeclaredKind};

/// Where a rule applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every namespace (a ClusterRole bound by a ClusterRoleBinding).
    Cluster,
    /// The manager's own namespace (a Role): where it elects its leader and keeps its
    /// shard Leases.
    Own,
}

/// The verbs in the order kube's docs and controller-gen list them.
const VERB_ORDER: [&str; 8] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// RBAC rules: cluster-wide ones and ones for the manager's own namespace, merged per
/// resource and grouped as a ClusterRole's and a Role's `rules`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    cluster: Rules,
    own: Rules,
    namespace: Option<String>,
}

/// Verbs per (group, resource).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Rules(BTreeMap<(String, String), BTreeSet<String>>);

impl Rules {
    fn allow(&mut self, group: &str, resources: &[&str], verbs: &[&str]) {
        for resource in resources {
            self.0
                .entry((group.to_owned(), (*resource).to_owned()))
                .or_default()
                .extend(verbs.iter().map(|v| (*v).to_owned()));
        }
    }

    /// One rule per group and verb set, its resources sorted; verbs in kube's order.
    fn policy_rules(&self) -> Vec<PolicyRule> {
        let mut grouped: BTreeMap<(String, Vec<String>), Vec<String>> = BTreeMap::new();
        for ((group, resource), verbs) in &self.0 {
            grouped
                .entry((group.clone(), ordered(verbs)))
                .or_default()
                .push(resource.clone());
        }
        grouped
            .into_iter()
            .map(|((group, verbs), resources)| PolicyRule {
                api_groups: Some(vec![group]),
                resources: Some(resources),
                verbs,
                ..PolicyRule::default()
            })
            .collect()
    }
}

fn ordered(verbs: &BTreeSet<String>) -> Vec<String> {
    let rank = |v: &String| {
        VERB_ORDER
            .iter()
            .position(|o| o == v)
            .unwrap_or(VERB_ORDER.len())
    };
    let mut verbs: Vec<String> = verbs.iter().cloned().collect();
    verbs.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    verbs
}

impl Permissions {
    /// Allows `verbs` on `resources` of API `group` (`""`: the core group) in `scope`.
    /// Subresources are written `pods/log`.
    pub fn allow(
        &mut self,
        scope: Scope,
        group: &str,
        resources: &[&str],
        verbs: &[&str],
    ) -> &mut Self {
        match scope {
            Scope::Cluster => self.cluster.allow(group, resources, verbs),
            Scope::Own => self.own.allow(group, resources, verbs),
        }
        self
    }

    /// The cluster-wide rules (a ClusterRole's `rules`).
    pub fn cluster_rules(&self) -> Vec<PolicyRule> {
        self.cluster.policy_rules()
    }

    /// The rules in the manager's own namespace (a Role's `rules`); empty without leader
    /// election or sharding.
    pub fn namespaced_rules(&self) -> Vec<PolicyRule> {
        self.own.policy_rules()
    }

    /// The namespace the [`namespaced_rules`](Self::namespaced_rules) are for, when the
    /// options name it (`None`: the Pod's own namespace, as leader election defaults to).
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// Adds what one controller declaration needs (see the module's table).
    pub(crate) fn declared(&mut self, kind: &DeclaredKind) {
        let (group, resource) = (kind.group.as_str(), kind.resource.as_str());
        match kind.how {
            Declaration::Reconciles => {
                self.cluster.allow(
                    group,
                    &[resource],
                    &["get", "list", "watch", "update", "patch"],
                );
                self.cluster.allow(
                    group,
                    &[&format!("{resource}/status")],
                    &["get", "update", "patch"],
                );
                // Setting `blockOwnerDeletion` on what it owns needs update on the owner's
                // finalizers (the OwnerReferencesPermissionEnforcement admission plugin).
                self.cluster
                    .allow(group, &[&format!("{resource}/finalizers")], &["update"]);
            }
            Declaration::Owns => self.cluster.allow(group, &[resource], WRITE),
            Declaration::Watches => self.cluster.allow(group, &[resource], READ),
        }
    }

    /// Event recorders: Events about objects in any namespace, through either events API.
    pub(crate) fn records_events(&mut self) {
        self.cluster.allow("", &["events"], &["create", "patch"]);
        self.cluster
            .allow("events.k8s.io", &["events"], &["create", "patch"]);
    }

    /// Leader election on a Lease in `namespace`, and its lock Events there.
    pub(crate) fn elects_leader(&mut self, namespace: Option<&str>) {
        self.own_namespace(namespace);
        self.own.allow(
            "coordination.k8s.io",
            &["leases"],
            &["get", "create", "update"],
        );
        self.own.allow("", &["events"], &["create", "patch"]);
    }

    /// Shard membership: peer Leases listed, watched, renewed and cleaned up in `namespace`.
    pub(crate) fn shards(&mut self, namespace: Option<&str>) {
        self.own_namespace(namespace);
        self.own.allow(
            "coordination.k8s.io",
            &["leases"],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        );
    }

    /// The reviews a secure metrics server asks for each scrape.
    pub(crate) fn reviews_scrapers(&mut self) {
        self.cluster
            .allow("authentication.k8s.io", &["tokenreviews"], &["create"]);
        self.cluster.allow(
            "authorization.k8s.io",
            &["subjectaccessreviews"],
            &["create"],
        );
    }

    fn own_namespace(&mut self, namespace: Option<&str>) {
        if self.namespace.is_none() {
            self.namespace = namespace.map(str::to_owned);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(how: Declaration, group: &str, resource: &str) -> DeclaredKind {
        DeclaredKind {
            controller: "c".to_owned(),
            how,
            group: group.to_owned(),
            resource: resource.to_owned(),
        }
    }

    #[test]
    fn declarations_merge_per_resource_and_group_by_verbs() {
        let mut p = Permissions::default();
        p.declared(&kind(Declaration::Watches, "", "configmaps"));
        p.declared(&kind(Declaration::Owns, "", "configmaps"));
        p.declared(&kind(Declaration::Owns, "", "services"));
        p.declared(&kind(Declaration::Reconciles, "example.com", "backups"));
        let rules = p.cluster_rules();
        let shown: Vec<(String, Vec<String>, Vec<String>)> = rules
            .into_iter()
            .map(|r| {
                (
                    r.api_groups.unwrap()[0].clone(),
                    r.resources.unwrap(),
                    r.verbs,
                )
            })
            .collect();
        let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            shown,
            [
                ("".to_owned(), s(&["configmaps", "services"]), s(WRITE)),
                (
                    "example.com".to_owned(),
                    s(&["backups"]),
                    s(&["get", "list", "watch", "update", "patch"])
                ),
                (
                    "example.com".to_owned(),
                    s(&["backups/status"]),
                    s(&["get", "update", "patch"])
                ),
                (
                    "example.com".to_owned(),
                    s(&["backups/finalizers"]),
                    s(&["update"])
                ),
            ]
        );
        assert!(p.namespaced_rules().is_empty());
    }

    #[test]
    fn leader_election_and_sharding_share_the_own_namespace() {
        let mut p = Permissions::default();
        p.elects_leader(Some("ops"));
        p.shards(Some("elsewhere"));
        assert_eq!(p.namespace(), Some("ops"));
        let leases = p
            .namespaced_rules()
            .into_iter()
            .find(|r| r.resources.as_deref() == Some(&["leases".to_owned()][..]))
            .unwrap();
        assert_eq!(
            leases.verbs,
            [
                "get", "list", "watch", "create", "update", "patch", "delete"
            ]
        );
    }
}
