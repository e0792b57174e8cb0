//! The ring's coordinator (the sharder of kubernetes-controller-sharding, elected among the
//! replicas): watches the shard Leases and every object of the sharded kinds, and writes the
//! assignment labels — new objects to the shard their key hashes to, moved objects through
//! the drain handshake, objects of dead shards directly, followers to their owner's shard.

mod plan;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube_client::api::{Patch, PatchParams};
use kube_client::core::DynamicObject;
use rein_client::cache::{ByObject, Cache, CacheOptions};
use rein_informer::ResourceEventHandlerFuncs;
use rein_scheme::labels::{Operator, Requirement, Selector};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::kind::{Change, ObjMeta, dynamic_api};
use crate::metrics::RingMetrics;
use crate::options::{LEASE_RING_LABEL, LEASE_SHARD_LABEL};
use crate::ring;
use crate::sharding::Shared;
use crate::{Error, ShardedKind};
use plan::{Decision, Ring};

/// At most this many label writes at once.
const CONCURRENT_WRITES: usize = 16;

/// The name of the Lease of shard `id` in `ring`.
pub(crate) fn shard_lease_name(ring: &str, id: &str) -> String {
    format!("{ring}-shard-{id}")
}

/// The name of the Lease the replicas elect the coordinator on.
pub(crate) fn coordinator_lease_name(ring: &str) -> String {
    format!("{ring}-coordinator")
}

/// What the coordinator has seen of one shard Lease.
struct Observed {
    raw: Vec<u8>,
    /// Local time the record was last seen to change (never a timestamp from the Lease).
    at: Instant,
}

/// One term of the coordinator: from winning the election until `token` fires.
pub(crate) struct Term {
    shared: Arc<Shared>,
    metrics: RingMetrics,
    observed: HashMap<String, Observed>,
    /// When each object in hand-over was asked to drain, by kind and key.
    draining_since: HashMap<(String, String), Instant>,
    /// The resourceVersion each object was last written from, by kind and key: until the
    /// cache shows a newer version, the object is not decided on again.
    written: HashMap<(String, String), String>,
}

