//! Benchmarks of the manager's servers: an in-process defaulting decision, a full admission
//! round trip over TLS, a metrics encode and a readiness probe over HTTP.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use rein_manager::healthz::{HealthProbeOptions, HealthProbeServer, HealthProbes, ping};
use rein_manager::metrics::encode;
use rein_manager::webhook::{
    AdmissionClient, AdmissionError, AdmissionHandler, AdmissionRequest, AdmissionReview,
    CustomDefaulter, DefaultingWebhook, GeneratedCertificates, Operation, WebhookServer,
    WebhookServerOptions, review_request,
};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

struct Defaulter;

#[async_trait]
impl CustomDefaulter<ConfigMap> for Defaulter {
    async fn default(&self, cm: &mut ConfigMap) -> Result<(), AdmissionError> {
        cm.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .entry("app".into())
            .or_insert_with(|| "default".into());
        Ok(())
    }
}

fn config_map() -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("bench".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        data: Some(
            (0..20)
                .map(|i| (format!("key-{i}"), "x".repeat(64)))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct Labels {
    controller: String,
    result: String,
}

#[tokio::main]
async fn main() {
    // 1. The defaulting decision alone: decode, default, diff, encode the patch.
    let review = review_request(Operation::Create, Some(&config_map()), None).expect("review");
    let request: AdmissionRequest = serde_json::from_value::<AdmissionReview<_>>(review.clone())
        .expect("decodes")
        .try_into()
        .expect("has a request");
    let webhook = DefaultingWebhook::<ConfigMap, _>::new(Defaulter);
    let rounds = 20_000;
    let started = Instant::now();
    for _ in 0..rounds {
        let resp = webhook.handle(&request).await;
        assert!(resp.patch.is_some());
    }
    let us = started.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
    println!(
        "BENCH|webhook|defaulter_decision_configmap_20_keys|{us:.1}|µs/review|in-process, no HTTP; aim: well under the API server's 10 s webhook timeout budget (< 100 µs)"
    );

    // 2. A full admission round trip over TLS on loopback, one new connection per review.
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
        .register_defaulter::<ConfigMap, _>(Defaulter)
        .expect("register");
    let stop = CancellationToken::new();
    let (s, t) = (server.clone(), stop.clone());
    tokio::spawn(async move { s.run(t).await });
    let client =
        AdmissionClient::new(server.local_addr(), "localhost", &certs.ca_pem).expect("client");
    let rounds = 300;
    let started = Instant::now();
    for _ in 0..rounds {
        let resp = client.review(&path, &review).await.expect("review");
        assert!(resp.allowed);
    }
    let ms = started.elapsed().as_secs_f64() * 1e3 / f64::from(rounds);
    println!(
        "BENCH|webhook|tls_round_trip_new_connection|{ms:.2}|ms/review|TCP + TLS (resumed) + HTTP/1.1 + defaulting on loopback; aim: < 5 ms"
    );
    stop.cancel();

    // 3. Encoding a registry of 1,000 counter series (a scrape's CPU cost).
    let registry = Arc::new(Mutex::new(Registry::default()));
    let family = Family::<Labels, Counter>::default();
    registry
        .lock()
        .register("bench_reconcile", "bench", family.clone());
    for c in 0..250 {
        for result in ["success", "error", "requeue", "requeue_after"] {
            family
                .get_or_create(&Labels {
                    controller: format!("controller-{c}"),
                    result: result.into(),
                })
                .inc();
        }
    }
    let rounds = 500;
    let started = Instant::now();
    let mut bytes = 0;
    for _ in 0..rounds {
        bytes = encode(std::slice::from_ref(&registry)).len();
    }
    let us = started.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
    println!(
        "BENCH|metrics|encode_1000_series|{us:.0}|µs/scrape|{bytes} bytes of text; aim: < 2 ms"
    );

    // 4. A readiness probe over HTTP/1.1 keep-alive.
    let probes = HealthProbes::new();
    probes.add_readyz_check("ping", ping()).expect("add");
    let server = Arc::new(
        HealthProbeServer::bind(
            HealthProbeOptions {
                bind_address: "127.0.0.1:0".parse().expect("addr"),
                ..HealthProbeOptions::default()
            },
            probes,
        )
        .await
        .expect("bind"),
    );
    let stop = CancellationToken::new();
    let (s, t) = (server.clone(), stop.clone());
    tokio::spawn(async move { s.run(t).await });
    let rounds = 5_000;
    let us = probe_round_trips(server.local_addr(), rounds).await;
    println!(
        "BENCH|healthz|readyz_keep_alive|{us:.0}|µs/probe|HTTP/1.1 keep-alive on loopback, one check; aim: < 500 µs"
    );
    stop.cancel();
}

async fn probe_round_trips(addr: SocketAddr, rounds: u32) -> f64 {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let started = Instant::now();
    for _ in 0..rounds {
        sender.ready().await.expect("connection stays open");
        let req = hyper::Request::get("/readyz")
            .header("host", "localhost")
            .body(Empty::<Bytes>::new())
            .expect("request");
        let resp = sender.send_request(req).await.expect("send");
        assert_eq!(resp.status(), 200);
        resp.into_body().collect().await.expect("body");
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(rounds)
}
