//! `pods/eviction` with PodDisruptionBudgets, over real HTTP: the budget's status as the
//! disruption controller keeps it, 201 Success, 429 with the `DisruptionBudget` cause, 500
//! for two budgets, unready Pods, dry run, and kube-client's typed `evict`.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use kube_client::api::{Api, EvictParams, PostParams};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::pod_support::{no_retry, pod, post, running, status_of};

fn budget(name: &str, app: &str, spec: Value) -> PodDisruptionBudget {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": app}});
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("valid pdb")
}

fn eviction(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
}

const EVICT: &str = "/api/v1/namespaces/default/pods";

/// A server, and Pods and budgets in `default` through a client that does not retry 429s.
async fn start() -> (TestEnv, Api<Pod>, Api<PodDisruptionBudget>) {
    let env = TestEnv::start().await.expect("starts");
    let pods = Api::namespaced(no_retry(&env), "default");
    let budgets = Api::namespaced(no_retry(&env), "default");
    (env, pods, budgets)
}

async fn create_budget(budgets: &Api<PodDisruptionBudget>, budget: PodDisruptionBudget) {
    budgets
        .create(&PostParams::default(), &budget)
        .await
        .expect("creates the budget");
}

/// The status of the budget `name`.
async fn budget_status(
    budgets: &Api<PodDisruptionBudget>,
    name: &str,
) -> PodDisruptionBudgetStatus {
    let budget = budgets.get(name).await.expect("gets the budget");
    budget.status.expect("has a status")
}

/// `status.disruptionsAllowed` of the budget `name`.
async fn allowed(budgets: &Api<PodDisruptionBudget>, name: &str) -> i32 {
    budget_status(budgets, name).await.disruptions_allowed
}

/// POSTs an Eviction of the Pod `name` (without retries): the status code and body.
async fn evict(env: &TestEnv, name: &str) -> (u16, Value) {
    let path = format!("{EVICT}/{name}/eviction");
    post(&no_retry(env), &path, &eviction(name)).await
}

#[tokio::test]
async fn eviction_without_a_budget_deletes_the_pod_and_answers_created_success() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(no_retry(&env), "default");
    running(&pods, pod("free", "free", None), true).await;
    let (code, body) = evict(&env, "free").await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    assert!(pods.get_opt("free").await.expect("gets").is_none());

    // kube-client's typed call, with a v1beta1 body accepted too.
    running(&pods, pod("typed", "free", None), true).await;
    pods.evict("typed", &EvictParams::default())
        .await
        .expect("evicts");
    assert!(pods.get_opt("typed").await.expect("gets").is_none());
    running(&pods, pod("old", "free", None), true).await;
    let mut old = eviction("old");
    old["apiVersion"] = json!("policy/v1beta1");
    let (code, _) = post(&no_retry(&env), &format!("{EVICT}/old/eviction"), &old).await;
    assert_eq!(code, 201);

    let (code, body) = evict(&env, "missing").await;
    assert_eq!(
        status_of(&body),
        (404, "NotFound", "pods \"missing\" not found"),
        "{code}"
    );
    running(&pods, pod("named", "free", None), true).await;
    let (code, body) = post(
        &no_retry(&env),
        &format!("{EVICT}/named/eviction"),
        &eviction("other"),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "name in URL does not match name in Eviction object"
    );
}

