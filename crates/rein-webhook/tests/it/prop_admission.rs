//! Property test of admission review decoding over real TLS: arbitrary bodies (bytes, JSON,
//! AdmissionReviews with fields removed or replaced by odd values, wrong content types) posted
//! to a defaulting, a validating and a plain webhook always get HTTP 200 with an AdmissionReview
//! response: allowed with code 200, or denied with a 4xx code and a message; the request's uid
//! is echoed whenever the review could be read. Never a 5xx, an empty body or a dropped
//! connection.
//!
//! 64 cases per path kind by default; set `PROPTEST_CASES` for a longer run.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use rein_webhook::{
    AdmissionClient, AdmissionError, AdmissionHandler, AdmissionRequest, AdmissionResponse,
    CustomDefaulter, CustomValidator, GeneratedCertificates, Operation, Warnings, WebhookServer,
    WebhookServerOptions, allowed, review_request,
};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use crate::prop_config::config;

/// Adds a label; refuses objects carrying `data.refuse`.
#[derive(Debug)]
struct Defaulter;

#[async_trait]
impl CustomDefaulter<ConfigMap> for Defaulter {
    async fn default(&self, cm: &mut ConfigMap) -> Result<(), AdmissionError> {
        if cm.data.as_ref().is_some_and(|d| d.contains_key("refuse")) {
            return Err(AdmissionError::denied("refused"));
        }
        cm.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("defaulted".into(), "true".into());
        Ok(())
    }
}

/// Denies objects carrying `data.refuse` on every operation.
#[derive(Debug)]
struct Validator;

fn check(cm: &ConfigMap) -> Result<Warnings, AdmissionError> {
    if cm.data.as_ref().is_some_and(|d| d.contains_key("refuse")) {
        return Err(AdmissionError::invalid("data.refuse is not allowed"));
    }
    Ok(Vec::new())
}

#[async_trait]
impl CustomValidator<ConfigMap> for Validator {
    async fn validate_create(&self, cm: &ConfigMap) -> Result<Warnings, AdmissionError> {
        check(cm)
    }
    async fn validate_update(
        &self,
        _old: &ConfigMap,
        new: &ConfigMap,
    ) -> Result<Warnings, AdmissionError> {
        check(new)
    }
    async fn validate_delete(&self, cm: &ConfigMap) -> Result<Warnings, AdmissionError> {
        check(cm)
    }
}

/// Allows everything: the bare `AdmissionHandler` path.
#[derive(Debug)]
struct AllowAll;

#[async_trait]
impl AdmissionHandler for AllowAll {
    async fn handle(&self, req: &AdmissionRequest) -> AdmissionResponse {
        allowed(req, Vec::new())
    }
}

// ---------------------------------------------------------------------------------------------
// Generated bodies
// ---------------------------------------------------------------------------------------------

fn odd_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(|n| json!(n)),
        Just(json!(1.5e300)),
        any::<bool>().prop_map(Value::Bool),
        any::<String>().prop_map(Value::String),
        prop::sample::select(vec![
            "CREATE",
            "UPDATE",
            "DELETE",
            "CONNECT",
            "admission.k8s.io/v1",
            "v1",
            "ConfigMap",
            "AdmissionReview",
            "",
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const POINTERS: [&str; 20] = [
    "/apiVersion",
    "/kind",
    "/request",
    "/request/uid",
    "/request/kind",
    "/request/kind/kind",
    "/request/resource",
    "/request/operation",
    "/request/object",
    "/request/object/metadata",
    "/request/object/metadata/name",
    "/request/object/data",
    "/request/object/data/refuse",
    "/request/object/kind",
    "/request/oldObject",
    "/request/dryRun",
    "/request/userInfo",
    "/request/namespace",
    "/request/options",
    "/response",
];

/// A real review, then a few fields replaced by odd values or removed.
fn mutated_review() -> impl Strategy<Value = Value> {
    let base = (
        prop::sample::select(vec![
            Operation::Create,
            Operation::Update,
            Operation::Delete,
        ]),
        prop::collection::btree_map("[a-z]{1,6}", "[a-z]{0,6}", 0..3),
        any::<bool>(),
    )
        .prop_map(|(op, data, refuse)| {
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some("cm".into());
            cm.metadata.namespace = Some("default".into());
            let mut data = data;
            if refuse {
                data.insert("refuse".into(), "1".into());
            }
            cm.data = Some(data);
            match op {
                Operation::Create => review_request(op, Some(&cm), None),
                Operation::Update => review_request(op, Some(&cm), Some(&cm)),
                _ => review_request(op, None, Some(&cm)),
            }
            .expect("review")
        });
    let edit = (
        prop::sample::select(&POINTERS[..]),
        prop::option::of(odd_json()),
    );
    (base, prop::collection::vec(edit, 0..4)).prop_map(|(mut review, edits)| {
        for (pointer, value) in edits {
            let (parent, key) = pointer.rsplit_once('/').expect("pointer");
            if let Some(Value::Object(map)) = review.pointer_mut(parent) {
                match value {
                    Some(v) => {
                        map.insert(key.to_string(), v);
                    }
                    None => {
                        map.remove(key);
                    }
                }
            }
        }
        review
    })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => mutated_review().prop_map(|v| serde_json::to_vec(&v).expect("serialises")),
        1 => odd_json().prop_map(|v| serde_json::to_vec(&v).expect("serialises")),
        1 => any::<Vec<u8>>(),
        1 => mutated_review().prop_map(|v| {
            let mut bytes = serde_json::to_vec(&v).expect("serialises");
            bytes.truncate(bytes.len() / 2);
            bytes
        }),
        1 => Just(Vec::new()),
    ]
}

fn content_type() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        8 => Just("application/json"),
        1 => Just("application/json; charset=utf-8"),
        1 => prop::sample::select(vec!["text/plain", "application/yaml", "", "application/jsonx"]),
    ]
}

