//! The sharded chaos soak: replicas of a sharded manager mirror a value of each ConfigMap into
//! an annotation while a writer creates, updates and deletes ConfigMaps and a chaos driver
//! kills replicas, stops them gracefully and holds the API server; replaced replicas come back
//! under new ids, as a Deployment's Pods do. Then every object must converge (assigned to a
//! live replica and mirrored), and the recorder must show no key reconciled by two replicas at
//! once and no key unreconciled for longer than the outage, the Lease and the hand-over — once
//! per disruption (kill, stop, outage) that began within the gap or one bound before it, since
//! disruptions in quick succession add up (a coordinator elected after an outage, for one,
//! gives every Lease it first sees a full duration).

use std::fmt;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::Api;
use kube_client::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rein_testenv::TestEnv;

use super::{
    DRAIN_LABEL, LEASE_DURATION, MIRROR_ANNOTATION, NS, REQUEUE, Recorder, Replica, SHARD_LABEL,
    Work,
};

/// How long one API outage holds every request: longer than the renew deadline.
const OUTAGE: Duration = Duration::from_millis(2500);
/// The hand-over allowance on top of the Lease duration (coordinator passes, watch delivery,
/// a loaded machine).
const HANDOVER_ALLOWANCE: Duration = Duration::from_secs(8);

/// What a sharded soak run does.
#[derive(Debug, Clone)]
pub struct ShardedSoakConfig {
    /// Seeds the writer's and the chaos driver's decisions.
    pub seed: u64,
    /// Rounds of writes and chaos.
    pub rounds: usize,
    /// Replicas running at any time (a replaced one is restarted under a new id).
    pub replicas: usize,
    /// ConfigMaps created per round (a third as many deleted, half as many updated).
    pub churn: usize,
    /// The pause between rounds.
    pub round_pause: Duration,
    /// How long the objects may take to converge after the last round.
    pub converge_timeout: Duration,
}

impl ShardedSoakConfig {
    /// Eight rounds of ten ConfigMaps over three replicas: the test suite's run.
    pub fn short(seed: u64) -> Self {
        ShardedSoakConfig {
            seed,
            rounds: 8,
            replicas: 3,
            churn: 10,
            round_pause: Duration::from_millis(500),
            converge_timeout: Duration::from_secs(60),
        }
    }

    /// Rounds for about `duration` (a round takes about two seconds), four replicas.
    pub fn long(seed: u64, duration: Duration) -> Self {
        ShardedSoakConfig {
            rounds: usize::try_from(duration.as_secs() / 2)
                .unwrap_or(usize::MAX)
                .max(1),
            replicas: 4,
            churn: 20,
            round_pause: Duration::from_secs(1),
            ..ShardedSoakConfig::short(seed)
        }
    }
}

/// What a passed run saw.
#[derive(Debug, Clone, Default)]
pub struct ShardedSoakReport {
    /// The seed.
    pub seed: u64,
    /// Rounds run.
    pub rounds: usize,
    /// Replicas killed (and replaced).
    pub kills: usize,
    /// Replicas stopped gracefully (and replaced).
    pub stops: usize,
    /// API outages longer than the renew deadline.
    pub outages: usize,
    /// Restarts of replicas after they lost their shard Lease.
    pub restarts: u32,
    /// ConfigMaps alive at the end.
    pub objects: usize,
    /// Time from the last round to convergence.
    pub converged_in: Duration,
    /// The longest time a key went unreconciled.
    pub longest_gap: Duration,
}

impl fmt::Display for ShardedSoakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed={}|sharded|rounds={}|kills={}|stops={}|outages={}|restarts={}|objects={}|converged_in={:.1}s|longest_gap={:.1}s",
            self.seed,
            self.rounds,
            self.kills,
            self.stops,
            self.outages,
            self.restarts,
            self.objects,
            self.converged_in.as_secs_f64(),
            self.longest_gap.as_secs_f64()
        )
    }
}

