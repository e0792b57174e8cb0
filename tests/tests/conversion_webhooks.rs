//! CRD conversion through the manager's webhook server: rein-testenv, as the API server,
//! stores Gadgets in v2 (the hub) and converts them for v1 clients by calling the manager's
//! `/convert` over HTTPS — for get, list, watch, create, update, patch, apply, status, scale and
//! delete — and a webhook that fails, is down, hangs or answers garbage gets kube-apiserver's
//! 500.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use futures::{StreamExt as _, TryStreamExt as _};
use kube_client::Api;
use kube_client::api::{Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use rein::core::crd::merge_crds;
use rein::manager::webhook::{
    AdmissionHandler, AdmissionRequest, AdmissionResponse, Conversion, ConversionError,
    Convertible, GeneratedCertificates, Hub, WebhookServerOptions, allowed,
};
use rein::manager::{Manager, Options};
use rein::{CustomResource, CustomResourceExt};
use rein_testenv::TestEnv;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How many objects the test's converters converted (each direction counts once).
static CONVERSIONS: AtomicUsize = AtomicUsize::new(0);

mod v1 {
    use super::*;

    /// v1: the size as text, `"<n> replicas"`.
    #[rein::resource]
    #[derive(
        CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
    )]
    #[kube(group = "conv.rein.dev", version = "v1", kind = "Gadget", namespaced)]
    #[kube(status = "GadgetStatus")]
    #[kube(scale = r#"{"specReplicasPath":".spec.pods","statusReplicasPath":".status.pods"}"#)]
    pub(super) struct GadgetSpec {
        pub(super) size: String,
        /// The same in both versions: the scale subresource's replicas.
        #[serde(default)]
        pub(super) pods: i32,
    }

    /// v1's status: a phase.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub(super) struct GadgetStatus {
        pub(super) phase: String,
        #[serde(default)]
        pub(super) pods: i32,
    }
}

mod v2 {
    use super::*;

    /// v2, the hub and storage version: the size as a number.
    #[rein::resource]
    #[derive(
        CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
    )]
    #[kube(group = "conv.rein.dev", version = "v2", kind = "Gadget", namespaced)]
    #[kube(status = "GadgetStatus")]
    #[kube(scale = r#"{"specReplicasPath":".spec.pods","statusReplicasPath":".status.pods"}"#)]
    pub(super) struct GadgetSpec {
        pub(super) replicas: i32,
        /// The scale subresource's replicas.
        #[serde(default)]
        pub(super) pods: i32,
    }

    /// v2's status: ready or not.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub(super) struct GadgetStatus {
        pub(super) ready: bool,
        #[serde(default)]
        pub(super) pods: i32,
    }
}

impl Hub for v2::Gadget {}

impl Convertible<v2::Gadget> for v1::Gadget {
    fn convert_to(&self) -> Result<v2::Gadget, ConversionError> {
        CONVERSIONS.fetch_add(1, Ordering::SeqCst);
        let replicas = self
            .spec
            .size
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                ConversionError::new(format!("size {:?} has no count", self.spec.size))
            })?;
        let mut metadata = self.metadata.clone();
        // A conversion may change labels (kept) and nothing else in metadata (restored).
        metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("converted-from".into(), "v1".into());
        metadata.generation = Some(999);
        Ok(v2::Gadget {
            metadata,
            spec: v2::GadgetSpec {
                replicas,
                pods: self.spec.pods,
            },
            status: self.status.as_ref().map(|s| v2::GadgetStatus {
                ready: s.phase == "Ready",
                pods: s.pods,
            }),
        })
    }

    fn convert_from(hub: &v2::Gadget) -> Result<Self, ConversionError> {
        CONVERSIONS.fetch_add(1, Ordering::SeqCst);
        let mut metadata = hub.metadata.clone();
        if hub.spec.replicas == 13 {
            // An unlucky number: the converter renames the object, which the server refuses.
            metadata.name = Some("renamed".into());
        }
        Ok(v1::Gadget {
            metadata,
            spec: v1::GadgetSpec {
                size: format!("{} replicas", hub.spec.replicas),
                pods: hub.spec.pods,
            },
            status: hub.status.as_ref().map(|s| v1::GadgetStatus {
                phase: if s.ready { "Ready" } else { "Pending" }.into(),
                pods: s.pods,
            }),
        })
    }
}

fn conversions() -> usize {
    CONVERSIONS.load(Ordering::SeqCst)
}

/// The two-version CRD converting through `client_config`.
fn crd(client_config: Value) -> Value {
    let merged = merge_crds(vec![v1::Gadget::crd(), v2::Gadget::crd()], "v2").expect("merge");
    let mut crd = serde_json::to_value(merged).expect("encode");
    crd["spec"]["conversion"] = json!({
        "strategy": "Webhook",
        "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1"]},
    });
    crd
}

