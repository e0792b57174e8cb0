//! Hostile requests (issue 28's reproductions): each is sent over HTTP, gets kube-apiserver's
//! answer, and leaves the server alive with its data intact. Nothing here may take more than a
//! moment or crash the process; the suite's own time bounds them.

use serde_json::{Value, json};

use crate::crd_support::{create_crd, raw, raw_typed, simple};
use crate::http_support::{send, status_of};
use rein_testenv::TestEnv;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// A ConfigMap `keep` the hostile requests must leave as it is.
async fn with_data() -> (TestEnv, Value) {
    let env = TestEnv::start().await.expect("starts");
    let (code, kept) = raw(
        &env,
        "POST",
        CMS,
        Some(&json!({"metadata": {"name": "keep"}, "data": {"k": "v"}})),
    )
    .await;
    assert_eq!(code, 201, "{kept}");
    (env, kept)
}

/// The server still answers, and `keep` is as it was.
async fn alive_and_intact(env: &TestEnv, kept: &Value) {
    let ready = send(&env.client(), "GET", "/readyz", &[], Vec::new()).await;
    assert_eq!(ready.code, 200, "{}", ready.text());
    let (code, now) = raw(env, "GET", &format!("{CMS}/keep"), None).await;
    assert_eq!(code, 200, "{now}");
    assert_eq!(now["data"], kept["data"]);
    assert_eq!(
        now["metadata"]["resourceVersion"],
        kept["metadata"]["resourceVersion"]
    );
}

/// 100,000 levels of YAML flow mappings took ~38 s of CPU to refuse (quadratic in libyaml);
/// kube refuses them at once with 400. As a create body and as an apply body.
#[tokio::test]
async fn deep_yaml_is_refused_at_once() {
    let (env, kept) = with_data().await;
    let n = 100_000;
    for body in [
        format!("{}x{}", "{a: ".repeat(n), "}".repeat(n)),
        format!("{}x", "- ".repeat(n)),
        format!(
            "metadata: {{name: deep}}\ndata: {}1{}",
            "[".repeat(n),
            "]".repeat(n)
        ),
    ] {
        let create = send(
            &env.client(),
            "POST",
            CMS,
            &[("content-type", "application/yaml")],
            body.clone().into_bytes(),
        )
        .await;
        assert_eq!(create.code, 400, "{}", create.text());
        let apply = send(
            &env.client(),
            "PATCH",
            &format!("{CMS}/keep?fieldManager=m"),
            &[("content-type", "application/apply-patch+yaml")],
            body.into_bytes(),
        )
        .await;
        assert_eq!(apply.code, 400, "{}", apply.text());
    }
    alive_and_intact(&env, &kept).await;
}

/// Two such bodies at once held both of the server's runtime workers, and `/readyz` took
/// 37 s. Now eight at once are refused, and `/readyz` answers while they are sent, each within
/// a deadline far below the old cost (a bound on liveness, not a speed measurement).
#[tokio::test]
async fn deep_yaml_sent_at_once_leaves_the_server_answering() {
    let (env, kept) = with_data().await;
    let n = 100_000;
    let body = format!("{}x{}", "{a: ".repeat(n), "}".repeat(n)).into_bytes();
    let deadline = std::time::Duration::from_secs(10);
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (client, body) = (env.client(), body.clone());
        requests.spawn(async move {
            send(
                &client,
                "POST",
                CMS,
                &[("content-type", "application/yaml")],
                body,
            )
            .await
        });
    }
    let ready = tokio::time::timeout(
        deadline,
        send(&env.client(), "GET", "/readyz", &[], Vec::new()),
    )
    .await
    .expect("/readyz answers while deep bodies are being refused");
    assert_eq!(ready.code, 200, "{}", ready.text());
    let answers = tokio::time::timeout(deadline, requests.join_all())
        .await
        .expect("every deep body is refused within the deadline");
    assert!(answers.iter().all(|a| a.code == 400));
    alive_and_intact(&env, &kept).await;
}

