//! RBAC escalation prevention: Roles, ClusterRoles and bindings a user may not write.
//!
//! With RBAC enforced, kube-apiserver's RBAC registry refuses a create or update (patches and
//! applies included) of a Role or ClusterRole granting a permission its user does not hold, and
//! of a binding to a role holding one, unless she may `escalate` (roles) or `bind` (the role
//! named). Over HTTPS with real clients, and with kubectl when it is on PATH.

use std::path::{Path, PathBuf};
use std::process::Command;

use kube_client::Client;
use rein_testenv::{TestEnv, User};
use serde_json::{Value, json};

use super::auth_support::{binding, create_rbac, get};
use super::http_support::send;

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";
const GROUP: &str = "rbac.authorization.k8s.io";
/// What `*` on every resource is missing as, in kube's message.
const ALL_RESOURCES: &str = r#"{APIGroups:["*"], Resources:["*"], Verbs:["*"]}"#;
/// What `*` on every non-resource URL is missing as.
const ALL_URLS: &str = r#"{NonResourceURLs:["*"], Verbs:["*"]}"#;

async fn enforcing(users: &[User]) -> TestEnv {
    let mut builder = TestEnv::builder().tls(true).enforce_rbac(true);
    for user in users {
        builder = builder.user(user.clone());
    }
    builder.start().await.expect("starts")
}

fn alice() -> User {
    User::new("alice").token("alice-token")
}

/// Sends `method path` with `body` as `content_type`: the status code and the body.
async fn call(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, Value) {
    let answer = send(
        client,
        method,
        path,
        &[("content-type", content_type)],
        serde_json::to_vec(body).expect("json"),
    )
    .await;
    (answer.code, answer.json())
}

async fn post(client: &Client, path: &str, body: &Value) -> (u16, Value) {
    call(client, "POST", path, "application/json", body).await
}

fn roles(namespace: &str) -> String {
    format!("{RBAC}/namespaces/{namespace}/roles")
}

fn role_bindings(namespace: &str) -> String {
    format!("{RBAC}/namespaces/{namespace}/rolebindings")
}

fn role(kind: &str, name: &str, namespace: Option<&str>, rules: Value) -> Value {
    let mut meta = json!({"name": name});
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
           "rules": rules})
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// A binding (with its `apiVersion`) of `role` to alice.
fn to_alice(kind: &str, name: &str, namespace: Option<&str>, role: (&str, &str)) -> Value {
    let mut obj = binding(
        kind,
        name,
        namespace,
        role,
        json!([{"kind": "User", "name": "alice"}]),
    );
    obj["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
    obj
}

/// Gives alice the rules of a new ClusterRole `name`, in `namespace` (a RoleBinding) or
/// cluster-wide (a ClusterRoleBinding).
async fn grant(admin: &Client, name: &str, namespace: Option<&str>, rules: Value) {
    create_rbac(admin, role("ClusterRole", name, None, rules)).await;
    let kind = if namespace.is_some() {
        "RoleBinding"
    } else {
        "ClusterRoleBinding"
    };
    create_rbac(
        admin,
        to_alice(kind, name, namespace, ("ClusterRole", name)),
    )
    .await;
}

/// kube's message for a write by alice of `plural` `name` that grants `missing`.
fn not_held(plural: &str, name: &str, missing: &[&str]) -> String {
    format!(
        "{plural}.{GROUP} \"{name}\" is forbidden: user \"alice\" \
         (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not \
         currently held:\n{}",
        missing.join("\n")
    )
}

/// Asserts `answer` is kube's 403 for `plural` `name` with `message`.
fn assert_forbidden(answer: &(u16, Value), plural: &str, name: &str, message: &str) {
    let (code, status) = answer;
    assert_eq!(*code, 403, "{status}");
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["code"], 403);
    assert_eq!(status["message"], message);
    assert_eq!(
        status["details"],
        json!({"name": name, "group": GROUP, "kind": plural})
    );
}

