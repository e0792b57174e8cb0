//! Initial sync and relist of 100,000 Pods served by rein-testenv: wall time and resident memory, each client case in its own process.
//!
//! The parent process seeds the server once and keeps serving; every case runs in a child
//! process that connects through a kubeconfig, so a child's RSS is the client's alone. A child
//! that needs a relist prints `RELIST`; the parent moves the server's resourceVersion on,
//! compacts the history and drops every watch (their re-watch gets 410), then answers with the
//! resourceVersion the relist must reach.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use kube_client::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::core::ObjectMeta;
use rein_informer::{
    ApiListerWatcher, InformerOptions, ListWatchOptions, ResourceEventHandlerFuncs,
    SharedIndexInformer,
};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

const CHILD_ENV: &str = "REIN_INFORMER_SYNC_CHILD";
const KUBECONFIG_ENV: &str = "REIN_INFORMER_SYNC_KUBECONFIG";
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
    proc_status_kib("VmRSS:")
}

/// Peak resident set size in KiB (`VmHWM`) since start or the last [`reset_peak_rss`].
fn peak_rss_kib() -> u64 {
    proc_status_kib("VmHWM:")
}

fn proc_status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Resets `VmHWM` to the current RSS (Linux: writing 5 to `clear_refs`).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn per_pod(kib: u64) -> f64 {
    (kib * 1024) as f64 / PODS as f64
}

/// The client of a child process, from the kubeconfig the parent wrote.
async fn child_client() -> kube_client::Client {
    let path = std::env::var(KUBECONFIG_ENV).expect("kubeconfig path");
    let kubeconfig = Kubeconfig::read_from(path).expect("read kubeconfig");
    let config =
        kube_client::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("client config");
    kube_client::Client::try_from(config).expect("client")
}

/// Asks the parent for a relist of every Pod watcher; returns the resourceVersion the relist
/// must reach.
fn request_relist() -> u64 {
    println!("RELIST");
    std::io::stdout().flush().expect("flush");
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .expect("parent answer");
    line.trim().parse().expect("target resourceVersion")
}

/// Prints the peak RSS growth per pod while a relist of every (unchanged) pod ran.
fn print_relist(mode: &str, before_kib: u64, secs: f64) {
    println!(
        "BENCH|informer-sync|100k pods, {mode}: relist of unchanged pods, peak RSS growth per pod|{:.0}|bytes|a store holding the old and the new list at once adds about one object per pod",
        per_pod(peak_rss_kib().saturating_sub(before_kib))
    );
    println!(
        "BENCH|informer-sync|100k pods, {mode}: relist of unchanged pods, wall time|{secs:.2}|s|from the dropped watch to the relist applied"
    );
}

/// The reference: what 100,000 deserialised Pods cost in this process (one paged list, kept).
async fn baseline_child() {
    let api: Api<Pod> = Api::all(child_client().await);
    let before = rss_kib();
    let mut pods: Vec<Pod> = Vec::with_capacity(PODS);
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await.expect("list pods");
        pods.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(pods.len(), PODS);
    println!(
        "BENCH|informer-sync|100k pods, deserialised and kept in a Vec: RSS growth per pod|{:.0}|bytes|the floor: what the objects themselves cost",
        per_pod(rss_kib().saturating_sub(before))
    );
}