async fn install(env: &TestEnv, crd: Value) {
    let crd = serde_json::from_value(crd).expect("a CRD");
    rein::client::crd::install(
        &rein::client::Client::new(env.client()),
        &crd,
        Duration::from_secs(30),
    )
    .await
    .expect("the CRD is established");
}

fn gadget(name: &str, size: &str) -> v1::Gadget {
    let mut g = v1::Gadget::new(
        name,
        v1::GadgetSpec {
            size: size.into(),
            pods: 0,
        },
    );
    g.metadata.namespace = Some("default".into());
    g
}

/// A manager serving the Gadget conversion; answers the manager, its CA and its stop token.
async fn manager(env: &TestEnv) -> (Manager, String, CancellationToken) {
    let certs = GeneratedCertificates::generate(&["localhost", "127.0.0.1"]).expect("certs");
    let webhook = WebhookServerOptions {
        bind_address: "127.0.0.1:0".parse().expect("an address"),
        cert: certs.cert_source(),
        ..WebhookServerOptions::default()
    };
    let mgr = Manager::builder(env.config())
        .options(Options::default().webhook(webhook))
        .build()
        .await
        .expect("the manager builds");
    mgr.webhook_server()
        .expect("a webhook server")
        .register_conversion(Conversion::<v2::Gadget>::hub().spoke::<v1::Gadget>())
        .expect("registers the conversion");
    let stop = CancellationToken::new();
    tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    (mgr, certs.ca_pem, stop)
}

