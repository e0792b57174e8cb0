//! Property test of the request parsing of the health-probe and metrics servers (what kubelet
//! and Prometheus, or anyone who can reach the port, send): any method, path and query
//! (`?verbose`, `?exclude=` with odd values) gets an answer below 500 while every check passes,
//! and raw garbage on the socket never stops the servers from answering the next request.
//!
//! 128 cases by default; set `PROPTEST_CASES` for a longer run.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use rein_manager::healthz::{self, HealthProbeOptions, HealthProbeServer, HealthProbes};
use rein_manager::metrics::{MetricsServer, MetricsServerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use crate::prop_config::config;

/// Writes `request` on a fresh connection and reads until the server closes it. With
/// `half_close` the client also closes its sending side at once (hyper then drops the
/// connection at the end of input: right for garbage, wrong for a request awaiting its answer).
async fn exchange(
    addr: SocketAddr,
    request: &[u8],
    half_close: bool,
) -> Result<Vec<u8>, TestCaseError> {
    let fail = |what: &str, e: std::io::Error| TestCaseError::fail(format!("{what}: {e}"));
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| fail("connecting", e))?;
    // The server may answer and close before it has read everything we send.
    let _ = stream.write_all(request).await;
    if half_close {
        let _ = stream.shutdown().await;
    }
    let mut answer = Vec::new();
    match tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer)).await {
        Ok(Ok(_)) => Ok(answer),
        // A reset after a partial answer (the server closed on unread input) still answered.
        Ok(Err(_)) => Ok(answer),
        Err(_) => Err(TestCaseError::fail("no answer and no close within 20s")),
    }
}

fn status_of(answer: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(answer.get(..12)?).ok()?;
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

fn target() -> impl Strategy<Value = String> {
    let path = prop_oneof![
        prop::sample::select(vec![
            "/healthz",
            "/readyz",
            "/livez",
            "/healthz/ping",
            "/readyz/ping",
            "/healthz/nope",
            "/metrics",
            "/metrics/",
            "/",
            "//healthz",
            "/healthz/",
            "/healthz/ping/extra",
            "/%2e%2e/metrics",
            "/healthz%00",
        ])
        .prop_map(str::to_string),
        "/[a-zA-Z0-9/._~%-]{0,20}",
    ];
    let pair = prop_oneof![
        Just("verbose".to_string()),
        Just("verbose=false".to_string()),
        "exclude=[a-z%=&]{0,8}",
        "[a-zA-Z0-9=%._~-]{0,12}",
    ];
    (path, prop::collection::vec(pair, 0..4)).prop_map(|(path, pairs)| {
        if pairs.is_empty() {
            path
        } else {
            format!("{path}?{}", pairs.join("&"))
        }
    })
}

#[test]
fn probe_and_metrics_requests_get_an_answer() {
    let rt = Runtime::new().expect("runtime");
    let stop = CancellationToken::new();
    let (probe_addr, metrics_addr) = rt.block_on(async {
        let probes = HealthProbes::new();
        probes
            .add_healthz_check("ping", healthz::ping())
            .expect("adds");
        probes
            .add_readyz_check("ping", healthz::ping())
            .expect("adds");
        let options = HealthProbeOptions {
            bind_address: "127.0.0.1:0".parse().expect("addr"),
            ..HealthProbeOptions::default()
        };
        let probe = Arc::new(
            HealthProbeServer::bind(options, probes)
                .await
                .expect("binds"),
        );
        let metrics = Arc::new(
            MetricsServer::bind(MetricsServerOptions {
                bind_address: "127.0.0.1:0".parse().expect("addr"),
                ..MetricsServerOptions::default()
            })
            .await
            .expect("binds"),
        );
        let addrs = (probe.local_addr(), metrics.local_addr());
        let (p, m, t1, t2) = (probe.clone(), metrics.clone(), stop.clone(), stop.clone());
        tokio::spawn(async move { p.run(t1).await });
        tokio::spawn(async move { m.run(t2).await });
        addrs
    });
    let method = prop::sample::select(vec!["GET", "GET", "HEAD", "POST", "PUT", "DELETE", "BREW"]);
    let garbage = prop_oneof![
        any::<Vec<u8>>(),
        Just(b"GET /healthz HTTP/9.9\r\n\r\n".to_vec()),
        Just(b"GET /healthz\r\n\r\n".to_vec()),
        Just(b"GET /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n".to_vec()),
        Just(format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(100_000)).into_bytes()),
    ];
    let case = (any::<bool>(), method, target(), prop::option::of(garbage));
    let mut runner = TestRunner::new(config(128));
    runner
        .run(&case, |(metrics, method, target, garbage)| {
            let addr = if metrics { metrics_addr } else { probe_addr };
            rt.block_on(async {
                if let Some(garbage) = garbage {
                    // Whatever the server makes of it (a 400, or closing), it must go on.
                    exchange(addr, &garbage, true).await?;
                }
                let request = format!(
                    "{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                );
                let answer = exchange(addr, request.as_bytes(), false).await?;
                let status = status_of(&answer).ok_or_else(|| {
                    TestCaseError::fail(format!(
                        "{method} {target}: no HTTP answer: {:?}",
                        String::from_utf8_lossy(&answer)
                    ))
                })?;
                prop_assert!(
                    status < 500,
                    "{} {} on {}: {}",
                    method,
                    target,
                    if metrics { "metrics" } else { "probes" },
                    String::from_utf8_lossy(&answer)
                );
                Ok(())
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
    stop.cancel();
}