/// After a refusal: the object at `path` was not stored, and the server still serves.
async fn nothing_stored(admin: &Client, path: &str) {
    assert_eq!(code_of(admin, path).await, 404, "{path} was stored");
    get(admin, "/api/v1/namespaces")
        .await
        .expect("the server still serves");
}

/// The status code of a GET of `path`.
async fn code_of(client: &Client, path: &str) -> u16 {
    send(client, "GET", path, &[], Vec::new()).await.code
}

/// The rules of the stored object at `path`, and its resourceVersion.
async fn stored_rules(admin: &Client, path: &str) -> (Value, Value) {
    let obj = get(admin, path).await.expect("stored");
    (
        obj["rules"].clone(),
        obj["metadata"]["resourceVersion"].clone(),
    )
}

/// The reproduction: a user who may only create Roles and RoleBindings in `default` can grant
/// herself nothing she does not hold (not `*/*/*`, not `cluster-admin`) until she may
/// `escalate` and `bind`; what she holds she may grant.
#[tokio::test]
async fn a_user_who_may_create_roles_and_bindings_cannot_grant_what_she_lacks() {
    let alice = alice();
    let env = enforcing(std::slice::from_ref(&alice)).await;
    let admin = env.client();
    let as_alice = env.client_for(&alice).await.expect("client");
    let writer = rule(&[GROUP], &["roles", "rolebindings"], &["create"]);
    grant(&admin, "rbac-writer", Some("default"), json!([writer])).await;

    let everything = role("Role", "evil", None, json!([rule(&["*"], &["*"], &["*"])]));
    let answer = post(&as_alice, &roles("default"), &everything).await;
    assert_forbidden(
        &answer,
        "roles",
        "evil",
        &not_held("roles", "evil", &[ALL_RESOURCES]),
    );
    nothing_stored(&admin, &format!("{}/evil", roles("default"))).await;

    let admin_binding = to_alice(
        "RoleBinding",
        "alice-admin",
        None,
        ("ClusterRole", "cluster-admin"),
    );
    let answer = post(&as_alice, &role_bindings("default"), &admin_binding).await;
    assert_forbidden(
        &answer,
        "rolebindings",
        "alice-admin",
        &not_held("rolebindings", "alice-admin", &[ALL_RESOURCES, ALL_URLS]),
    );
    nothing_stored(&admin, &format!("{}/alice-admin", role_bindings("default"))).await;
    // She gained nothing.
    assert_eq!(
        code_of(&as_alice, "/api/v1/namespaces/default/secrets").await,
        403
    );

    // What she holds she may grant, and bind others to.
    let copy = role("Role", "copy", None, json!([writer]));
    let (code, created) = post(&as_alice, &roles("default"), &copy).await;
    assert_eq!(code, 201, "{created}");
    let narrower = role(
        "Role",
        "narrower",
        None,
        json!([rule(&[GROUP], &["roles"], &["create"])]),
    );
    assert_eq!(post(&as_alice, &roles("default"), &narrower).await.0, 201);
    let bob = binding(
        "RoleBinding",
        "bob-copies",
        None,
        ("Role", "copy"),
        json!([{"kind": "User", "name": "bob"}]),
    );
    let (code, created) = post(&as_alice, &role_bindings("default"), &bob).await;
    assert_eq!(code, 201, "{created}");
    // The permissions every authenticated user has count as held.
    let review = role(
        "Role",
        "reviews",
        None,
        json!([rule(
            &["authorization.k8s.io"],
            &["selfsubjectaccessreviews"],
            &["create"]
        )]),
    );
    assert_eq!(post(&as_alice, &roles("default"), &review).await.0, 201);
    // A part she lacks is named alone, in kube's compact form.
    let wider = role(
        "Role",
        "wider",
        None,
        json!([rule(
            &[GROUP],
            &["roles", "rolebindings"],
            &["create", "delete"]
        )]),
    );
    let answer = post(&as_alice, &roles("default"), &wider).await;
    assert_forbidden(
        &answer,
        "roles",
        "wider",
        &not_held(
            "roles",
            "wider",
            &[
                r#"{APIGroups:["rbac.authorization.k8s.io"], Resources:["rolebindings"], Verbs:["delete"]}"#,
                r#"{APIGroups:["rbac.authorization.k8s.io"], Resources:["roles"], Verbs:["delete"]}"#,
            ],
        ),
    );

    // `escalate` on roles lets her write any Role; `bind` on cluster-admin, bind it.
    grant(
        &admin,
        "escalator",
        Some("default"),
        json!([rule(&[GROUP], &["roles"], &["escalate"])]),
    )
    .await;
    let (code, created) = post(&as_alice, &roles("default"), &everything).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        post(&as_alice, &role_bindings("default"), &admin_binding)
            .await
            .0,
        403,
        "escalate is not bind"
    );
    grant(
        &admin,
        "binder",
        Some("default"),
        json!([{"apiGroups": [GROUP], "resources": ["clusterroles"], "verbs": ["bind"],
                "resourceNames": ["cluster-admin"]}]),
    )
    .await;
    // `bind` names cluster-admin only: another role she lacks is still checked.
    create_rbac(
        &admin,
        role(
            "ClusterRole",
            "secret-reader",
            None,
            json!([rule(&[""], &["secrets"], &["get"])]),
        ),
    )
    .await;
    let secrets = to_alice(
        "RoleBinding",
        "alice-secrets",
        None,
        ("ClusterRole", "secret-reader"),
    );
    let answer = post(&as_alice, &role_bindings("default"), &secrets).await;
    assert_forbidden(
        &answer,
        "rolebindings",
        "alice-secrets",
        &not_held(
            "rolebindings",
            "alice-secrets",
            &[r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}"#],
        ),
    );
    nothing_stored(
        &admin,
        &format!("{}/alice-secrets", role_bindings("default")),
    )
    .await;
    let (code, created) = post(&as_alice, &role_bindings("default"), &admin_binding).await;
    assert_eq!(code, 201, "{created}");
    get(&as_alice, "/api/v1/namespaces/default/secrets")
        .await
        .expect("admin of default now");
}

