//! The kube-runtime side of each case, run in a child process of its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube_client::{Api, Client};
use kube_runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube_runtime::reflector;
use kube_runtime::watcher::{self, Event};
use parking_lot::Mutex;

use crate::report::Outcome;
use crate::workload::{SENT_AT, now_ns};

/// Initial sync (and, when `updates > 0`, watch throughput) with `reflector` + `watcher`.
pub(crate) async fn sync(client: Client, ns: &str, pods: usize, updates: usize) -> Outcome {
    let api: Api<Pod> = Api::namespaced(client, ns);
    let (reader, writer) = reflector::store();
    let modified = Arc::new(AtomicUsize::new(0));
    let counter = modified.clone();
    let start = Instant::now();
    let stream = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()));
    let driver = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if let Ok(Event::Apply(_)) = ev {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let _ = reader.wait_until_ready().await;
    let synced = start.elapsed();
    assert_eq!(reader.state().len(), pods, "kube-runtime store holds every Pod");
    let mut outcome = Outcome::synced(synced);
    if updates > 0 {
        let before = modified.load(Ordering::Relaxed);
        crate::report::signal_ready();
        let t0 = Instant::now();
        while modified.load(Ordering::Relaxed) < before + updates {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        outcome.events_per_sec = Some(updates as f64 / t0.elapsed().as_secs_f64());
    }
    driver.abort();
    outcome
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
pub(crate) struct Never;

/// Controller end to end: a no-op reconciler over `pods` Pods created after start.
pub(crate) async fn controller(client: Client, ns: &str, pods: usize, concurrency: u16) -> Outcome {
    let api: Api<Pod> = Api::namespaced(client, ns);
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(pods)));
    let seen = Arc::new(Mutex::new(std::collections::HashSet::with_capacity(pods)));
    let ctx = Arc::new((latencies.clone(), seen.clone()));
    let controller = Controller::new(api, watcher::Config::default())
        .with_config(ControllerConfig::default().concurrency(concurrency));
    crate::report::signal_ready();
    let start = Instant::now();
    let run = controller.run(
        |pod: Arc<Pod>, ctx: Arc<(Arc<Mutex<Vec<u128>>>, Arc<Mutex<std::collections::HashSet<String>>>)>| async move {
            let sent: u128 = pod
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SENT_AT))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let name = pod.metadata.name.clone().unwrap_or_default();
            if ctx.1.lock().insert(name) {
                ctx.0.lock().push(now_ns().saturating_sub(sent));
            }
            Ok::<_, Never>(Action::await_change())
        },
        |_, _, _| Action::await_change(),
        ctx,
    );
    let mut run = std::pin::pin!(run);
    while seen.lock().len() < pods {
        if run.next().await.is_none() {
            break;
        }
    }
    let mut outcome = Outcome::synced(start.elapsed());
    outcome.set_latencies(&mut latencies.lock());
    outcome
}
