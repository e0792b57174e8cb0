//! Differences a sweep with the official Kubernetes Python client found, each pinned over real
//! HTTP against what kube-apiserver v1.33 answers, and the sweep itself
//! (`tests/python/sweep.py`), run when `python3` can import `kubernetes`.

use std::path::Path;
use std::process::Command;

use kube_client::Client;
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::http_support;
use super::kubectl::Server;

/// An answer: status code, `Content-Type`, body as text and as JSON (`Null` if not JSON).
struct Answer {
    code: u16,
    content_type: String,
    text: String,
    body: Value,
}

async fn send(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Option<Value>,
) -> Answer {
    let answer = http_support::send_json(client, method, path, content_type, body.as_ref()).await;
    Answer {
        text: answer.text(),
        body: answer.json(),
        code: answer.code,
        content_type: answer.content_type,
    }
}

async fn post(client: &Client, path: &str, body: Value) -> Answer {
    send(client, "POST", path, "application/json", Some(body)).await
}

async fn apply(client: &Client, path: &str, body: Value) -> Answer {
    send(
        client,
        "PATCH",
        path,
        "application/apply-patch+yaml",
        Some(body),
    )
    .await
}

const SERVICES: &str = "/api/v1/namespaces/default/services";
const PODS: &str = "/api/v1/namespaces/default/pods";
const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";

/// The `fieldsV1` of `manager`'s entry.
fn fields_of<'a>(obj: &'a Value, manager: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|entries| entries.iter().find(|e| e["manager"] == manager))
        .map(|e| &e["fieldsV1"])
        .unwrap_or(&Value::Null)
}

/// A port whose manifest leaves out `protocol` is the same list-map element as the stored,
/// defaulted one (`protocol: TCP` is the key field's schema default), so applying the manifest
/// a plain create sent changes nothing; rein-testenv used to add a second port (422
/// `Duplicate value: "http"`) or change a Pod's spec (422 Forbidden).
#[tokio::test]
async fn apply_after_create_matches_ports_by_their_default_protocol() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}});
    let created = post(&client, SERVICES, service.clone()).await;
    assert_eq!(created.code, 201, "{}", created.text);
    let applied = apply(
        &client,
        &format!("{SERVICES}/web?fieldManager=sweep"),
        service,
    )
    .await;
    assert_eq!(applied.code, 200, "{}", applied.text);
    assert_eq!(
        applied.body["spec"]["ports"],
        json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}])
    );
    // The applier owns the element under its full key, without owning `protocol` itself.
    let port = &fields_of(&applied.body, "sweep")["f:spec"]["f:ports"]["k:{\"port\":80,\"protocol\":\"TCP\"}"];
    assert_eq!(
        port,
        &json!({".": {}, "f:name": {}, "f:port": {}, "f:targetPort": {}}),
        "{}",
        applied.body["metadata"]["managedFields"]
    );

    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                 "ports": [{"containerPort": 80}]}]}});
    let created = post(&client, PODS, pod.clone()).await;
    assert_eq!(created.code, 201, "{}", created.text);
    let applied = apply(&client, &format!("{PODS}/p?fieldManager=sweep"), pod).await;
    assert_eq!(applied.code, 200, "{}", applied.text);
    assert_eq!(
        applied.body["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    assert_eq!(
        applied.body["spec"], created.body["spec"],
        "the spec is unchanged"
    );
}

