//! Metrics server over real HTTP: the process-wide registry and user registries scraped, a
//! counter seen moving, and the work-queue metrics provider fed by a real queue.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use rein_manager::metrics::{MetricsServer, MetricsServerOptions, WorkqueueMetrics};
use rein_workqueue::{Queue, QueueConfig};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

async fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
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
    let content_type = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap_or("").to_owned())
        .unwrap_or_default();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        content_type,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

async fn start(options: MetricsServerOptions) -> (Arc<MetricsServer>, CancellationToken) {
    let server = Arc::new(MetricsServer::bind(options).await.expect("bind"));
    let stop = CancellationToken::new();
    let (s, t) = (server.clone(), stop.clone());
    tokio::spawn(async move { s.run(t).await });
    (server, stop)
}

fn loopback() -> MetricsServerOptions {
    MetricsServerOptions {
        bind_address: "127.0.0.1:0".parse().expect("addr"),
        ..MetricsServerOptions::default()
    }
}

#[tokio::test]
async fn a_scrape_shows_global_and_user_counters_moving() {
    let global = Counter::<u64>::default();
    rein_client::metrics::registry().lock().register(
        "rein_manager_test_scrapes",
        "A counter registered by the metrics test",
        global.clone(),
    );
    let user_registry = Arc::new(Mutex::new(Registry::default()));
    let mine = Counter::<u64>::default();
    user_registry
        .lock()
        .register("my_operator_things", "Things my operator did", mine.clone());

    let (server, stop) = start(loopback().registry(user_registry)).await;
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback());

    let (status, content_type, body) = get(addr, "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    assert!(body.contains("rein_manager_test_scrapes_total 0"), "{body}");
    assert!(body.contains("my_operator_things_total 0"), "{body}");
    assert!(body.ends_with("# EOF\n"));

    global.inc_by(2);
    mine.inc();
    let (_, _, body) = get(addr, "/metrics").await;
    assert!(body.contains("rein_manager_test_scrapes_total 2"), "{body}");
    assert!(body.contains("my_operator_things_total 1"), "{body}");

    assert_eq!(get(addr, "/other").await.0, 404);
    stop.cancel();
}

#[tokio::test]
async fn workqueue_metrics_from_a_real_queue_are_served() {
    let metrics = WorkqueueMetrics::new();
    let queue: Queue<String> = Queue::with_config(
        QueueConfig::named("scrape-test").metrics_provider(Arc::new(metrics.clone())),
    );
    queue.add("a".to_owned());
    queue.add("b".to_owned());
    queue.add("a".to_owned()); // de-duplicated: not counted

    let (server, stop) = start(loopback().registry(metrics.registry())).await;
    let (_, _, body) = get(server.local_addr(), "/metrics").await;
    assert!(
        body.contains("workqueue_adds_total{name=\"scrape-test\"} 2"),
        "{body}"
    );
    assert!(
        body.contains("workqueue_depth{name=\"scrape-test\"} 2"),
        "{body}"
    );

    let item = tokio::time::timeout(Duration::from_secs(5), queue.get())
        .await
        .expect("get in time")
        .expect("item");
    queue.done(&item);
    let (_, _, body) = get(server.local_addr(), "/metrics").await;
    assert!(
        body.contains("workqueue_depth{name=\"scrape-test\"} 1"),
        "{body}"
    );
    assert!(
        body.contains("workqueue_work_duration_seconds_count{name=\"scrape-test\"} 1"),
        "{body}"
    );
    queue.shut_down();
    stop.cancel();
}