impl Term {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        let metrics = RingMetrics::new(&shared.options.ring);
        Term {
            shared,
            metrics,
            observed: HashMap::new(),
            draining_since: HashMap::new(),
            written: HashMap::new(),
        }
    }

    /// Runs the term: an unfiltered cache of the Leases and of the sharded kinds' metadata
    /// (`PartialObjectMeta<K>`: labels, owners and versions are all it decides from), and a
    /// pass over everything on each change and every retry period.
    pub(crate) async fn run(mut self, token: CancellationToken) -> Result<(), Error> {
        let options = &self.shared.options;
        let ring_selector = Selector::from_requirements(vec![
            Requirement::new(LEASE_RING_LABEL, Operator::Equals, [options.ring.clone()]).map_err(
                |err| Error::InvalidOption {
                    option: "ring",
                    reason: err.to_string(),
                },
            )?,
        ]);
        let cache_options = CacheOptions::default().by_object::<Lease>(ByObject {
            label_selector: Some(ring_selector),
            ..ByObject::default()
        });
        let cache = Cache::new(self.shared.kube.clone(), cache_options);
        let leases = cache
            .informer_for::<Lease>()
            .await
            .map_err(|source| Error::Cache {
                kind: "Lease".into(),
                source,
            })?;
        for kind in &options.kinds {
            kind.meta_ops.ensure_informer(&cache).await?;
        }
        let running = tokio::spawn({
            let (cache, token) = (cache.clone(), token.clone());
            async move { cache.start(token).await }
        });
        let synced = tokio::select! {
            _ = token.cancelled() => false,
            synced = cache.wait_for_cache_sync() => synced,
        };
        if synced {
            *self.shared.coordinator_cache.lock() = Some(cache.clone());
            let changed = Arc::new(Notify::new());
            let notify = changed.clone();
            let on_change = move || notify.notify_one();
            let (a, u, d) = (on_change.clone(), on_change.clone(), on_change.clone());
            leases
                .add_event_handler(
                    ResourceEventHandlerFuncs::<Lease>::new()
                        .on_add(move |_, _| a())
                        .on_update(move |_, _| u())
                        .on_delete(move |_| d()),
                )
                .map_err(|source| Error::Informer {
                    kind: "Lease".into(),
                    source,
                })?;
            for kind in &options.kinds {
                let on_change = on_change.clone();
                kind.meta_ops
                    .watch(&cache, Arc::new(move |_: &ObjMeta, _: Change| on_change()))
                    .await?;
            }
            let retry = options.lease.retry_period;
            loop {
                let leases = leases.indexer().list();
                self.pass(&cache, &leases).await;
                tokio::select! {
                    _ = token.cancelled() => break,
                    () = changed.notified() => {}
                    () = tokio::time::sleep(retry) => {}
                }
            }
        }
        self.shared.coordinator_cache.lock().take();
        token.cancel();
        let _ = running.await;
        Ok(())
    }

    /// The live shards: Leases held by their own shard and renewed (by local observation)
    /// within their duration. A Lease seen for the first time counts as just renewed, so a
    /// new coordinator never declares a shard dead before a full Lease duration passed.
    fn live_shards(&mut self, leases: &[Arc<Lease>], now: Instant) -> Vec<String> {
        let mut live = Vec::new();
        let mut present = Vec::new();
        let namespace = self.shared.options.lease_namespace();
        for lease in leases {
            if lease.metadata.namespace.as_deref() != Some(namespace) {
                continue;
            }
            let Some(name) = lease.metadata.name.clone() else {
                continue;
            };
            let Some(id) = lease
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(LEASE_SHARD_LABEL))
            else {
                continue;
            };
            let spec = lease.spec.clone().unwrap_or_default();
            let raw = serde_json::to_vec(&spec).unwrap_or_default();
            let seen = self
                .observed
                .entry(name.clone())
                .or_insert_with(|| Observed {
                    raw: raw.clone(),
                    at: now,
                });
            if seen.raw != raw {
                *seen = Observed { raw, at: now };
            }
            present.push(name);
            let duration = Duration::from_secs(
                u64::try_from(spec.lease_duration_seconds.unwrap_or_default()).unwrap_or(0),
            );
            if spec.holder_identity.as_deref() == Some(id.as_str()) && seen.at + duration > now {
                live.push(id.clone());
            }
        }
        self.observed.retain(|name, _| present.contains(name));
        live.sort();
        live.dedup();
        live
    }

    /// Whether shard `id` is dead on a fresh read of its Lease: missing, released, held by
    /// someone else, or unchanged for its whole duration. A changed record revives it.
    async fn confirm_dead(&mut self, id: &str) -> bool {
        let options = &self.shared.options;
        let name = shard_lease_name(&options.ring, id);
        let api: kube_client::Api<Lease> =
            kube_client::Api::namespaced(self.shared.kube.clone(), options.lease_namespace());
        let lease = match api.get_opt(&name).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return true,
            Err(err) => {
                tracing::debug!(lease = %name, error = %err, "reading a shard lease failed");
                return false;
            }
        };
        let spec = lease.spec.unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(id) {
            return true;
        }
        let raw = serde_json::to_vec(&spec).unwrap_or_default();
        let now = Instant::now();
        let duration = Duration::from_secs(
            u64::try_from(spec.lease_duration_seconds.unwrap_or_default()).unwrap_or(0),
        );
        match self.observed.get_mut(&name) {
            Some(seen) if seen.raw == raw => seen.at + duration <= now,
            Some(seen) => {
                *seen = Observed { raw, at: now };
                false
            }
            None => false,
        }
    }

    /// One pass over every object of every sharded kind.
    async fn pass(&mut self, cache: &Cache, leases: &[Arc<Lease>]) {
        let now = Instant::now();
        let live = self.live_shards(leases, now);
        self.metrics.set_members(live.len());
        let options = self.shared.options.clone();
        let (shard_label, drain_label) = (options.shard_label(), options.drain_label());

        let mut objects: Vec<(&ShardedKind, Vec<ObjMeta>)> = Vec::new();
        for kind in &options.kinds {
            match kind.meta_ops.list(cache).await {
                Ok(list) => objects.push((kind, list)),
                Err(err) => {
                    tracing::warn!(error = %err, "coordinator: listing a sharded kind failed")
                }
            }
        }
        // Shards the labels name that are not live: confirmed dead by a fresh read of their
        // Lease before their objects are released without a handshake.
        let mut named: Vec<String> = objects
            .iter()
            .flat_map(|(_, list)| list.iter())
            .filter_map(|o| o.labels.get(&shard_label).cloned())
            .filter(|s| !live.contains(s))
            .collect();
        named.sort();
        named.dedup();
        let mut dead = Vec::new();
        for id in named {
            if self.confirm_dead(&id).await {
                dead.push(id);
            }
        }
        let owners: HashMap<String, Option<String>> = objects
            .iter()
            .filter(|(kind, _)| !kind.follows_owner)
            .flat_map(|(_, list)| list.iter())
            .map(|o| {
                let settled = !o.labels.contains_key(&drain_label);
                (
                    o.uid.clone(),
                    o.labels.get(&shard_label).filter(|_| settled).cloned(),
                )
            })
            .collect();
        let ring = Ring {
            shard_label: &shard_label,
            drain_label: &drain_label,
            live: &live,
            dead: &dead,
        };

        let mut writes = Vec::new();
        for (kind, list) in &objects {
            let kind_name = kind.gvk().kind.clone();
            for obj in list {
                let id = (kind_name.clone(), obj.key.to_string());
                if self.written.get(&id) == Some(&obj.resource_version) {
                    // Our write from this version succeeded; the cache has not caught up.
                    continue;
                }
                let hash_key = ring::hash_key(&kind.gvk(), &obj.key);
                let decision = if kind.follows_owner {
                    ring.decide_follower(obj, &hash_key, &owners)
                } else {
                    ring.decide(obj, &hash_key)
                };
                if let Some(decision) = decision {
                    let api =
                        dynamic_api(self.shared.kube.clone(), &kind.ops.api_resource(), &obj.key);
                    let patch = patch_for(&decision, obj, &shard_label, &drain_label);
                    writes.push(write(api, kind_name.clone(), obj.clone(), decision, patch));
                }
            }
        }

        let results: Vec<_> = futures::stream::iter(writes)
            .buffer_unordered(CONCURRENT_WRITES)
            .collect()
            .await;
        let now = Instant::now();
        for (kind_name, obj, decision, result) in results {
            if let Err(err) = result {
                // A conflict means our view is behind: the next pass sees the new version.
                tracing::debug!(object = %obj.key, error = %err, "coordinator: label write failed");
                continue;
            }
            let id = (kind_name.clone(), obj.key.to_string());
            self.written
                .insert(id.clone(), obj.resource_version.clone());
            match &decision {
                Decision::Assign(to) => {
                    self.metrics.assigned(&kind_name);
                    if let Some(since) = self.draining_since.remove(&id) {
                        self.metrics.handed_over(&kind_name, now - since);
                    }
                    tracing::debug!(object = %obj.key, shard = %to, "assigned");
                }
                Decision::Drain => {
                    self.metrics.moved(&kind_name, "drain");
                    self.draining_since.entry(id).or_insert(now);
                    tracing::debug!(object = %obj.key, "asked to drain");
                }
                Decision::Release(to) => {
                    self.metrics.moved(&kind_name, "dead-shard");
                    self.draining_since.remove(&id);
                    tracing::debug!(object = %obj.key, shard = ?to, "released from a dead shard");
                }
                Decision::Follow(_) => self.metrics.assigned(&kind_name),
            }
        }
        self.draining_since
            .retain(|_, since| now.duration_since(*since) < Duration::from_secs(3600));
        // Forget versions the cache has moved past (or objects that are gone).
        let current: std::collections::HashSet<(String, String)> = objects
            .iter()
            .flat_map(|(kind, list)| {
                list.iter()
                    .map(move |o| (kind.gvk().kind.clone(), o.key.to_string()))
            })
            .collect();
        self.written.retain(|id, _| current.contains(id));
    }
}

/// One label write, with what it was for.
async fn write(
    api: kube_client::Api<DynamicObject>,
    kind_name: String,
    obj: ObjMeta,
    decision: Decision,
    patch: serde_json::Value,
) -> (
    String,
    ObjMeta,
    Decision,
    Result<DynamicObject, kube_client::Error>,
) {
    let result = api
        .patch(&obj.key.name, &PatchParams::default(), &Patch::Merge(patch))
        .await;
    (kind_name, obj, decision, result)
}

/// The JSON merge patch for a decision, with the object's resourceVersion as precondition.
fn patch_for(
    decision: &Decision,
    obj: &ObjMeta,
    shard_label: &str,
    drain_label: &str,
) -> serde_json::Value {
    let labels = match decision {
        Decision::Assign(to) | Decision::Follow(to) | Decision::Release(Some(to)) => {
            serde_json::json!({ shard_label: to, drain_label: null })
        }
        Decision::Release(None) => serde_json::json!({ shard_label: null, drain_label: null }),
        Decision::Drain => serde_json::json!({ drain_label: "true" }),
    };
    serde_json::json!({
        "metadata": { "resourceVersion": obj.resource_version, "labels": labels }
    })
}
