//! Sharded replicas for the sharding tests and the sharded soak: a recorder of every reconcile
//! start and finish, and replicas — managers on runtimes of their own, so that killing one
//! drops every task it had, restarted like Pods when they lose their shard Lease.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use rein::client::{Patch, PatchParams};
use rein::controller::{Action, Context, ControllerManagedBy, ControllerOptions, Request};
use rein::manager::leaderelection::LeaderElectionConfig;
use rein::manager::sharding::ShardingOptions;
use rein::manager::{Error as ManagerError, Manager, Options};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

pub mod soak;

/// The namespace of the Leases and the sharded objects.
pub const NS: &str = "default";
/// The ring.
pub const RING: &str = "cms";
/// The ring's assignment label.
pub const SHARD_LABEL: &str = "shard.rein.dev/cms";
/// The ring's drain label.
pub const DRAIN_LABEL: &str = "drain.shard.rein.dev/cms";
/// The Lease duration of [`lease`].
pub const LEASE_DURATION: Duration = Duration::from_secs(3);
/// Every reconcile asks to come back after this long.
pub const REQUEUE: Duration = Duration::from_millis(300);
/// The annotation [`Work::Mirror`] copies `data.value` into.
pub const MIRROR_ANNOTATION: &str = "sharded.rein.dev/mirror";

/// What a replica's reconciler does besides recording.
#[derive(Debug, Clone)]
pub enum Work {
    /// Waits 20 ms: work that needs no API server.
    Sleep,
    /// Copies the ConfigMap's `data.value` into an annotation (a write when they differ).
    Mirror,
    /// As `Sleep`, but a reconcile of `key` (`namespace/name`) first waits while `open` says
    /// false: holds one reconcile in flight for as long as a test wants.
    Gated {
        /// The key held.
        key: String,
        /// Whether reconciles of `key` may proceed.
        open: tokio::sync::watch::Receiver<bool>,
    },
}

/// 3 s lease, 2 s renew deadline, 200 ms retry period.
pub fn lease() -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: LEASE_DURATION,
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(200),
        ..LeaderElectionConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// The recorder.

/// A reconcile's start or finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// It began.
    Start,
    /// It ended (returned, or was dropped).
    Finish,
}

/// One reconcile step: replica, key, step, when.
type Event = (String, String, Step, Instant);

/// Every reconcile start and finish of every replica, on the real clock.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<Event>>>,
}

impl Recorder {
    /// Notes a step.
    pub fn record(&self, replica: &str, key: &str, step: Step) {
        self.events.lock().expect("recorder").push((
            replica.to_owned(),
            key.to_owned(),
            step,
            Instant::now(),
        ));
    }

    /// Whether `replica` has a reconcile of `key` in flight (started, not finished).
    pub fn in_flight(&self, replica: &str, key: &str) -> bool {
        let events = self.events.lock().expect("recorder");
        let mut open = 0i64;
        for (r, k, step, _) in events.iter() {
            if r == replica && k == key {
                open += if *step == Step::Start { 1 } else { -1 };
            }
        }
        open > 0
    }

    /// Whether `replica` started a reconcile of `key` since `since`.
    pub fn reconciled_since(&self, replica: &str, key: &str, since: Instant) -> bool {
        self.events
            .lock()
            .expect("recorder")
            .iter()
            .any(|(r, k, step, at)| {
                r == replica && k == key && *step == Step::Start && *at >= since
            })
    }

    /// The reconcile intervals per key: (replica, start, end); a reconcile that never
    /// finished (its replica was killed) ends now.
    pub fn intervals(&self) -> BTreeMap<String, Vec<(String, Instant, Instant)>> {
        let events = self.events.lock().expect("recorder").clone();
        let mut open: BTreeMap<(String, String), Vec<Instant>> = BTreeMap::new();
        let mut out: BTreeMap<String, Vec<(String, Instant, Instant)>> = BTreeMap::new();
        for (replica, key, step, at) in events {
            let slot = open.entry((replica.clone(), key.clone())).or_default();
            match step {
                Step::Start => slot.push(at),
                Step::Finish => {
                    if let Some(start) = slot.pop() {
                        out.entry(key).or_default().push((replica, start, at));
                    }
                }
            }
        }
        let now = Instant::now();
        for ((replica, key), starts) in open {
            for start in starts {
                out.entry(key.clone())
                    .or_default()
                    .push((replica.clone(), start, now));
            }
        }
        for list in out.values_mut() {
            list.sort_by_key(|(_, start, _)| *start);
        }
        out
    }

    /// No key reconciled by two replicas at once; no key unreconciled for longer than
    /// `max_gap`. Returns the longest gap seen.
    pub fn check(&self, max_gap: Duration) -> Result<Duration, String> {
        self.check_by(|_, _| max_gap)
    }

    /// As [`Recorder::check`], with the longest gap allowed between two instants given by
    /// `max_gap(from, to)` (a soak allows one bound per disruption within the gap).
    pub fn check_by(
        &self,
        max_gap: impl Fn(Instant, Instant) -> Duration,
    ) -> Result<Duration, String> {
        let mut longest = Duration::ZERO;
        for (key, list) in self.intervals() {
            for (i, (ra, _, ea)) in list.iter().enumerate() {
                for (rb, sb, _) in &list[i + 1..] {
                    if ra != rb && sb < ea {
                        return Err(format!(
                            "{key} reconciled by {ra} and {rb} at once ({:?} overlap)",
                            *ea - *sb
                        ));
                    }
                }
            }
            for pair in list.windows(2) {
                let gap = pair[1].1.saturating_duration_since(pair[0].2);
                longest = longest.max(gap);
                let max_gap = max_gap(pair[0].2, pair[1].1);
                if gap > max_gap {
                    return Err(format!(
                        "{key} went unreconciled for {gap:?} (between {} and {}), more than {max_gap:?}",
                        pair[0].0, pair[1].0
                    ));
                }
            }
        }
        Ok(longest)
    }
}

