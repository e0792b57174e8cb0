//! Conversion webhooks over real TLS: hub-and-spoke round trips between three versions of a
//! derived custom resource, and every failure answered as a failed ConversionReview.

use std::sync::Arc;

use kube_derive::CustomResource;
use rein_webhook::{
    AdmissionClient, CONVERT_PATH, Conversion, ConversionError, Convertible, GeneratedCertificates,
    Hub, WebhookServer, WebhookServerOptions, conversion_request,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod v1 {
    use super::*;

    /// v1: one `size` string ("3 replicas").
    #[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "conv.rein.dev", version = "v1", kind = "Gadget", namespaced)]
    #[kube(crates(kube_core = "::kube_core"))]
    pub(super) struct GadgetSpec {
        pub(super) size: String,
    }
}

mod v2 {
    use super::*;

    /// v2, the hub: `replicas` as a number.
    #[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "conv.rein.dev", version = "v2", kind = "Gadget", namespaced)]
    #[kube(crates(kube_core = "::kube_core"))]
    pub(super) struct GadgetSpec {
        pub(super) replicas: i32,
    }
}

mod v3 {
    use super::*;

    /// v3: `replicas` nested under `scaling`.
    #[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "conv.rein.dev", version = "v3", kind = "Gadget", namespaced)]
    #[kube(crates(kube_core = "::kube_core"))]
    pub(super) struct GadgetSpec {
        pub(super) scaling: Scaling,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    pub(super) struct Scaling {
        pub(super) replicas: i32,
    }
}

/// Another kind, never registered.
mod other {
    use super::*;

    #[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "conv.rein.dev", version = "v1", kind = "Gizmo", namespaced)]
    #[kube(crates(kube_core = "::kube_core"))]
    pub(super) struct GizmoSpec {
        pub(super) size: String,
    }
}

impl Hub for v2::Gadget {}

impl Convertible<v2::Gadget> for v1::Gadget {
    fn convert_to(&self) -> Result<v2::Gadget, ConversionError> {
        if self.spec.size == "panic" {
            panic!("converter bug");
        }
        let replicas = self
            .spec
            .size
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                ConversionError::new(format!("size {:?} has no count", self.spec.size))
            })?;
        Ok(v2::Gadget {
            metadata: self.metadata.clone(),
            spec: v2::GadgetSpec { replicas },
        })
    }

    fn convert_from(hub: &v2::Gadget) -> Result<Self, ConversionError> {
        Ok(v1::Gadget {
            metadata: hub.metadata.clone(),
            spec: v1::GadgetSpec {
                size: format!("{} replicas", hub.spec.replicas),
            },
        })
    }
}

impl Convertible<v2::Gadget> for v3::Gadget {
    fn convert_to(&self) -> Result<v2::Gadget, ConversionError> {
        Ok(v2::Gadget {
            metadata: self.metadata.clone(),
            spec: v2::GadgetSpec {
                replicas: self.spec.scaling.replicas,
            },
        })
    }

    fn convert_from(hub: &v2::Gadget) -> Result<Self, ConversionError> {
        Ok(v3::Gadget {
            metadata: hub.metadata.clone(),
            spec: v3::GadgetSpec {
                scaling: v3::Scaling {
                    replicas: hub.spec.replicas,
                },
            },
        })
    }
}

struct Setup {
    client: AdmissionClient,
    stop: CancellationToken,
}

async fn setup() -> Setup {
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
    let path = server
        .register_conversion(
            Conversion::<v2::Gadget>::hub()
                .spoke::<v1::Gadget>()
                .spoke::<v3::Gadget>(),
        )
        .expect("register conversion");
    assert_eq!(path, CONVERT_PATH);
    let stop = CancellationToken::new();
    let (s, t) = (server.clone(), stop.clone());
    tokio::spawn(async move { s.run(t).await });
    let client =
        AdmissionClient::new(server.local_addr(), "localhost", &certs.ca_pem).expect("client");
    Setup { client, stop }
}

fn gadget_v1(name: &str, size: &str) -> Value {
    json!({
        "apiVersion": "conv.rein.dev/v1", "kind": "Gadget",
        "metadata": {"name": name, "namespace": "default", "labels": {"a": "b"},
                     "resourceVersion": "7", "uid": "u-1"},
        "spec": {"size": size},
    })
}

