//! Manager start-up and shut-down latency, and leader-election acquisition, against rein-testenv.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{Api, PostParams};
use rein_manager::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock,
};
use rein_manager::{Manager, Options, RunnableFn};
use rein_testenv::TestEnv;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const PODS: usize = 1_000;
const RUNS: usize = 5;

fn pod(i: usize) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": format!("pod-{i}"), "namespace": "default" },
        "spec": { "containers": [{ "name": "c", "image": "nginx" }] }
    }))
    .expect("valid pod")
}

fn median(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

/// Start → first leader-only runnable running, with a Pod informer of `PODS` objects to sync;
/// then cancel → `start` returned.
async fn manager_start_and_stop(env: &TestEnv) -> (f64, f64) {
    let (mut starts, mut stops) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let mgr = Manager::builder(env.config())
            .options(Options::default())
            .build()
            .await
            .expect("manager");
        mgr.cache().informer_for::<Pod>().await.expect("informer");
        let running = Arc::new(Notify::new());
        let signal = running.clone();
        mgr.add(Arc::new(RunnableFn::new(move |stop: CancellationToken| {
            let signal = signal.clone();
            async move {
                signal.notify_one();
                stop.cancelled().await;
                Ok(())
            }
        })))
        .expect("add");
        let stop = CancellationToken::new();
        let begun = Instant::now();
        let task = tokio::spawn({
            let (mgr, stop) = (mgr.clone(), stop.clone());
            async move { mgr.start(stop).await }
        });
        running.notified().await;
        starts.push(begun.elapsed());
        let stopping = Instant::now();
        stop.cancel();
        task.await.expect("join").expect("clean stop");
        stops.push(stopping.elapsed());
    }
    (median(starts), median(stops))
}

/// A fresh Lease: run → started leading (one GET and one CREATE).
async fn acquire_fresh_lease(env: &TestEnv) -> f64 {
    let mut samples = Vec::new();
    for i in 0..20 {
        let leading = Arc::new(Notify::new());
        let signal = leading.clone();
        let callbacks = LeaderCallbacks::new(move |_token| signal.notify_one(), || {});
        let lock = LeaseLock::new(env.client(), "default", format!("bench-{i}"), "bench");
        let elector =
            LeaderElector::new(LeaderElectionConfig::default(), lock, callbacks).expect("elector");
        let stop = CancellationToken::new();
        let begun = Instant::now();
        let task = tokio::spawn({
            let (elector, stop) = (elector.clone(), stop.clone());
            async move { elector.run(stop).await }
        });
        leading.notified().await;
        samples.push(begun.elapsed());
        stop.cancel();
        task.await.expect("join");
    }
    median(samples)
}

#[tokio::main]
async fn main() {
    let env = TestEnv::start().await.expect("testenv");
    let pods = Api::<Pod>::namespaced(env.client(), "default");
    for i in 0..PODS {
        pods.create(&PostParams::default(), &pod(i))
            .await
            .expect("create pod");
    }
    let (start, stop) = manager_start_and_stop(&env).await;
    println!(
        "BENCH|manager|start_to_first_runnable_{PODS}_pods|{start:.1}|ms|median of {RUNS}; includes listing and syncing {PODS} Pods"
    );
    println!(
        "BENCH|manager|graceful_stop_idle|{stop:.1}|ms|median of {RUNS}; cancel to start() returned"
    );
    let acquire = acquire_fresh_lease(&env).await;
    println!(
        "BENCH|leaderelection|acquire_fresh_lease|{acquire:.2}|ms|median of 20; run() to on_started_leading (GET + CREATE)"
    );
}