fn status_of(err: kube_client::Error) -> kube_client::core::Status {
    match err {
        kube_client::Error::Api(status) => *status,
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn every_verb_converts_through_the_managers_webhook() {
    let env = TestEnv::start().await.expect("testenv starts");
    let (mgr, ca_pem, stop) = manager(&env).await;
    let addr = mgr.webhook_server().expect("a server").local_addr();
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ca_pem);
    install(
        &env,
        crd(json!({"url": format!("https://localhost:{}/convert", addr.port()), "caBundle": ca_bundle})),
    )
    .await;
    let kube = env.client();
    let old: Api<v1::Gadget> = Api::namespaced(kube.clone(), "default");
    let hub: Api<v2::Gadget> = Api::namespaced(kube.clone(), "default");

    // A v1 watch started first sees every change in v1.
    let events = old
        .watch(&WatchParams::default(), "0")
        .await
        .expect("a watch")
        .boxed();

    // create: v1 in, stored as v2, answered in v1.
    let created = old
        .create(&PostParams::default(), &gadget("a", "3 replicas"))
        .await
        .expect("create");
    assert_eq!(created.spec.size, "3 replicas");
    let labels = created.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("converted-from").map(String::as_str), Some("v1"));
    assert_eq!(created.metadata.generation, Some(1), "metadata is restored");
    // get in the storage version needs no conversion; in v1 it does.
    let before = conversions();
    let stored = hub.get("a").await.expect("get v2");
    assert_eq!(stored.spec.replicas, 3);
    assert_eq!(
        conversions(),
        before,
        "stored as v2: no conversion to read v2"
    );
    assert_eq!(old.get("a").await.expect("get v1").spec.size, "3 replicas");
    assert_eq!(conversions(), before + 1);

    // update (PUT) in v1.
    let mut current = old.get("a").await.expect("get");
    current.spec.size = "4 replicas".into();
    let updated = old
        .replace("a", &PostParams::default(), &current)
        .await
        .expect("update");
    assert_eq!(updated.spec.size, "4 replicas");
    assert_eq!(hub.get("a").await.expect("get").spec.replicas, 4);
    assert_eq!(updated.metadata.generation, Some(2));

    // merge and JSON patches apply to the object in v1.
    let patched = old
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": "5 replicas"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(patched.spec.size, "5 replicas");
    let patched = old
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::<Value>::Json(
                serde_json::from_value(
                    json!([{"op": "replace", "path": "/spec/size", "value": "6 replicas"}]),
                )
                .expect("a JSON patch"),
            ),
        )
        .await
        .expect("json patch");
    assert_eq!(patched.spec.size, "6 replicas");
    assert_eq!(hub.get("a").await.expect("get").spec.replicas, 6);

    // server-side apply in v1: creates, then changes, with a v1 managedFields entry.
    let apply = PatchParams::apply("conversion-test");
    let config = json!({
        "apiVersion": "conv.rein.dev/v1", "kind": "Gadget",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {"size": "7 replicas"},
    });
    let applied = old
        .patch("b", &apply, &Patch::Apply(&config))
        .await
        .expect("apply creates");
    assert_eq!(applied.spec.size, "7 replicas");
    let mut config = config;
    config["spec"]["size"] = json!("8 replicas");
    let applied = old
        .patch("b", &apply, &Patch::Apply(&config))
        .await
        .expect("apply updates");
    assert_eq!(applied.spec.size, "8 replicas");
    let managed = applied.metadata.managed_fields.clone().unwrap_or_default();
    assert!(
        managed
            .iter()
            .any(|m| m.manager.as_deref() == Some("conversion-test")
                && m.operation.as_deref() == Some("Apply")
                && m.api_version.as_deref() == Some("conv.rein.dev/v1")),
        "{managed:?}"
    );
    assert_eq!(hub.get("b").await.expect("get").spec.replicas, 8);

    // status in v1: through the status subresource, converted both ways.
    let status = old
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .expect("status patch");
    assert_eq!(status.status.map(|s| s.phase).as_deref(), Some("Ready"));
    let stored = hub.get_status("a").await.expect("get status");
    assert_eq!(stored.status.map(|s| s.ready), Some(true));
    assert_eq!(stored.spec.replicas, 6, "a status write keeps the spec");

    // list in either version.
    let list = old.list(&Default::default()).await.expect("list v1");
    let sizes: Vec<String> = list.items.iter().map(|g| g.spec.size.clone()).collect();
    assert_eq!(sizes, ["6 replicas", "8 replicas"]);
    let list = hub.list(&Default::default()).await.expect("list v2");
    let replicas: Vec<i32> = list.items.iter().map(|g| g.spec.replicas).collect();
    assert_eq!(replicas, [6, 8]);

    // The watch saw every object in v1.
    let seen: Vec<String> = events
        .try_filter_map(|e| async move {
            Ok(match e {
                WatchEvent::Added(g) | WatchEvent::Modified(g) => Some(g.spec.size),
                _ => None,
            })
        })
        .take(7)
        .try_collect()
        .await
        .expect("watch events in v1");
    assert_eq!(
        seen,
        [
            "3 replicas",
            "4 replicas",
            "5 replicas",
            "6 replicas",
            "7 replicas",
            "8 replicas",
            "6 replicas"
        ]
    );

    // scale: the Scale is the same in every version; the write lands in the stored v2.
    let scale = old.get_scale("a").await.expect("get scale");
    // Zero replicas: `spec: {}`, as kube-apiserver marshals `replicas` (`omitempty`).
    assert_eq!(scale.spec.and_then(|s| s.replicas).unwrap_or_default(), 0);
    let scaled = old
        .patch_scale(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .expect("scale patch");
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(4));
    assert_eq!(hub.get("a").await.expect("get").spec.pods, 4);
    let a = old.get("a").await.expect("get");
    assert_eq!((a.spec.size.as_str(), a.spec.pods), ("6 replicas", 4));

    // delete in v1.
    old.delete("b", &Default::default()).await.expect("delete");
    assert!(hub.get_opt("b").await.expect("get").is_none());

    // A conversion the converter refuses, and one that changes the name, are 500s with
    // kube-apiserver's messages; nothing is stored.
    let err = status_of(
        old.create(&PostParams::default(), &gadget("c", "many"))
            .await
            .expect_err("an unconvertible object"),
    );
    assert_eq!(err.code, 500);
    assert_eq!(
        err.message,
        "conversion webhook for conv.rein.dev/v1, Kind=Gadget failed: Gadget conv.rein.dev/v1 \
         failed to convert to hub version conv.rein.dev/v2: size \"many\" has no count"
    );
    assert!(hub.get_opt("c").await.expect("get").is_none());
    hub.create(&PostParams::default(), &{
        let mut g = v2::Gadget::new(
            "unlucky",
            v2::GadgetSpec {
                replicas: 13,
                pods: 0,
            },
        );
        g.metadata.namespace = Some("default".into());
        g
    })
    .await
    .expect("v2 needs no conversion");
    let err = status_of(old.get("unlucky").await.expect_err("a renaming conversion"));
    assert_eq!(err.code, 500);
    assert_eq!(
        err.message,
        "conversion webhook for conv.rein.dev/v2, Kind=Gadget returned invalid object: must \
         have the same name: unlucky != renamed"
    );
    let err = status_of(
        old.list(&Default::default())
            .await
            .expect_err("a list with it"),
    );
    assert_eq!(
        err.message,
        "conversion webhook for conv.rein.dev/v2, Kind=GadgetList returned invalid converted \
         object at index 1: must have the same name: unlucky != renamed"
    );

    stop.cancel();
}

/// An admission handler: what a conversion webhook misconfigured to an admission path
/// answers (an AdmissionReview, not a ConversionReview).
struct AllowAll;

#[async_trait::async_trait]
impl AdmissionHandler for AllowAll {
    async fn handle(&self, req: &AdmissionRequest) -> AdmissionResponse {
        allowed(req, Vec::new())
    }
}

