//! Benchmarks of the test API server: create throughput, a 100,000-object list, and watch
//! fan-out (100 watchers × 10,000 events). Prints `BENCH|…` lines for `cargo xtask bench`.

use std::time::{Duration, Instant};

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, PostParams};
use rein_testenv::TestEnv;
use serde_json::json;

const LIST_OBJECTS: usize = 100_000;
const WATCHERS: usize = 100;
const WATCH_EVENTS: usize = 10_000;
const CONCURRENCY: usize = 64;

fn configmap(i: usize) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": format!("cm-{i:06}"), "labels": {"app": "bench"}},
        "data": {"i": i.to_string()},
    }))
    .expect("configmap")
}

async fn create_many(api: &Api<ConfigMap>, range: std::ops::Range<usize>) -> Duration {
    let start = Instant::now();
    futures::stream::iter(range)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &configmap(i))
                    .await
                    .expect("creates");
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    start.elapsed()
}

async fn list_and_create() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let took = create_many(&api, 0..LIST_OBJECTS).await;
    let per_sec = LIST_OBJECTS as f64 / took.as_secs_f64();
    println!(
        "BENCH|testenv|create throughput ({CONCURRENCY} concurrent, kube-client)|{per_sec:.0}|creates/s|higher is better"
    );

    let request = http::Request::get("/api/v1/namespaces/default/configmaps")
        .body(Vec::new())
        .expect("request");
    let client = env.client();
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let text = client.request_text(request.clone()).await.expect("lists");
        best = best.min(start.elapsed());
        assert!(text.len() > LIST_OBJECTS * 100);
    }
    println!(
        "BENCH|testenv|list 100,000 configmaps (raw HTTP, best of 3)|{:.3}|s|aim < 0.5 s",
        best.as_secs_f64()
    );
    let start = Instant::now();
    let typed = api.list(&Default::default()).await.expect("lists");
    assert_eq!(typed.items.len(), LIST_OBJECTS);
    println!(
        "BENCH|testenv|list 100,000 configmaps (typed, incl. client decode)|{:.3}|s|note: client-side decode included",
        start.elapsed().as_secs_f64()
    );
}

async fn watch_fan_out() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let request = http::Request::get(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0",
        )
        .body(Vec::new())
        .expect("request");
        let stream = env.client().request_stream(request).await.expect("watches");
        watchers.push(tokio::spawn(async move {
            let mut lines = Box::pin(stream).lines();
            let mut seen = 0;
            while seen < WATCH_EVENTS {
                match lines.next().await {
                    Some(Ok(line)) if line.starts_with("{\"type\":\"ADDED\"") => seen += 1,
                    Some(Ok(_)) => {}
                    Some(Err(e)) => panic!("watch failed: {e}"),
                    None => break,
                }
            }
            (seen, Instant::now())
        }));
    }
    let start = Instant::now();
    let writes = create_many(&api, 0..WATCH_EVENTS).await;
    let writes_done = start + writes;
    let mut last = writes_done;
    for w in watchers {
        let (seen, at) = w.await.expect("joins");
        assert_eq!(seen, WATCH_EVENTS);
        last = last.max(at);
    }
    println!(
        "BENCH|testenv|watch fan-out 100 watchers x 10,000 events (raw streams; first write to last delivery)|{:.3}|s|aim < 2 s",
        (last - start).as_secs_f64()
    );
    println!(
        "BENCH|testenv|watch fan-out lag after the last write|{:.3}|s|lower is better",
        (last - writes_done).as_secs_f64()
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let start = Instant::now();
        let env = TestEnv::start().await.expect("starts");
        println!(
            "BENCH|testenv|start-up (TestEnv::start, incl. client)|{:.2}|ms|aim < 100 ms",
            start.elapsed().as_secs_f64() * 1e3
        );
        drop(env);
        list_and_create().await;
        watch_fan_out().await;
    });
}
