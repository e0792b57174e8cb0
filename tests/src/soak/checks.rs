//! The end-of-run checks: every object in its desired state (read live from the server), every
//! cache equal to the server, and the process's resident memory.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube_client::api::ListParams;
use kube_client::{Api, ResourceExt};
use rein::client::{Client, ListOptions};
use rein::scheme::Object;

use super::controllers::{APPLIED, FINALIZER, MIRRORED, NAMESPACE, ROLE, SET, WANT, mirror_name};
use super::writer::Model;

/// Mismatches reported at most (the count of all of them is reported too).
const SHOWN: usize = 8;

/// A list of problems found by one check, keeping the first few messages.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    pub(crate) count: usize,
    pub(crate) first: Vec<String>,
}

impl Problems {
    pub(crate) fn push(&mut self, problem: String) {
        self.count += 1;
        if self.first.len() < SHOWN {
            self.first.push(problem);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl std::fmt::Display for Problems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} problem(s)", self.count)?;
        for p in &self.first {
            write!(f, "\n    - {p}")?;
        }
        if self.count > self.first.len() {
            write!(f, "\n    - …")?;
        }
        Ok(())
    }
}

/// Compares the server (read live through `kube`) with the model; no problems = converged.
pub(crate) async fn desired_state(kube: &kube_client::Client, model: &Model) -> Problems {
    let mut problems = Problems::default();
    match live_objects(kube).await {
        Ok(live) => compare(&live, model, &mut problems),
        Err(err) => problems.push(format!("listing the server failed: {err}")),
    }
    problems
}

/// Everything the soak created, as the server holds it now.
struct Live {
    config_maps: BTreeMap<String, ConfigMap>,
    secrets: BTreeMap<String, Secret>,
    sets: BTreeMap<String, ReplicaSet>,
    pods: Vec<Pod>,
}

async fn live_objects(kube: &kube_client::Client) -> Result<Live, kube_client::Error> {
    let lp = ListParams::default();
    let by_name = |items: Vec<_>| -> BTreeMap<String, _> {
        items
            .into_iter()
            .map(|o: ConfigMap| (o.name_any(), o))
            .collect()
    };
    let config_maps = by_name(
        Api::<ConfigMap>::namespaced(kube.clone(), NAMESPACE)
            .list(&lp)
            .await?
            .items,
    );
    let secrets = Api::<Secret>::namespaced(kube.clone(), NAMESPACE)
        .list(&lp)
        .await?
        .items
        .into_iter()
        .map(|o| (o.name_any(), o))
        .collect();
    let sets = Api::<ReplicaSet>::namespaced(kube.clone(), NAMESPACE)
        .list(&lp)
        .await?
        .items
        .into_iter()
        .map(|o| (o.name_any(), o))
        .collect();
    let pods = Api::<Pod>::namespaced(kube.clone(), NAMESPACE)
        .list(&lp)
        .await?
        .items;
    Ok(Live {
        config_maps,
        secrets,
        sets,
        pods,
    })
}

fn role<K: ResourceExt>(obj: &K) -> Option<&str> {
    obj.labels().get(ROLE).map(String::as_str)
}

fn controller_uid<K: ResourceExt>(obj: &K) -> Option<&str> {
    obj.owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.as_str())
}

