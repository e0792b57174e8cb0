//! RBAC: the authorization reviews answered from stored Roles, ClusterRoles and bindings,
//! ClusterRole aggregation, and the enforcing mode's 403s, over real HTTPS.

use std::time::Duration;

use rein_testenv::{TestEnv, User};
use serde_json::{Value, json};

use super::auth_support::{
    api_error, binding, create_rbac, get, post, request, service_account, token_for,
};

const SAR: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

async fn enforcing(users: &[User]) -> TestEnv {
    let mut builder = TestEnv::builder().tls(true).enforce_rbac(true);
    for user in users {
        builder = builder.user(user.clone());
    }
    builder.start().await.expect("starts")
}

/// A SubjectAccessReview of `attributes` (resource or non-resource) for `user` in `groups`.
async fn review(
    client: &kube_client::Client,
    user: &str,
    groups: &[&str],
    attributes: Value,
) -> Value {
    let mut spec = json!({"user": user, "groups": groups});
    let field = if attributes.get("path").is_some() {
        "nonResourceAttributes"
    } else {
        "resourceAttributes"
    };
    spec[field] = attributes;
    post(
        client,
        SAR,
        json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview", "spec": spec}),
    )
    .await
    .expect("SubjectAccessReview")["status"]
        .clone()
}

fn allowed(status: &Value) -> bool {
    status["allowed"] == json!(true)
}

