//! The writer: creates, updates and deletes soak objects in rounds, keeping the model of what
//! every object should look like once the controllers have caught up.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube_client::Api;
use kube_client::api::{DeleteParams, Patch, PatchParams, PostParams};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use super::controllers::{NAMESPACE, ROLE, SET, WANT};
use super::error::SoakError;
use super::watchdog::Progress;

/// Writes in flight at once.
const CONCURRENCY: usize = 8;
/// Attempts per write before the writer gives up (transient errors only are retried).
const ATTEMPTS: usize = 400;

/// What the server should hold once the controllers have converged.
#[derive(Debug, Default)]
pub(crate) struct Model {
    next: u64,
    /// Source ConfigMaps: name → the value of their `v` data key.
    pub(crate) sources: BTreeMap<String, u64>,
    /// Guarded Secrets: name → their `WANT` annotation.
    pub(crate) secrets: BTreeMap<String, u64>,
    /// ReplicaSets: name → replicas.
    pub(crate) sets: BTreeMap<String, i32>,
    /// Every name the writer ever created (for per-key bookkeeping checks).
    pub(crate) created: Vec<String>,
    /// Writes the server accepted.
    pub(crate) writes: u64,
}

/// How many objects a round creates, and how many live objects the writer aims for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizing {
    /// Source ConfigMaps created per round (Secrets: half; ReplicaSets: a fifth).
    pub(crate) churn: usize,
    /// Live source ConfigMaps to aim for (Secrets: half; ReplicaSets: a fifth).
    pub(crate) population: usize,
}

/// One write.
#[derive(Debug, Clone)]
enum Op {
    CreateSource(String, u64),
    UpdateSource(String, u64),
    DeleteSource(String),
    CreateSecret(String, u64),
    UpdateSecret(String, u64),
    DeleteSecret(String),
    CreateSet(String, i32),
    ScaleSet(String, i32),
    DeleteSet(String),
    DeletePod(String),
}

/// The typed APIs the writer uses.
#[derive(Debug, Clone)]
pub(crate) struct Apis {
    config_maps: Api<ConfigMap>,
    secrets: Api<Secret>,
    sets: Api<ReplicaSet>,
    pods: Api<Pod>,
    progress: std::sync::Arc<Progress>,
}

impl Apis {
    pub(crate) fn new(client: kube_client::Client, progress: std::sync::Arc<Progress>) -> Apis {
        Apis {
            config_maps: Api::namespaced(client.clone(), NAMESPACE),
            secrets: Api::namespaced(client.clone(), NAMESPACE),
            sets: Api::namespaced(client.clone(), NAMESPACE),
            pods: Api::namespaced(client, NAMESPACE),
            progress,
        }
    }
}

impl Model {
    /// Plans one round (updating the model) and runs its writes.
    pub(crate) async fn round(
        &mut self,
        apis: &Apis,
        rng: &mut StdRng,
        sizing: Sizing,
    ) -> Result<(), SoakError> {
        let ops = self.plan(rng, sizing);
        let results: Vec<Result<(), SoakError>> = futures::stream::iter(ops)
            .map(|op| execute(apis, op))
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        for result in results {
            result?;
            self.writes += 1;
        }
        Ok(())
    }

    fn name(&mut self, prefix: &str) -> String {
        self.next += 1;
        let name = format!("{prefix}-{}", self.next);
        self.created.push(name.clone());
        name
    }

    fn plan(&mut self, rng: &mut StdRng, sizing: Sizing) -> Vec<Op> {
        let mut ops = Vec::new();
        let churn = [sizing.churn, sizing.churn / 2, (sizing.churn / 5).max(1)];
        let target = [
            sizing.population,
            sizing.population / 2,
            (sizing.population / 5).max(1),
        ];
        // Deletes and updates first (of objects that existed before this round), so that no
        // two writes of one round touch the same object.
        let deletes = |len: usize, churn: usize, target: usize, rng: &mut StdRng| {
            let over = (len + churn).saturating_sub(target);
            over.max(rng.random_range(0..=churn / 5)).min(len)
        };
        for _ in 0..deletes(self.sources.len(), churn[0], target[0], rng) {
            let name = take_random(&mut self.sources, rng);
            ops.push(Op::DeleteSource(name));
        }
        for _ in 0..deletes(self.secrets.len(), churn[1], target[1], rng) {
            let name = take_random(&mut self.secrets, rng);
            ops.push(Op::DeleteSecret(name));
        }
        for _ in 0..deletes(self.sets.len(), churn[2], target[2], rng) {
            let name = take_random(&mut self.sets, rng);
            ops.push(Op::DeleteSet(name));
        }
        for name in pick_distinct(&self.sources, churn[0], rng) {
            let v = self.sources[&name] + 1;
            self.sources.insert(name.clone(), v);
            ops.push(Op::UpdateSource(name, v));
        }
        for name in pick_distinct(&self.secrets, churn[1], rng) {
            let v = self.secrets[&name] + 1;
            self.secrets.insert(name.clone(), v);
            ops.push(Op::UpdateSecret(name, v));
        }
        for name in pick_distinct(&self.sets, churn[2], rng) {
            let replicas = rng.random_range(0..=3);
            self.sets.insert(name.clone(), replicas);
            ops.push(Op::ScaleSet(name.clone(), replicas));
            // A Pod of another set disappears (the scaler must re-create it).
            if let Some(other) = pick_distinct(&self.sets, 1, rng).pop()
                && other != name
                && self.sets[&other] > 0
            {
                let index = rng.random_range(0..self.sets[&other]);
                ops.push(Op::DeletePod(format!("{other}-{index}")));
            }
        }
        for _ in 0..churn[0] {
            let name = self.name("src");
            self.sources.insert(name.clone(), 0);
            ops.push(Op::CreateSource(name, 0));
        }
        for _ in 0..churn[1] {
            let name = self.name("sec");
            self.secrets.insert(name.clone(), 0);
            ops.push(Op::CreateSecret(name, 0));
        }
        for _ in 0..churn[2] {
            let name = self.name("rs");
            let replicas = rng.random_range(0..=3);
            self.sets.insert(name.clone(), replicas);
            ops.push(Op::CreateSet(name, replicas));
        }
        ops
    }
}

