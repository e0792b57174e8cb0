//! Admission webhook server over real TLS: defaulter and validator round trips, plain HTTP
//! refused, untrusted clients refused, malformed input answered cleanly.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rein_webhook::{
    AdmissionClient, AdmissionError, AdmissionHandler, AdmissionRequest, AdmissionResponse,
    CustomDefaulter, CustomValidator, GeneratedCertificates, Operation, Warnings, WebhookServer,
    WebhookServerOptions, review_request,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

struct Defaulter;

#[async_trait]
impl CustomDefaulter<ConfigMap> for Defaulter {
    async fn default(&self, cm: &mut ConfigMap) -> Result<(), AdmissionError> {
        let labels = cm.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels
            .entry("app".into())
            .or_insert_with(|| "default".into());
        let data = cm.data.get_or_insert_with(BTreeMap::new);
        if data.contains_key("reject-me") {
            return Err(AdmissionError::denied("defaulting refused"));
        }
        data.entry("mode".into())
            .or_insert_with(|| "standard".into());
        Ok(())
    }
}

struct Validator;

#[async_trait]
impl CustomValidator<ConfigMap> for Validator {
    async fn validate_create(&self, cm: &ConfigMap) -> Result<Warnings, AdmissionError> {
        if cm
            .data
            .as_ref()
            .is_some_and(|d| d.contains_key("forbidden"))
        {
            return Err(AdmissionError::denied("key \"forbidden\" is not allowed")
                .warnings(vec!["see the docs".into()]));
        }
        if cm.metadata.labels.is_none() {
            return Ok(vec!["no labels set".into()]);
        }
        Ok(Vec::new())
    }

    async fn validate_update(
        &self,
        old: &ConfigMap,
        new: &ConfigMap,
    ) -> Result<Warnings, AdmissionError> {
        let get = |cm: &ConfigMap| cm.data.as_ref().and_then(|d| d.get("immutable").cloned());
        if get(old) != get(new) {
            return Err(AdmissionError::invalid("data.immutable cannot change"));
        }
        Ok(Vec::new())
    }

    async fn validate_delete(&self, cm: &ConfigMap) -> Result<Warnings, AdmissionError> {
        let protected = cm
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.get("protected").map(String::as_str) == Some("true"));
        if protected {
            return Err(AdmissionError::denied("protected"));
        }
        Ok(Vec::new())
    }
}

struct Panicker;

#[async_trait]
impl AdmissionHandler for Panicker {
    async fn handle(&self, _req: &AdmissionRequest) -> AdmissionResponse {
        panic!("handler bug");
    }
}

struct Setup {
    server: Arc<WebhookServer>,
    client: AdmissionClient,
    certs: GeneratedCertificates,
    stop: CancellationToken,
}

async fn setup(max_body_bytes: Option<usize>) -> Setup {
    let certs = GeneratedCertificates::generate(&["localhost", "127.0.0.1"]).expect("certs");
    let mut options = WebhookServerOptions {
        bind_address: "127.0.0.1:0".parse().expect("addr"),
        cert: certs.cert_source(),
        ..WebhookServerOptions::default()
    };
    if let Some(max) = max_body_bytes {
        options.max_body_bytes = max;
    }
    let server = Arc::new(WebhookServer::bind(options).await.expect("bind"));
    let mutate = server
        .register_defaulter::<ConfigMap, _>(Defaulter)
        .expect("register defaulter");
    assert_eq!(mutate, "/mutate--v1-configmap");
    let validate = server
        .register_validator::<ConfigMap, _>(Validator)
        .expect("register validator");
    assert_eq!(validate, "/validate--v1-configmap");
    server.register("/panic", Panicker).expect("register");
    let stop = CancellationToken::new();
    let (s, t) = (server.clone(), stop.clone());
    tokio::spawn(async move { s.run(t).await });
    let client =
        AdmissionClient::new(server.local_addr(), "localhost", &certs.ca_pem).expect("client");
    Setup {
        server,
        client,
        certs,
        stop,
    }
}