#[tokio::test]
async fn enforcing_mode_answers_kube_apiservers_403_until_a_binding_allows() {
    let alice = User::new("alice").token("alice-token");
    let env = enforcing(std::slice::from_ref(&alice)).await;
    let admin = env.client();
    let as_alice = env.client_for(&alice).await.expect("client");

    let err = get(&as_alice, "/api/v1/namespaces/default/pods")
        .await
        .expect_err("403");
    assert_eq!(
        api_error(err),
        (
            403,
            "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" \
             in the namespace \"default\""
                .to_string()
        )
    );
    let err = get(&as_alice, "/api/v1/nodes").await.expect_err("403");
    assert_eq!(
        api_error(err).1,
        "nodes is forbidden: User \"alice\" cannot list resource \"nodes\" in API group \"\" at \
         the cluster scope"
    );
    let err = get(
        &as_alice,
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
    )
    .await
    .expect_err("403");
    assert_eq!(
        api_error(err).1,
        "deployments.apps \"web\" is forbidden: User \"alice\" cannot get resource \
         \"deployments/scale\" in API group \"apps\" in the namespace \"default\""
    );
    let err = get(&as_alice, "/metrics").await.expect_err("403");
    assert_eq!(
        api_error(err).1,
        "forbidden: User \"alice\" cannot get path \"/metrics\""
    );
    // Discovery is open to every authenticated user, as in a fresh cluster.
    get(&as_alice, "/apis").await.expect("discovery");
    get(&as_alice, "/api/v1").await.expect("discovery");

    create_rbac(
        &admin,
        json!({"kind": "Role",
        "metadata": {"name": "pod-reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]}),
    )
    .await;
    create_rbac(
        &admin,
        binding(
            "RoleBinding",
            "alice-reads",
            Some("default"),
            ("Role", "pod-reader"),
            json!([{"kind": "User", "name": "alice"}]),
        ),
    )
    .await;
    get(&as_alice, "/api/v1/namespaces/default/pods")
        .await
        .expect("allowed now");
    let err = get(&as_alice, "/api/v1/namespaces/kube-system/pods")
        .await
        .expect_err("403");
    assert_eq!(api_error(err).0, 403);
    let err = request(
        &as_alice,
        http::Method::DELETE,
        "/api/v1/namespaces/default/pods",
        None,
        &[],
    )
    .await
    .expect_err("403");
    assert!(
        api_error(err)
            .1
            .contains("cannot deletecollection resource \"pods\"")
    );

    // A binding to a missing role is reported after the message.
    create_rbac(
        &admin,
        binding(
            "RoleBinding",
            "dangling",
            Some("default"),
            ("Role", "missing"),
            json!([{"kind": "User", "name": "alice"}]),
        ),
    )
    .await;
    let err = get(&as_alice, "/api/v1/namespaces/default/secrets")
        .await
        .expect_err("403");
    assert_eq!(
        api_error(err).1,
        "secrets is forbidden: User \"alice\" cannot list resource \"secrets\" in API group \"\" \
         in the namespace \"default\": RBAC: role.rbac.authorization.k8s.io \"missing\" not found"
    );

    // Without credentials: `system:anonymous`, refused like any user without a binding.
    let mut config = env.config();
    config.auth_info.token = None;
    let anonymous = kube_client::Client::try_from(config).expect("client");
    assert_eq!(
        api_error(get(&anonymous, "/api/v1/pods").await.expect_err("403")).0,
        403
    );
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_when_enforcing() {
    let alice = User::new("alice").token("alice-token");
    let env = enforcing(std::slice::from_ref(&alice)).await;
    let as_alice = env.client_for(&alice).await.expect("client");
    let ssr = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let err = request(
        &as_alice,
        http::Method::POST,
        ssr,
        Some(json!({})),
        &[("Impersonate-User", "bob")],
    )
    .await
    .expect_err("403");
    assert_eq!(
        api_error(err),
        (
            403,
            "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" \
               in API group \"\" at the cluster scope"
                .to_string()
        )
    );
    let err = request(
        &as_alice,
        http::Method::POST,
        ssr,
        Some(json!({})),
        &[("Impersonate-User", "system:serviceaccount:default:robot")],
    )
    .await
    .expect_err("403");
    assert_eq!(
        api_error(err).1,
        "serviceaccounts \"robot\" is forbidden: User \"alice\" cannot impersonate resource \
         \"serviceaccounts\" in API group \"\" in the namespace \"default\""
    );
    create_rbac(
        &env.client(),
        json!({"kind": "ClusterRole", "metadata": {"name": "impersonator"},
        "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"],
                   "resourceNames": ["bob"]}]}),
    )
    .await;
    create_rbac(
        &env.client(),
        binding(
            "ClusterRoleBinding",
            "alice-impersonates",
            None,
            ("ClusterRole", "impersonator"),
            json!([{"kind": "User", "name": "alice"}]),
        ),
    )
    .await;
    let answer = request(
        &as_alice,
        http::Method::POST,
        ssr,
        Some(json!({})),
        &[("Impersonate-User", "bob")],
    )
    .await
    .expect("allowed");
    assert_eq!(answer["status"]["userInfo"]["username"], "bob");
    let err = request(
        &as_alice,
        http::Method::POST,
        ssr,
        Some(json!({})),
        &[("Impersonate-User", "carol")],
    )
    .await
    .expect_err("403");
    assert_eq!(api_error(err).0, 403);
}

#[tokio::test]
async fn subject_access_reviews_match_rules_as_kube_does() {
    let env = TestEnv::builder().tls(true).start().await.expect("starts");
    let admin = env.client();
    create_rbac(
        &admin,
        json!({"kind": "Role",
        "metadata": {"name": "status-writer", "namespace": "default"},
        "rules": [
            {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["update", "patch"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
             "resourceNames": ["settings"]},
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        ]}),
    )
    .await;
    create_rbac(
        &admin,
        binding(
            "RoleBinding",
            "writers",
            Some("default"),
            ("Role", "status-writer"),
            json!([{"kind": "Group", "name": "team"}]),
        ),
    )
    .await;
    create_rbac(
        &admin,
        json!({"kind": "ClusterRole", "metadata": {"name": "scraper"},
        "rules": [{"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]}]}),
    )
    .await;
    create_rbac(
        &admin,
        binding(
            "ClusterRoleBinding",
            "scrapers",
            None,
            ("ClusterRole", "scraper"),
            json!([{"kind": "ServiceAccount", "name": "prom",
            "namespace": "monitoring"}]),
        ),
    )
    .await;

    let res = |verb: &str, group: &str, resource: &str, sub: &str, name: &str| {
        json!({"namespace": "default", "verb": verb, "group": group, "resource": resource,
               "subresource": sub, "name": name})
    };
    let yes = review(
        &admin,
        "dana",
        &["team"],
        res("update", "apps", "deployments", "status", "d"),
    )
    .await;
    assert!(allowed(&yes));
    assert_eq!(
        yes["reason"],
        "RBAC: allowed by RoleBinding \"writers/default\" of Role \"status-writer\" to Group \"team\""
    );
    for (user, groups, attributes, want) in [
        (
            "dana",
            "team",
            res("update", "apps", "deployments", "", "d"),
            false,
        ),
        (
            "dana",
            "team",
            res("update", "apps", "deployments", "scale", "d"),
            false,
        ),
        (
            "dana",
            "team",
            res("get", "", "configmaps", "", "settings"),
            true,
        ),
        (
            "dana",
            "team",
            res("get", "", "configmaps", "", "other"),
            false,
        ),
        ("dana", "team", res("list", "", "configmaps", "", ""), false),
        ("dana", "team", res("get", "", "pods", "log", "p"), true),
        ("dana", "others", res("get", "", "pods", "log", "p"), false),
        (
            "x",
            "system:masters",
            res("delete", "", "nodes", "", "n"),
            true,
        ),
    ] {
        let status = review(&admin, user, &[groups], attributes.clone()).await;
        assert_eq!(allowed(&status), want, "{user} in {groups}: {attributes}");
    }

    let prom = "system:serviceaccount:monitoring:prom";
    let scrape = review(
        &admin,
        prom,
        &[],
        json!({"path": "/metrics", "verb": "get"}),
    )
    .await;
    assert!(allowed(&scrape));
    assert_eq!(
        scrape["reason"],
        "RBAC: allowed by ClusterRoleBinding \"scrapers\" of ClusterRole \"scraper\" to \
         ServiceAccount \"prom/monitoring\""
    );
    for (user, path, verb, want) in [
        (prom, "/debug/pprof", "get", true),
        (prom, "/metrics", "post", false),
        ("system:serviceaccount:other:prom", "/metrics", "get", false),
    ] {
        let status = review(&admin, user, &[], json!({"path": path, "verb": verb})).await;
        assert_eq!(allowed(&status), want, "{user}: {verb} {path}");
    }

    // Validation.
    let err = post(
        &admin,
        SAR,
        json!({"spec": {"resourceAttributes": {"verb": "get"}}}),
    )
    .await
    .expect_err("422");
    assert_eq!(
        api_error(err),
        (
            422,
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid \
               value: \"\": at least one of user or group must be specified"
                .to_string()
        )
    );
    // LocalSubjectAccessReview: the namespace must be the path's.
    let lsar = |ns: &str| {
        json!({"spec": {"user": "dana", "groups": ["team"],
        "resourceAttributes": {"namespace": ns, "verb": "get", "resource": "pods",
        "subresource": "log"}}})
    };
    let local = post(
        &admin,
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        lsar("default"),
    )
    .await
    .expect("LocalSubjectAccessReview");
    assert_eq!(local["status"]["allowed"], true);
    let err = post(
        &admin,
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        lsar("other"),
    )
    .await
    .expect_err("422");
    assert_eq!(api_error(err).0, 422);
}

#[tokio::test]
async fn self_reviews_answer_for_the_caller() {
    let erin = User::new("erin").group("team").token("erin-token");
    let env = enforcing(std::slice::from_ref(&erin)).await;
    create_rbac(
        &env.client(),
        json!({"kind": "Role",
        "metadata": {"name": "cm", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}),
    )
    .await;
    create_rbac(
        &env.client(),
        binding(
            "RoleBinding",
            "cm",
            Some("default"),
            ("Role", "cm"),
            json!([{"kind": "Group", "name": "team"}]),
        ),
    )
    .await;
    let as_erin = env.client_for(&erin).await.expect("client");
    let ssar = |verb: &str| {
        json!({"spec": {"resourceAttributes":
        {"namespace": "default", "verb": verb, "resource": "configmaps"}}})
    };
    let yes = post(
        &as_erin,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        ssar("list"),
    )
    .await
    .expect("SelfSubjectAccessReview");
    assert_eq!(yes["status"]["allowed"], true);
    let no = post(
        &as_erin,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        ssar("delete"),
    )
    .await
    .expect("SelfSubjectAccessReview");
    assert_eq!(no["status"]["allowed"], false);
    let rules = post(
        &as_erin,
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        json!({"spec": {"namespace": "default"}}),
    )
    .await
    .expect("SelfSubjectRulesReview");
    let resource_rules = rules["status"]["resourceRules"].as_array().expect("rules");
    assert!(
        resource_rules.contains(&json!({"verbs": ["get", "list"], "apiGroups": [""],
        "resources": ["configmaps"]}))
    );
    assert!(resource_rules.contains(&json!({"verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})));
    let non_resource = rules["status"]["nonResourceRules"]
        .as_array()
        .expect("rules");
    assert!(non_resource.iter().any(|r| {
        r["nonResourceURLs"]
            .as_array()
            .is_some_and(|u| u.contains(&json!("/apis/*")))
    }));
}

/// Polls the ClusterRole `name` until its rules are `want` (the aggregation controller runs
/// in the background, as kube-controller-manager's does), failing after ten seconds.
async fn wait_for_rules(client: &kube_client::Client, name: &str, want: Value) {
    let path = format!("/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let role = get(client, &path).await.expect("reads the ClusterRole");
        let rules = role.get("rules").cloned().unwrap_or(json!([]));
        if rules == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "ClusterRole {name} has rules {rules}, want {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn aggregated_cluster_roles_follow_the_roles_they_select() {
    let env = TestEnv::builder().tls(true).start().await.expect("starts");
    let admin = env.client();
    create_rbac(
        &admin,
        json!({"kind": "ClusterRole", "metadata": {"name": "monitoring"},
        "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}]}}),
    )
    .await;
    let pods = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]});
    let nodes = json!({"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]});
    let label = json!({"rbac.example.com/aggregate-to-monitoring": "true"});
    create_rbac(
        &admin,
        json!({"kind": "ClusterRole",
        "metadata": {"name": "a-pods", "labels": label}, "rules": [pods.clone()]}),
    )
    .await;
    create_rbac(
        &admin,
        json!({"kind": "ClusterRole",
        "metadata": {"name": "b-nodes", "labels": label}, "rules": [nodes.clone(), pods.clone()]}),
    )
    .await;
    create_rbac(
        &admin,
        json!({"kind": "ClusterRole", "metadata": {"name": "unlabelled"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
    )
    .await;
    wait_for_rules(&admin, "monitoring", json!([pods.clone(), nodes.clone()])).await;

    create_rbac(
        &admin,
        binding(
            "ClusterRoleBinding",
            "mon",
            None,
            ("ClusterRole", "monitoring"),
            json!([{"kind": "User", "name": "mo"}]),
        ),
    )
    .await;
    let list_nodes = json!({"verb": "list", "resource": "nodes"});
    assert!(allowed(
        &review(&admin, "mo", &[], list_nodes.clone()).await
    ));

    request(
        &admin,
        http::Method::DELETE,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/b-nodes",
        None,
        &[],
    )
    .await
    .expect("deletes");
    wait_for_rules(&admin, "monitoring", json!([pods])).await;
    assert!(!allowed(&review(&admin, "mo", &[], list_nodes).await));

    // Watches ended by fault injection: the controller watches again and follows on.
    env.faults().close_watches();
    env.faults().fail_watches(500);
    create_rbac(
        &admin,
        json!({"kind": "ClusterRole",
        "metadata": {"name": "c-nodes", "labels": label}, "rules": [nodes.clone()]}),
    )
    .await;
    wait_for_rules(&admin, "monitoring", json!([pods, nodes])).await;
}

#[tokio::test]
async fn a_service_account_token_is_authorized_by_its_bindings() {
    let env = enforcing(&[]).await;
    let admin = env.client();
    service_account(&admin, "default", "robot").await;
    create_rbac(
        &admin,
        json!({"kind": "ClusterRole", "metadata": {"name": "cm-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]}),
    )
    .await;
    create_rbac(
        &admin,
        binding(
            "RoleBinding",
            "robot",
            Some("default"),
            ("ClusterRole", "cm-reader"),
            json!([{"kind": "ServiceAccount", "name": "robot"}]),
        ),
    )
    .await;
    let token = token_for(&admin, "default", "robot", json!({}))
        .await
        .expect("token")["status"]["token"]
        .as_str()
        .expect("token")
        .to_string();
    let robot = env.client_with_token(&token).await.expect("client");
    get(&robot, "/api/v1/namespaces/default/configmaps")
        .await
        .expect("allowed");
    let err = get(&robot, "/api/v1/namespaces/kube-system/configmaps")
        .await
        .expect_err("403");
    assert_eq!(
        api_error(err).1,
        "configmaps is forbidden: User \"system:serviceaccount:default:robot\" cannot list \
         resource \"configmaps\" in API group \"\" in the namespace \"kube-system\""
    );
}

#[tokio::test]
async fn reviews_are_listed_in_discovery_and_openapi_as_create_only() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let list = get(&client, "/apis/authorization.k8s.io/v1")
        .await
        .expect("discovery");
    let names: Vec<(String, Value)> = list["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_string(),
                r["verbs"].clone(),
            )
        })
        .collect();
    for name in [
        "localsubjectaccessreviews",
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
        "subjectaccessreviews",
    ] {
        assert!(
            names.contains(&(name.to_string(), json!(["create"]))),
            "{name}: {names:?}"
        );
    }
    let list = get(&client, "/apis/authentication.k8s.io/v1")
        .await
        .expect("discovery");
    assert_eq!(list["resources"].as_array().map(Vec::len), Some(2));
    let openapi = get(&client, "/openapi/v3/apis/authorization.k8s.io/v1")
        .await
        .expect("openapi");
    let path = &openapi["paths"]["/apis/authorization.k8s.io/v1/subjectaccessreviews"];
    assert!(
        path.get("post").is_some() && path.get("get").is_none(),
        "{path}"
    );
}

/// With RBAC on, a request without credentials is `system:anonymous` in
/// `system:unauthenticated`, authorized like anyone else (kube's anonymous authenticator):
/// public paths answer, the rest is 403 until a binding allows; a wrong token is still 401.
#[tokio::test]
async fn requests_without_credentials_are_system_anonymous_when_enforcing() {
    let env = enforcing(&[]).await;
    let admin = env.client();
    let mut config = env.config();
    config.auth_info.token = None;
    let anonymous = kube_client::Client::try_from(config.clone()).expect("client");

    let version = get(&anonymous, "/version").await.expect("public");
    assert!(version["gitVersion"].is_string());
    let err = get(&anonymous, "/api").await.expect_err("403");
    assert_eq!(
        api_error(err),
        (
            403,
            "forbidden: User \"system:anonymous\" cannot get path \"/api\"".to_string()
        )
    );
    let err = get(&anonymous, "/api/v1/namespaces")
        .await
        .expect_err("403");
    assert_eq!(
        api_error(err),
        (
            403,
            "namespaces is forbidden: User \"system:anonymous\" cannot list resource \
             \"namespaces\" in API group \"\" at the cluster scope"
                .to_string()
        )
    );

    create_rbac(
        &admin,
        binding(
            "ClusterRoleBinding",
            "anonymous-view",
            None,
            ("ClusterRole", "view"),
            json!([{"kind": "Group", "name": "system:unauthenticated"}]),
        ),
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match get(&anonymous, "/api/v1/namespaces/default/configmaps").await {
            Ok(list) => {
                assert_eq!(list["kind"], "ConfigMapList");
                break;
            }
            Err(err) if std::time::Instant::now() < deadline => {
                assert_eq!(api_error(err).0, 403);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => panic!("the binding never took effect: {err}"),
        }
    }

    config.auth_info.token = Some("wrong".to_string().into());
    let wrong = kube_client::Client::try_from(config).expect("client");
    let err = get(&wrong, "/api/v1/namespaces/default/configmaps")
        .await
        .expect_err("401");
    assert_eq!(api_error(err).0, 401);
}
