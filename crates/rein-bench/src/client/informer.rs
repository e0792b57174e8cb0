//! The initial-sync and watch cases: rein's `SharedIndexInformer` or kube-runtime's
//! `watcher` + `reflector`, both with default options, caching every Pod. The metadata-only
//! and multi-namespace cases sync through rein's cache (`rein_client::cache::Cache`) against
//! kube-runtime as its users build the same: a metadata watcher, and one watcher and store
//! per namespace.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Pod;
use kube_client::Api;
use kube_client::core::PartialObjectMeta;
use kube_runtime::{WatchStreamExt, reflector, watcher};
use rein_client::cache::{Cache, CacheOptions};
use rein_informer::{
    ApiListerWatcher, InformerOptions, ListWatchOptions, ResourceEventHandlerFuncs,
    SharedIndexInformer,
};
use tokio_util::sync::CancellationToken;

use super::{EventClock, Report, wait_until};
use crate::cli::{Scenario, Side, Sizes};
use crate::pods::{namespace_of, pods_in_first};
use crate::procstat::{cpu_secs, peak_rss_mib, rss_mib};

/// Syncs the scenario's Pods and reports; for the watch case, then prints `SYNCED`, waits for
/// `--updates` update events to reach the cache and reports the watch figures.
pub(crate) async fn run(
    client: kube_client::Client,
    report: &Report,
    sizes: &Sizes,
    scenario: Scenario,
) -> anyhow::Result<()> {
    let updates = (scenario == Scenario::Watch).then_some(sizes.updates);
    let watched = watched_namespaces(sizes);
    let pods = match scenario {
        Scenario::Watch => sizes.watch_pods,
        Scenario::Namespaces => pods_in_first(sizes.pods, sizes.namespaces, watched.len()),
        _ => sizes.pods,
    };
    let clock = EventClock::new(updates.unwrap_or(0));
    let strip = sizes.strip_managed_fields;
    let streaming = report.side() == Side::KubeRuntimeStreaming;
    let stop = CancellationToken::new();
    let cpu_before = cpu_secs();
    let started = Instant::now();
    let cached: Box<dyn Fn() -> usize> = match (scenario, report.side()) {
        (Scenario::Metadata, Side::Rein) => Box::new(
            start_rein_cache::<PartialObjectMeta<Pod>>(client, CacheOptions::default(), &stop)
                .await?,
        ),
        (Scenario::Namespaces, Side::Rein) => {
            let options = CacheOptions::default().namespaces(watched.clone());
            Box::new(start_rein_cache::<Pod>(client, options, &stop).await?)
        }
        (Scenario::Metadata, _) => {
            // kube-runtime 5's metadata watcher: a watcher over `Api<PartialObjectMeta<K>>`
            // (`metadata_watcher` is deprecated for it).
            let api: Api<PartialObjectMeta<Pod>> = Api::all(client);
            let events = watcher(api, kube_config(streaming));
            let events = if strip {
                events
                    .modify(|meta: &mut PartialObjectMeta<Pod>| {
                        meta.metadata.managed_fields = None;
                    })
                    .boxed()
            } else {
                events.boxed()
            };
            Box::new(start_kube_stores(vec![events], &clock, &stop))
        }
        (Scenario::Namespaces, _) => {
            let streams = watched
                .iter()
                .map(|ns| pod_events(Api::namespaced(client.clone(), ns), streaming, strip))
                .collect();
            Box::new(start_kube_stores(streams, &clock, &stop))
        }
        (_, Side::Rein) => Box::new(start_rein(client, &clock, &stop)?),
        (_, _) => Box::new(start_kube_stores(
            vec![pod_events(Api::all(client), streaming, strip)],
            &clock,
            &stop,
        )),
    };
    wait_until("the initial sync", || cached() >= pods).await?;
    let synced = started.elapsed().as_secs_f64();
    let cpu_sync = cpu_secs() - cpu_before;
    let note = format!("{pods} Pods");
    if updates.is_none() {
        // Current before peak: the peak read second is never below the current one.
        let rss = rss_mib();
        let peak = peak_rss_mib();
        report.figure("time to synced", synced, "s", &note);
        report.figure("peak RSS", peak, "MiB", "VmHWM at the end");
        report.figure("RSS after sync", rss, "MiB", "VmRSS");
        report.figure("CPU time", cpu_sync, "s", "user + system, whole process");
        report.figure("objects cached", cached() as f64, "objects", &note);
    }
    if let Some(updates) = updates {
        println!("SYNCED");
        std::io::stdout().flush()?;
        let cpu_before = cpu_secs();
        wait_until("the updates", || clock.count() >= updates).await?;
        let cpu = cpu_secs() - cpu_before;
        let span = clock.span_secs();
        let note = if sizes.backlog {
            format!("{updates} updates over {pods} cached Pods, drained as a backlog")
        } else {
            format!("{updates} updates over {pods} cached Pods")
        };
        report.figure(
            "events per second",
            updates as f64 / span.max(1e-9),
            "events/s",
            &note,
        );
        report.figure(
            "events per CPU-second",
            updates as f64 / cpu.max(1e-9),
            "events/s",
            "updates / client CPU time (user + system) in the watch phase: the client's capacity",
        );
        report.figure("peak RSS", peak_rss_mib(), "MiB", "VmHWM at the end");
        report.figure(
            "CPU per event",
            cpu * 1e6 / updates as f64,
            "µs",
            "user + system during the watch phase",
        );
        report.figure(
            "update events applied",
            clock.count() as f64,
            "events",
            &note,
        );
    }
    stop.cancel();
    Ok(())
}