#[tokio::test]
async fn a_budget_with_no_disruption_left_blocks_the_eviction_with_429() {
    let (env, pods, budgets) = start().await;
    running(&pods, pod("web-0", "web", Some("node-a")), true).await;
    create_budget(&budgets, budget("web", "web", json!({"minAvailable": 1}))).await;
    let status = budget_status(&budgets, "web").await;
    assert_eq!(
        (
            status.current_healthy,
            status.desired_healthy,
            status.expected_pods
        ),
        (1, 1, 1)
    );
    assert_eq!(status.disruptions_allowed, 0);
    assert_eq!(status.observed_generation, Some(1));
    let condition = &status.conditions.expect("conditions")[0];
    assert_eq!(
        (
            condition.type_.as_str(),
            condition.status.as_str(),
            condition.reason.as_str()
        ),
        ("DisruptionAllowed", "False", "InsufficientPods")
    );

    let (code, body) = evict(&env, "web-0").await;
    assert_eq!(code, 429, "{body}");
    assert_eq!(
        status_of(&body),
        (
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget."
        )
    );
    assert_eq!(
        body["details"]["causes"],
        json!([{"reason": "DisruptionBudget", "message": "The disruption budget web needs 1 healthy pods and has 1 currently"}])
    );
    let kept = pods.get("web-0").await.expect("still there");
    assert!(kept.metadata.deletion_timestamp.is_none());
    // kube-client surfaces it as an API error with the code.
    let err = pods
        .evict("web-0", &EvictParams::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("disruption budget"), "{err}");
}

#[tokio::test]
async fn an_allowed_eviction_spends_the_budget() {
    let (env, pods, budgets) = start().await;
    for name in ["web-0", "web-1", "web-2"] {
        running(&pods, pod(name, "web", Some("node-a")), true).await;
    }
    create_budget(&budgets, budget("web", "web", json!({"minAvailable": 2}))).await;
    assert_eq!(allowed(&budgets, "web").await, 1);

    // A dry run spends nothing and deletes nothing.
    let (code, _) = post(
        &no_retry(&env),
        &format!("{EVICT}/web-0/eviction?dryRun=All"),
        &eviction("web-0"),
    )
    .await;
    assert_eq!(code, 201);
    assert!(
        pods.get("web-0")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );
    assert_eq!(allowed(&budgets, "web").await, 1);

    let (code, body) = evict(&env, "web-0").await;
    assert_eq!(code, 201, "{body}");
    // Bound to a node: terminating, for the kubelet to finish.
    let evicted = pods.get("web-0").await.expect("kept while terminating");
    assert!(evicted.metadata.deletion_timestamp.is_some());
    let status = budget_status(&budgets, "web").await;
    assert_eq!(status.disruptions_allowed, 0);
    assert_eq!(status.current_healthy, 2);

    let (code, body) = evict(&env, "web-1").await;
    assert_eq!(code, 429, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "The disruption budget web needs 2 healthy pods and has 2 currently"
    );
}

#[tokio::test]
async fn unready_pods_and_budgets_counting_controllers() {
    let (env, pods, budgets) = start().await;
    for name in ["db-0", "db-1"] {
        running(&pods, pod(name, "db", Some("node-a")), true).await;
    }
    create_budget(&budgets, budget("db", "db", json!({"maxUnavailable": 1}))).await;
    // maxUnavailable counts controllers' scale: these Pods have none, so none are expected.
    let status = budget_status(&budgets, "db").await;
    assert_eq!((status.expected_pods, status.disruptions_allowed), (0, 0));

    // An unready Pod goes without spending an exhausted budget when the policy says so.
    let mut always = budget("lax", "lax", json!({"minAvailable": 1}));
    always.spec.as_mut().unwrap().unhealthy_pod_eviction_policy = Some("AlwaysAllow".into());
    budgets
        .create(&PostParams::default(), &always)
        .await
        .expect("creates");
    running(&pods, pod("lax-0", "lax", None), false).await;
    assert_eq!(allowed(&budgets, "lax").await, 0);
    let (code, body) = evict(&env, "lax-0").await;
    assert_eq!(code, 201, "{body}");
    assert!(pods.get_opt("lax-0").await.unwrap().is_none());

    // The default policy (IfHealthyBudget) keeps an unready Pod while the budget is not met.
    create_budget(
        &budgets,
        budget("strict", "strict", json!({"minAvailable": 1})),
    )
    .await;
    running(&pods, pod("strict-0", "strict", None), false).await;
    let (code, body) = evict(&env, "strict-0").await;
    assert_eq!(code, 429, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "The disruption budget strict needs 1 healthy pods and has 0 currently"
    );
}