#[tokio::test]
async fn spokes_convert_through_the_hub_both_ways() {
    let s = setup().await;
    // v1 → v2 (spoke to hub), two objects in one review, order kept.
    let review = conversion_request(
        "conv.rein.dev/v2",
        vec![gadget_v1("a", "3 replicas"), gadget_v1("b", "5")],
    );
    let uid = review["request"]["uid"].clone();
    let resp = s
        .client
        .convert(CONVERT_PATH, &review)
        .await
        .expect("convert");
    assert_eq!(json!(resp.uid), uid);
    assert_eq!(resp.result.message, "");
    let objects = &resp.converted_objects;
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["apiVersion"], "conv.rein.dev/v2");
    assert_eq!(objects[0]["spec"], json!({"replicas": 3}));
    assert_eq!(objects[1]["spec"], json!({"replicas": 5}));
    // Metadata travels unchanged.
    assert_eq!(objects[0]["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(objects[0]["metadata"]["resourceVersion"], "7");

    // v2 → v1 (hub to spoke) gives the original back.
    let back = s
        .client
        .convert(
            CONVERT_PATH,
            &conversion_request("conv.rein.dev/v1", objects.clone()),
        )
        .await
        .expect("convert back");
    assert_eq!(back.converted_objects[0], gadget_v1("a", "3 replicas"));

    // v1 → v3 (spoke to spoke, through the hub).
    let across = s
        .client
        .convert(
            CONVERT_PATH,
            &conversion_request("conv.rein.dev/v3", vec![gadget_v1("a", "4 replicas")]),
        )
        .await
        .expect("convert across");
    assert_eq!(
        across.converted_objects[0]["apiVersion"],
        "conv.rein.dev/v3"
    );
    assert_eq!(
        across.converted_objects[0]["spec"],
        json!({"scaling": {"replicas": 4}})
    );
    s.stop.cancel();
}

/// Sends `review` and answers the failure message (asserting the review failed).
async fn failure(s: &Setup, review: Value) -> String {
    let resp = s
        .client
        .convert(CONVERT_PATH, &review)
        .await
        .expect("an answer");
    let result = serde_json::to_value(&resp.result).expect("encode");
    assert_eq!(result["status"], "Failure", "{resp:?}");
    assert!(resp.converted_objects.is_empty());
    resp.result.message
}

#[tokio::test]
async fn failures_are_failed_reviews() {
    let s = setup().await;
    let msg = failure(
        &s,
        conversion_request("conv.rein.dev/v2", vec![gadget_v1("a", "many")]),
    )
    .await;
    assert_eq!(
        msg,
        "Gadget conv.rein.dev/v1 failed to convert to hub version conv.rein.dev/v2: \
         size \"many\" has no count"
    );
    let msg = failure(
        &s,
        conversion_request("conv.rein.dev/v1", vec![gadget_v1("a", "1")]),
    )
    .await;
    assert_eq!(
        msg,
        "conversion is not allowed between same type Gadget conv.rein.dev/v1"
    );
    let msg = failure(
        &s,
        conversion_request("conv.rein.dev/v9", vec![gadget_v1("a", "1")]),
    )
    .await;
    assert_eq!(
        msg,
        "failed to convert Gadget conv.rein.dev/v1 to conv.rein.dev/v9: not convertible"
    );
    let gizmo = serde_json::to_value(other::Gizmo::new("g", other::GizmoSpec::default())).unwrap();
    let msg = failure(&s, conversion_request("conv.rein.dev/v2", vec![gizmo])).await;
    assert_eq!(
        msg,
        "no conversion is registered for kind \"Gizmo\" in group \"conv.rein.dev\""
    );
    let msg = failure(
        &s,
        conversion_request("other.dev/v2", vec![gadget_v1("a", "1")]),
    )
    .await;
    assert!(msg.contains("do not belong to the same API group"), "{msg}");
    let mut bad = gadget_v1("a", "1");
    bad["spec"] = json!({"size": 5});
    let msg = failure(&s, conversion_request("conv.rein.dev/v2", vec![bad])).await;
    assert!(msg.starts_with("Gadget conv.rein.dev/v1 failed to convert to hub version conv.rein.dev/v2: decoding the object as Gadget conv.rein.dev/v1 failed"), "{msg}");
    // A panicking converter is recovered.
    let msg = failure(
        &s,
        conversion_request("conv.rein.dev/v2", vec![gadget_v1("a", "panic")]),
    )
    .await;
    assert_eq!(msg, "internal error occurred during conversion");

    // Unreadable requests: 400 with a failed review.
    let (status, body) = s
        .client
        .post(CONVERT_PATH, "application/json", b"{not json".to_vec())
        .await
        .expect("post");
    assert_eq!(status.as_u16(), 400);
    let review: Value = serde_json::from_slice(&body).expect("a review");
    assert_eq!(review["kind"], "ConversionReview");
    assert_eq!(review["response"]["result"]["status"], "Failure");
    let (status, _) = s
        .client
        .post(CONVERT_PATH, "text/plain", b"{}".to_vec())
        .await
        .expect("post");
    assert_eq!(status.as_u16(), 400);
    let (status, body) = s
        .client
        .post(
            CONVERT_PATH,
            "application/json",
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#.to_vec(),
        )
        .await
        .expect("post");
    assert_eq!(status.as_u16(), 400);
    let review: Value = serde_json::from_slice(&body).expect("a review");
    assert_eq!(
        review["response"]["result"]["message"],
        "conversion request is nil"
    );
    s.stop.cancel();
}

#[tokio::test]
async fn registration_checks_the_spokes() {
    let certs = GeneratedCertificates::generate(&["localhost"]).expect("certs");
    let server = WebhookServer::bind(WebhookServerOptions {
        bind_address: "127.0.0.1:0".parse().expect("addr"),
        cert: certs.cert_source(),
        ..WebhookServerOptions::default()
    })
    .await
    .expect("bind");
    let err = server
        .register_conversion(
            Conversion::<v2::Gadget>::hub()
                .spoke::<v1::Gadget>()
                .spoke::<v1::Gadget>(),
        )
        .expect_err("duplicate spoke");
    assert_eq!(
        err.to_string(),
        "registering the conversion of Gadget: duplicate spoke converter for version conv.rein.dev/v1"
    );
    server
        .register_conversion(Conversion::<v2::Gadget>::hub().spoke::<v1::Gadget>())
        .expect("register");
    let err = server
        .register_conversion(Conversion::<v2::Gadget>::hub())
        .expect_err("kind registered twice");
    assert!(err.to_string().contains("already registered"), "{err}");
}
