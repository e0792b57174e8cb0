//! The initial-sync and watch cases: rein's `SharedIndexInformer` or kube-runtime's
//! `watcher` + `reflector`, both with default options, caching every Pod.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube_client::Api;
use kube_runtime::{WatchStreamExt, reflector, watcher};
use rein_informer::{
    ApiListerWatcher, InformerOptions, ListWatchOptions, ResourceEventHandlerFuncs,
    SharedIndexInformer,
};
use tokio_util::sync::CancellationToken;

use super::{EventClock, Report, wait_until};
use crate::cli::{Side, Sizes};
use crate::procstat::{cpu_secs, peak_rss_mib, rss_mib};

/// Syncs `pods` Pods and reports; with `updates`, then prints `SYNCED`, waits for that many
/// update events to reach the cache and reports the watch figures.
pub(crate) async fn run(
    client: kube_client::Client,
    report: &Report,
    sizes: &Sizes,
    updates: Option<usize>,
) -> anyhow::Result<()> {
    let pods = if updates.is_some() {
        sizes.watch_pods
    } else {
        sizes.pods
    };
    let clock = EventClock::new(updates.unwrap_or(0));
    let strip = sizes.strip_managed_fields;
    let stop = CancellationToken::new();
    let cpu_before = cpu_secs();
    let started = Instant::now();
    let cached: Box<dyn Fn() -> usize> = match report.side() {
        Side::Rein => Box::new(start_rein(client, &clock, &stop)?),
        Side::KubeRuntime => Box::new(start_kube(client, &clock, &stop, false, strip)),
        Side::KubeRuntimeStreaming => Box::new(start_kube(client, &clock, &stop, true, strip)),
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
/// options, managedFields dropped before caching: `CacheOptions::default_transform`) whose
/// update handler ticks `clock`; returns the cache size.
fn start_rein(
    client: kube_client::Client,
    clock: &Arc<EventClock>,
    stop: &CancellationToken,
) -> anyhow::Result<impl Fn() -> usize + use<>> {
    let lw = ApiListerWatcher::<Pod>::new(client, ListWatchOptions::default());
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

/// Starts kube-runtime's reflector over a watcher (paged list, or streaming list); update
/// events applied to the store tick `clock`; returns the store size once ready. With `strip`,
/// managedFields are dropped before the reflector stores the object (`WatchStreamExt::modify`,
/// kube-runtime's documented way to do it).
fn start_kube(
    client: kube_client::Client,
    clock: &Arc<EventClock>,
    stop: &CancellationToken,
    streaming: bool,
    strip: bool,
) -> impl Fn() -> usize + use<> {
    let api: Api<Pod> = Api::all(client);
    let config = if streaming {
        watcher::Config::default().streaming_lists()
    } else {
        watcher::Config::default()
    };
    let (reader, writer) = reflector::store::<Pod>();
    let events = watcher(api, config);
    let mut stream = if strip {
        let events = events.modify(|pod: &mut Pod| pod.metadata.managed_fields = None);
        reflector::reflector(writer, events).boxed()
    } else {
        reflector::reflector(writer, events).boxed()
    };
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
    // The store is swapped in whole on `InitDone`, so its size jumps from 0 to every Pod.
    move || reader.len()
}