fn config_map(name: &str, data: &[(&str, &str)], labels: Option<&[(&str, &str)]>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: labels.map(|l| l.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()),
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

fn apply_patch(review: &serde_json::Value, resp: &AdmissionResponse) -> serde_json::Value {
    let mut object = review["request"]["object"].clone();
    let patch: json_patch::Patch =
        serde_json::from_slice(resp.patch.as_deref().expect("a patch")).expect("patch decodes");
    json_patch::patch(&mut object, &patch).expect("patch applies");
    object
}

#[tokio::test]
async fn defaulter_answers_with_a_json_patch_over_tls() {
    let s = setup(None).await;
    let cm = config_map("a", &[("x", "1")], None);
    let review = review_request(Operation::Create, Some(&cm), None).expect("review");
    let resp = s
        .client
        .review("/mutate--v1-configmap", &review)
        .await
        .expect("review");
    assert!(resp.allowed);
    assert_eq!(resp.uid, review["request"]["uid"].as_str().expect("uid"));
    assert_eq!(resp.result.code, 200);
    let defaulted = apply_patch(&review, &resp);
    assert_eq!(defaulted["metadata"]["labels"]["app"], "default");
    assert_eq!(defaulted["data"]["mode"], "standard");
    assert_eq!(defaulted["data"]["x"], "1");

    // Already defaulted: allowed without a patch.
    let done = config_map("b", &[("mode", "custom")], Some(&[("app", "mine")]));
    let review = review_request(Operation::Update, Some(&done), Some(&done)).expect("review");
    let resp = s
        .client
        .review("/mutate--v1-configmap", &review)
        .await
        .expect("review");
    assert!(resp.allowed);
    assert!(resp.patch.is_none());

    // Deletes are allowed untouched.
    let review = review_request(Operation::Delete, None, Some(&cm)).expect("review");
    let resp = s
        .client
        .review("/mutate--v1-configmap", &review)
        .await
        .expect("review");
    assert!(resp.allowed && resp.patch.is_none());

    // A defaulter error denies.
    let bad = config_map("c", &[("reject-me", "1")], None);
    let review = review_request(Operation::Create, Some(&bad), None).expect("review");
    let resp = s
        .client
        .review("/mutate--v1-configmap", &review)
        .await
        .expect("review");
    assert!(!resp.allowed);
    assert_eq!(resp.result.code, 403);
    assert_eq!(resp.result.message, "defaulting refused");
    s.stop.cancel();
}

#[tokio::test]
async fn fields_unknown_to_the_type_are_not_removed_by_the_patch() {
    let s = setup(None).await;
    let cm = config_map("a", &[("x", "1")], Some(&[("app", "mine")]));
    let mut review = review_request(Operation::Create, Some(&cm), None).expect("review");
    review["request"]["object"]["futureField"] = serde_json::json!({"kept": true});
    let resp = s
        .client
        .review("/mutate--v1-configmap", &review)
        .await
        .expect("review");
    assert!(resp.allowed);
    let patched = apply_patch(&review, &resp);
    assert_eq!(patched["futureField"]["kept"], true);
    assert_eq!(patched["data"]["mode"], "standard");
    s.stop.cancel();
}

#[tokio::test]
async fn validator_allows_with_warnings_and_denies_with_a_message() {
    let s = setup(None).await;
    let path = "/validate--v1-configmap";

    let ok = config_map("ok", &[("x", "1")], None);
    let resp = s
        .client
        .review(
            path,
            &review_request(Operation::Create, Some(&ok), None).expect("review"),
        )
        .await
        .expect("review");
    assert!(resp.allowed);
    assert_eq!(resp.warnings, Some(vec!["no labels set".to_owned()]));

    let bad = config_map("bad", &[("forbidden", "1")], Some(&[("a", "b")]));
    let resp = s
        .client
        .review(
            path,
            &review_request(Operation::Create, Some(&bad), None).expect("review"),
        )
        .await
        .expect("review");
    assert!(!resp.allowed);
    assert_eq!(resp.result.code, 403);
    assert_eq!(resp.result.reason, "Forbidden");
    assert_eq!(resp.result.message, "key \"forbidden\" is not allowed");
    assert_eq!(resp.warnings, Some(vec!["see the docs".to_owned()]));

    let old = config_map("u", &[("immutable", "1")], None);
    let new = config_map("u", &[("immutable", "2")], None);
    let resp = s
        .client
        .review(
            path,
            &review_request(Operation::Update, Some(&new), Some(&old)).expect("review"),
        )
        .await
        .expect("review");
    assert!(!resp.allowed);
    assert_eq!(resp.result.code, 422);
    let resp = s
        .client
        .review(
            path,
            &review_request(Operation::Update, Some(&old), Some(&old)).expect("review"),
        )
        .await
        .expect("review");
    assert!(resp.allowed);

    // Every answer is counted under controller-runtime's webhook metric names.
    let mut scrape = String::new();
    prometheus_client::encoding::text::encode(
        &mut scrape,
        &rein_webhook::metrics_registry().lock(),
    )
    .expect("encode");
    assert!(
        scrape.contains(
            "controller_runtime_webhook_requests_total{webhook=\"/validate--v1-configmap\",code=\"200\"}"
        ),
        "{scrape}"
    );
    assert!(scrape.contains("controller_runtime_webhook_latency_seconds_count"));

    let protected = config_map("p", &[], Some(&[("protected", "true")]));
    let resp = s
        .client
        .review(
            path,
            &review_request(Operation::Delete, None, Some(&protected)).expect("review"),
        )
        .await
        .expect("review");
    assert!(!resp.allowed);
    assert_eq!(resp.result.message, "protected");
    s.stop.cancel();
}

#[tokio::test]
async fn malformed_reviews_get_clear_error_responses() {
    let s = setup(Some(64 * 1024)).await;
    let path = "/validate--v1-configmap";
    let decode = |body: &[u8]| -> AdmissionResponse {
        let review: serde_json::Value = serde_json::from_slice(body).expect("an AdmissionReview");
        assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
        serde_json::from_value(review["response"].clone()).expect("a response")
    };

    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "application/json",
            b"{not json".to_vec(),
            400,
            "decoding the AdmissionReview",
        ),
        ("application/json", Vec::new(), 400, "empty"),
        (
            "text/plain",
            b"{}".to_vec(),
            400,
            "expected application/json",
        ),
        (
            "application/json",
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
            400,
            "no request",
        ),
        (
            "application/json",
            br#"{"apiVersion":"v1","kind":"Pod"}"#.to_vec(),
            400,
            "apiVersion",
        ),
        (
            "application/json",
            vec![b' '; 100 * 1024],
            413,
            "larger than the limit",
        ),
    ];
    for (content_type, body, code, needle) in cases {
        let (status, answer) = s.client.post(path, content_type, body).await.expect("post");
        assert_eq!(status.as_u16(), 200);
        let resp = decode(&answer);
        assert!(!resp.allowed);
        assert_eq!(resp.result.code, code, "{}", resp.result.message);
        assert!(
            resp.result.message.contains(needle),
            "{needle:?} not in {:?}",
            resp.result.message
        );
    }

    // An object the type cannot decode is a 400 answer to that request.
    let mut review =
        review_request(Operation::Create, Some(&config_map("x", &[], None)), None).expect("review");
    review["request"]["object"]["data"] = serde_json::json!("not a map");
    let resp = s.client.review(path, &review).await.expect("review");
    assert!(!resp.allowed);
    assert_eq!(resp.result.code, 400);

    // A panicking handler is a 500, and the server keeps serving.
    let resp = s.client.review("/panic", &review).await.expect("review");
    assert!(!resp.allowed);
    assert_eq!(resp.result.code, 500);

    let (status, _) = s
        .client
        .post("/nowhere", "application/json", b"{}".to_vec())
        .await
        .expect("post");
    assert_eq!(status.as_u16(), 404);
    let ok = review_request(
        Operation::Create,
        Some(&config_map("y", &[], Some(&[("a", "b")]))),
        None,
    )
    .expect("review");
    assert!(s.client.review(path, &ok).await.expect("review").allowed);
    s.stop.cancel();
}

