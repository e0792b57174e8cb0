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

/// `debug_queues` on the manager's metrics server shows a controller's queue live: a
/// reconcile held in flight, with its age; off by default.
#[tokio::test]
async fn the_debug_queues_endpoint_shows_a_reconcile_in_flight() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_client::Api;
    use kube_client::api::PostParams;
    use rein_controller::{Action, BoxError, ControllerManagedBy, reconciler_fn};
    use rein_manager::metrics::DEBUG_QUEUES_PATH;
    use rein_manager::{Manager, Options};
    use tokio::sync::Notify;

    let env = rein_testenv::TestEnv::start().await.expect("testenv");
    let mgr = Manager::builder(env.config())
        .options(Options {
            metrics: Some(MetricsServerOptions {
                debug_queues: true,
                ..loopback()
            }),
            ..Options::default()
        })
        .build()
        .await
        .expect("manager");
    let release = Arc::new(Notify::new());
    let held = release.clone();
    ControllerManagedBy::new(&mgr)
        .named("debug-queues")
        .for_::<ConfigMap>()
        .complete(reconciler_fn(move |_ctx, req: rein_controller::Request| {
            let held = held.clone();
            async move {
                if req.key.name == "held" {
                    held.notified().await;
                }
                Ok::<_, BoxError>(Action::done())
            }
        }))
        .expect("controller");
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {"name": "held"}}))
        .expect("configmap");
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create");

    let in_flight = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let Some(addr) = mgr.metrics_address() else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let (status, content_type, body) = get(addr, DEBUG_QUEUES_PATH).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(content_type, "application/json");
            let doc: serde_json::Value = serde_json::from_str(&body).expect("json");
            let ours = doc["controllers"]
                .as_array()
                .expect("controllers")
                .iter()
                .find(|c| c["controller"] == "debug-queues")
                .cloned()
                .expect("our controller is listed");
            if ours["inFlight"].as_array().is_some_and(|a| !a.is_empty()) {
                break ours;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the held reconcile shows in flight");
    assert_eq!(
        in_flight["inFlight"][0]["key"], "default/held",
        "{in_flight}"
    );
    assert!(
        in_flight["inFlight"][0]["seconds"].as_f64().is_some(),
        "{in_flight}"
    );

    release.notify_one();
    stop.cancel();
    running.await.expect("task").expect("manager stops");

    // Off by default.
    let (server, stop) = start(loopback()).await;
    let (status, _, _) = get(server.local_addr(), DEBUG_QUEUES_PATH).await;
    assert_eq!(status, 404);
    stop.cancel();
}
