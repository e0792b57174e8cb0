//! The RBAC objects a fresh cluster has that tests lean on (a subset of kube-apiserver's
//! bootstrap policy): `cluster-admin` for `system:masters`; the user-facing `admin`, `edit`
//! and `view`, aggregated from `system:aggregate-to-*` (and from any ClusterRole a test labels
//! to join them); discovery, the public health and version paths, monitoring, service-account
//! issuer discovery, the self-reviews every authenticated user may make, and
//! `system:auth-delegator` (unbound) for servers that delegate authentication, such as a
//! manager's secure metrics. Not the roles of kube's own components (`system:node`,
//! `system:controller:*`, …).

use serde_json::{Value, json};

use crate::ops::{self, Target, WriteOpts};
use crate::server::State;

/// Creates the bootstrap ClusterRoles and ClusterRoleBindings.
pub(crate) fn seed(state: &State) {
    let group = "rbac.authorization.k8s.io";
    let (Some(roles), Some(bindings)) = (
        state.catalogue.lookup(group, "v1", "clusterroles"),
        state.catalogue.lookup(group, "v1", "clusterrolebindings"),
    ) else {
        return;
    };
    let mut txn = state.store.lock();
    let opts = WriteOpts::default();
    for (def, objects) in [
        (&roles, cluster_roles()),
        (&bindings, cluster_role_bindings()),
    ] {
        let target = Target {
            catalogue: &state.catalogue,
            def,
            version: "v1",
        };
        for obj in objects {
            let _ = ops::create(&mut txn, target, None, obj, &opts);
        }
    }
}

fn meta(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn role(name: &str, rules: Value) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": meta(name),
        "rules": rules,
    })
}

fn binding(name: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": meta(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": subjects,
    })
}

/// A ClusterRole whose rules the aggregation controller gathers from the ClusterRoles
/// labelled `rbac.authorization.k8s.io/aggregate-to-<name>`.
fn aggregated(name: &str, labels: Value) -> Value {
    let mut role = role(name, json!([]));
    for (key, value) in labels.as_object().into_iter().flatten() {
        role["metadata"]["labels"][key] = value.clone();
    }
    role["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {
        format!("rbac.authorization.k8s.io/aggregate-to-{name}"): "true"}}]});
    role
}

/// A `system:aggregate-to-<into>` ClusterRole, with its rules.
fn aggregate_to(into: &str, rules: Value) -> Value {
    let mut role = role(&format!("system:aggregate-to-{into}"), rules);
    role["metadata"]["labels"][format!("rbac.authorization.k8s.io/aggregate-to-{into}")] =
        json!("true");
    role
}

const READ: [&str; 3] = ["get", "list", "watch"];
const WRITE: [&str; 5] = ["create", "delete", "deletecollection", "patch", "update"];

fn rule(verbs: &[&str], group: &str, resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": [group], "resources": resources})
}