/// The same workload through kube-runtime's watcher + reflector (paged list, then watch).
async fn kube_runtime_child() {
    use kube_runtime::{WatchStreamExt, reflector, watcher};
    let all: Api<Pod> = Api::all(child_client().await);
    let before = rss_kib();
    let (reader, writer) = reflector::store::<Pod>();
    let start = Instant::now();
    let stream = reflector::reflector(writer, watcher(all, watcher::Config::default()))
        .applied_objects()
        .boxed();
    let applied = Arc::new(AtomicUsize::new(0));
    let drive = tokio::spawn({
        let applied = applied.clone();
        async move {
            let mut stream = stream;
            while stream.next().await.is_some() {
                applied.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    reader.wait_until_ready().await.expect("reflector ready");
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(reader.state().len(), PODS);
    let after = rss_kib();
    let mode = "kube-runtime reflector (paged list)";
    println!(
        "BENCH|informer-sync|100k pods, {mode}: wall time|{secs:.2}|s|comparison for the paged-list case"
    );
    println!(
        "BENCH|informer-sync|100k pods, {mode}: RSS growth per cached pod|{:.0}|bytes|comparison for the paged-list case",
        per_pod(after.saturating_sub(before))
    );
    while applied.load(Ordering::Relaxed) < PODS {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A relist: kube-runtime's store buffers the whole new list before swapping it in.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let relist_base = applied.load(Ordering::Relaxed);
    let relist_before = rss_kib();
    reset_peak_rss();
    let relist_start = Instant::now();
    request_relist();
    let deadline = Instant::now() + Duration::from_secs(120);
    while applied.load(Ordering::Relaxed) < relist_base + PODS && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let reapplied = applied.load(Ordering::Relaxed) - relist_base;
    if reapplied >= PODS {
        print_relist(mode, relist_before, relist_start.elapsed().as_secs_f64());
    } else {
        eprintln!(
            "kube-runtime: relist incomplete after 120 s ({reapplied} of {PODS} objects re-applied)"
        );
        println!(
            "BENCH|informer-sync|100k pods, {mode}: relist of unchanged pods, peak RSS growth per pod|{:.0}|bytes|relist did not complete within 120 s; peak so far",
            per_pod(peak_rss_kib().saturating_sub(relist_before))
        );
    }
    drive.abort();
}

async fn rein_child(streaming: bool) {
    let client = child_client().await;
    let before = rss_kib();
    let lw = ApiListerWatcher::<Pod>::new(client.clone(), ListWatchOptions::default());
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
    rein_informer::wait_for_cache_sync(&stop, &[informer.as_ref()]).await;
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
        "BENCH|informer-sync|100k pods, {mode}: RSS growth per cached pod|{:.0}|bytes|client process only (server in the parent); compare with the deserialised floor",
        per_pod(after.saturating_sub(before))
    );

    // A relist of unchanged pods: rein shares the cached objects instead of holding a second
    // copy. It is applied once the cache's list resourceVersion reaches the target.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let relist_before = rss_kib();
    reset_peak_rss();
    let relist_start = Instant::now();
    let target = request_relist();
    let relisted = || {
        informer
            .indexer()
            .last_store_sync_resource_version()
            .and_then(|rv| rv.parse::<u64>().ok())
            .is_some_and(|rv| rv >= target)
    };
    while !relisted() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    print_relist(mode, relist_before, relist_start.elapsed().as_secs_f64());
    assert_eq!(informer.indexer().len(), PODS);
    if streaming {
        watch_throughput(&Api::namespaced(client, "default"), &informer).await;
    }
    stop.cancel();
    let _ = run.await;
}

/// Steady state: 10,000 label updates from 64 concurrent writers; time until the cache holds
/// every new version (bounded by the server as much as by the informer).
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
        "BENCH|informer-sync|steady watch: 10k updates from 64 writers into the cache|{:.0}|events/s|end to end through the server",
        UPDATES as f64 / secs
    );
}

/// Creates the Pods once; every child reads them.
async fn seeded_env() -> TestEnv {
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
    env
}

/// Makes every watcher of Pods relist: a write elsewhere moves the server's resourceVersion
/// past theirs, the history is compacted and watches are dropped, so their re-watch gets 410.
/// Returns the resourceVersion a finished relist must reach.
async fn force_relist(env: &TestEnv, round: usize) -> u64 {
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("relist-trigger-{round}")),
            ..Default::default()
        },
        ..Default::default()
    };
    let created = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("create configmap");
    let faults = env.faults();
    faults.compact();
    faults.close_watches();
    created
        .metadata
        .resource_version
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// Runs one case in a child process, relaying its figures and serving its relist requests.
async fn run_child(env: &TestEnv, kubeconfig: &Path, mode: &str, round: &mut usize) {
    let exe = std::env::current_exe().expect("current exe");
    let mut child = Command::new(exe)
        .env(CHILD_ENV, mode)
        .env(KUBECONFIG_ENV, kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let mut stdin = child.stdin.take().expect("child stdin");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stdout = child.stdout.take().expect("child stdout");
    // Child output is read on a plain thread; the server keeps running on this runtime.
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    while let Some(line) = rx.recv().await {
        if line == "RELIST" {
            *round += 1;
            let target = force_relist(env, *round).await;
            writeln!(stdin, "{target}").expect("answer child");
            stdin.flush().expect("flush");
        } else {
            println!("{line}");
        }
    }
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait child");
    assert!(status.success(), "{mode} child failed: {status}");
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    if let Ok(mode) = std::env::var(CHILD_ENV) {
        match mode.as_str() {
            "baseline" => rt.block_on(baseline_child()),
            "kube-runtime" => rt.block_on(kube_runtime_child()),
            m => rt.block_on(rein_child(m == "streaming")),
        }
        // Exit at once: dropping the runtime would wait for tasks still busy in a client's
        // watch loop (kube-runtime's aborted watcher kept a child alive for minutes).
        let _ = std::io::stdout().flush();
        std::process::exit(0);
    }
    rt.block_on(async {
        let env = seeded_env().await;
        let dir = std::env::temp_dir().join(format!("rein-informer-sync-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let kubeconfig = dir.join("kubeconfig");
        env.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        let mut round = 0;
        // Streaming last: its steady-watch case updates 10k of the Pods.
        for mode in ["baseline", "paged", "kube-runtime", "streaming"] {
            run_child(&env, &kubeconfig, mode, &mut round).await;
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
