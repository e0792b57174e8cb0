//! The arrival probe: a plain watch on the bench's ConfigMaps, on its own thread and runtime,
//! stamping when each object's ADDED event reached this process — the common starting point of
//! the arrival→reconcile latency, the same for every side.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::WatchParams;
use kube_client::core::WatchEvent;

use super::connect;
use super::controller::{Seen, record};
use crate::pods::NAMESPACE;

/// Starts the probe; the map fills with the arrival time of each ConfigMap's first event.
///
/// The probe has its own client (its own connection) and a current-thread runtime on a
/// dedicated OS thread, so its stamps do not wait for the side's runtime to get round to it.
/// It lives until the process exits; a failure is printed and ends the probe, so the waits on
/// the map time out and the case fails.
pub(crate) fn start(kubeconfig: &Path) -> anyhow::Result<Seen> {
    let arrived = Seen::default();
    let (map, path) = (arrived.clone(), kubeconfig.to_owned());
    std::thread::Builder::new()
        .name("arrival-probe".to_owned())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => return eprintln!("arrival probe: building its runtime: {err}"),
            };
            if let Err(err) = runtime.block_on(watch(&path, &map)) {
                eprintln!("arrival probe: {err:#}");
            }
        })?;
    Ok(arrived)
}

/// Watches the ConfigMaps (re-watching after a normal close) and records first arrivals.
async fn watch(kubeconfig: &Path, arrived: &Seen) -> anyhow::Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(connect(kubeconfig).await?, NAMESPACE);
    let mut rv = "0".to_owned();
    loop {
        let params = WatchParams::default().timeout(290);
        let mut events = api.watch(&params, &rv).await?.boxed();
        while let Some(event) = events.next().await {
            match event? {
                WatchEvent::Added(cm) | WatchEvent::Modified(cm) => {
                    record(arrived, cm.metadata.name.as_deref().unwrap_or_default());
                    rv = cm.metadata.resource_version.unwrap_or(rv);
                }
                WatchEvent::Deleted(cm) => {
                    rv = cm.metadata.resource_version.unwrap_or(rv);
                }
                WatchEvent::Bookmark(b) => rv = b.metadata.resource_version,
                WatchEvent::Error(status) => anyhow::bail!("watch error: {status:?}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