#[tokio::test]
async fn plain_http_and_untrusted_clients_are_refused() {
    let s = setup(None).await;
    let mut tcp = TcpStream::connect(s.server.local_addr())
        .await
        .expect("connect");
    tcp.write_all(
        b"POST /validate--v1-configmap HTTP/1.1\r\nhost: localhost\r\ncontent-length: 2\r\n\r\n{}",
    )
    .await
    .expect("write");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_string(&mut answer))
        .await
        .expect("answer in time")
        .expect("read");
    assert!(answer.starts_with("HTTP/1.0 400"), "{answer}");
    assert!(
        answer.contains("HTTP request to an HTTPS server"),
        "{answer}"
    );

    // A client trusting another CA fails the handshake.
    let other = GeneratedCertificates::generate(&["localhost"]).expect("certs");
    let stranger =
        AdmissionClient::new(s.server.local_addr(), "localhost", &other.ca_pem).expect("client");
    let err = stranger
        .post(
            "/validate--v1-configmap",
            "application/json",
            b"{}".to_vec(),
        )
        .await;
    assert!(err.is_err());

    // The right CA but the wrong name fails too.
    let wrong_name = AdmissionClient::new(s.server.local_addr(), "example.com", &s.certs.ca_pem)
        .expect("client");
    assert!(
        wrong_name
            .post(
                "/validate--v1-configmap",
                "application/json",
                b"{}".to_vec()
            )
            .await
            .is_err()
    );
    s.stop.cancel();
}

