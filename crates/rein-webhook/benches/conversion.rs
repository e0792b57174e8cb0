//! Benchmarks of the conversion webhook: a ConversionReview round trip over TLS on loopback
//! (one new connection per review, as the API server's first call), with one object and with
//! a list's hundred, converted spoke → hub.

use std::sync::Arc;
use std::time::Instant;

use kube_derive::CustomResource;
use rein_webhook::{
    AdmissionClient, CONVERT_PATH, Conversion, ConversionError, Convertible, GeneratedCertificates,
    Hub, WebhookServer, WebhookServerOptions, conversion_request,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod v1 {
    use super::*;

    /// v1: the size as text.
    #[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "bench.rein.dev", version = "v1", kind = "Gadget", namespaced)]
    #[kube(crates(kube_core = "::kube_core"))]
    pub(super) struct GadgetSpec {
        pub(super) size: String,
    }
}

mod v2 {
    use super::*;

    /// v2, the hub: the size as a number.
    #[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "bench.rein.dev", version = "v2", kind = "Gadget", namespaced)]
    #[kube(crates(kube_core = "::kube_core"))]
    pub(super) struct GadgetSpec {
        pub(super) replicas: i32,
    }
}

impl Hub for v2::Gadget {}

impl Convertible<v2::Gadget> for v1::Gadget {
    fn convert_to(&self) -> Result<v2::Gadget, ConversionError> {
        let replicas = self
            .spec
            .size
            .parse()
            .map_err(|_| ConversionError::new("no count"))?;
        Ok(v2::Gadget {
            metadata: self.metadata.clone(),
            spec: v2::GadgetSpec { replicas },
        })
    }

    fn convert_from(hub: &v2::Gadget) -> Result<Self, ConversionError> {
        Ok(v1::Gadget {
            metadata: hub.metadata.clone(),
            spec: v1::GadgetSpec {
                size: hub.spec.replicas.to_string(),
            },
        })
    }
}

#[tokio::main]
async fn main() {
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
    server
        .register_conversion(Conversion::<v2::Gadget>::hub().spoke::<v1::Gadget>())
        .expect("register");
    let stop = CancellationToken::new();
    let (s, t) = (server.clone(), stop.clone());
    tokio::spawn(async move { s.run(t).await });
    let client =
        AdmissionClient::new(server.local_addr(), "localhost", &certs.ca_pem).expect("client");
    let object = |i: usize| {
        json!({
            "apiVersion": "bench.rein.dev/v1", "kind": "Gadget",
            "metadata": {"name": format!("g-{i}"), "namespace": "default", "uid": format!("u-{i}"),
                         "labels": {"app": "bench"}, "resourceVersion": "7"},
            "spec": {"size": i.to_string()},
        })
    };
    for (objects, rounds) in [(1, 300), (100, 100)] {
        let review = conversion_request("bench.rein.dev/v2", (0..objects).map(object).collect());
        let started = Instant::now();
        for _ in 0..rounds {
            let resp = client
                .convert(CONVERT_PATH, &review)
                .await
                .expect("convert");
            assert_eq!(resp.converted_objects.len(), objects);
        }
        let ms = started.elapsed().as_secs_f64() * 1e3 / f64::from(rounds);
        println!(
            "BENCH|webhook|conversion_round_trip_{objects}_objects|{ms:.2}|ms/review|TCP + TLS \
             (resumed) + HTTP/1.1 + typed spoke→hub conversion on loopback; aim: < 5 ms"
        );
    }
    stop.cancel();
}
