//! The whole stack: a manager's metrics server, scraped over HTTP, shows a controller's
//! reconcile counters and queue metrics moving as it reconciles ConfigMaps in rein-testenv,
//! and its queue's depth broken down by priority.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::PostParams;
use rein::controller::reconciler_fn;
use rein::controller::{Action, ControllerManagedBy, ControllerOptions};
use rein::manager::metrics::MetricsServerOptions;
use rein::manager::{Manager, Options};
use rein_testenv::TestEnv;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

const CONTROLLER: &str = "metrics-scrape-test";

/// GETs `/metrics` with a plain HTTP/1.0 request and returns the body.
async fn scrape(addr: SocketAddr) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await
        .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    assert!(response.starts_with("HTTP/1."), "not HTTP: {response:.80}");
    assert!(response.contains(" 200 "), "scrape failed: {response:.200}");
    response
}

/// The value of the first sample of `metric` whose labels contain every one of `labels`.
fn sample(body: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(metric) && l[metric.len()..].starts_with('{'))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn wait_for(mut check: impl AsyncFnMut() -> bool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("condition not reached within 30 s");
}

/// A ConfigMap named `name` in `default`, created through `api`.
async fn create_config_map(api: &Api<ConfigMap>, name: &str) {
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name }
    }))
    .expect("valid ConfigMap");
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create");
}

/// A manager on `env` serving metrics on a loopback port.
async fn manager_with_metrics(env: &TestEnv) -> Manager {
    let options = Options {
        metrics: Some(MetricsServerOptions {
            bind_address: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..MetricsServerOptions::default()
        }),
        ..Options::default()
    };
    Manager::builder(env.config())
        .options(options)
        .build()
        .await
        .expect("build manager")
}