#[tokio::test]
async fn registration_rules_and_started_checker() {
    let s = setup(None).await;
    assert!(
        s.server
            .register_validator::<ConfigMap, _>(Validator)
            .is_err()
    );
    assert!(s.server.register("no-slash", Panicker).is_err());
    assert_eq!(
        s.server.paths(),
        vec!["/mutate--v1-configmap", "/panic", "/validate--v1-configmap"]
    );
    let checker = s.server.started_checker();
    let started = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if checker.is_started() {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(started.is_ok());
    s.stop.cancel();
}

#[tokio::test]
async fn certificates_load_from_files() {
    let certs = GeneratedCertificates::generate(&["localhost"]).expect("certs");
    let dir = std::env::temp_dir().join(format!("rein-webhook-test-{}", std::process::id()));
    let source = certs.write_to_dir(&dir).expect("write");
    let server = WebhookServer::bind(WebhookServerOptions {
        bind_address: "127.0.0.1:0".parse().expect("addr"),
        cert: source,
        ..WebhookServerOptions::default()
    })
    .await
    .expect("bind from files");
    drop(server);
    let missing = WebhookServer::bind(WebhookServerOptions {
        bind_address: "127.0.0.1:0".parse().expect("addr"),
        cert: rein_webhook::CertSource::from_dir(dir.join("nope")),
        ..WebhookServerOptions::default()
    })
    .await
    .expect_err("missing files");
    assert!(missing.to_string().contains("tls.crt"), "{missing}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn rotated_certificate_files_are_picked_up_without_a_restart() {
    let first = GeneratedCertificates::generate(&["localhost"]).expect("certs");
    let dir = std::env::temp_dir().join(format!("rein-webhook-rotate-{}", std::process::id()));
    let source = first.write_to_dir(&dir).expect("write");
    let server = Arc::new(
        WebhookServer::bind(WebhookServerOptions {
            bind_address: "127.0.0.1:0".parse().expect("addr"),
            cert: source,
            ..WebhookServerOptions::default()
        })
        .await
        .expect("bind"),
    );
    server
        .register_validator::<ConfigMap, _>(Validator)
        .expect("register");
    let stop = CancellationToken::new();
    let (s, t) = (server.clone(), stop.clone());
    tokio::spawn(async move { s.run(t).await });
    let review = review_request(
        Operation::Create,
        Some(&config_map("r", &[], Some(&[("a", "b")]))),
        None,
    )
    .expect("review");
    let path = "/validate--v1-configmap";
    let old_client =
        AdmissionClient::new(server.local_addr(), "localhost", &first.ca_pem).expect("client");
    assert!(
        old_client
            .review(path, &review)
            .await
            .expect("review")
            .allowed
    );

    let second = GeneratedCertificates::generate(&["localhost"]).expect("certs");
    second.write_to_dir(&dir).expect("rotate");
    let new_client =
        AdmissionClient::new(server.local_addr(), "localhost", &second.ca_pem).expect("client");
    let rotated = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if new_client.review(path, &review).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(rotated.is_ok(), "the rotated certificate was never served");
    // A fresh client that only trusts the old CA no longer gets through (a reused client
    // could still resume its old TLS session).
    let fresh_old =
        AdmissionClient::new(server.local_addr(), "localhost", &first.ca_pem).expect("client");
    assert!(fresh_old.review(path, &review).await.is_err());
    stop.cancel();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn stopping_does_not_wait_for_a_silent_connection() {
    let certs = GeneratedCertificates::generate(&["localhost"]).expect("certs");
    let server = Arc::new(
        WebhookServer::bind(WebhookServerOptions {
            bind_address: "127.0.0.1:0".parse().expect("addr"),
            cert: certs.cert_source(),
            ..WebhookServerOptions::default()
        })
        .await
        .expect("bind"),
    );
    let stop = CancellationToken::new();
    let (s, t) = (server.clone(), stop.clone());
    let task = tokio::spawn(async move { s.run(t).await });
    // A client that connects and never starts the handshake.
    let _silent = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    let checker = server.started_checker();
    while !checker.is_started() {
        tokio::task::yield_now().await;
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the server stops")
        .expect("join")
        .expect("clean stop");
    assert!(server.run(CancellationToken::new()).await.is_err());
}
