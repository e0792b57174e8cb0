//! Tests of the RBAC derivation: grants read through bindings, coverage, minimal rules, merge.

use std::path::Path;

use serde_json::json;

use super::*;

const USER: &str = "system:serviceaccount:op-system:op";

fn manifests(cluster_rules: serde_json::Value) -> Manifests {
    let sa = json!([{"kind": "ServiceAccount", "name": "op", "namespace": "op-system"}]);
    let list = json!([
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op", "namespace": "op-system"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "op"}, "rules": cluster_rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "op"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "op"}, "subjects": sa},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "op-le", "namespace": "op-system"},
         "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "op-le", "namespace": "op-system"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "op-le"}, "subjects": sa},
        // A role nobody binds to the operator grants it nothing.
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "other"},
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
    ]);
    Manifests::from_json(list.to_string().as_bytes()).unwrap()
}

fn rules() -> serde_json::Value {
    json!([
        {"apiGroups": ["demo.example.com"], "resources": ["backups"], "verbs": ["get", "list", "watch", "update"]},
        {"apiGroups": ["demo.example.com"], "resources": ["backups/status"], "verbs": ["update"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "update"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    ])
}

fn log() -> Vec<Request> {
    let text = [
        r#"{"user":"U","verb":"list","group":"demo.example.com","resource":"backups","namespace":""}"#,
        r#"{"user":"U","verb":"watch","group":"","resource":"configmaps","namespace":""}"#,
        r#"{"user":"U","verb":"update","group":"demo.example.com","resource":"backups","subresource":"status","namespace":"default","name":"b"}"#,
        r#"{"user":"U","verb":"create","group":"events.k8s.io","resource":"events","namespace":"default"}"#,
        r#"{"user":"U","verb":"get","group":"coordination.k8s.io","resource":"leases","namespace":"op-system","name":"op-leader"}"#,
        // The test's own requests (the admin) are not the operator's.
        r#"{"user":"admin","verb":"create","group":"demo.example.com","resource":"backups","namespace":"default"}"#,
    ]
    .join("\n")
    .replace("\"U\"", &format!("{USER:?}"));
    parse_log(Path::new("log.jsonl"), &text).unwrap()
}

#[test]
fn rules_that_cover_every_request_leave_nothing_uncovered() {
    let m = manifests(rules());
    let grants = granted(&m, "op-system", "op");
    assert_eq!(
        grants.len(),
        5,
        "the unbound role is not counted: {grants:#?}"
    );
    assert!(uncovered(&grants, &log(), USER, "op-system").is_empty());
}

#[test]
fn removing_one_rule_leaves_its_requests_uncovered() {
    let mut without_events = rules();
    without_events.as_array_mut().unwrap().pop();
    let grants = granted(&manifests(without_events), "op-system", "op");
    let missing: Vec<String> = uncovered(&grants, &log(), USER, "op-system")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(missing, ["create events (events.k8s.io) cluster-wide"]);
}

#[test]
fn a_role_allows_only_in_its_namespace() {
    let grants = granted(&manifests(json!([])), "op-system", "op");
    let lease = |ns: &str| Request {
        user: USER.into(),
        verb: "get".into(),
        group: "coordination.k8s.io".into(),
        resource: "leases".into(),
        subresource: String::new(),
        namespace: ns.into(),
        name: "l".into(),
    };
    assert!(grants.iter().any(|g| g.allows(&lease("op-system"))));
    assert!(!grants.iter().any(|g| g.allows(&lease("default"))));
    assert!(!grants.iter().any(|g| g.allows(&lease(""))));
    let needs = uncovered(&grants, &[lease("default")], USER, "op-system");
    assert_eq!(
        needs.iter().next().unwrap().namespace,
        None,
        "another namespace needs a ClusterRole"
    );
}

#[test]
fn wildcards_subresources_and_resource_names() {
    let grant = |resources: &[&str], names: &[&str]| Grant {
        namespace: None,
        groups: vec!["*".into()],
        resources: resources.iter().map(|s| (*s).to_owned()).collect(),
        verbs: vec!["get".into()],
        resource_names: names.iter().map(|s| (*s).to_owned()).collect(),
    };
    let mut req = Request {
        user: USER.into(),
        verb: "get".into(),
        group: "apps".into(),
        resource: "deployments".into(),
        subresource: "status".into(),
        namespace: "a".into(),
        name: "d".into(),
    };
    assert!(
        !grant(&["deployments"], &[]).allows(&req),
        "a subresource is its own resource"
    );
    assert!(grant(&["deployments/status"], &[]).allows(&req));
    assert!(grant(&["*/status"], &[]).allows(&req));
    assert!(grant(&["*"], &["d"]).allows(&req));
    assert!(!grant(&["*"], &["e"]).allows(&req));
    req.verb = "list".into();
    assert!(!grant(&["*"], &[]).allows(&req), "the verb must match");
}

#[test]
fn minimal_rules_share_a_rule_per_group_and_verbs() {
    let need = |group: &str, resource: &str, verb: &str| Need {
        namespace: None,
        group: group.into(),
        resource: resource.into(),
        verb: verb.into(),
    };
    let needs = [
        need("", "configmaps", "get"),
        need("", "configmaps", "list"),
        need("", "secrets", "list"),
        need("", "secrets", "get"),
        need("apps", "deployments", "get"),
    ];
    assert_eq!(
        minimal_rules(&needs),
        vec![
            json!({"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list"]}),
            json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}),
        ]
    );
}