/// Apply conflicts name their managers as kube's `printManager` does: an applier by its name
/// alone, an updater with ` using <apiVersion>`; several managers are listed in the order of
/// their identities.
#[tokio::test]
async fn apply_conflicts_name_managers_as_kube_apiserver_does() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let path = format!("{CONFIG_MAPS}/c");
    let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data});
    let first = apply(
        &client,
        &format!("{path}?fieldManager=alice"),
        cm(json!({"a": "1"})),
    )
    .await;
    assert_eq!(first.code, 201, "{}", first.text);
    let clash = apply(
        &client,
        &format!("{path}?fieldManager=bob"),
        cm(json!({"a": "2"})),
    )
    .await;
    assert_eq!(clash.code, 409, "{}", clash.text);
    assert_eq!(
        clash.body["message"],
        "Apply failed with 1 conflict: conflict with \"alice\": .data.a"
    );
    assert_eq!(clash.body["reason"], "Conflict");
    assert_eq!(
        clash.body["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"alice\"",
                "field": ".data.a"}])
    );

    let updated = send(
        &client,
        "PATCH",
        &format!("{path}?fieldManager=zed"),
        "application/merge-patch+json",
        Some(json!({"data": {"b": "1"}})),
    )
    .await;
    assert_eq!(updated.code, 200, "{}", updated.text);
    let both = apply(
        &client,
        &format!("{path}?fieldManager=bob"),
        cm(json!({"a": "2", "b": "2"})),
    )
    .await;
    assert_eq!(both.code, 409, "{}", both.text);
    assert_eq!(
        both.body["message"],
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .data.a\n\
         conflicts with \"zed\" using v1:\n- .data.b"
    );
    assert_eq!(
        both.body["details"]["causes"][1],
        json!({"reason": "FieldManagerConflict", "message": "conflict with \"zed\" using v1",
               "field": ".data.b"})
    );
}

/// A path outside kube-apiserver's go-restful container (an unknown group, a CRD group's
/// unknown resource) falls through to Go's `http.NotFound`: plain text, not a `Status`.
/// Paths under `/api` and the built-in groups answer the `Status`.
#[tokio::test]
async fn unserved_paths_answer_404_as_kube_apiserver_routes_them() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    for path in [
        "/apis/nothere.example.com",
        "/apis/nothere.example.com/v1",
        "/apis/nothere.example.com/v1/namespaces/default/things",
        "/apis/nothere.example.com/v1/namespaces/default/things/x",
        "/nothing/here",
    ] {
        let answer = send(&client, "GET", path, "application/json", None).await;
        assert_eq!(
            (
                answer.code,
                answer.content_type.as_str(),
                answer.text.as_str()
            ),
            (404, "text/plain; charset=utf-8", "404 page not found\n"),
            "{path}"
        );
    }
    for path in [
        "/api/v1/namespaces/default/things",
        "/api/v2",
        "/apis/apps/v1/namespaces/default/things",
        "/apis/apps/v9",
    ] {
        let answer = send(&client, "GET", path, "application/json", None).await;
        assert_eq!(answer.code, 404, "{path}");
        assert_eq!(
            answer.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "the server could not find the requested resource",
                   "reason": "NotFound", "details": {}, "code": 404}),
            "{path}"
        );
    }
}