// ---------------------------------------------------------------------------------------------
// A replica.

/// A manager on its own runtime, restarted (like a Pod) when it loses its shard Lease.
#[derive(Debug)]
pub struct Replica {
    /// The shard id.
    pub id: String,
    runtime: Option<tokio::runtime::Runtime>,
    stop: CancellationToken,
    done: Option<tokio::task::JoinHandle<u32>>,
}

impl Replica {
    /// A replica talking to `env` directly.
    pub fn start(env: &TestEnv, id: &str, recorder: &Recorder, work: Work) -> Replica {
        Replica::start_with(env.config(), id, recorder, work)
    }

    /// A replica talking to the server through `config` (a proxy's, to partition it).
    pub fn start_with(
        config: kube_client::Config,
        id: &str,
        recorder: &Recorder,
        work: Work,
    ) -> Replica {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("replica runtime");
        let stop = CancellationToken::new();
        let done = runtime.spawn(supervise(
            config,
            id.to_owned(),
            recorder.clone(),
            work,
            stop.clone(),
        ));
        Replica {
            id: id.to_owned(),
            runtime: Some(runtime),
            stop,
            done: Some(done),
        }
    }

    /// A graceful stop; returns how many times the replica had to restart.
    pub async fn stop(mut self) -> u32 {
        self.stop.cancel();
        let restarts = match self.done.take() {
            Some(done) => done.await.expect("replica supervisor"),
            None => 0,
        };
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        restarts
    }

    /// Kills the replica: every task it had is dropped, its Leases are left to expire.
    pub fn kill(mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Runs manager after manager until stopped; returns the number of restarts.
async fn supervise(
    config: kube_client::Config,
    id: String,
    recorder: Recorder,
    work: Work,
    stop: CancellationToken,
) -> u32 {
    let mut restarts = 0;
    loop {
        let mgr = build_manager(config.clone(), &id, &recorder, work.clone())
            .await
            .expect("building a replica's manager");
        match mgr.start(stop.clone()).await {
            Ok(()) if stop.is_cancelled() => return restarts,
            Ok(()) => {}
            Err(ManagerError::ShardLeaseLost) => {}
            Err(err) => panic!("replica {id} failed: {err}"),
        }
        if stop.is_cancelled() {
            return restarts;
        }
        restarts += 1;
    }
}

async fn build_manager(
    config: kube_client::Config,
    id: &str,
    recorder: &Recorder,
    work: Work,
) -> Result<Manager, Box<dyn std::error::Error + Send + Sync>> {
    let sharding = ShardingOptions::new(RING)
        .namespace(NS)
        .shard_id(id)
        .lease(lease())
        .kind::<ConfigMap>()
        .following_owner::<Secret>();
    let options = Options::default()
        .sharding(sharding)
        .graceful_shutdown_timeout(Some(Duration::from_secs(10)));
    let mgr = Manager::builder(config).options(options).build().await?;
    let (replica, recorder, client) = (id.to_owned(), recorder.clone(), mgr.client());
    let reconciler = rein::controller::reconciler_fn(move |_ctx: Context, req: Request| {
        let (replica, recorder, client, work) = (
            replica.clone(),
            recorder.clone(),
            client.clone(),
            work.clone(),
        );
        async move {
            let key = req.to_string();
            recorder.record(&replica, &key, Step::Start);
            // Some work; the finish is recorded even if the reconcile is dropped mid-way.
            let _finish = Finish(&recorder, &replica, &key);
            match &work {
                Work::Sleep => tokio::time::sleep(Duration::from_millis(20)).await,
                Work::Mirror => mirror(&client, &req).await?,
                Work::Gated { key: held, open } => {
                    if *held == key {
                        let _ = open.clone().wait_for(|open| *open).await;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            Ok::<_, rein::client::Error>(Action::requeue_after(REQUEUE))
        }
    });
    ControllerManagedBy::new(&mgr)
        .for_::<ConfigMap>()
        .owns::<Secret>()
        .named(format!("configmaps-{id}"))
        .with_options(ControllerOptions {
            need_leader_election: false,
            skip_name_validation: true,
            max_concurrent_reconciles: 4,
            ..ControllerOptions::default()
        })
        .complete(mgr.sharded::<ConfigMap, _>(reconciler)?)?;
    Ok(mgr)
}

/// Records the finish of a reconcile when dropped (also when the reconcile is aborted).
struct Finish<'a>(&'a Recorder, &'a str, &'a str);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.0.record(self.1, self.2, Step::Finish);
    }
}

/// [`Work::Mirror`]: the annotation follows `data.value`.
async fn mirror(client: &rein::client::Client, req: &Request) -> Result<(), rein::client::Error> {
    let cm: std::sync::Arc<ConfigMap> = match client.get(&req.key).await {
        Ok(cm) => cm,
        Err(err) if err.is_not_found() => return Ok(()),
        Err(err) => return Err(err),
    };
    let value = cm.data.as_ref().and_then(|d| d.get("value")).cloned();
    let mirrored = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(MIRROR_ANNOTATION))
        .cloned();
    if value.is_some() && value != mirrored {
        let patch =
            serde_json::json!({ "metadata": { "annotations": { MIRROR_ANNOTATION: value } } });
        match client
            .patch::<ConfigMap, _>(&req.key, &Patch::Merge(patch), &PatchParams::default())
            .await
        {
            Ok(_) => {}
            Err(err) if err.is_not_found() => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}