/// Starts a rein informer configured as rein's cache configures one by default (default
/// options, managedFields skipped while decoding and dropped before caching:
/// `CacheOptions::default_transform`) whose
/// update handler ticks `clock`; returns the cache size.
fn start_rein(
    client: kube_client::Client,
    clock: &Arc<EventClock>,
    stop: &CancellationToken,
) -> anyhow::Result<impl Fn() -> usize + use<>> {
    // As rein's cache configures it: managedFields passed over while decoding (the cache's
    // default transform, `drop_managed_fields`, sets this) and dropped again by the transform.
    let options = ListWatchOptions {
        skip_managed_fields: true,
        ..ListWatchOptions::default()
    };
    let lw = ApiListerWatcher::<Pod>::new(client, options);
    let informer = Arc::new(SharedIndexInformer::new(lw, InformerOptions::default()));
    informer.set_transform(rein_informer::strip_managed_fields::<Pod>)?;
    let clock = clock.clone();
    informer.add_event_handler(
        ResourceEventHandlerFuncs::<Pod>::new()
            .on_add(|_, _| {})
            .on_update(move |_, _| clock.tick()),
    )?;
    let run = (informer.clone(), stop.clone());
    tokio::spawn(async move { run.0.run(run.1).await });
    Ok(move || {
        if informer.has_synced() {
            informer.indexer().len()
        } else {
            0
        }
    })
}

/// The namespaces the multi-namespace case caches: the first `--watched-namespaces`.
fn watched_namespaces(sizes: &Sizes) -> Vec<String> {
    (0..sizes.watched_namespaces.min(sizes.namespaces))
        .map(|n| namespace_of(n, sizes.namespaces))
        .collect()
}

/// Starts rein's cache (rein-client's `Cache`, as a manager builds it: managedFields dropped
/// by default) with an informer for `K`; returns the cached count once synced.
async fn start_rein_cache<K: rein_scheme::Object>(
    client: kube_client::Client,
    options: CacheOptions,
    stop: &CancellationToken,
) -> anyhow::Result<impl Fn() -> usize + use<K>> {
    let cache = Cache::new(client, options);
    let informer = cache.informer_for::<K>().await?;
    let stop = stop.clone();
    tokio::spawn(async move { cache.start(stop).await });
    Ok(move || {
        if informer.has_synced() {
            informer.indexer().len()
        } else {
            0
        }
    })
}

/// kube-runtime's watcher configuration: paged list (its default) or streaming list.
fn kube_config(streaming: bool) -> watcher::Config {
    if streaming {
        watcher::Config::default().streaming_lists()
    } else {
        watcher::Config::default()
    }
}

/// A kube-runtime watcher of Pods through `api`; with `strip`, managedFields are dropped
/// before the reflector stores the object (`WatchStreamExt::modify`, kube-runtime's documented
/// way to do it).
fn pod_events(api: Api<Pod>, streaming: bool, strip: bool) -> WatcherStream<Pod> {
    let events = watcher(api, kube_config(streaming));
    if strip {
        events
            .modify(|pod: &mut Pod| pod.metadata.managed_fields = None)
            .boxed()
    } else {
        events.boxed()
    }
}

type WatcherStream<K> = BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>;

/// Starts one kube-runtime reflector (and store) per watcher stream, the streams merged into
/// one task, as a kube-rs user watching several namespaces would (a reflector store takes one
/// watcher: each list replaces the store whole); update events tick `clock`. Returns the
/// stores' total size (each store is swapped in whole on `InitDone`, so its size jumps from 0
/// to every object).
fn start_kube_stores<K>(
    streams: Vec<WatcherStream<K>>,
    clock: &Arc<EventClock>,
    stop: &CancellationToken,
) -> impl Fn() -> usize + use<K>
where
    K: kube_client::Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let mut readers = Vec::with_capacity(streams.len());
    let mut reflected = Vec::with_capacity(streams.len());
    for events in streams {
        let (reader, writer) = reflector::store::<K>();
        readers.push(reader);
        reflected.push(reflector::reflector(writer, events).boxed());
    }
    let mut stream = futures::stream::select_all(reflected);
    let (clock, stop) = (clock.clone(), stop.clone());
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                biased;
                () = stop.cancelled() => None,
                event = stream.next() => event,
            };
            match event {
                Some(Ok(watcher::Event::Apply(_))) => clock.tick(),
                Some(Ok(_)) => {}
                Some(Err(err)) => eprintln!("kube-runtime watcher error: {err}"),
                None => break,
            }
        }
    });
    move || readers.iter().map(|r| r.len()).sum()
}