/// NetworkPolicies get `policyTypes` (Ingress, plus Egress with egress rules) and their ports
/// `protocol: TCP`; an IngressClass's parameters get `scope: Cluster`.
#[tokio::test]
async fn network_policies_and_ingress_classes_get_kube_defaults() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let policies = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies";
    let plain = post(
        &client,
        policies,
        json!({"metadata": {"name": "in"}, "spec": {"podSelector": {},
               "ingress": [{"ports": [{"port": 80}]}]}}),
    )
    .await;
    assert_eq!(plain.code, 201, "{}", plain.text);
    assert_eq!(plain.body["spec"]["policyTypes"], json!(["Ingress"]));
    assert_eq!(
        plain.body["spec"]["ingress"][0]["ports"],
        json!([{"port": 80, "protocol": "TCP"}])
    );
    let egress = post(
        &client,
        policies,
        json!({"metadata": {"name": "out"}, "spec": {"podSelector": {}, "egress": [{}]}}),
    )
    .await;
    assert_eq!(
        egress.body["spec"]["policyTypes"],
        json!(["Ingress", "Egress"])
    );
    let explicit = post(
        &client,
        policies,
        json!({"metadata": {"name": "only-out"},
               "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}),
    )
    .await;
    assert_eq!(explicit.body["spec"]["policyTypes"], json!(["Egress"]));

    let class = post(
        &client,
        "/apis/networking.k8s.io/v1/ingressclasses",
        json!({"metadata": {"name": "nginx"}, "spec": {"controller": "example.com/ingress",
               "parameters": {"apiGroup": "example.com", "kind": "Params", "name": "p"}}}),
    )
    .await;
    assert_eq!(class.code, 201, "{}", class.text);
    assert_eq!(class.body["spec"]["parameters"]["scope"], "Cluster");
}

/// Ingress rule and TLS hosts are DNS names (wildcards as `*.` and a subdomain), rule hosts not
/// IP addresses, as `validateIngressRules` and `validateIngressTLS` check them.
#[tokio::test]
async fn ingress_hosts_are_validated() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let ingresses = "/apis/networking.k8s.io/v1/namespaces/default/ingresses";
    let backend = json!({"service": {"name": "web", "port": {"number": 80}}});
    let ingress = |name: &str, host: &str, tls_host: &str| {
        json!({"metadata": {"name": name}, "spec": {
            "tls": [{"hosts": [tls_host], "secretName": "tls"}],
            "rules": [{"host": host, "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": backend.clone()}]}}]}})
    };
    let ok = post(
        &client,
        ingresses,
        ingress("ok", "*.example.com", "www.example.com"),
    )
    .await;
    assert_eq!(ok.code, 201, "{}", ok.text);
    let refused = post(&client, ingresses, ingress("bad", "*.*.bad", "Bad_Host")).await;
    assert_eq!(refused.code, 422, "{}", refused.text);
    assert_eq!(
        refused.body["message"],
        "Ingress.networking.k8s.io \"bad\" is invalid: [spec.rules[0].host: Invalid value: \
         \"*.*.bad\": a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS \
         subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end \
         with an alphanumeric character (e.g. '*.example.com', regex used for validation is \
         '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), \
         spec.tls[0].hosts[0]: Invalid value: \"Bad_Host\": a lowercase RFC 1123 subdomain must \
         consist of lower case alphanumeric characters, '-' or '.', and must start and end with \
         an alphanumeric character (e.g. 'example.com', regex used for validation is \
         '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')]"
    );
    let fields: Vec<&str> = refused.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| c["field"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(fields, ["spec.rules[0].host", "spec.tls[0].hosts[0]"]);
    let ip = post(&client, ingresses, ingress("ip", "10.0.0.1", "example.com")).await;
    assert_eq!(ip.code, 422, "{}", ip.text);
    assert_eq!(
        ip.body["details"]["causes"][0]["message"],
        "Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address"
    );
}