/// kube-apiserver takes at most 10,000 operations in one JSON patch: 413.
#[tokio::test]
async fn json_patch_over_ten_thousand_operations_is_413() {
    let (env, kept) = with_data().await;
    let mut ops = vec![json!({"op": "add", "path": "/t", "value": {}})];
    ops.extend((0..14_000).map(|_| json!({"op": "copy", "from": "/t", "path": "/t/t"})));
    let (code, status) = raw_typed(
        &env,
        "PATCH",
        &format!("{CMS}/keep"),
        Some(&Value::Array(ops)),
        "application/json-patch+json",
    )
    .await;
    assert_eq!(
        status_of(&status),
        (
            413,
            "RequestEntityTooLarge",
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 14001"
        ),
        "{code} {status}"
    );
    alive_and_intact(&env, &kept).await;
}

/// Copies that nest a value into itself overflowed the stack (the process aborted and every
/// object was lost); on a custom resource that keeps unknown fields 9,000 sufficed. Now the
/// patch is refused once it would nest the object deeper than the server can read back.
#[tokio::test]
async fn json_patch_nesting_a_value_into_itself_is_refused() {
    let (env, kept) = with_data().await;
    let (code, crd) = create_crd(&env, &simple("rein.example.com", "gizmos", "Gizmo")).await;
    assert_eq!(code, 201, "{crd}");
    let gizmos = "/apis/rein.example.com/v1/namespaces/default/gizmos";
    let mut created = (0, Value::Null);
    for _ in 0..100 {
        created = raw(
            &env,
            "POST",
            gizmos,
            Some(&json!({"apiVersion": "rein.example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"}})),
        )
        .await;
        if created.0 == 201 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(created.0, 201, "{}", created.1);
    let mut ops = vec![json!({"op": "add", "path": "/t", "value": {}})];
    ops.extend((0..9_000).map(|_| json!({"op": "copy", "from": "/t", "path": "/t/t"})));
    for path in [format!("{gizmos}/g"), format!("{CMS}/keep")] {
        let (code, status) = raw_typed(
            &env,
            "PATCH",
            &path,
            Some(&Value::Array(ops.clone())),
            "application/json-patch+json",
        )
        .await;
        let (status_code, reason, message) = status_of(&status);
        assert_eq!(
            (code, status_code, reason),
            (422, 422, "Invalid"),
            "{status}"
        );
        assert!(message.contains("deeper than 127 levels"), "{message}");
    }
    let (code, g) = raw(&env, "GET", &format!("{gizmos}/g"), None).await;
    assert_eq!(code, 200, "{g}");
    assert!(g.get("t").is_none(), "nothing was written: {g}");
    alive_and_intact(&env, &kept).await;
}

/// 24 copies that double an array would need 16 GiB; kube bounds what copies may add
/// (`JSONPatchMaxCopyBytes`, 3 MiB) and answers 422.
#[tokio::test]
async fn json_patch_copies_that_double_an_array_are_refused() {
    let (env, kept) = with_data().await;
    // The array copied into itself: it doubles with every copy.
    let mut ops = vec![json!({"op": "add", "path": "/a", "value": ["x".repeat(64)]})];
    ops.extend((0..24).map(|_| json!({"op": "copy", "from": "/a", "path": "/a/-"})));
    // The same growth without nesting: the whole object copied into itself, again and again.
    let flat: Vec<Value> =
        std::iter::once(json!({"op": "add", "path": "/a", "value": {"x": "y".repeat(1024)}}))
            .chain((0..40).map(|i| json!({"op": "copy", "from": "/a", "path": format!("/c{i}")})))
            .chain((0..30).map(|i| json!({"op": "copy", "from": "", "path": format!("/d{i}")})))
            .collect();
    for patch in [ops, flat] {
        let (code, status) = raw_typed(
            &env,
            "PATCH",
            &format!("{CMS}/keep"),
            Some(&Value::Array(patch)),
            "application/json-patch+json",
        )
        .await;
        let (_, reason, message) = status_of(&status);
        assert_eq!((code, reason), (422, "Invalid"), "{status}");
        assert!(
            message.contains("accumulated size increase of copy"),
            "{message}"
        );
    }
    alive_and_intact(&env, &kept).await;
}

/// A 100-character name without dots is a valid DNS subdomain (kube caps the whole name at
/// 253, not one label at 63); 254 characters are not.
#[tokio::test]
async fn long_names_are_dns_subdomains() {
    let env = TestEnv::start().await.expect("starts");
    for (len, want) in [(100, 201), (253, 201), (254, 422)] {
        let name = "a".repeat(len);
        let (code, body) = raw(
            &env,
            "POST",
            CMS,
            Some(&json!({"metadata": {"name": name}})),
        )
        .await;
        assert_eq!(code, want, "{len}: {body}");
    }
}