#[tokio::test]
async fn two_budgets_over_one_pod_answer_500_and_terminal_pods_ignore_budgets() {
    let (env, pods, budgets) = start().await;
    running(&pods, pod("api-0", "api", None), true).await;
    for name in ["one", "two"] {
        create_budget(&budgets, budget(name, "api", json!({"minAvailable": 0}))).await;
    }
    let (code, body) = evict(&env, "api-0").await;
    assert_eq!(code, 500, "{body}");
    assert_eq!(
        body["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    assert!(body.get("reason").is_none());

    // A Pending Pod is deleted without looking at budgets.
    pods.create(&PostParams::default(), &pod("api-1", "api", None))
        .await
        .expect("creates");
    let (code, _) = evict(&env, "api-1").await;
    assert_eq!(code, 201);
}

#[tokio::test]
async fn max_unavailable_counts_the_scale_of_the_pods_controllers() {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use kube_client::Resource;

    let env = TestEnv::start().await.expect("starts");
    let client = no_retry(&env);
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client, "default");
    let template = json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    });
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }))
    .unwrap();
    let deployment = deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("creates the deployment");
    let mut replica_set: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "web-1"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }))
    .unwrap();
    replica_set.metadata.owner_references =
        Some(vec![deployment.controller_owner_ref(&()).unwrap()]);
    let replica_set = replica_sets
        .create(&PostParams::default(), &replica_set)
        .await
        .expect("creates the replica set");
    for name in ["web-1-a", "web-1-b", "web-1-c"] {
        let mut p = pod(name, "web", Some("node-a"));
        p.metadata.owner_references = Some(vec![replica_set.controller_owner_ref(&()).unwrap()]);
        running(&pods, p, true).await;
    }
    create_budget(
        &budgets,
        budget("web", "web", json!({"maxUnavailable": "50%"})),
    )
    .await;
    // The ReplicaSet belongs to the Deployment: its 4 replicas are expected, 2 may be down.
    let status = budget_status(&budgets, "web").await;
    assert_eq!(
        (
            status.expected_pods,
            status.desired_healthy,
            status.current_healthy,
            status.disruptions_allowed
        ),
        (4, 2, 3, 1)
    );
    let (code, _) = evict(&env, "web-1-a").await;
    assert_eq!(code, 201);
    let (code, body) = evict(&env, "web-1-b").await;
    assert_eq!(code, 429, "{body}");

    // A Pod whose controller cannot be found fails the sync: nothing may be disrupted.
    let mut stray = pod("stray", "web", Some("node-a"));
    let mut reference = replica_set.controller_owner_ref(&()).unwrap();
    reference.name = "gone".into();
    reference.uid = "00000000-0000-0000-0000-000000000000".into();
    stray.metadata.owner_references = Some(vec![reference]);
    running(&pods, stray, true).await;
    let status = budget_status(&budgets, "web").await;
    assert_eq!(status.disruptions_allowed, 0);
    let condition = &status.conditions.unwrap()[0];
    assert_eq!(
        (condition.reason.as_str(), condition.message.as_str()),
        ("SyncFailed", "found no controllers for pod \"stray\"")
    );
}

#[tokio::test]
async fn evictions_go_through_admission_webhooks_as_evictions() {
    use super::admission_support::{Webhook, core_rules, deny, install_one};

    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(no_retry(&env), "default");
    running(&pods, pod("web-0", "web", None), true).await;
    let hook = Webhook::start(|_| deny(403, "evictions are paused")).await;
    let rules = core_rules(&["CREATE"], &["pods/eviction"]);
    install_one(&env, "Validating", &hook, rules).await;
    let (code, body) = evict(&env, "web-0").await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"v.example.com\" denied the request: evictions are paused"
    );
    assert!(pods.get_opt("web-0").await.unwrap().is_some());
    let calls = hook.calls();
    let request = &calls[0];
    assert_eq!(
        request["kind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
    assert_eq!(request["resource"]["resource"], "pods");
    assert_eq!(request["subResource"], "eviction");
    assert_eq!(request["object"]["kind"], "Eviction");
    assert_eq!(request["operation"], "CREATE");
}