/// Updates are checked as creates are: a PUT, a merge patch and a server-side apply that
/// widen a Role are refused and change nothing; one that keeps to what she holds passes; one
/// of the garbage collector's fields only is not checked at all.
#[tokio::test]
async fn an_update_that_widens_a_role_is_forbidden() {
    let alice = alice();
    let env = enforcing(std::slice::from_ref(&alice)).await;
    let admin = env.client();
    let as_alice = env.client_for(&alice).await.expect("client");
    let editor = rule(&[GROUP], &["roles"], &["create", "get", "update", "patch"]);
    grant(&admin, "role-editor", Some("default"), json!([editor])).await;
    let path = format!("{}/narrow", roles("default"));

    let narrow = role(
        "Role",
        "narrow",
        None,
        json!([rule(&[GROUP], &["roles"], &["get"])]),
    );
    assert_eq!(post(&as_alice, &roles("default"), &narrow).await.0, 201);
    let before = stored_rules(&admin, &path).await;

    let mut widened = get(&as_alice, &path).await.expect("reads");
    widened["rules"] = json!([rule(&["*"], &["*"], &["*"])]);
    let answer = call(&as_alice, "PUT", &path, "application/json", &widened).await;
    assert_forbidden(
        &answer,
        "roles",
        "narrow",
        &not_held("roles", "narrow", &[ALL_RESOURCES]),
    );
    assert_eq!(stored_rules(&admin, &path).await, before);

    let secrets = json!({"rules": [rule(&[""], &["secrets"], &["get", "list"])]});
    let answer = call(
        &as_alice,
        "PATCH",
        &path,
        "application/merge-patch+json",
        &secrets,
    )
    .await;
    assert_forbidden(
        &answer,
        "roles",
        "narrow",
        &not_held(
            "roles",
            "narrow",
            &[r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#],
        ),
    );
    assert_eq!(stored_rules(&admin, &path).await, before);

    let mut applied = role(
        "Role",
        "narrow",
        Some("default"),
        json!([rule(&[""], &["pods"], &["delete"])]),
    );
    let apply_path = format!("{path}?fieldManager=alice&force=true");
    let answer = call(
        &as_alice,
        "PATCH",
        &apply_path,
        "application/apply-patch+yaml",
        &applied,
    )
    .await;
    assert_forbidden(
        &answer,
        "roles",
        "narrow",
        &not_held(
            "roles",
            "narrow",
            &[r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}"#],
        ),
    );
    assert_eq!(stored_rules(&admin, &path).await, before);
    // An apply that creates is checked too.
    applied["metadata"]["name"] = json!("applied");
    let answer = call(
        &as_alice,
        "PATCH",
        &format!("{}/applied?fieldManager=alice", roles("default")),
        "application/apply-patch+yaml",
        &applied,
    )
    .await;
    assert_forbidden(
        &answer,
        "roles",
        "applied",
        &not_held(
            "roles",
            "applied",
            &[r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}"#],
        ),
    );
    nothing_stored(&admin, &format!("{}/applied", roles("default"))).await;

    // Within what she holds, updates pass.
    let held = json!({"metadata": {"labels": {"team": "a"}},
        "rules": [rule(&[GROUP], &["roles"], &["get", "update"])]});
    let (code, body) = call(
        &as_alice,
        "PATCH",
        &path,
        "application/merge-patch+json",
        &held,
    )
    .await;
    assert_eq!(code, 200, "{body}");

    // A Role she could not have written: changing it is refused, but not the garbage
    // collector's fields (finalizers, ownerReferences).
    create_rbac(
        &admin,
        role(
            "Role",
            "mighty",
            Some("default"),
            json!([rule(&["*"], &["*"], &["*"])]),
        ),
    )
    .await;
    let mighty = format!("{}/mighty", roles("default"));
    let finalizer = json!({"metadata": {"finalizers": ["example.com/keep"]}});
    let (code, body) = call(
        &as_alice,
        "PATCH",
        &mighty,
        "application/merge-patch+json",
        &finalizer,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["finalizers"], json!(["example.com/keep"]));
    let label = json!({"metadata": {"labels": {"owned": "by-alice"}}});
    let answer = call(
        &as_alice,
        "PATCH",
        &mighty,
        "application/merge-patch+json",
        &label,
    )
    .await;
    assert_forbidden(
        &answer,
        "roles",
        "mighty",
        &not_held("roles", "mighty", &[ALL_RESOURCES]),
    );
    let stored = get(&admin, &mighty).await.expect("stored");
    assert!(stored["metadata"].get("labels").is_none(), "{stored}");
}

/// ClusterRoles and ClusterRoleBindings are checked against what she holds cluster-wide (not
/// in one namespace); an aggregationRule takes every permission; `escalate` and `bind` lift
/// the checks; a binding to a missing ClusterRole is the registry's 404.
#[tokio::test]
async fn cluster_roles_and_their_bindings_are_checked_cluster_wide() {
    let alice = alice();
    let env = enforcing(std::slice::from_ref(&alice)).await;
    let admin = env.client();
    let as_alice = env.client_for(&alice).await.expect("client");
    let writer = rule(
        &[GROUP],
        &["clusterroles", "clusterrolebindings"],
        &["create", "get", "update", "patch"],
    );
    grant(&admin, "cluster-rbac-writer", None, json!([writer])).await;
    grant(
        &admin,
        "default-pod-reader",
        Some("default"),
        json!([rule(&[""], &["pods"], &["get"])]),
    )
    .await;
    let cluster_roles = format!("{RBAC}/clusterroles");
    let cluster_role_bindings = format!("{RBAC}/clusterrolebindings");

    let everything = role(
        "ClusterRole",
        "evil",
        None,
        json!([rule(&["*"], &["*"], &["*"])]),
    );
    let answer = post(&as_alice, &cluster_roles, &everything).await;
    assert_forbidden(
        &answer,
        "clusterroles",
        "evil",
        &not_held("clusterroles", "evil", &[ALL_RESOURCES]),
    );
    nothing_stored(&admin, &format!("{cluster_roles}/evil")).await;

    let admin_binding = to_alice(
        "ClusterRoleBinding",
        "alice-admin",
        None,
        ("ClusterRole", "cluster-admin"),
    );
    let answer = post(&as_alice, &cluster_role_bindings, &admin_binding).await;
    assert_forbidden(
        &answer,
        "clusterrolebindings",
        "alice-admin",
        &not_held(
            "clusterrolebindings",
            "alice-admin",
            &[ALL_RESOURCES, ALL_URLS],
        ),
    );
    nothing_stored(&admin, &format!("{cluster_role_bindings}/alice-admin")).await;

    // What she holds only in `default` she does not hold cluster-wide.
    let pods = role(
        "ClusterRole",
        "pods",
        None,
        json!([rule(&[""], &["pods"], &["get"])]),
    );
    let answer = post(&as_alice, &cluster_roles, &pods).await;
    assert_forbidden(
        &answer,
        "clusterroles",
        "pods",
        &not_held(
            "clusterroles",
            "pods",
            &[r#"{APIGroups:[""], Resources:["pods"], Verbs:["get"]}"#],
        ),
    );
    // What she holds cluster-wide she may grant.
    let reader = role(
        "ClusterRole",
        "reader",
        None,
        json!([rule(&[GROUP], &["clusterroles"], &["get"])]),
    );
    let (code, created) = post(&as_alice, &cluster_roles, &reader).await;
    assert_eq!(code, 201, "{created}");
    let widened = json!({"rules": [rule(&[GROUP], &["clusterroles"], &["get", "delete"])]});
    let answer = call(
        &as_alice,
        "PATCH",
        &format!("{cluster_roles}/reader"),
        "application/merge-patch+json",
        &widened,
    )
    .await;
    assert_forbidden(
        &answer,
        "clusterroles",
        "reader",
        &not_held(
            "clusterroles",
            "reader",
            &[
                r#"{APIGroups:["rbac.authorization.k8s.io"], Resources:["clusterroles"], Verbs:["delete"]}"#,
            ],
        ),
    );

    // An aggregationRule can gather anything: it takes cluster-admin's permissions.
    let aggregated = json!({"apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole", "metadata": {"name": "gatherer"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}});
    let answer = post(&as_alice, &cluster_roles, &aggregated).await;
    assert_forbidden(
        &answer,
        "clusterroles",
        "gatherer",
        "clusterroles.rbac.authorization.k8s.io \"gatherer\" is forbidden: must have \
         cluster-admin privileges to use the aggregationRule",
    );
    nothing_stored(&admin, &format!("{cluster_roles}/gatherer")).await;

    // The role a binding names must exist (the registry's own 404).
    let dangling = to_alice(
        "ClusterRoleBinding",
        "dangling",
        None,
        ("ClusterRole", "ghost"),
    );
    let (code, status) = post(&as_alice, &cluster_role_bindings, &dangling).await;
    assert_eq!(
        (code, &status["reason"], &status["message"]),
        (
            404,
            &json!("NotFound"),
            &json!("clusterroles.rbac.authorization.k8s.io \"ghost\" not found")
        ),
        "{status}"
    );
    assert_eq!(
        status["details"],
        json!({"name": "ghost", "group": GROUP, "kind": "clusterroles"})
    );
    nothing_stored(&admin, &format!("{cluster_role_bindings}/dangling")).await;

    // `escalate` on clusterroles, `bind` on cluster-admin.
    grant(
        &admin,
        "cluster-escalator",
        None,
        json!([rule(&[GROUP], &["clusterroles"], &["escalate"])]),
    )
    .await;
    let (code, created) = post(&as_alice, &cluster_roles, &everything).await;
    assert_eq!(code, 201, "{created}");
    let (code, created) = post(&as_alice, &cluster_roles, &aggregated).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        post(&as_alice, &cluster_role_bindings, &admin_binding)
            .await
            .0,
        403
    );
    grant(
        &admin,
        "cluster-binder",
        None,
        json!([{"apiGroups": [GROUP], "resources": ["clusterroles"], "verbs": ["bind"],
                "resourceNames": ["cluster-admin"]}]),
    )
    .await;
    let (code, created) = post(&as_alice, &cluster_role_bindings, &admin_binding).await;
    assert_eq!(code, 201, "{created}");
    get(&as_alice, "/api/v1/nodes")
        .await
        .expect("cluster-admin now");
}

/// Without enforced RBAC every request is authorized, so every user holds everything and no
/// write is refused (kube's checks only apply with RBAC authorization).
#[tokio::test]
async fn without_enforced_rbac_nothing_is_refused() {
    let alice = alice();
    let env = TestEnv::builder()
        .tls(true)
        .user(alice.clone())
        .start()
        .await
        .expect("starts");
    let as_alice = env.client_for(&alice).await.expect("client");
    let everything = role("Role", "evil", None, json!([rule(&["*"], &["*"], &["*"])]));
    assert_eq!(post(&as_alice, &roles("default"), &everything).await.0, 201);
    let admin_binding = to_alice(
        "ClusterRoleBinding",
        "alice-admin",
        None,
        ("ClusterRole", "cluster-admin"),
    );
    assert_eq!(
        post(
            &as_alice,
            &format!("{RBAC}/clusterrolebindings"),
            &admin_binding
        )
        .await
        .0,
        201
    );
}

/// Whether `kubectl` can be run.
fn have_kubectl() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A kubeconfig file, removed when dropped.
struct TempKubeconfig(PathBuf);

impl Drop for TempKubeconfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_dir_all(self.0.with_extension("cache"));
    }
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(kubeconfig.with_extension("cache"))
        .arg("--request-timeout=30s")
        .args(args)
        .output()
        .expect("runs kubectl")
}