/// 2,000 unauthenticated GETs with a 60 KB query grew the request log by ~120 MB: it is a
/// ring of the latest requests with their paths and queries cut to 2 KiB.
#[tokio::test]
async fn the_request_log_is_bounded() {
    let env = TestEnv::builder()
        .request_log_capacity(100)
        .start()
        .await
        .expect("starts");
    let query = "x".repeat(60_000);
    for _ in 0..300 {
        let answer = send(
            &env.client(),
            "GET",
            &format!("/api/v1/namespaces/default/configmaps?labelSelector=a%3D{query}"),
            &[],
            Vec::new(),
        )
        .await;
        assert!(answer.code < 500, "{}", answer.text());
    }
    let log = env.requests();
    assert_eq!(log.len(), 100);
    assert!(
        log.iter()
            .all(|r| r.query.as_deref().unwrap_or_default().len() <= 2048)
    );
    let ready = send(&env.client(), "GET", "/readyz", &[], Vec::new()).await;
    assert_eq!(ready.code, 200);
    assert_eq!(
        env.requests().last().map(|r| r.path.as_str()),
        Some("/readyz")
    );
}

/// Strategic merge patch directives of the wrong shape are apimachinery's mergepatch errors,
/// which kube-apiserver answers with 400 BadRequest and just their message.
#[tokio::test]
async fn strategic_merge_directives_of_the_wrong_shape_are_400() {
    let env = TestEnv::start().await.expect("starts");
    let pods = "/api/v1/namespaces/default/pods";
    let (code, pod) = raw(
        &env,
        "POST",
        pods,
        Some(&json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})),
    )
    .await;
    assert_eq!(code, 201, "{pod}");
    for (patch, message) in [
        (
            json!({"spec": {"$setElementOrder/containers": "c", "containers": [{"name": "c", "image": "j"}]}}),
            "invalid patch format of setElementOrder list",
        ),
        (
            json!({"metadata": {"$retainKeys": {"a": 1}}}),
            "invalid patch format of retainKeys",
        ),
        (
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}}),
            "invalid patch format of primitive list",
        ),
    ] {
        let (code, status) = raw_typed(
            &env,
            "PATCH",
            &format!("{pods}/p"),
            Some(&patch),
            "application/strategic-merge-patch+json",
        )
        .await;
        assert_eq!(code, 400, "{status}");
        assert_eq!(status_of(&status), (400, "BadRequest", message), "{status}");
    }
    let (_, now) = raw(&env, "GET", &format!("{pods}/p"), None).await;
    assert_eq!(
        now["metadata"]["resourceVersion"],
        pod["metadata"]["resourceVersion"]
    );
}