/// Runs the sharded soak on an embedded API server; `Err` says what did not hold.
pub async fn run(config: &ShardedSoakConfig) -> Result<ShardedSoakReport, String> {
    let env = TestEnv::start().await.map_err(|e| e.to_string())?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let recorder = Recorder::default();
    let mut rng = StdRng::seed_from_u64(config.seed);
    let mut report = ShardedSoakReport {
        seed: config.seed,
        rounds: config.rounds,
        ..ShardedSoakReport::default()
    };
    let mut next_id = 0;
    let mut start = |env: &TestEnv| {
        next_id += 1;
        Replica::start(env, &format!("s{next_id}"), &recorder, Work::Mirror)
    };
    let mut replicas: Vec<Replica> = (0..config.replicas).map(|_| start(&env)).collect();
    let mut live: Vec<String> = Vec::new();
    let mut disruptions: Vec<Instant> = Vec::new();

    for round in 0..config.rounds {
        // Writes: create, update, delete.
        for i in 0..config.churn {
            let name = format!("s-{round}-{i}");
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..ObjectMeta::default()
                },
                data: Some([("value".to_owned(), "v0".to_owned())].into()),
                ..ConfigMap::default()
            };
            api.create(&PostParams::default(), &cm)
                .await
                .map_err(|e| format!("creating {name}: {e}"))?;
            live.push(name);
        }
        for _ in 0..config.churn / 2 {
            let name = &live[rng.random_range(0..live.len())];
            let patch = serde_json::json!({ "data": { "value": format!("v{round}") } });
            api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .map_err(|e| format!("updating {name}: {e}"))?;
        }
        for _ in 0..config.churn / 3 {
            let name = live.swap_remove(rng.random_range(0..live.len()));
            api.delete(&name, &DeleteParams::default())
                .await
                .map_err(|e| format!("deleting {name}: {e}"))?;
        }

        // Chaos.
        let choice = rng.random_range(0..4);
        if choice < 3 {
            disruptions.push(Instant::now());
        }
        match choice {
            0 => {
                let victim = replicas.swap_remove(rng.random_range(0..replicas.len()));
                println!("round {round}: killing {}", victim.id);
                victim.kill();
                report.kills += 1;
                replicas.push(start(&env));
            }
            1 => {
                let victim = replicas.swap_remove(rng.random_range(0..replicas.len()));
                println!("round {round}: stopping {}", victim.id);
                report.restarts += victim.stop().await;
                report.stops += 1;
                replicas.push(start(&env));
            }
            2 => {
                println!("round {round}: holding the API server for {OUTAGE:?}");
                env.faults().pause();
                tokio::time::sleep(OUTAGE).await;
                env.faults().resume();
                report.outages += 1;
            }
            _ => {}
        }
        tokio::time::sleep(config.round_pause).await;
    }

    // Convergence: every live ConfigMap assigned to a running replica and mirrored.
    let ids: Vec<String> = replicas.iter().map(|r| r.id.clone()).collect();
    let last_round = Instant::now();
    let deadline = last_round + config.converge_timeout;
    loop {
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing: {e}"))?;
        let pending: Vec<String> = list
            .items
            .iter()
            .filter(|cm| {
                cm.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("s-"))
            })
            .filter(|cm| !converged(cm, &ids))
            .filter_map(|cm| cm.metadata.name.clone())
            .collect();
        if pending.is_empty() {
            report.objects = live.len();
            break;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{} ConfigMaps did not converge within {:?} over {ids:?}: {:?}",
                pending.len(),
                config.converge_timeout,
                &pending[..pending.len().min(5)]
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    report.converged_in = last_round.elapsed();
    let bound = OUTAGE + LEASE_DURATION + HANDOVER_ALLOWANCE + REQUEUE;
    report.longest_gap = recorder.check_by(|from, to| {
        let within = disruptions
            .iter()
            .filter(|at| **at + bound >= from && **at <= to)
            .count();
        bound * u32::try_from(within.max(1)).unwrap_or(u32::MAX)
    })?;
    for replica in replicas {
        report.restarts += replica.stop().await;
    }
    Ok(report)
}

/// Assigned to one of `ids`, not draining, and its annotation mirrors its value.
fn converged(cm: &ConfigMap, ids: &[String]) -> bool {
    let labels = cm.metadata.labels.clone().unwrap_or_default();
    let assigned = labels.get(SHARD_LABEL).is_some_and(|s| ids.contains(s))
        && !labels.contains_key(DRAIN_LABEL);
    let value = cm.data.as_ref().and_then(|d| d.get("value"));
    let mirrored = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(MIRROR_ANNOTATION));
    assigned && value.is_some() && value == mirrored
}