/// kubectl shows kube's refusal of a binding to cluster-admin (skipped without kubectl).
#[tokio::test]
async fn kubectl_shows_the_rbac_escalation_refusal() {
    if !have_kubectl() {
        eprintln!("kubectl is not on PATH: skipped");
        return;
    }
    let alice = alice();
    let env = enforcing(std::slice::from_ref(&alice)).await;
    let admin = env.client();
    grant(
        &admin,
        "rbac-writer",
        Some("default"),
        json!([rule(&[GROUP], &["roles", "rolebindings"], &["create"])]),
    )
    .await;
    let path = std::env::temp_dir().join(format!(
        "rein-rbac-escalation-{}.kubeconfig",
        std::process::id()
    ));
    let kubeconfig = env.kubeconfig_for(&alice).expect("kubeconfig");
    std::fs::write(&path, serde_saphyr::to_string(&kubeconfig).expect("yaml")).expect("writes");
    let file = TempKubeconfig(path);
    let out = tokio::task::spawn_blocking({
        let path = file.0.clone();
        move || {
            kubectl(
                &path,
                &[
                    "create",
                    "rolebinding",
                    "alice-admin",
                    "--clusterrole=cluster-admin",
                    "--user=alice",
                ],
            )
        }
    })
    .await
    .expect("kubectl thread");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&not_held(
            "rolebindings",
            "alice-admin",
            &[ALL_RESOURCES, ALL_URLS]
        )),
        "{stderr}"
    );
    nothing_stored(&admin, &format!("{}/alice-admin", role_bindings("default"))).await;
}