/// An apply configuration may not carry managedFields (structured-merge-diff's field manager:
/// 400 "metadata.managedFields must be nil"); a fieldManager over 128 bytes or with a
/// non-printable character is refused by `ValidateFieldManager` (422 on the options).
#[tokio::test]
async fn apply_bodies_and_field_managers_are_validated() {
    let (env, kept) = with_data().await;
    let apply = |manager: &str, body: Value| {
        let client = env.client();
        let path = format!("{CMS}/keep?fieldManager={}", url_escape(manager));
        async move {
            send(
                &client,
                "PATCH",
                &path,
                &[("content-type", "application/apply-patch+yaml")],
                body.to_string().into_bytes(),
            )
            .await
        }
    };
    let config = |extra: Value| {
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep"}, "data": {"k": "v"}});
        if let Some(meta) = extra.as_object() {
            for (k, v) in meta {
                cm["metadata"][k] = v.clone();
            }
        }
        cm
    };
    let with_fields = apply(
        "m",
        config(json!({"managedFields": [{"manager": "x", "operation": "Apply"}]})),
    )
    .await;
    assert_eq!(
        status_of(&with_fields.json()),
        (400, "BadRequest", "metadata.managedFields must be nil"),
        "{}",
        with_fields.text()
    );
    let long = apply(&"m".repeat(129), config(json!({}))).await;
    assert_eq!(
        status_of(&long.json()),
        (
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
        ),
        "{}",
        long.text()
    );
    let control = apply("a\u{1}b", config(json!({}))).await;
    assert_eq!(
        status_of(&control.json()),
        (
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"a\\x01b\": invalid character U+0001 (at position 1)"
        ),
        "{}",
        control.text()
    );
    // The same check on a create's options.
    let create = send(
        &env.client(),
        "POST",
        &format!("{CMS}?fieldManager={}", "m".repeat(129)),
        &[("content-type", "application/json")],
        json!({"metadata": {"name": "other"}})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_eq!(create.code, 422, "{}", create.text());
    assert!(
        create.text().contains("CreateOptions.meta.k8s.io"),
        "{}",
        create.text()
    );
    let ok = apply(&"m".repeat(128), config(json!({}))).await;
    assert_eq!(ok.code, 200, "{}", ok.text());
    let (_, now) = raw(&env, "GET", &format!("{CMS}/keep"), None).await;
    assert_eq!(now["data"], kept["data"]);
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// A continue token naming a resourceVersion the server never reached is no page of that
/// version: it waits for it, as a list from such a version does, then answers 504 with the
/// `ResourceVersionTooLarge` cause.
#[tokio::test]
async fn a_continue_token_from_the_future_is_refused() {
    use base64::Engine as _;
    let env = TestEnv::builder()
        .too_large_rv_wait(std::time::Duration::from_millis(20))
        .start()
        .await
        .expect("starts");
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!({"rv": 999_999_999u64, "ns": "default", "name": "a"}).to_string());
    // Without kube-client's retries, which would retry the 504 with backoff.
    let mut config = env.config();
    config.default_retry = false;
    let client = kube_client::Client::try_from(config).expect("client");
    let answer = send(
        &client,
        "GET",
        &format!("{CMS}?limit=1&continue={token}"),
        &[],
        Vec::new(),
    )
    .await;
    let status = answer.json();
    assert_eq!(answer.code, 504, "{status}");
    assert_eq!(status["reason"], "Timeout", "{status}");
    assert_eq!(
        status["details"]["causes"][0]["reason"], "ResourceVersionTooLarge",
        "{status}"
    );
}

/// An object larger than etcd takes in one request (1.5 MiB) is not stored: kube-apiserver
/// retries without managedFields, then passes etcd's "request is too large" on as a 500.
#[tokio::test]
async fn objects_over_the_storage_limit_are_refused() {
    let (env, kept) = with_data().await;
    // 2.5 MiB of data in a ControllerRevision (under the 3 MiB body limit; ConfigMaps stop at
    // 1 MiB of data by their own rule).
    let revision = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "big"}, "revision": 1,
        "data": {"blob": "x".repeat(2_500_000)},
    });
    let (code, status) = raw(
        &env,
        "POST",
        "/apis/apps/v1/namespaces/default/controllerrevisions",
        Some(&revision),
    )
    .await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status_of(&status),
        (500, "", "etcdserver: request is too large")
    );
    let (code, _) = raw(
        &env,
        "GET",
        "/apis/apps/v1/namespaces/default/controllerrevisions/big",
        None,
    )
    .await;
    assert_eq!(code, 404, "nothing was stored");
    alive_and_intact(&env, &kept).await;
}

/// A watch whose client stopped reading held every later event in an unbounded channel; now a
/// watcher more than the watch history behind is dropped (kube's watch cache ends
/// unresponsive watchers), so the server's memory stays bounded while the client sleeps.
#[tokio::test]
async fn a_watcher_that_stopped_reading_is_dropped() {
    let env = TestEnv::builder()
        .watch_history(50)
        .start()
        .await
        .expect("starts");
    let baseline = env.open_watches();
    let stalled = crate::http_support::open(
        &env.client(),
        "GET",
        &format!("{CMS}?watch=true"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(stalled.status(), 200);
    assert_eq!(env.open_watches(), baseline + 1);
    // Far more than the socket and the response channel hold: the watcher falls behind.
    let data = "x".repeat(200_000);
    for i in 0..150 {
        let (code, body) = raw(
            &env,
            "POST",
            CMS,
            Some(&json!({"metadata": {"name": format!("big-{i}")}, "data": {"d": data}})),
        )
        .await;
        assert_eq!(code, 201, "{body}");
    }
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while env.open_watches() > baseline {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stalled watcher is still held: {} watches",
            env.open_watches()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    drop(stalled);
    let ready = send(&env.client(), "GET", "/readyz", &[], Vec::new()).await;
    assert_eq!(ready.code, 200);
}
