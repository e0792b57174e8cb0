//! Health-probe server over real HTTP: passing and failing checks, verbose output, single
//! checks, and readiness gated on informer caches synced from rein-testenv.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ConfigMap;
use rein_informer::SharedInformerFactory;
use rein_manager::healthz::{
    self, HealthProbeOptions, HealthProbeServer, HealthProbes, check_fn, synced_check,
};
use rein_testenv::TestEnv;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let req = hyper::Request::get(path)
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .expect("request");
    let resp = sender.send_request(req).await.expect("send");
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn loopback() -> HealthProbeOptions {
    HealthProbeOptions {
        bind_address: "127.0.0.1:0".parse().expect("addr"),
        ..HealthProbeOptions::default()
    }
}

async fn start(probes: HealthProbes) -> (Arc<HealthProbeServer>, CancellationToken) {
    let server = Arc::new(
        HealthProbeServer::bind(loopback(), probes)
            .await
            .expect("bind"),
    );
    let stop = CancellationToken::new();
    let (s, t) = (server.clone(), stop.clone());
    tokio::spawn(async move { s.run(t).await });
    (server, stop)
}

#[tokio::test]
async fn checks_pass_fail_and_report_verbosely() {
    let probes = HealthProbes::new();
    let healthy = Arc::new(AtomicBool::new(false));
    let flag = healthy.clone();
    probes
        .add_healthz_check("ping", healthz::ping())
        .expect("add ping");
    probes
        .add_healthz_check(
            "db",
            check_fn(move || {
                let ok = flag.load(Ordering::SeqCst);
                async move {
                    if ok {
                        Ok(())
                    } else {
                        Err("connection refused".into())
                    }
                }
            }),
        )
        .expect("add db");
    let (server, stop) = start(probes.clone()).await;
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback());

    let (status, body) = get(addr, "/healthz").await;
    assert_eq!(status, 500);
    assert_eq!(
        body,
        "[-]db failed: reason withheld\n[+]ping ok\nhealthz check failed\n"
    );
    let (status, body) = get(addr, "/healthz/db").await;
    assert_eq!(
        (status, body.as_str()),
        (500, "internal server error: connection refused\n")
    );
    let (status, body) = get(addr, "/healthz?exclude=db").await;
    assert_eq!((status, body.as_str()), (200, "ok"));

    healthy.store(true, Ordering::SeqCst);
    assert_eq!(get(addr, "/healthz").await, (200, "ok".to_owned()));
    assert_eq!(
        get(addr, "/healthz?verbose").await,
        (
            200,
            "[+]db ok\n[+]ping ok\nhealthz check passed\n".to_owned()
        )
    );
    assert_eq!(get(addr, "/healthz/ping").await, (200, "ok".to_owned()));
    assert_eq!(get(addr, "/healthz/missing").await.0, 404);
    assert_eq!(get(addr, "/elsewhere").await.0, 404);
    // No readiness check registered: the built-in ping answers.
    assert_eq!(
        get(addr, "/readyz?verbose").await,
        (200, "[+]ping ok\nhealthz check passed\n".to_owned())
    );

    // Checks are fixed once the server runs.
    let err = probes
        .add_readyz_check("late", healthz::ping())
        .expect_err("added after start");
    assert!(err.to_string().contains("already started"), "{err}");
    stop.cancel();
}

#[tokio::test]
async fn invalid_and_duplicate_names_are_refused() {
    let probes = HealthProbes::new();
    probes.add_readyz_check("a", healthz::ping()).expect("add");
    assert!(probes.add_readyz_check("a", healthz::ping()).is_err());
    assert!(probes.add_readyz_check("a/b", healthz::ping()).is_err());
    assert!(probes.add_readyz_check("", healthz::ping()).is_err());
    // The same name may be used once per endpoint.
    probes
        .add_healthz_check("a", healthz::ping())
        .expect("add healthz");
}

#[tokio::test]
async fn readiness_fails_until_the_informer_caches_sync() {
    let env = TestEnv::start().await.expect("testenv");
    let factory = Arc::new(SharedInformerFactory::new(env.client(), Duration::ZERO));
    let informer = factory.informer::<ConfigMap>();

    let probes = HealthProbes::new();
    probes
        .add_readyz_check(
            "informers",
            synced_check("informer caches", move || informer.has_synced()),
        )
        .expect("add");
    let (server, stop) = start(probes).await;
    let addr = server.local_addr();

    let (status, body) = get(addr, "/readyz").await;
    assert_eq!(status, 500);
    assert!(body.contains("[-]informers failed"), "{body}");
    assert_eq!(
        get(addr, "/readyz/informers").await,
        (
            500,
            "internal server error: informer caches not synced yet\n".to_owned()
        )
    );
    // Liveness does not depend on the caches.
    assert_eq!(get(addr, "/healthz").await.0, 200);

    factory.start(stop.clone());
    let synced = tokio::time::timeout(Duration::from_secs(30), factory.wait_for_cache_sync(&stop))
        .await
        .expect("caches sync in time");
    assert!(synced);
    assert_eq!(get(addr, "/readyz").await, (200, "ok".to_owned()));
    stop.cancel();
    factory.shutdown().await;
}

#[tokio::test]
async fn the_server_stops_when_told_and_runs_once() {
    let server = Arc::new(
        HealthProbeServer::bind(loopback(), HealthProbes::new())
            .await
            .expect("bind"),
    );
    let stop = CancellationToken::new();
    let (s, t) = (server.clone(), stop.clone());
    let task = tokio::spawn(async move { s.run(t).await });
    assert_eq!(
        get(server.local_addr(), "/healthz").await,
        (200, "ok".to_owned())
    );
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("stops")
        .expect("join")
        .expect("clean stop");
    assert!(server.run(CancellationToken::new()).await.is_err());
    assert!(!rein_controller::Runnable::needs_leader_election(&*server));
}
