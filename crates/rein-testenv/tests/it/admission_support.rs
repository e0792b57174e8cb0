//! An in-test admission webhook over HTTPS (hyper + rustls, certificates from rcgen) whose
//! answers each test scripts, and helpers to register it and to send raw requests.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
use rein_testenv::TestEnv;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};

/// How a scripted webhook answers one AdmissionReview.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// An AdmissionReview whose `response` is this (its `uid` filled in unless given).
    Review(Value),
    /// A raw HTTP answer: status code and body.
    Raw(u16, String),
    /// Never answers.
    Hang,
    /// Closes the connection without answering.
    Close,
}

type Script = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// A running webhook: where it listens, the CA that signed its certificate and every
/// AdmissionReview request it received.
pub(crate) struct Webhook {
    pub(crate) addr: SocketAddr,
    /// Base64 of the CA's PEM, as `caBundle` wants it.
    pub(crate) ca_bundle: String,
    calls: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Webhook {
    /// Starts a webhook answering with `script`; its certificate is valid for 127.0.0.1,
    /// `localhost` and `hook.webhooks.svc`.
    pub(crate) async fn start(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Webhook {
        let (acceptor, ca_bundle) = tls();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let addr = listener.local_addr().expect("an address");
        let calls = Arc::new(Mutex::new(Vec::new()));
        let script: Script = Arc::new(script);
        let task = tokio::spawn({
            let calls = calls.clone();
            async move {
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        continue;
                    };
                    let acceptor = acceptor.clone();
                    let calls = calls.clone();
                    let script = script.clone();
                    tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let service =
                            service_fn(move |req: http::Request<hyper::body::Incoming>| {
                                let calls = calls.clone();
                                let script = script.clone();
                                async move { answer(req, &calls, &script).await }
                            });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tls), service)
                            .await;
                    });
                }
            }
        });
        Webhook {
            addr,
            ca_bundle,
            calls,
            task,
        }
    }

    /// `https://127.0.0.1:<port><path>`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// The AdmissionReview requests received so far.
    pub(crate) fn calls(&self) -> Vec<Value> {
        self.calls.lock().expect("not poisoned").clone()
    }
}

async fn answer(
    req: http::Request<hyper::body::Incoming>,
    calls: &Mutex<Vec<Value>>,
    script: &Script,
) -> Result<http::Response<Full<Bytes>>, std::io::Error> {
    let bytes = req
        .into_body()
        .collect()
        .await
        .map_err(std::io::Error::other)?
        .to_bytes();
    let review: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let request = review.get("request").cloned().unwrap_or(Value::Null);
    calls.lock().expect("not poisoned").push(request.clone());
    let (code, body) = match script(&request) {
        Reply::Review(mut response) => {
            if response.get("uid").is_none() {
                response["uid"] = request["uid"].clone();
            }
            let body = json!({
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": response,
            });
            (200, body.to_string())
        }
        Reply::Raw(code, body) => (code, body),
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            (200, String::new())
        }
        Reply::Close => return Err(std::io::Error::other("closing without an answer")),
    };
    Ok(http::Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("a response"))
}

/// A CA and a serving certificate signed by it.
fn tls() -> (tokio_rustls::TlsAcceptor, String) {
    let ca_key = KeyPair::generate().expect("a key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).expect("a CA");
    let key = KeyPair::generate().expect("a key");
    let mut params = CertificateParams::new(vec![
        "localhost".to_string(),
        "hook.webhooks.svc".to_string(),
    ])
    .expect("params");
    params
        .subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    let cert = params.signed_by(&key, &ca, &ca_key).expect("a certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .expect("a server config");
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca.pem());
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca_bundle)
}

/// `allowed: true`.
pub(crate) fn allow() -> Reply {
    Reply::Review(json!({"allowed": true}))
}

/// `allowed: false` with a status code and message.
pub(crate) fn deny(code: u16, message: &str) -> Reply {
    Reply::Review(json!({
        "allowed": false,
        "status": {"code": code, "message": message, "reason": "Forbidden"},
    }))
}

/// `allowed: true` with a JSON Patch.
pub(crate) fn patch(ops: Value) -> Reply {
    let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
    Reply::Review(json!({"allowed": true, "patchType": "JSONPatch", "patch": patch}))
}

/// One webhook entry calling `url` for `rules`, with `extra` fields merged over the
/// defaults (`sideEffects: None`, `admissionReviewVersions: [v1]`).
pub(crate) fn entry(name: &str, hook: &Webhook, path: &str, rules: Value, extra: Value) -> Value {
    let mut entry = json!({
        "name": name,
        "clientConfig": {"url": hook.url(path), "caBundle": hook.ca_bundle},
        "rules": rules,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(e), Some(x)) = (entry.as_object_mut(), extra.as_object()) {
        for (k, v) in x {
            e.insert(k.clone(), v.clone());
        }
    }
    entry
}

/// Rules for `operations` on core-group `resources`.
pub(crate) fn core_rules(operations: &[&str], resources: &[&str]) -> Value {
    json!([{
        "operations": operations, "apiGroups": [""], "apiVersions": ["v1"],
        "resources": resources,
    }])
}

/// Creates a `Mutating`- or `ValidatingWebhookConfiguration` named `name`.
pub(crate) async fn install(env: &TestEnv, kind: &str, name: &str, webhooks: Vec<Value>) {
    let plural = format!("{}webhookconfigurations", kind.to_ascii_lowercase());
    let (code, body) = send(
        env,
        "POST",
        &format!("/apis/admissionregistration.k8s.io/v1/{plural}"),
        Some(&json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": format!("{kind}WebhookConfiguration"),
            "metadata": {"name": name},
            "webhooks": webhooks,
        })),
    )
    .await
    .into_parts();
    assert_eq!(code, 201, "{body}");
}

/// Installs the `Mutating` or `Validating` configuration `m` or `v` with the one webhook
/// `m.example.com` or `v.example.com`, which calls `hook` at `/m` or `/v` for `rules`.
pub(crate) async fn install_one(env: &TestEnv, kind: &str, hook: &Webhook, rules: Value) {
    let name = if kind == "Mutating" { "m" } else { "v" };
    let path = format!("/{name}");
    let webhook = entry(
        &format!("{name}.example.com"),
        hook,
        &path,
        rules,
        json!({}),
    );
    install(env, kind, name, vec![webhook]).await;
}

/// An answer: status code, `Warning` headers and JSON body.
#[derive(Debug)]
pub(crate) struct Sent {
    pub(crate) code: u16,
    pub(crate) warnings: Vec<String>,
    pub(crate) body: Value,
}

impl Sent {
    pub(crate) fn into_parts(self) -> (u16, Value) {
        (self.code, self.body)
    }

    /// `message` of a Status body.
    pub(crate) fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or_default()
    }
}

/// Sends a JSON request (a JSON Patch when the method is PATCH).
pub(crate) async fn send(env: &TestEnv, method: &str, path: &str, body: Option<&Value>) -> Sent {
    let content_type = if method == "PATCH" {
        "application/json-patch+json"
    } else {
        "application/json"
    };
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(kube_client::client::Body::from(
            body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        ))
        .expect("a request");
    let response = tokio::time::timeout(Duration::from_secs(30), env.client().send(request))
        .await
        .expect("answered in time")
        .expect("an answer");
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Sent {
        code,
        warnings,
        body,
    }
}

/// A ConfigMap body.
pub(crate) fn config_map(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"k": "v"},
    })
}