#[test]
fn merging_the_uncovered_needs_covers_them() {
    let mut m = manifests(json!([]));
    let before = uncovered(&granted(&m, "op-system", "op"), &log(), USER, "op-system");
    assert_eq!(before.len(), 4, "{before:#?}");
    let changed = merge(&mut m, &before).unwrap();
    assert_eq!(
        changed.len(),
        1,
        "only the ClusterRole changes: {changed:#?}"
    );
    let after = uncovered(&granted(&m, "op-system", "op"), &log(), USER, "op-system");
    assert!(after.is_empty(), "{after:#?}");
}

#[test]
fn a_bad_log_line_is_a_typed_error() {
    let err = parse_log(Path::new("x.jsonl"), "{\"user\":\"u\"}\nnot json\n").unwrap_err();
    assert!(matches!(err, Error::BadRequestLog { line: 1, .. }), "{err}");
    assert!(
        read_log(Path::new("/nonexistent/log.jsonl"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn namespaced_needs_go_to_the_bound_role_or_a_new_one() {
    let need = |ns: &str, resource: &str| Need {
        namespace: Some(ns.into()),
        group: "coordination.k8s.io".into(),
        resource: resource.into(),
        verb: "delete".into(),
    };
    let mut m = manifests(rules());
    let needs = BTreeSet::from([need("op-system", "leases"), need("other", "leases")]);
    let changed = merge(&mut m, &needs).unwrap();
    let kinds: Vec<(&str, &str)> = changed
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("Role", "op-le"),
            ("Role", "op-observed"),
            ("RoleBinding", "op-observed")
        ],
        "the bound Role grows; another namespace gets a Role and binding"
    );
    let grants = granted(&m, "op-system", "op");
    let delete = |ns: &str| Request {
        user: USER.into(),
        verb: "delete".into(),
        group: "coordination.k8s.io".into(),
        resource: "leases".into(),
        subresource: String::new(),
        namespace: ns.into(),
        name: "l".into(),
    };
    assert!(grants.iter().any(|g| g.allows(&delete("op-system"))));
    assert!(grants.iter().any(|g| g.allows(&delete("other"))));
    assert!(!grants.iter().any(|g| g.allows(&delete("third"))));
}

#[test]
fn a_role_binding_to_a_cluster_role_grants_it_in_one_namespace() {
    let sa = json!([{"kind": "ServiceAccount", "name": "op", "namespace": "op-system"}]);
    let list = json!([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "view"},
         "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "v", "namespace": "a"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}, "subjects": sa},
        // Bound to another account: grants the operator nothing.
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "w", "namespace": "b"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "ServiceAccount", "name": "someone-else", "namespace": "op-system"}]},
    ]);
    let m = Manifests::from_json(list.to_string().as_bytes()).unwrap();
    let grants = granted(&m, "op-system", "op");
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].namespace.as_deref(), Some("a"));
}