/// Removes and returns a random key of a non-empty map.
fn take_random<V>(map: &mut BTreeMap<String, V>, rng: &mut StdRng) -> String {
    let index = rng.random_range(0..map.len());
    let name = map.keys().nth(index).cloned().unwrap_or_default();
    map.remove(&name);
    name
}

/// Up to `n` distinct random keys of the map.
fn pick_distinct<V>(map: &BTreeMap<String, V>, n: usize, rng: &mut StdRng) -> Vec<String> {
    let mut names: Vec<&String> = map.keys().collect();
    let mut picked = Vec::new();
    while picked.len() < n && !names.is_empty() {
        let index = rng.random_range(0..names.len());
        picked.push(names.swap_remove(index).clone());
    }
    picked
}

/// A ReplicaSet of `replicas` Pods labelled `SET=<name>`.
fn replica_set(name: &str, replicas: i32) -> Value {
    json!({
        "metadata": { "name": name, "namespace": NAMESPACE },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { SET: name } },
            "template": {
                "metadata": { "labels": { SET: name } },
                "spec": { "containers": [{ "name": "main", "image": "soak:1" }] }
            }
        }
    })
}

/// Runs one write, retrying transient failures (5xx, 429, transport errors).
async fn execute(apis: &Apis, op: Op) -> Result<(), SoakError> {
    let in_flight = apis.progress.write(format!("{op:?}"));
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = execute_once(apis, &op).await;
        let err = match result {
            Ok(()) => return Ok(()),
            Err(err) => err,
        };
        let settled = match (&op, &err) {
            // An earlier attempt went through after all.
            (Op::CreateSource(..) | Op::CreateSecret(..) | Op::CreateSet(..), e) => code(e) == 409,
            (
                Op::DeleteSource(_) | Op::DeleteSecret(_) | Op::DeleteSet(_) | Op::DeletePod(_),
                e,
            ) => code(e) == 404,
            _ => false,
        };
        if settled {
            return Ok(());
        }
        in_flight.failed_attempt();
        let transient = match &err {
            kube_client::Error::Api(status) => matches!(status.code, 429 | 500 | 502 | 503 | 504),
            kube_client::Error::SerdeError(_) => false,
            _ => true,
        };
        if !transient || attempt >= ATTEMPTS {
            return Err(SoakError::Write {
                op: format!("{op:?}"),
                attempts: attempt,
                source: err,
            });
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The HTTP status of an API error; 0 for errors that are not the server's answer.
fn code(err: &kube_client::Error) -> u16 {
    match err {
        kube_client::Error::Api(status) => status.code,
        _ => 0,
    }
}

async fn execute_once(apis: &Apis, op: &Op) -> Result<(), kube_client::Error> {
    let pp = PostParams::default();
    let patch = PatchParams::default();
    let dp = DeleteParams::default();
    match op {
        Op::CreateSource(name, v) => {
            let cm: ConfigMap = serde_json::from_value(json!({
                "metadata": { "name": name, "labels": { ROLE: "source" } },
                "data": { "v": v.to_string() },
            }))
            .map_err(kube_client::Error::SerdeError)?;
            apis.config_maps.create(&pp, &cm).await.map(drop)
        }
        Op::UpdateSource(name, v) => {
            let body = Patch::Merge(json!({ "data": { "v": v.to_string() } }));
            apis.config_maps.patch(name, &patch, &body).await.map(drop)
        }
        Op::DeleteSource(name) => apis.config_maps.delete(name, &dp).await.map(drop),
        Op::CreateSecret(name, v) => {
            let secret: Secret = serde_json::from_value(json!({
                "metadata": {
                    "name": name,
                    "labels": { ROLE: "guarded" },
                    "annotations": { WANT: v.to_string() },
                },
            }))
            .map_err(kube_client::Error::SerdeError)?;
            apis.secrets.create(&pp, &secret).await.map(drop)
        }
        Op::UpdateSecret(name, v) => {
            let body =
                Patch::Merge(json!({ "metadata": { "annotations": { WANT: v.to_string() } } }));
            apis.secrets.patch(name, &patch, &body).await.map(drop)
        }
        Op::DeleteSecret(name) => apis.secrets.delete(name, &dp).await.map(drop),
        Op::CreateSet(name, replicas) => {
            let set: ReplicaSet = serde_json::from_value(replica_set(name, *replicas))
                .map_err(kube_client::Error::SerdeError)?;
            apis.sets.create(&pp, &set).await.map(drop)
        }
        Op::ScaleSet(name, replicas) => {
            let body = Patch::Merge(json!({ "spec": { "replicas": replicas } }));
            apis.sets.patch(name, &patch, &body).await.map(drop)
        }
        Op::DeleteSet(name) => apis.sets.delete(name, &dp).await.map(drop),
        Op::DeletePod(name) => apis.pods.delete(name, &dp).await.map(drop),
    }
}
