//! The RBAC objects a fresh cluster has that tests lean on (a subset of kube-apiserver's
//! bootstrap policy): `cluster-admin` for `system:masters`, discovery, the public health
//! and version paths, the self-reviews every authenticated user may make, and
//! `system:auth-delegator` (unbound) for servers that delegate authentication, such as a
//! manager's secure metrics.

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

fn cluster_roles() -> Vec<Value> {
    vec![
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
    ]
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
    ]
}