/// kube's `admin`, `edit` and `view` and the `system:aggregate-to-*` roles they gather
/// (bootstrappolicy's `ClusterRoles`, as of 1.33).
fn user_facing_roles() -> Vec<Value> {
    let read_write: Vec<&str> = READ.iter().chain(WRITE.iter()).copied().collect();
    vec![
        aggregated("admin", json!({})),
        aggregated(
            "edit",
            json!({"rbac.authorization.k8s.io/aggregate-to-admin": "true"}),
        ),
        aggregated(
            "view",
            json!({"rbac.authorization.k8s.io/aggregate-to-edit": "true"}),
        ),
        aggregate_to(
            "admin",
            json!([
                rule(
                    &["create"],
                    "authorization.k8s.io",
                    &["localsubjectaccessreviews"]
                ),
                rule(
                    &read_write,
                    "rbac.authorization.k8s.io",
                    &["rolebindings", "roles"]
                ),
            ]),
        ),
        aggregate_to(
            "edit",
            json!([
                rule(
                    &READ,
                    "",
                    &[
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy"
                    ]
                ),
                rule(&["impersonate"], "", &["serviceaccounts"]),
                rule(
                    &WRITE,
                    "",
                    &[
                        "pods",
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy"
                    ]
                ),
                rule(&["create"], "", &["pods/eviction"]),
                rule(
                    &WRITE,
                    "",
                    &[
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy"
                    ]
                ),
                rule(&["create"], "", &["serviceaccounts/token"]),
                rule(
                    &WRITE,
                    "apps",
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale"
                    ]
                ),
                rule(&WRITE, "autoscaling", &["horizontalpodautoscalers"]),
                rule(&WRITE, "batch", &["cronjobs", "jobs"]),
                rule(
                    &WRITE,
                    "extensions",
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "ingresses",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale"
                    ]
                ),
                rule(&WRITE, "policy", &["poddisruptionbudgets"]),
                rule(
                    &WRITE,
                    "networking.k8s.io",
                    &["ingresses", "networkpolicies"]
                ),
                rule(&read_write, "coordination.k8s.io", &["leases"]),
            ]),
        ),
        aggregate_to(
            "view",
            json!([
                rule(
                    &READ,
                    "",
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status"
                    ]
                ),
                rule(
                    &READ,
                    "",
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status"
                    ]
                ),
                rule(&READ, "", &["namespaces"]),
                rule(&READ, "discovery.k8s.io", &["endpointslices"]),
                rule(
                    &READ,
                    "apps",
                    &[
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status"
                    ]
                ),
                rule(
                    &READ,
                    "autoscaling",
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status"
                    ]
                ),
                rule(
                    &READ,
                    "batch",
                    &["cronjobs", "cronjobs/status", "jobs", "jobs/status"]
                ),
                rule(
                    &READ,
                    "extensions",
                    &[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale"
                    ]
                ),
                rule(
                    &READ,
                    "policy",
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"]
                ),
                rule(
                    &READ,
                    "networking.k8s.io",
                    &["ingresses", "ingresses/status", "networkpolicies"]
                ),
            ]),
        ),
    ]
}

fn cluster_roles() -> Vec<Value> {
    let mut roles = user_facing_roles();
    roles.extend([
        role(
            "system:monitoring",
            json!([{"verbs": ["get"], "nonResourceURLs": [
                "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis",
                "/readyz", "/readyz/*",
            ]}]),
        ),
        role(
            "system:service-account-issuer-discovery",
            json!([{"verbs": ["get"], "nonResourceURLs": [
                "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
                "/openid/v1/jwks", "/openid/v1/jwks/",
            ]}]),
        ),
    ]);
    roles.extend([
        role(
            "cluster-admin",
            json!([
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                {"verbs": ["*"], "nonResourceURLs": ["*"]},
            ]),
        ),
        role(
            "system:discovery",
            json!([{"verbs": ["get"], "nonResourceURLs": [
                "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                "/openapi/*", "/readyz", "/version", "/version/",
            ]}]),
        ),
        role(
            "system:public-info-viewer",
            json!([{"verbs": ["get"], "nonResourceURLs": [
                "/healthz", "/livez", "/readyz", "/version", "/version/",
            ]}]),
        ),
        role(
            "system:auth-delegator",
            json!([
                {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                 "resources": ["tokenreviews"]},
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                 "resources": ["subjectaccessreviews"]},
            ]),
        ),
        role(
            "system:basic-user",
            json!([
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                 "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                 "resources": ["selfsubjectreviews"]},
            ]),
        ),
    ]);
    roles
}

fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", &["system:masters"]),
        binding("system:discovery", &["system:authenticated"]),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
        binding("system:basic-user", &["system:authenticated"]),
        binding("system:monitoring", &["system:monitoring"]),
        binding(
            "system:service-account-issuer-discovery",
            &["system:serviceaccounts"],
        ),
    ]
}