/// A CronJob's schedule is parsed as robfig/cron's `ParseStandard` parses it (422 with its
/// message), and `TZ=` in it is refused on create: the `timeZone` field is the way.
#[tokio::test]
async fn cron_job_schedules_are_parsed() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let cron_jobs = "/apis/batch/v1/namespaces/default/cronjobs";
    let cron_job = |name: &str, schedule: &str| {
        json!({"metadata": {"name": name}, "spec": {"schedule": schedule, "jobTemplate": {
            "spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                "containers": [{"name": "c", "image": "busybox:1"}]}}}}}})
    };
    for (name, schedule) in [
        ("ok", "*/5 * * * *"),
        ("named", "0 3 * jan-jun MON"),
        ("hourly", "@hourly"),
    ] {
        let ok = post(&client, cron_jobs, cron_job(name, schedule)).await;
        assert_eq!(ok.code, 201, "{schedule}: {}", ok.text);
    }
    for (schedule, problem) in [
        ("nonsense", "expected exactly 5 fields, found 1: [nonsense]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ] {
        let refused = post(&client, cron_jobs, cron_job("bad", schedule)).await;
        assert_eq!(refused.code, 422, "{schedule}: {}", refused.text);
        assert_eq!(
            refused.body["message"],
            format!(
                "CronJob.batch \"bad\" is invalid: spec.schedule: Invalid value: \"{schedule}\": \
                 {problem}"
            )
        );
        assert_eq!(
            refused.body["details"]["causes"][0]["field"],
            "spec.schedule"
        );
    }
    let tz = post(&client, cron_jobs, cron_job("tz", "TZ=UTC 0 0 * * *")).await;
    assert_eq!(tz.code, 422, "{}", tz.text);
    assert_eq!(
        tz.body["details"]["causes"][0]["message"],
        "Invalid value: \"TZ=UTC 0 0 * * *\": cannot use TZ or CRON_TZ in schedule, use \
         timeZone field instead"
    );
}

/// A merge patch that is an array (what the Python client up to 33 sends for a JSON patch
/// through `CustomObjectsApi`) becomes the whole document, which does not decode: 422 on
/// `patch`; `null` or a scalar is json-patch's `ErrBadJSONPatch`, 400.
#[tokio::test]
async fn merge_patches_that_are_not_objects_fail_as_kube_apiserver_fails_them() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let created = post(&client, CONFIG_MAPS, json!({"metadata": {"name": "m"}})).await;
    assert_eq!(created.code, 201, "{}", created.text);
    let merge = |body: Value| {
        send(
            &client,
            "PATCH",
            "/api/v1/namespaces/default/configmaps/m",
            "application/merge-patch+json",
            Some(body),
        )
    };
    let array = merge(json!([{"op": "add", "path": "/data", "value": {}}])).await;
    assert_eq!(
        (array.code, array.body["reason"].as_str()),
        (422, Some("Invalid"))
    );
    assert_eq!(array.body["details"]["causes"][0]["field"], "patch");
    assert!(
        array.body["message"]
            .as_str()
            .is_some_and(|m| m.starts_with(" \"\" is invalid: patch: Invalid value: \"[{")),
        "{}",
        array.body
    );
    for bad in [json!(null), json!("x"), json!(1)] {
        let refused = merge(bad.clone()).await;
        assert_eq!(
            (refused.code, refused.body["message"].as_str()),
            (400, Some("Invalid JSON Patch")),
            "{bad}"
        );
    }
}

/// Storage kinds get kube's defaults: a claim's and a volume's `volumeMode: Filesystem` and
/// `Pending` phase (a volume also its phase's transition time and `Retain`), a
/// StorageClass's `reclaimPolicy: Delete` and `volumeBindingMode: Immediate`.
#[tokio::test]
async fn storage_kinds_get_kube_defaults() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let claim = post(
        &client,
        "/api/v1/namespaces/default/persistentvolumeclaims",
        json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
               "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    assert_eq!(claim.code, 201, "{}", claim.text);
    assert_eq!(claim.body["spec"]["volumeMode"], "Filesystem");
    assert_eq!(claim.body["status"], json!({"phase": "Pending"}));
    let volume = post(
        &client,
        "/api/v1/persistentvolumes",
        json!({"metadata": {"name": "v"}, "spec": {"capacity": {"storage": "1Gi"},
               "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp"}}}),
    )
    .await;
    assert_eq!(volume.code, 201, "{}", volume.text);
    assert_eq!(
        volume.body["spec"]["persistentVolumeReclaimPolicy"],
        "Retain"
    );
    assert_eq!(volume.body["spec"]["volumeMode"], "Filesystem");
    assert_eq!(volume.body["status"]["phase"], "Pending");
    assert_eq!(
        volume.body["status"]["lastPhaseTransitionTime"],
        volume.body["metadata"]["creationTimestamp"]
    );
    let class = post(
        &client,
        "/apis/storage.k8s.io/v1/storageclasses",
        json!({"metadata": {"name": "fast"}, "provisioner": "example.com/disk"}),
    )
    .await;
    assert_eq!(class.code, 201, "{}", class.text);
    assert_eq!(
        (
            &class.body["reclaimPolicy"],
            &class.body["volumeBindingMode"]
        ),
        (&json!("Delete"), &json!("Immediate"))
    );
}

/// Endpoints and EndpointSlice ports get `protocol: TCP` (a slice's also `name: ""`); webhook
/// configurations get admissionregistration/v1's defaults.
#[tokio::test]
async fn endpoints_and_webhook_configurations_get_kube_defaults() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let endpoints = post(
        &client,
        "/api/v1/namespaces/default/endpoints",
        json!({"metadata": {"name": "e"}, "subsets": [{"addresses": [{"ip": "10.0.0.1"}],
               "ports": [{"port": 80}]}]}),
    )
    .await;
    assert_eq!(endpoints.code, 201, "{}", endpoints.text);
    assert_eq!(
        endpoints.body["subsets"][0]["ports"],
        json!([{"port": 80, "protocol": "TCP"}])
    );
    let slice = post(
        &client,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        json!({"metadata": {"name": "s"}, "addressType": "IPv4",
               "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
    )
    .await;
    assert_eq!(slice.code, 201, "{}", slice.text);
    assert_eq!(
        slice.body["ports"],
        json!([{"name": "", "port": 80, "protocol": "TCP"}])
    );
    let hook = json!({"name": "w.example.com", "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": "default", "name": "hooks"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}]});
    let mutating = post(
        &client,
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        json!({"metadata": {"name": "m"}, "webhooks": [hook]}),
    )
    .await;
    assert_eq!(mutating.code, 201, "{}", mutating.text);
    let webhook = &mutating.body["webhooks"][0];
    assert_eq!(
        [
            &webhook["failurePolicy"],
            &webhook["matchPolicy"],
            &webhook["namespaceSelector"],
            &webhook["objectSelector"],
            &webhook["timeoutSeconds"],
            &webhook["reinvocationPolicy"],
            &webhook["rules"][0]["scope"],
            &webhook["clientConfig"]["service"]["port"],
        ],
        [
            &json!("Fail"),
            &json!("Equivalent"),
            &json!({}),
            &json!({}),
            &json!(10),
            &json!("Never"),
            &json!("*"),
            &json!(443),
        ]
    );
}

/// autoscaling/v2 HorizontalPodAutoscalers get `minReplicas: 1`, a CPU target of 80% when no
/// metric is given, and the unset rules of a given `behavior`.
#[tokio::test]
async fn horizontal_pod_autoscalers_get_kube_defaults() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let hpa = post(
        &client,
        "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "h"},
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                           "name": "d"},
                        "maxReplicas": 5,
                        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
    )
    .await;
    assert_eq!(hpa.code, 201, "{}", hpa.text);
    assert_eq!(hpa.body["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa.body["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    assert_eq!(
        hpa.body["spec"]["behavior"],
        json!({
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}]},
            "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                {"type": "Percent", "value": 100, "periodSeconds": 15}]}})
    );
}

