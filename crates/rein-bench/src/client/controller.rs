//! The controller end-to-end case: a no-op reconciler in rein's `Controller` (a `Kind` source
//! from a shared cache) or kube-runtime's `Controller`; this process also writes the objects, so
//! create-request time and first-reconcile time come from one clock.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::{ObjectMeta, PostParams};
use parking_lot::Mutex;
use rein_client::cache::{Cache, CacheOptions};
use rein_controller::handler::EnqueueRequestForObject;
use rein_controller::source::Kind;
use rein_controller::{Action, BoxError, Controller, ControllerOptions, Runnable, reconciler_fn};
use rein_informer::ResourceEventHandlerFuncs;
use tokio_util::sync::CancellationToken;

use super::{Report, arrival, wait_until};
use crate::cli::{Side, Sizes};
use crate::pods::NAMESPACE;
use crate::procstat::peak_rss_mib;

/// Creates in flight from the writer.
const IN_FLIGHT: usize = 64;
/// The object created (and reconciled) before measuring, proving the controller is running.
const SENTINEL: &str = "bench-sentinel";

/// When each object was first seen by the reconciler, by name.
pub(crate) type Seen = Arc<Mutex<HashMap<String, Instant>>>;

pub(crate) fn record(seen: &Seen, name: &str) {
    let now = Instant::now();
    seen.lock().entry(name.to_owned()).or_insert(now);
}

fn config_map(name: String) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(NAMESPACE.to_owned()),
            labels: Some([("app".to_owned(), "bench".to_owned())].into()),
            ..ObjectMeta::default()
        },
        data: Some([("key".to_owned(), "value".to_owned())].into()),
        ..ConfigMap::default()
    }
}

pub(crate) async fn run(
    client: kube_client::Client,
    kubeconfig: &Path,
    report: &Report,
    sizes: &Sizes,
) -> anyhow::Result<()> {
    let (objects, concurrency) = (sizes.objects, sizes.concurrency);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    // The arrival probe's watch is open before anything is created; it proves that by seeing
    // the sentinel.
    let arrived = arrival::start(kubeconfig)?;
    api.create(&PostParams::default(), &config_map(SENTINEL.to_owned()))
        .await?;
    let seen: Seen = Arc::default();
    // rein only: when the informer notified its handlers (splits the latency into the
    // informer's part and the controller's part).
    let notified: Seen = Arc::default();
    let stop = CancellationToken::new();
    match report.side() {
        Side::Rein => start_rein(client, &seen, &notified, concurrency, &stop)?,
        _ => start_kube(client, &seen, concurrency, &stop),
    }
    wait_until("the controller to reconcile the sentinel", || {
        seen.lock().contains_key(SENTINEL)
    })
    .await?;
    wait_until("the arrival probe to see the sentinel", || {
        arrived.lock().contains_key(SENTINEL)
    })
    .await?;

    let created: Seen = Arc::default();
    let started = Instant::now();
    if sizes.paced > 0.0 {
        write_paced(&api, &created, objects, sizes.paced).await?;
    } else {
        write_burst(&api, &created, objects).await?;
    }
    // By name: the namespace holds other objects too (its `kube-root-ca.crt`).
    let all_in = |found: &Seen| {
        let found = found.lock();
        created.lock().keys().all(|name| found.contains_key(name))
    };
    wait_until("every object to be reconciled", || all_in(&seen)).await?;
    wait_until("the arrival probe to see every object", || all_in(&arrived)).await?;
    stop.cancel();

    let (created, seen, arrived) = (created.lock(), seen.lock(), arrived.lock());
    let mut latencies = Vec::with_capacity(objects);
    let mut from_arrival = Vec::with_capacity(objects);
    let mut informer_latencies = Vec::new();
    let mut last = started;
    for (name, at) in created.iter() {
        if let Some(n) = notified.lock().get(name) {
            informer_latencies.push(n.saturating_duration_since(*at));
        }
        let Some(&reconciled) = seen.get(name) else {
            anyhow::bail!("{name} was never reconciled");
        };
        last = last.max(reconciled);
        latencies.push(reconciled.saturating_duration_since(*at));
        if let Some(arrival) = arrived.get(name) {
            from_arrival.push(reconciled.saturating_duration_since(*arrival));
        }
    }
    latencies.sort_unstable();
    from_arrival.sort_unstable();
    let writer = if sizes.paced > 0.0 {
        format!("paced writer, {} creates/s", sizes.paced)
    } else {
        format!("burst writer, {IN_FLIGHT} in flight")
    };
    let note =
        format!("{objects} ConfigMaps, concurrency {concurrency}, no-op reconciler, {writer}");
    if sizes.paced <= 0.0 {
        report.figure(
            "time to all reconciled",
            last.duration_since(started).as_secs_f64(),
            "s",
            &note,
        );
    }
    for p in [50, 99] {
        report.figure(
            &format!("latency p{p}"),
            millis(percentile(&latencies, p)),
            "ms",
            "create request sent → first reconcile start",
        );
    }
    for p in [50, 99] {
        report.figure(
            &format!("arrival latency p{p}"),
            millis(percentile(&from_arrival, p)),
            "ms",
            "watch event reached the process (arrival probe) → first reconcile start",
        );
    }
    if !informer_latencies.is_empty() {
        informer_latencies.sort_unstable();
        report.figure(
            "latency p99 to informer notification",
            millis(percentile(&informer_latencies, 99)),
            "ms",
            "create request → informer handler (diagnostic; the rest is the controller)",
        );
    }
    report.figure("peak RSS", peak_rss_mib(), "MiB", "VmHWM at the end");
    report.figure(
        "objects reconciled",
        latencies.len() as f64,
        "objects",
        &note,
    );
    Ok(())
}

