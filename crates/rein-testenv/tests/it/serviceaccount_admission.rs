//! The ServiceAccount, Priority and DefaultTolerationSeconds admission plugins and the
//! ServiceAccount and root-CA controllers, over real HTTP: Pods come back as a real cluster
//! stores them, and every namespace has its `default` ServiceAccount and `kube-root-ca.crt`.

use base64::Engine as _;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use kube_client::api::{Api, DeleteParams, PostParams};
use rein_testenv::{AdmissionPlugin, TestEnv};
use serde_json::{Value, json};

use super::quota::{forbidden, namespace, pod, raw};

async fn create(pods: &Api<Pod>, pod: Value) -> Value {
    let pod: Pod = serde_json::from_value(pod).expect("pod");
    let created = pods
        .create(&PostParams::default(), &pod)
        .await
        .expect("creates the pod");
    serde_json::to_value(created).expect("json")
}

#[tokio::test]
async fn pods_run_as_default_with_the_projected_token_volume() {
    let env = TestEnv::start().await.expect("server starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let created = create(
        &pods,
        json!({
            "metadata": {"name": "web"},
            "spec": {
                "initContainers": [{"name": "init", "image": "busybox:1.36"}],
                "containers": [
                    {"name": "app", "image": "nginx:1.27"},
                    {"name": "own", "image": "nginx:1.27", "volumeMounts": [
                        {"name": "mine", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
                    ]},
                ],
                "volumes": [{"name": "mine", "emptyDir": {}}],
            },
        }),
    )
    .await;
    let spec = &created["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    let volumes = spec["volumes"].as_array().expect("volumes");
    assert_eq!(volumes.len(), 2, "{volumes:?}");
    let name = volumes[1]["name"].as_str().expect("name");
    let suffix = name.strip_prefix("kube-api-access-").expect("prefix");
    assert_eq!(suffix.len(), 5, "{name}");
    assert_eq!(
        volumes[1]["projected"],
        json!({
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        })
    );
    let mount = json!({
        "name": name, "readOnly": true,
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
    });
    assert_eq!(spec["initContainers"][0]["volumeMounts"], json!([mount]));
    assert_eq!(spec["containers"][0]["volumeMounts"], json!([mount]));
    // A container with its own mount at the path keeps it alone.
    assert_eq!(
        spec["containers"][1]["volumeMounts"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(spec["containers"][1]["volumeMounts"][0]["name"], "mine");
}

#[tokio::test]
async fn automount_can_be_turned_off_by_the_pod_or_its_account() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = create(
        &pods,
        json!({"metadata": {"name": "no-token"}, "spec": {
            "automountServiceAccountToken": false,
            "containers": [{"name": "app", "image": "nginx:1.27"}],
        }}),
    )
    .await;
    assert!(created["spec"].get("volumes").is_none(), "{created}");
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let account = serde_json::from_value(json!({
        "metadata": {"name": "robot"},
        "automountServiceAccountToken": false,
        "imagePullSecrets": [{"name": "registry"}],
    }))
    .expect("account");
    accounts
        .create(&PostParams::default(), &account)
        .await
        .expect("creates the account");
    let created = create(
        &pods,
        json!({"metadata": {"name": "robot-pod"}, "spec": {
            "serviceAccountName": "robot",
            "containers": [{"name": "app", "image": "nginx:1.27"}],
        }}),
    )
    .await;
    assert!(created["spec"].get("volumes").is_none(), "{created}");
    assert_eq!(
        created["spec"]["imagePullSecrets"],
        json!([{"name": "registry"}])
    );
}

#[tokio::test]
async fn a_pod_naming_a_missing_account_is_refused() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    let (code, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/pods",
        json!({"metadata": {"generateName": "ghost-"}, "spec": {
            "serviceAccountName": "ghost",
            "containers": [{"name": "app", "image": "nginx:1.27"}],
        }}),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "pods \"ghost-\" is forbidden: error looking up service account default/ghost: \
         serviceaccount \"ghost\" not found"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    assert!(
        pods.list(&Default::default())
            .await
            .expect("lists")
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn every_namespace_has_its_default_account_and_root_ca() {
    let env = TestEnv::builder()
        .tls(true)
        .start()
        .await
        .expect("server starts");
    let client = env.client();
    namespace(&client, "fresh").await;
    let kubeconfig = serde_json::to_value(env.kubeconfig()).expect("json");
    let ca = kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .expect("ca data");
    let ca = base64::engine::general_purpose::STANDARD
        .decode(ca)
        .expect("base64");
    let ca = String::from_utf8(ca).expect("pem");
    for ns in [
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "fresh",
    ] {
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
        accounts.get("default").await.expect("the default account");
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let root = cms.get("kube-root-ca.crt").await.expect("the root CA");
        assert_eq!(root.data.expect("data").get("ca.crt"), Some(&ca), "{ns}");
    }
    // Deleted, the default account comes back, as the ServiceAccount controller recreates it.
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "fresh");
    let before = accounts.get("default").await.expect("gets");
    accounts
        .delete("default", &DeleteParams::default())
        .await
        .expect("deletes");
    let after = accounts.get("default").await.expect("recreated");
    assert_ne!(before.metadata.uid, after.metadata.uid);
}

#[tokio::test]
async fn priority_classes_resolve_into_pod_priority() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = create(
        &pods,
        serde_json::to_value(pod("plain", json!({}))).expect("json"),
    )
    .await;
    assert_eq!(created["spec"]["priority"], 0);
    assert!(created["spec"].get("priorityClassName").is_none());

    let mut critical = serde_json::to_value(pod("critical", json!({}))).expect("json");
    critical["spec"]["priorityClassName"] = json!("system-cluster-critical");
    let created = create(&pods, critical).await;
    assert_eq!(created["spec"]["priority"], 2_000_000_000);
    assert_eq!(created["spec"]["preemptionPolicy"], "PreemptLowerPriority");

    let classes = "/apis/scheduling.k8s.io/v1/priorityclasses";
    let (code, _) = raw(
        &client,
        "POST",
        classes,
        json!({"metadata": {"name": "normal"}, "value": 1000, "globalDefault": true}),
    )
    .await;
    assert_eq!(code, 201);
    let created = create(
        &pods,
        serde_json::to_value(pod("defaulted", json!({}))).expect("json"),
    )
    .await;
    assert_eq!(created["spec"]["priorityClassName"], "normal");
    assert_eq!(created["spec"]["priority"], 1000);

    let (code, body) = raw(
        &client,
        "POST",
        classes,
        json!({"metadata": {"name": "other"}, "value": 5, "globalDefault": true}),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "priorityclasses.scheduling.k8s.io \"other\" is forbidden: PriorityClass normal is \
         already marked as default. Only one default can exist"
    );

    let mut unknown = pod("unknown", json!({}));
    unknown.spec.as_mut().expect("spec").priority_class_name = Some("nope".into());
    let message = forbidden(pods.create(&PostParams::default(), &unknown).await);
    assert_eq!(
        message,
        "pods \"unknown\" is forbidden: no PriorityClass with name nope was found"
    );
    let mut forced = pod("forced", json!({}));
    forced.spec.as_mut().expect("spec").priority = Some(7);
    let message = forbidden(pods.create(&PostParams::default(), &forced).await);
    assert_eq!(
        message,
        "pods \"forced\" is forbidden: the integer value of priority (7) must not be provided \
         in pod spec; priority admission controller computed 1000 from the given \
         PriorityClass name"
    );
}

#[tokio::test]
async fn pods_tolerate_not_ready_and_unreachable_nodes_for_five_minutes() {
    let env = TestEnv::start().await.expect("server starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let created = create(
        &pods,
        serde_json::to_value(pod("plain", json!({}))).expect("json"),
    )
    .await;
    assert_eq!(
        created["spec"]["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ])
    );
    let mut own = serde_json::to_value(pod("own", json!({}))).expect("json");
    own["spec"]["tolerations"] = json!([
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
    ]);
    let created = create(&pods, own).await;
    let tolerations = created["spec"]["tolerations"]
        .as_array()
        .expect("tolerations");
    assert_eq!(tolerations.len(), 2);
    assert_eq!(tolerations[0]["tolerationSeconds"], 10);
    assert_eq!(tolerations[1]["key"], "node.kubernetes.io/unreachable");
}

#[tokio::test]
async fn mutating_plugins_can_be_turned_off() {
    let env = TestEnv::builder()
        .admission_plugin(AdmissionPlugin::ServiceAccount, false)
        .admission_plugin(AdmissionPlugin::Priority, false)
        .admission_plugin(AdmissionPlugin::DefaultTolerationSeconds, false)
        .start()
        .await
        .expect("server starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let mut sent = serde_json::to_value(pod("as-sent", json!({}))).expect("json");
    sent["spec"]["serviceAccountName"] = json!("missing-is-fine");
    let created = create(&pods, sent).await;
    let spec = &created["spec"];
    assert_eq!(spec["serviceAccountName"], "missing-is-fine");
    for field in ["volumes", "priority", "tolerations"] {
        assert!(spec.get(field).is_none(), "{field}: {spec}");
    }
}

/// A mutating webhook that adds a container makes kube-apiserver run the built-in mutating
/// plugins once more (its reinvocation): the new container gets the token mount too.
#[tokio::test]
async fn a_container_a_webhook_adds_gets_the_token_mount() {
    use crate::admission_support::{Webhook, core_rules, entry, install, patch};
    let env = TestEnv::start().await.expect("starts");
    let hook = Webhook::start(|_| {
        patch(json!([{"op": "add", "path": "/spec/containers/-",
                      "value": {"name": "sidecar", "image": "proxy:1"}}]))
    })
    .await;
    install(
        &env,
        "Mutating",
        "sidecar",
        vec![entry(
            "sidecar.example.com",
            &hook,
            "/m",
            core_rules(&["CREATE"], &["pods"]),
            json!({}),
        )],
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let created = create(
        &pods,
        serde_json::to_value(pod("p", json!({}))).expect("json"),
    )
    .await;
    let containers = created["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 2, "{containers:?}");
    let volume = created["spec"]["volumes"][0]["name"]
        .as_str()
        .expect("volume");
    for container in containers {
        assert_eq!(
            container["volumeMounts"],
            json!([{"name": volume, "readOnly": true,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]),
            "{}",
            container["name"]
        );
    }
    assert_eq!(created["spec"]["volumes"].as_array().map(Vec::len), Some(1));
}