/// A CRD of kind `kind` in `fail.rein.dev`, v1 served, v2 stored, converted by a webhook
/// reached through `client_config`.
fn failing_crd(kind: &str, client_config: Value) -> Value {
    let plural = format!("{}s", kind.to_lowercase());
    let version = |name: &str, storage: bool| {
        json!({
            "name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            }},
        })
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.fail.rein.dev")},
        "spec": {
            "group": "fail.rein.dev", "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind,
                      "listKind": format!("{kind}List")},
            "versions": [version("v1", false), version("v2", true)],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": client_config, "conversionReviewVersions": ["v1"],
            }},
        },
    })
}

fn api(env: &TestEnv, kind: &str, version: &str) -> Api<kube_client::core::DynamicObject> {
    Api::namespaced_with(
        env.client(),
        "default",
        &kube_client::discovery::ApiResource {
            group: "fail.rein.dev".into(),
            version: version.into(),
            api_version: format!("fail.rein.dev/{version}"),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
        },
    )
}

#[tokio::test]
async fn a_webhook_that_is_down_hangs_or_answers_garbage_gets_kubes_500() {
    // Down: a port nothing listens on any more.
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    // Hangs: accepts connections and never says a word.
    let hang = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a listener");
    let hang_addr = hang.local_addr().expect("an address");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = hang.accept().await {
            held.push(stream);
        }
    });
    let env = TestEnv::builder()
        .conversion_webhook_timeout(Duration::from_secs(1))
        .webhook_service("system", "down", 443, down)
        .webhook_service("system", "hang", 443, hang_addr)
        .start()
        .await
        .expect("testenv starts");
    let (mgr, ca_pem, stop) = manager(&env).await;
    let server = mgr.webhook_server().expect("a server");
    server.register("/garbage", AllowAll).expect("registers");
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ca_pem);
    let service = |name: &str| {
        json!({"service": {"namespace": "system", "name": name, "path": "/convert"},
               "caBundle": ca_bundle})
    };
    let cases = [
        (
            "Down",
            service("down"),
            format!(
                "conversion webhook for fail.rein.dev/v2, Kind=Down failed: Post \
                 \"https://down.system.svc:443/convert\": dial tcp {down}: connect: connection \
                 refused"
            ),
        ),
        (
            "Hang",
            service("hang"),
            "conversion webhook for fail.rein.dev/v2, Kind=Hang failed: Post \
             \"https://hang.system.svc:443/convert\": context deadline exceeded"
                .to_string(),
        ),
        (
            "Junk",
            json!({"url": format!("https://localhost:{}/garbage", server.local_addr().port()),
                   "caBundle": ca_bundle}),
            "conversion webhook for fail.rein.dev/v2, Kind=Junk failed: expected webhook \
             response of apiextensions.k8s.io/v1, Kind=ConversionReview, got \
             admission.k8s.io/v1, Kind=AdmissionReview"
                .to_string(),
        ),
    ];
    for (kind, client_config, message) in cases {
        install(&env, failing_crd(kind, client_config)).await;
        let stored: kube_client::core::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "fail.rein.dev/v2", "kind": kind,
            "metadata": {"name": "x", "namespace": "default"}, "spec": {"n": 1},
        }))
        .expect("an object");
        api(&env, kind, "v2")
            .create(&PostParams::default(), &stored)
            .await
            .expect("the storage version needs no webhook");
        let err = status_of(
            api(&env, kind, "v1")
                .get("x")
                .await
                .expect_err("reading v1 needs the webhook"),
        );
        assert_eq!(
            (err.code, err.message.as_str()),
            (500, message.as_str()),
            "{kind}"
        );
        // A watch in v1 gets the failure as an ERROR event, and ends.
        let mut events = api(&env, kind, "v1")
            .watch(&WatchParams::default(), "0")
            .await
            .expect("a watch")
            .boxed();
        match events.try_next().await.expect("an event") {
            Some(WatchEvent::Error(e)) => {
                assert_eq!(
                    (e.code, e.message.as_str()),
                    (500, message.as_str()),
                    "{kind}"
                );
            }
            other => panic!("{kind}: not an ERROR event: {other:?}"),
        }
        assert!(
            events.try_next().await.expect("the end").is_none(),
            "{kind}"
        );
        let mut v1 = stored.clone();
        v1.types = Some(kube_client::core::TypeMeta {
            api_version: "fail.rein.dev/v1".into(),
            kind: kind.into(),
        });
        v1.metadata.name = Some("y".into());
        let err = status_of(
            api(&env, kind, "v1")
                .create(&PostParams::default(), &v1)
                .await
                .expect_err("writing v1 needs the webhook"),
        );
        assert_eq!(err.code, 500, "{kind}: {}", err.message);
        assert!(err.message.contains("Kind="), "{kind}: {}", err.message);
    }
    stop.cancel();
}