/// `metav1.MicroTime` parses with the layout `2006-01-02T15:04:05.000000Z07:00`: six
/// fractional digits exactly (Python's `datetime.isoformat()` leaves them out when the
/// microsecond is 0).
#[tokio::test]
async fn micro_time_needs_six_fractional_digits() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = |name: &str, renew: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": name}, "spec": {"renewTime": renew}})
    };
    for (renew, rest, layout) in [
        ("2026-01-02T03:04:05Z", "Z", ".000000"),
        ("2026-01-02T03:04:05.5Z", ".5Z", ".000000"),
        ("2026-01-02T03:04:05.1234567Z", "7Z", "Z07:00"),
    ] {
        let refused = post(&client, leases, lease("l", renew)).await;
        assert_eq!(refused.code, 400, "{renew}: {}", refused.text);
        assert_eq!(refused.body["reason"], "BadRequest");
        assert_eq!(
            refused.body["message"],
            format!(
                "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"{renew}\" \
                 as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"{rest}\" as \"{layout}\""
            )
        );
    }
    let ok = post(
        &client,
        leases,
        lease("l", "2026-01-02T05:04:05.000001+02:00"),
    )
    .await;
    assert_eq!(ok.code, 201, "{}", ok.text);
    assert_eq!(ok.body["spec"]["renewTime"], "2026-01-02T03:04:05.000001Z");
    // A merge patch whose result does not decode is a 422 on `patch`.
    let patched = send(
        &client,
        "PATCH",
        &format!("{leases}/l"),
        "application/merge-patch+json",
        Some(json!({"spec": {"renewTime": "2026-01-02T03:04:05Z"}})),
    )
    .await;
    assert_eq!(patched.code, 422, "{}", patched.text);
}

/// The Python client sweep (`tests/python/sweep.py`) against the `rein-apiserver` binary.
/// It needs `python3` with the `kubernetes` package (`pip install kubernetes`; another
/// interpreter through `REIN_PYTHON`); without them it is skipped with a message.
#[test]
fn python_client_sweep() {
    let python = std::env::var("REIN_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let importable = Command::new(&python)
        .args(["-c", "import kubernetes"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !importable {
        eprintln!(
            "skipping python_client_sweep: `{python} -c 'import kubernetes'` failed \
             (pip install kubernetes, or set REIN_PYTHON to an interpreter that has it)"
        );
        return;
    }
    let server = Server::start();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sweep.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg("--kubeconfig")
        .arg(server.kubeconfig())
        .output()
        .expect("running the sweep");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the Python client sweep failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
