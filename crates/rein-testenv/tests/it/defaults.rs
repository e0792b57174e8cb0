//! Per-kind defaulting: objects read back carry kube-apiserver's defaults, and a no-op update
//! from a client that omits them changes nothing (no new resourceVersion or generation).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube_client::api::{Api, DynamicObject, PostParams};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

async fn create<K>(api: &Api<K>, body: Value) -> Value
where
    K: kube_client::Resource
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(body).expect("valid object");
    let created = api
        .create(&PostParams::default(), &obj)
        .await
        .expect("creates");
    serde_json::to_value(created).expect("serialises")
}

#[tokio::test]
async fn pods_and_workloads_get_their_defaults() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let pod = create(
        &pods,
        json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "registry:5000/app:1.2", "imagePullPolicy": "Never"},
        ]}}),
    )
    .await;
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["securityContext"], json!({}));
    let a = &spec["containers"][0];
    assert_eq!(a["imagePullPolicy"], "Always");
    assert_eq!(a["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(a["terminationMessagePolicy"], "File");
    assert_eq!(a["ports"][0]["protocol"], "TCP");
    assert_eq!(spec["containers"][1]["imagePullPolicy"], "Never", "kept");

    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let deployment = create(
        &deployments,
        json!({"metadata": {"name": "d"}, "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}},
        }}),
    )
    .await;
    let spec = &deployment["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
    );
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Always");
    assert_eq!(
        spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );

    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let job = create(
        &jobs,
        json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    let spec = &job["spec"];
    assert_eq!(spec["backoffLimit"], 6);
    assert_eq!(spec["completions"], 1);
    assert_eq!(spec["parallelism"], 1);
    assert_eq!(spec["completionMode"], "NonIndexed");
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");

    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let secret = create(&secrets, json!({"metadata": {"name": "s"}})).await;
    assert_eq!(secret["type"], "Opaque");
}

#[tokio::test]
async fn services_get_a_cluster_ip_that_updates_keep() {
    let env = TestEnv::start().await.expect("starts");
    let services: Api<Service> = Api::namespaced(env.client(), "default");
    let body = json!({"metadata": {"name": "web"}, "spec": {
        "selector": {"app": "web"}, "ports": [{"port": 80}]}});
    let first = create(&services, body.clone()).await;
    let spec = &first["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(
        spec["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );
    let ip = spec["clusterIP"]
        .as_str()
        .expect("a cluster IP")
        .to_string();
    assert!(ip.starts_with("10.9"), "{ip}");
    let octets: Vec<u8> = ip.split('.').map(|o| o.parse().expect("octet")).collect();
    assert_eq!(octets[0], 10);
    assert!((96..112).contains(&octets[1]), "{ip} is in 10.96.0.0/12");
    assert_eq!(spec["clusterIPs"], json!([ip]));

    let second = create(
        &services,
        json!({"metadata": {"name": "other"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    assert_ne!(second["spec"]["clusterIP"], first["spec"]["clusterIP"]);

    // An update that leaves the allocated fields out keeps them: a no-op.
    let mut update = body;
    update["metadata"]["resourceVersion"] = first["metadata"]["resourceVersion"].clone();
    let update: Service = serde_json::from_value(update).expect("service");
    let replaced = services
        .replace("web", &PostParams::default(), &update)
        .await
        .expect("replaces");
    let replaced = serde_json::to_value(replaced).expect("serialises");
    assert_eq!(replaced["spec"]["clusterIP"], json!(ip));
    assert_eq!(
        replaced["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
}

/// Defaulting happens before change detection: a client that sends the object without the
/// defaulted fields (as kubectl's last-applied or a typed client with `None`s would) makes a
/// no-op, so neither resourceVersion, generation nor managedFields move.
#[tokio::test]
async fn no_op_updates_without_the_defaults_change_nothing() {
    let env = TestEnv::start().await.expect("starts");
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        env.client(),
        "default",
        &kube_client::api::ApiResource::erase::<Deployment>(&()),
    );
    let body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    });
    let obj: DynamicObject = serde_json::from_value(body.clone()).expect("object");
    let created = deployments
        .create(&PostParams::default(), &obj)
        .await
        .expect("creates");
    let mut again = body;
    again["metadata"]["resourceVersion"] = json!(created.metadata.resource_version);
    let again: DynamicObject = serde_json::from_value(again).expect("object");
    let replaced = deployments
        .replace("d", &PostParams::default(), &again)
        .await
        .expect("replaces");
    assert_eq!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(replaced.metadata.generation, Some(1));
    assert_eq!(
        replaced.metadata.managed_fields,
        created.metadata.managed_fields
    );
    assert_eq!(replaced.data["spec"]["replicas"], 1);
}

/// `SetDefaults_PodSpec`/`SetDefaults_Pod`: service links on, requests copied from limits (on
/// Pods only, not on templates).
#[tokio::test]
async fn pods_get_service_links_and_requests_from_limits() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let pod = create(
        &pods,
        json!({"metadata": {"name": "limited"}, "spec": {"containers": [{
            "name": "a", "image": "nginx",
            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m"}},
        }]}}),
    )
    .await;
    assert_eq!(pod["spec"]["enableServiceLinks"], true);
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "100m", "memory": "128Mi"}),
        "missing requests default to the limits; set ones are kept"
    );
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let deployment = create(
        &deployments,
        json!({"metadata": {"name": "templated"}, "spec": {
            "selector": {"matchLabels": {"app": "t"}},
            "template": {"metadata": {"labels": {"app": "t"}}, "spec": {"containers": [{
                "name": "c", "image": "nginx", "resources": {"limits": {"cpu": "1"}}}]}},
        }}),
    )
    .await;
    let template = &deployment["spec"]["template"]["spec"];
    assert_eq!(template["enableServiceLinks"], true);
    assert!(
        template["containers"][0]["resources"]
            .get("requests")
            .is_none(),
        "templates keep their requests unset: {template}"
    );
}

/// NodePort and LoadBalancer Services get a node port per port from 30000–32767, kept across
/// updates that leave it out; a LoadBalancer allocates them unless told not to.
#[tokio::test]
async fn node_port_services_get_node_ports_that_updates_keep() {
    let env = TestEnv::start().await.expect("starts");
    let services: Api<Service> = Api::namespaced(env.client(), "default");
    let created = create(
        &services,
        json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [
            {"name": "http", "port": 80},
            {"name": "fixed", "port": 81, "nodePort": 31999},
        ]}}),
    )
    .await;
    let ports = &created["spec"]["ports"];
    let allocated = ports[0]["nodePort"].as_i64().expect("a node port");
    assert!((30000..=32767).contains(&allocated), "{allocated}");
    assert_eq!(ports[1]["nodePort"], 31999, "a chosen node port is kept");

    let mut update: Service = serde_json::from_value(created.clone()).unwrap();
    for port in update.spec.as_mut().unwrap().ports.as_mut().unwrap() {
        port.node_port = None;
    }
    let updated = services
        .replace("np", &PostParams::default(), &update)
        .await
        .expect("updates");
    let ports = updated.spec.unwrap().ports.unwrap();
    assert_eq!(ports[0].node_port, Some(allocated as i32), "kept on update");
    assert_eq!(ports[1].node_port, Some(31999));

    let lb = create(
        &services,
        json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 443}]}}),
    )
    .await;
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    assert!(lb["spec"]["ports"][0]["nodePort"].as_i64().is_some());
    let no_ports = create(
        &services,
        json!({"metadata": {"name": "lb-bare"}, "spec": {"type": "LoadBalancer",
               "allocateLoadBalancerNodePorts": false, "ports": [{"port": 443}]}}),
    )
    .await;
    assert!(no_ports["spec"]["ports"][0].get("nodePort").is_none());
    let cluster_ip = create(
        &services,
        json!({"metadata": {"name": "plain"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    assert!(cluster_ip["spec"]["ports"][0].get("nodePort").is_none());
}

/// The Job strategy's generated selector: the template carries the Job's name and uid, and
/// the selector matches the uid; a manual selector is left alone.
#[tokio::test]
async fn jobs_get_a_generated_selector() {
    let env = TestEnv::start().await.expect("starts");
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let job = create(
        &jobs,
        json!({"metadata": {"name": "work"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    let uid = job["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        job["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"],
        json!({
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": "work",
            "controller-uid": uid,
            "job-name": "work",
        })
    );
    let manual = create(
        &jobs,
        json!({"metadata": {"name": "manual"}, "spec": {"manualSelector": true,
            "selector": {"matchLabels": {"app": "m"}},
            "template": {"metadata": {"labels": {"app": "m"}}, "spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    assert_eq!(
        manual["spec"]["selector"],
        json!({"matchLabels": {"app": "m"}})
    );
    assert_eq!(
        manual["spec"]["template"]["metadata"]["labels"],
        json!({"app": "m"})
    );
}

/// `metadata.generation` is set and bumped only where kube-apiserver's strategy tracks it
/// (workloads, Pods, custom resources…); a ConfigMap, Secret or Service has none, and an
/// update cannot give it one.
#[tokio::test]
async fn generation_only_where_the_strategy_tracks_it() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm = create(&cms, json!({"metadata": {"name": "c"}, "data": {"a": "1"}})).await;
    assert!(cm["metadata"].get("generation").is_none(), "{cm}");
    let mut changed: ConfigMap = serde_json::from_value(cm).unwrap();
    changed.data = Some([("a".to_owned(), "2".to_owned())].into());
    changed.metadata.generation = Some(7);
    let updated = cms
        .replace("c", &PostParams::default(), &changed)
        .await
        .expect("updates");
    assert_eq!(updated.metadata.generation, None, "requests cannot set it");
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let secret = create(&secrets, json!({"metadata": {"name": "s"}})).await;
    assert!(secret["metadata"].get("generation").is_none());
    let services: Api<Service> = Api::namespaced(env.client(), "default");
    let service = create(
        &services,
        json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    assert!(service["metadata"].get("generation").is_none());
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let deployment = create(
        &deployments,
        json!({"metadata": {"name": "g"}, "spec": {
            "selector": {"matchLabels": {"app": "g"}},
            "template": {"metadata": {"labels": {"app": "g"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}},
        }}),
    )
    .await;
    assert_eq!(deployment["metadata"]["generation"], 1);
}

/// Like every cluster, the server has a `kubernetes` Service in `default` at the first address
/// of the service range, with Endpoints and an EndpointSlice pointing at the API server.
#[tokio::test]
async fn the_kubernetes_service_points_at_the_api_server() {
    use k8s_openapi::api::core::v1::Endpoints;
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let env = TestEnv::start().await.expect("starts");
    let port = env
        .config()
        .cluster_url
        .port_u16()
        .expect("the server's port");
    let services: Api<Service> = Api::namespaced(env.client(), "default");
    let svc = services
        .get("kubernetes")
        .await
        .expect("the kubernetes Service");
    let spec = svc.spec.expect("spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"));
    let ports = spec.ports.expect("ports");
    assert_eq!(
        (ports[0].name.as_deref(), ports[0].port),
        (Some("https"), 443)
    );
    let endpoints: Api<Endpoints> = Api::namespaced(env.client(), "default");
    let ep = endpoints.get("kubernetes").await.expect("its Endpoints");
    let subset = &ep.subsets.expect("subsets")[0];
    assert_eq!(
        subset.ports.as_ref().expect("ports")[0].port,
        i32::from(port)
    );
    let slices: Api<EndpointSlice> = Api::namespaced(env.client(), "default");
    let slice = slices.get("kubernetes").await.expect("its EndpointSlice");
    assert_eq!(slice.ports.expect("ports")[0].port, Some(i32::from(port)));
}

/// Quantities are stored in canonical form (as `Quantity` marshals them), and a new Pod's
/// status carries its QoS class.
#[tokio::test]
async fn quantities_are_canonical_and_pods_get_their_qos_class() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let container = |name: &str, resources: Value| json!({"name": name, "image": "nginx:1.27", "resources": resources});
    let guaranteed = create(
        &pods,
        json!({"metadata": {"name": "guaranteed"}, "spec": {"containers": [container(
            "c",
            json!({"limits": {"cpu": 0.5, "memory": "1024Mi", "ephemeral-storage": "2048Ki"}}),
        )]}}),
    )
    .await;
    let resources = &guaranteed["spec"]["containers"][0]["resources"];
    assert_eq!(
        resources["limits"],
        json!({"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "2Mi"})
    );
    assert_eq!(
        resources["requests"], resources["limits"],
        "copied from the limits"
    );
    assert_eq!(guaranteed["status"]["qosClass"], "Guaranteed");

    let burstable = create(
        &pods,
        json!({"metadata": {"name": "burstable"}, "spec": {"containers": [
            container("a", json!({"requests": {"cpu": "1000m"}})),
            container("b", json!({})),
        ]}}),
    )
    .await;
    assert_eq!(
        burstable["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "1"
    );
    assert_eq!(burstable["status"]["qosClass"], "Burstable");

    let unequal = create(
        &pods,
        json!({"metadata": {"name": "unequal"}, "spec": {"containers": [container(
            "c",
            json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}),
        )]}}),
    )
    .await;
    assert_eq!(unequal["status"]["qosClass"], "Burstable");

    let best_effort = create(
        &pods,
        json!({"metadata": {"name": "best-effort"}, "spec": {"containers": [container("c", json!({}))]}}),
    )
    .await;
    assert_eq!(best_effort["status"]["qosClass"], "BestEffort");
}

/// `SetDefaults_Probe`, `SetDefaults_HTTPGetAction`, the volume sources' modes,
/// `SetDefaults_ObjectFieldSelector`, `hostNetwork` host ports and ephemeral containers, as a
/// Pod read back from kube-apiserver carries them.
#[tokio::test]
async fn probes_volumes_and_host_ports_get_their_defaults() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let pod = create(
        &pods,
        json!({"metadata": {"name": "p"}, "spec": {
            "hostNetwork": true,
            "containers": [{
                "name": "a", "image": "nginx:1.27",
                "ports": [{"containerPort": 8080}],
                "livenessProbe": {"httpGet": {"port": 8080}, "periodSeconds": 5},
                "readinessProbe": {"tcpSocket": {"port": 8080}, "failureThreshold": 0},
                "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop"}}},
                "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            }],
            "volumes": [
                {"name": "scratch"},
                {"name": "s", "secret": {"secretName": "s"}},
                {"name": "c", "configMap": {"name": "c", "defaultMode": 256}},
                {"name": "h", "hostPath": {"path": "/tmp"}},
                {"name": "d", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
            ],
        }}),
    )
    .await;
    let container = &pod["spec"]["containers"][0];
    assert_eq!(
        container["livenessProbe"],
        json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
               "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(
        container["readinessProbe"]["failureThreshold"], 3,
        "zero means unset"
    );
    assert_eq!(
        container["lifecycle"]["preStop"]["httpGet"],
        json!({"port": 8080, "path": "/stop", "scheme": "HTTP"})
    );
    assert_eq!(
        container["env"][0]["valueFrom"]["fieldRef"]["apiVersion"],
        "v1"
    );
    assert_eq!(container["ports"][0]["hostPort"], 8080);
    let volumes = &pod["spec"]["volumes"];
    assert_eq!(volumes[0], json!({"name": "scratch", "emptyDir": {}}));
    assert_eq!(volumes[1]["secret"]["defaultMode"], 420);
    assert_eq!(volumes[2]["configMap"]["defaultMode"], 256, "kept");
    assert_eq!(volumes[3]["hostPath"]["type"], "");
    assert_eq!(volumes[4]["downwardAPI"]["defaultMode"], 420);
    assert_eq!(
        volumes[4]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
        "v1"
    );
    assert_eq!(volumes[5]["projected"]["defaultMode"], 420);
    assert_eq!(
        volumes[5]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        3600
    );
}

/// Claims, volumes, NetworkPolicies, RBAC bindings and ClientIP affinity, read back raw.
#[tokio::test]
async fn claims_policies_and_bindings_get_their_defaults() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let post = |path: &'static str, body: Value| {
        let client = client.clone();
        async move {
            let request = http::Request::post(path)
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).expect("serialises"))
                .expect("request");
            client.request::<Value>(request).await.expect("creates")
        }
    };
    let claim = post(
        "/api/v1/namespaces/default/persistentvolumeclaims",
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
               "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
    assert_eq!(claim["status"]["phase"], "Pending");
    let volume = post(
        "/api/v1/persistentvolumes",
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"},
               "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                        "hostPath": {"path": "/data"}}}),
    )
    .await;
    assert_eq!(volume["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(volume["spec"]["volumeMode"], "Filesystem");
    assert_eq!(volume["status"]["phase"], "Pending");
    let policy = post(
        "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": {"name": "n"},
               "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}}),
    )
    .await;
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(policy["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
    let binding = post(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "b"},
               "roleRef": {"kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "User", "name": "jane"},
                            {"kind": "ServiceAccount", "name": "default", "namespace": "default"}]}),
    )
    .await;
    assert_eq!(binding["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(
        binding["subjects"][0]["apiGroup"],
        "rbac.authorization.k8s.io"
    );
    assert_eq!(binding["subjects"][1].get("apiGroup"), None);
    let service = post(
        "/api/v1/namespaces/default/services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
               "spec": {"ports": [{"port": 80}], "sessionAffinity": "ClientIP"}}),
    )
    .await;
    assert_eq!(
        service["spec"]["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 10800}})
    );
}

/// A Node keeps the status it is created with (kube's node strategy lets a kubelet register
/// with its status in one write), with `allocatable` defaulted from `capacity`.
#[tokio::test]
async fn a_node_is_created_with_its_status() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let body = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"capacity": {"cpu": "4", "memory": "8Gi"},
                   "conditions": [{"type": "Ready", "status": "True"}]}});
    let request = http::Request::post("/api/v1/nodes")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).expect("serialises"))
        .expect("request");
    let created: Value = client.request(request).await.expect("creates");
    assert_eq!(
        created["status"]["capacity"],
        json!({"cpu": "4", "memory": "8Gi"})
    );
    assert_eq!(
        created["status"]["allocatable"],
        json!({"cpu": "4", "memory": "8Gi"})
    );
    assert_eq!(created["status"]["conditions"][0]["type"], "Ready");
}
