//! Initial sync of 100,000 Pods served by rein-testenv: wall time and resident-memory growth, measured in a child process.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube_client::api::{Api, Patch, PatchParams, PostParams};
use kube_client::core::ObjectMeta;
use rein_informer::{
    ApiListerWatcher, InformerOptions, ListWatchOptions, ResourceEventHandlerFuncs,
    SharedIndexInformer,
};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

const CHILD_ENV: &str = "REIN_INFORMER_SYNC_CHILD";
const PODS: usize = 100_000;

fn pod(i: usize) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("pod-{i}")),
            namespace: Some("default".into()),
            labels: Some([("app".to_string(), format!("app-{}", i % 50))].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Resident set size of this process in KiB (`VmRSS`), 0 where /proc is unavailable.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

async fn seeded_env() -> (TestEnv, Api<Pod>) {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<Pod> = Api::namespaced(env.client(), "default");
    let created = Instant::now();
    futures::stream::iter(0..PODS)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &pod(i))
                    .await
                    .expect("create pod");
            }
        })
        .buffer_unordered(64)
        .collect::<Vec<()>>()
        .await;
    eprintln!("created {PODS} pods in {:?}", created.elapsed());
    env.clear_requests();
    tokio::time::sleep(Duration::from_millis(200)).await;
    (env, api)
}

/// The same workload through kube-runtime's watcher + reflector (paged list, then watch).
async fn kube_runtime_child() {
    use kube_runtime::{WatchStreamExt, reflector, watcher};
    let (env, _api) = seeded_env().await;
    let before = rss_kib();
    let all: Api<Pod> = Api::all(env.client());
    let (reader, writer) = reflector::store::<Pod>();
    let start = Instant::now();
    let stream = reflector::reflector(writer, watcher(all, watcher::Config::default()))
        .applied_objects()
        .boxed();
    let drive = tokio::spawn(async move {
        let mut stream = stream;
        while stream.next().await.is_some() {}
    });
    reader.wait_until_ready().await.expect("reflector ready");
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(reader.state().len(), PODS);
    let after = rss_kib();
    println!(
        "BENCH|informer-sync|100k pods, kube-runtime reflector (paged list): wall time|{secs:.2}|s|comparison for the paged-list case"
    );
    println!(
        "BENCH|informer-sync|100k pods, kube-runtime reflector (paged list): RSS growth per cached pod|{:.0}|bytes|comparison for the paged-list case",
        (after.saturating_sub(before) * 1024) as f64 / PODS as f64
    );
    drive.abort();
}

async fn child(streaming: bool) {
    let (env, api) = seeded_env().await;
    let before = rss_kib();

    let lw = ApiListerWatcher::<Pod>::new(env.client(), ListWatchOptions::default());
    let mut options = InformerOptions::default();
    options.reflector.use_watch_list = streaming;
    let informer = Arc::new(SharedIndexInformer::new(lw, options));
    informer
        .add_event_handler(ResourceEventHandlerFuncs::<Pod>::new().on_add(|_, _| {}))
        .expect("handler");
    let stop = CancellationToken::new();
    let start = Instant::now();
    let run = {
        let (informer, stop) = (informer.clone(), stop.clone());
        tokio::spawn(async move { informer.run(stop).await })
    };
    while !informer.has_synced() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(informer.indexer().len(), PODS);
    let after = rss_kib();
    let mode = if streaming {
        "streaming list"
    } else {
        "paged list"
    };
    println!(
        "BENCH|informer-sync|100k pods, {mode}: wall time|{secs:.2}|s|ahead of kube-runtime's reflector on the same workload"
    );
    println!(
        "BENCH|informer-sync|100k pods, {mode}: RSS growth per cached pod|{:.0}|bytes|process RSS after sync minus before (server in the same process)",
        (after.saturating_sub(before) * 1024) as f64 / PODS as f64
    );
    if streaming {
        watch_throughput(&api, &informer).await;
    }
    stop.cancel();
    let _ = run.await;
}

/// Steady state: 10,000 label updates from 64 concurrent writers; time until the cache holds
/// every new version (bounded by the embedded server as much as by the informer).
async fn watch_throughput(api: &Api<Pod>, informer: &SharedIndexInformer<Pod>) {
    const UPDATES: usize = 10_000;
    let start = Instant::now();
    futures::stream::iter(0..UPDATES)
        .map(|i| {
            let api = api.clone();
            async move {
                let patch = serde_json::json!({ "metadata": { "labels": { "bench": "updated" } } });
                api.patch(
                    &format!("pod-{i}"),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .expect("patch pod");
            }
        })
        .buffer_unordered(64)
        .collect::<Vec<()>>()
        .await;
    let updated = |i: usize| {
        informer
            .indexer()
            .get_by_key(&format!("default/pod-{i}"))
            .and_then(|p| p.metadata.labels.as_ref().map(|l| l.contains_key("bench")))
            .unwrap_or(false)
    };
    while !(0..UPDATES).all(updated) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "BENCH|informer-sync|steady watch: 10k updates from 64 writers into the cache|{:.0}|events/s|end to end through the embedded server",
        UPDATES as f64 / secs
    );
}

fn main() {
    if let Ok(mode) = std::env::var(CHILD_ENV) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        match mode.as_str() {
            "kube-runtime" => rt.block_on(kube_runtime_child()),
            m => rt.block_on(child(m == "streaming")),
        }
        return;
    }
    // One child process per case, so each case's memory is measured from a clean process.
    let exe = std::env::current_exe().expect("current exe");
    for mode in ["streaming", "paged", "kube-runtime"] {
        let out = std::process::Command::new(&exe)
            .env(CHILD_ENV, mode)
            .output()
            .expect("spawn child");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
}