// ---------------------------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------------------------

#[test]
fn arbitrary_admission_requests_get_an_admission_review_answer() {
    let rt = Runtime::new().expect("runtime");
    let certs = GeneratedCertificates::generate(&["localhost", "127.0.0.1"]).expect("certs");
    let stop = CancellationToken::new();
    let (client, paths) = rt.block_on(async {
        let options = WebhookServerOptions {
            bind_address: "127.0.0.1:0".parse().expect("addr"),
            cert: certs.cert_source(),
            ..WebhookServerOptions::default()
        };
        let server = Arc::new(WebhookServer::bind(options).await.expect("binds"));
        let mutate = server
            .register_defaulter::<ConfigMap, _>(Defaulter)
            .expect("registers");
        let validate = server
            .register_validator::<ConfigMap, _>(Validator)
            .expect("registers");
        server.register("/allow", AllowAll).expect("registers");
        let (s, t) = (server.clone(), stop.clone());
        tokio::spawn(async move { s.run(t).await });
        let client =
            AdmissionClient::new(server.local_addr(), "localhost", &certs.ca_pem).expect("client");
        (client, vec![mutate, validate, "/allow".to_string()])
    });
    let mut runner = TestRunner::new(config(192));
    runner
        .run(
            &(prop::sample::select(paths), content_type(), body()),
            |(path, content_type, body)| {
                let sent_uid = serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
                    v.pointer("/request/uid")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
                rt.block_on(async {
                    let answer = tokio::time::timeout(
                        std::time::Duration::from_secs(30),
                        client.post(&path, content_type, body),
                    )
                    .await;
                    let (status, bytes) = match answer {
                        Ok(Ok(answer)) => answer,
                        Ok(Err(e)) => {
                            return Err(TestCaseError::fail(format!("{path}: no answer: {e}")));
                        }
                        Err(_) => {
                            return Err(TestCaseError::fail(format!("{path}: no answer in 30s")));
                        }
                    };
                    prop_assert_eq!(status.as_u16(), 200, "{}: {:?}", path, bytes);
                    let review: Value = serde_json::from_slice(&bytes).map_err(|e| {
                        TestCaseError::fail(format!(
                            "{path}: the answer is not JSON ({e}): {bytes:?}"
                        ))
                    })?;
                    prop_assert_eq!(
                        review["kind"].as_str(),
                        Some("AdmissionReview"),
                        "{}",
                        review
                    );
                    let response = &review["response"];
                    let allowed = response["allowed"].as_bool();
                    let code = response["status"]["code"].as_u64().unwrap_or(0);
                    prop_assert!(allowed.is_some(), "{}", review);
                    if allowed == Some(true) {
                        prop_assert_eq!(code, 200, "{}", review);
                    } else {
                        prop_assert!((400..500).contains(&code), "{}: {}", path, review);
                        prop_assert!(
                            response["status"]["message"]
                                .as_str()
                                .is_some_and(|m| !m.is_empty()),
                            "{}",
                            review
                        );
                    }
                    if let Some(uid) = sent_uid.filter(|_| allowed == Some(true)) {
                        prop_assert_eq!(response["uid"].as_str(), Some(uid.as_str()), "{}", review);
                    }
                    Ok(())
                })
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
    stop.cancel();
}