/// Creates `objects` ConfigMaps as fast as the server takes them, [`IN_FLIGHT`] at a time,
/// recording each create-request time.
async fn write_burst(api: &Api<ConfigMap>, created: &Seen, objects: usize) -> anyhow::Result<()> {
    let mut results = futures::stream::iter(0..objects)
        .map(|i| {
            let (api, created) = (api.clone(), created.clone());
            async move {
                let name = format!("cm-{i:06}");
                record(&created, &name);
                api.create(&PostParams::default(), &config_map(name)).await
            }
        })
        .buffer_unordered(IN_FLIGHT);
    while let Some(result) = results.next().await {
        result?;
    }
    Ok(())
}

/// Creates `objects` ConfigMaps on a fixed schedule of `rate` per second (open loop: a slow
/// answer does not delay the next create), recording each create-request time.
async fn write_paced(
    api: &Api<ConfigMap>,
    created: &Seen,
    objects: usize,
    rate: f64,
) -> anyhow::Result<()> {
    let start = tokio::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..objects {
        tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / rate)).await;
        let (api, created) = (api.clone(), created.clone());
        tasks.spawn(async move {
            let name = format!("cm-{i:06}");
            record(&created, &name);
            api.create(&PostParams::default(), &config_map(name)).await
        });
    }
    while let Some(result) = tasks.join_next().await {
        result??;
    }
    Ok(())
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) * p).div_ceil(100)]
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// rein: a `Controller` watching ConfigMaps through a `Kind` source of a shared cache.
fn start_rein(
    client: kube_client::Client,
    seen: &Seen,
    notified: &Seen,
    concurrency: usize,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    let cache = Cache::new(client, CacheOptions::default());
    let diagnostic = (cache.clone(), notified.clone());
    tokio::spawn(async move {
        let (cache, notified) = diagnostic;
        let informer = match cache.informer_for::<ConfigMap>().await {
            Ok(informer) => informer,
            Err(err) => return eprintln!("diagnostic handler: {err}"),
        };
        let handler = ResourceEventHandlerFuncs::<ConfigMap>::new().on_add(move |cm, _| {
            record(&notified, cm.metadata.name.as_deref().unwrap_or_default());
        });
        if let Err(err) = informer.add_event_handler(handler) {
            eprintln!("diagnostic handler: {err}");
        }
    });
    let seen = seen.clone();
    let controller = Controller::new(
        "bench",
        reconciler_fn(move |_, req| {
            record(&seen, req.name());
            async { Ok::<_, BoxError>(Action::done()) }
        }),
        ControllerOptions {
            max_concurrent_reconciles: concurrency,
            need_leader_election: false,
            ..ControllerOptions::default()
        },
    )?;
    controller.watch(
        Kind::<ConfigMap>::new(&cache),
        EnqueueRequestForObject,
        vec![],
    );
    let run = (cache, stop.clone());
    tokio::spawn(async move { run.0.start(run.1).await });
    let run = (controller, stop.clone());
    tokio::spawn(async move { run.0.start(run.1).await });
    Ok(())
}

/// kube-runtime: its `Controller` with default watcher config and the given concurrency.
fn start_kube(
    client: kube_client::Client,
    seen: &Seen,
    concurrency: usize,
    stop: &CancellationToken,
) {
    use kube_runtime::controller::{self, Action};
    let api: Api<ConfigMap> = Api::all(client);
    let config =
        controller::Config::default().concurrency(u16::try_from(concurrency).unwrap_or(u16::MAX));
    let stop = stop.clone();
    let controller = kube_runtime::Controller::new(api, kube_runtime::watcher::Config::default())
        .with_config(config)
        .graceful_shutdown_on(async move { stop.cancelled().await });
    let reconcile = |obj: Arc<ConfigMap>, seen: Arc<Seen>| async move {
        record(&seen, obj.metadata.name.as_deref().unwrap_or_default());
        Ok::<_, std::io::Error>(Action::await_change())
    };
    let error_policy = |_: Arc<ConfigMap>, _: &std::io::Error, _: Arc<Seen>| Action::await_change();
    let run = controller.run(reconcile, error_policy, Arc::new(seen.clone()));
    tokio::spawn(run.for_each(|_| async {}));
}