fn compare(live: &Live, model: &Model, problems: &mut Problems) {
    let uids: BTreeSet<String> = live
        .config_maps
        .values()
        .filter_map(|o| o.uid())
        .chain(live.sets.values().filter_map(|o| o.uid()))
        .collect();
    let dangling = |uid: Option<&str>| uid.is_some_and(|u| !uids.contains(u));
    // Sources and their mirrors.
    let mut mirrors = BTreeSet::new();
    for (name, v) in &model.sources {
        let v = v.to_string();
        let Some(source) = live.config_maps.get(name) else {
            problems.push(format!("source {name} is missing"));
            continue;
        };
        let data_v = source.data.as_ref().and_then(|d| d.get("v"));
        if data_v != Some(&v) {
            problems.push(format!("source {name}: data v={data_v:?}, want {v}"));
        }
        if source.annotations().get(MIRRORED) != Some(&v) {
            let got = source.annotations().get(MIRRORED);
            problems.push(format!("source {name}: mirrored={got:?}, want {v}"));
        }
        let mirror = mirror_name(name);
        match live.config_maps.get(&mirror) {
            None => problems.push(format!("mirror {mirror} is missing")),
            Some(m) => {
                let got = m.data.as_ref().and_then(|d| d.get("v"));
                if got != Some(&v) {
                    problems.push(format!("mirror {mirror}: data v={got:?}, want {v}"));
                }
                if controller_uid(m) != source.uid().as_deref() {
                    problems.push(format!("mirror {mirror} is not controlled by its source"));
                }
            }
        }
        mirrors.insert(mirror);
    }
    for (name, cm) in &live.config_maps {
        match role(cm) {
            Some("source") if !model.sources.contains_key(name) => {
                problems.push(format!("deleted source {name} still exists"));
            }
            Some("mirror") if !mirrors.contains(name) => {
                // Also when the source's uid is gone: a mirror created from a stale cache
                // after its source was deleted must be collected by the server's GC.
                let why = if dangling(controller_uid(cm)) {
                    " (its owner uid exists nowhere and GC did not collect it)"
                } else {
                    ""
                };
                problems.push(format!("mirror {name} outlived its source{why}"));
            }
            _ => {}
        }
    }

    // Guarded secrets.
    for (name, v) in &model.secrets {
        let v = v.to_string();
        let Some(secret) = live.secrets.get(name) else {
            problems.push(format!("secret {name} is missing"));
            continue;
        };
        if secret.annotations().get(WANT) != Some(&v) {
            problems.push(format!("secret {name}: want annotation is not {v}"));
        }
        if secret.annotations().get(APPLIED) != Some(&v) {
            let got = secret.annotations().get(APPLIED);
            problems.push(format!("secret {name}: applied={got:?}, want {v}"));
        }
        if !secret.finalizers().iter().any(|f| f == FINALIZER) {
            problems.push(format!("secret {name} lacks the finalizer"));
        }
    }
    for (name, secret) in &live.secrets {
        if role(secret) == Some("guarded") && !model.secrets.contains_key(name) {
            let finalizers = secret.finalizers();
            problems.push(format!(
                "deleted secret {name} still exists (finalizers {finalizers:?})"
            ));
        }
    }

    // ReplicaSets and their Pods.
    let mut pods_by_set: BTreeMap<&str, Vec<&Pod>> = BTreeMap::new();
    for pod in &live.pods {
        if let Some(set) = pod.labels().get(SET) {
            pods_by_set.entry(set.as_str()).or_default().push(pod);
        }
    }
    for (name, replicas) in &model.sets {
        let Some(set) = live.sets.get(name) else {
            problems.push(format!("replicaset {name} is missing"));
            continue;
        };
        let status = set.status.clone().unwrap_or_default();
        if status.replicas != *replicas || status.observed_generation != set.metadata.generation {
            problems.push(format!(
                "replicaset {name}: status replicas={} observedGeneration={:?}, want {replicas} \
                 and {:?}",
                status.replicas, status.observed_generation, set.metadata.generation
            ));
        }
        let mut names: Vec<String> = pods_by_set
            .get(name.as_str())
            .into_iter()
            .flatten()
            .filter(|p| controller_uid(**p) == set.uid().as_deref())
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(|p| p.name_any())
            .collect();
        names.sort();
        let mut want: Vec<String> = (0..*replicas).map(|i| format!("{name}-{i}")).collect();
        want.sort();
        if names != want {
            problems.push(format!("replicaset {name}: pods {names:?}, want {want:?}"));
        }
    }
    for (name, pods) in &pods_by_set {
        if !model.sets.contains_key(*name) {
            for pod in pods {
                let why = if dangling(controller_uid(*pod)) {
                    " (its owner uid exists nowhere and GC did not collect it)"
                } else {
                    ""
                };
                problems.push(format!(
                    "pod {} outlived replicaset {name}{why}",
                    pod.name_any()
                ));
            }
        }
    }
    for name in live.sets.keys() {
        if !model.sets.contains_key(name) {
            problems.push(format!("deleted replicaset {name} still exists"));
        }
    }
}

/// Compares what the cache-backed client lists with a live list, by uid and resourceVersion,
/// for every kind the controllers watch.
pub(crate) async fn cache_matches_server(cached: &Client, live: &Client) -> Problems {
    let mut problems = Problems::default();
    diff::<ConfigMap>(cached, live, "configmap", &mut problems).await;
    diff::<Secret>(cached, live, "secret", &mut problems).await;
    diff::<ReplicaSet>(cached, live, "replicaset", &mut problems).await;
    diff::<Pod>(cached, live, "pod", &mut problems).await;
    problems
}

async fn diff<K: Object>(cached: &Client, live: &Client, kind: &str, problems: &mut Problems) {
    let opts = ListOptions::default();
    let versions = |items: Vec<std::sync::Arc<K>>| -> BTreeMap<String, (String, String)> {
        items
            .iter()
            .map(|o| {
                let key = format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any());
                let uid = o.uid().unwrap_or_default();
                (key, (uid, o.resource_version().unwrap_or_default()))
            })
            .collect()
    };
    let (cache, server) = match (cached.list::<K>(&opts).await, live.list::<K>(&opts).await) {
        (Ok(c), Ok(s)) => (versions(c.items), versions(s.items)),
        (Err(err), _) | (_, Err(err)) => {
            problems.push(format!("listing {kind}s failed: {err}"));
            return;
        }
    };
    for (key, want) in &server {
        match cache.get(key) {
            None => problems.push(format!(
                "{kind} {key} is on the server but not in the cache"
            )),
            Some(got) if got != want => problems.push(format!(
                "{kind} {key}: cache has uid/rv {got:?}, server {want:?}"
            )),
            Some(_) => {}
        }
    }
    for key in cache.keys() {
        if !server.contains_key(key) {
            problems.push(format!(
                "{kind} {key} is in the cache but gone from the server"
            ));
        }
    }
}

/// The process's resident set size in KiB (`VmRSS` of /proc/self/status), where Linux has it.
pub(crate) fn rss_kib() -> Option<u64> {
    rss_kib_of("/proc/self/status")
}

/// The resident memory a `/proc/<pid>/status` file reports, KiB.
pub(crate) fn rss_kib_of(path: &str) -> Option<u64> {
    let status = std::fs::read_to_string(path).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