/// controller-runtime's `workqueue_depth{name, controller, priority}`: objects of the initial
/// list wait at priority -100, later events at 0, each counted in its own series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_the_queue_depth_by_priority() {
    const DEPTH_CONTROLLER: &str = "metrics-depth-by-priority-test";
    let env = TestEnv::start().await.expect("start rein-testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..3 {
        create_config_map(&api, &format!("initial-{i}")).await;
    }
    let mgr = manager_with_metrics(&env).await;
    // One worker, held in its first reconcile until the gate opens: the rest stays queued.
    let gate = Arc::new(Semaphore::new(0));
    let reconciles = {
        let gate = gate.clone();
        reconciler_fn(move |_ctx, _req| {
            let gate = gate.clone();
            async move {
                gate.acquire().await.expect("gate open").forget();
                Ok::<_, std::convert::Infallible>(Action::done())
            }
        })
    };
    ControllerManagedBy::new(&mgr)
        .named(DEPTH_CONTROLLER)
        .for_::<ConfigMap>()
        .with_options(ControllerOptions {
            max_concurrent_reconciles: 1,
            ..ControllerOptions::default()
        })
        .complete(reconciles)
        .expect("build controller");
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    wait_for(async || mgr.metrics_address().is_some()).await;
    let addr = mgr.metrics_address().expect("metrics address");

    let ours = [
        format!("name=\"{DEPTH_CONTROLLER}\""),
        format!("controller=\"{DEPTH_CONTROLLER}\""),
    ];
    let depth = |body: &str, priority: &str| {
        let priority = format!("priority=\"{priority}\"");
        sample(body, "workqueue_depth", &[&ours[0], &ours[1], &priority])
    };
    // The initial list: three objects at low priority, one of them taken by the worker.
    let mut last = String::new();
    wait_for(async || {
        last = scrape(addr).await;
        depth(&last, "-100").is_some_and(|v| v >= 2.0)
    })
    .await;
    // Two events after the initial list: default priority, a series of their own.
    for i in 0..2 {
        create_config_map(&api, &format!("event-{i}")).await;
    }
    wait_for(async || {
        last = scrape(addr).await;
        depth(&last, "0") == Some(2.0)
    })
    .await;
    assert!(
        depth(&last, "-100").is_some_and(|v| v >= 2.0),
        "low-priority depth fell while the worker was held:\n{last}"
    );

    // Open the gate: both series drain to zero.
    gate.add_permits(1_000);
    wait_for(async || {
        last = scrape(addr).await;
        depth(&last, "0") == Some(0.0) && depth(&last, "-100") == Some(0.0)
    })
    .await;

    stop.cancel();
    running
        .await
        .expect("manager task")
        .expect("manager stops cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_reconcile_counters_moving() {
    let env = TestEnv::start().await.expect("start rein-testenv");
    let options = Options {
        metrics: Some(MetricsServerOptions {
            bind_address: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..MetricsServerOptions::default()
        }),
        ..Options::default()
    };
    let mgr = Manager::builder(env.config())
        .options(options)
        .build()
        .await
        .expect("build manager");
    let reconciled = Arc::new(AtomicUsize::new(0));
    let counter = reconciled.clone();
    ControllerManagedBy::new(&mgr)
        .named(CONTROLLER)
        .for_::<ConfigMap>()
        .complete(reconciler_fn(move |_ctx, _req| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::convert::Infallible>(Action::done())
            }
        }))
        .expect("build controller");

    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    wait_for(async || mgr.metrics_address().is_some()).await;
    let addr = mgr.metrics_address().expect("metrics address");

    // Settle: the initial list (the pre-created ConfigMaps, if any) is reconciled first.
    let before_creates = reconciled.load(Ordering::SeqCst);
    let ours = format!("controller=\"{CONTROLLER}\"");
    let baseline = sample(
        &scrape(addr).await,
        "controller_runtime_reconcile_total",
        &[&ours, "result=\"success\""],
    )
    .unwrap_or(0.0);

    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..5 {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": { "name": format!("scrape-{i}") }
        }))
        .expect("valid ConfigMap");
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }
    wait_for(async || reconciled.load(Ordering::SeqCst) >= before_creates + 5).await;

    // The counter is incremented after the reconcile returns: wait for the scrape to show it.
    let mut last = String::new();
    wait_for(async || {
        last = scrape(addr).await;
        sample(
            &last,
            "controller_runtime_reconcile_total",
            &[&ours, "result=\"success\""],
        )
        .is_some_and(|v| v >= baseline + 5.0)
    })
    .await;
    assert!(
        sample(
            &last,
            "controller_runtime_reconcile_time_seconds_count",
            &[&ours]
        )
        .is_some_and(|v| v >= 5.0),
        "reconcile time histogram missing or not moving:\n{last}"
    );
    assert!(
        sample(
            &last,
            "workqueue_adds_total",
            &[&format!("name=\"{CONTROLLER}\"")]
        )
        .is_some_and(|v| v >= 5.0),
        "workqueue adds for the controller missing or not moving:\n{last}"
    );
    // The informer behind the controller: its reflector's lists and watches, and its store.
    for (metric, at_least) in [
        ("reflector_lists_total", 1.0),
        ("reflector_watches_total", 1.0),
        ("rein_informer_store_objects", 5.0),
        ("rein_informer_synced", 1.0),
    ] {
        assert!(
            sample(&last, metric, &["ConfigMap"]).is_some_and(|v| v >= at_least),
            "{metric} for ConfigMap missing or below {at_least}:\n{last}"
        );
    }
    // The process collector, as controller-runtime's registry has it.
    assert!(
        last.lines()
            .any(|l| l.starts_with("process_resident_memory_bytes ")),
        "process_resident_memory_bytes missing:\n{last}"
    );
    // The cache's lists and watches went through the manager's client: client-go's metrics.
    let host = format!(
        "host=\"{}\"",
        env.config().cluster_url.authority().expect("authority")
    );
    assert!(
        sample(
            &last,
            "rest_client_requests_total",
            &["code=\"200\"", "method=\"GET\"", &host]
        )
        .is_some_and(|v| v >= 1.0),
        "rest_client_requests_total missing for {host}:\n{last}"
    );
    assert!(
        sample(
            &last,
            "rest_client_request_duration_seconds_count",
            &["verb=\"GET\"", &host]
        )
        .is_some_and(|v| v >= 1.0),
        "rest_client_request_duration_seconds missing for {host}:\n{last}"
    );

    stop.cancel();
    running
        .await
        .expect("manager task")
        .expect("manager stops cleanly");
}
