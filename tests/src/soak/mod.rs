//! The chaos soak: a manager with three controllers against rein-testenv while a chaos driver
//! injects faults and a writer churns objects, then checks convergence, caches, per-key
//! exclusivity, per-key bookkeeping, tasks and memory. A watchdog stops a run that passes its
//! deadline or stalls, with a report of what everything was waiting on.
//!
//! Three runtimes keep the figures honest: rein-testenv runs on its own, the manager on a
//! dedicated one (so its alive-task count can be compared with the baseline after it stops),
//! and the writer, the chaos driver and the checks on the caller's thread.

mod chaos;
mod checks;
mod controllers;
mod error;
mod report;
mod server;
mod watchdog;
mod writer;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rein::controller::{ControllerManagedBy, ControllerOptions, Request, RequestQueue};
use rein::manager::Manager;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

pub use chaos::FaultCounts;
pub use error::{SoakError, SoakFailure};
pub use report::{SoakOutcome, SoakReport};
pub use server::{Placement, serve_child};

use checks::Problems;
use controllers::{Guard, Mirror, NAMESPACE, Scaler, Tracked, Tracker, lock, mirror_name};
use server::Server;
use watchdog::Progress;
use writer::{Apis, Model, Sizing};

/// How long the writer keeps going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// This many rounds.
    Rounds(usize),
    /// Rounds until this much time has passed (at least one round).
    Time(Duration),
}

/// What a soak run does; [`SoakConfig::short`] and [`SoakConfig::long`] are the two presets.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// Seeds the writer's and the chaos driver's RNGs: one seed, one sequence of decisions.
    pub seed: u64,
    /// How long the writer runs.
    pub length: Length,
    /// Source ConfigMaps created per round (Secrets: half; ReplicaSets: a fifth).
    pub churn: usize,
    /// Live source ConfigMaps the writer aims for once warmed up (Secrets: half; ReplicaSets:
    /// a fifth); beyond it every round deletes as many as it creates.
    pub population: usize,
    /// The pause between rounds (the chaos goes on meanwhile).
    pub round_pause: Duration,
    /// The chaos driver injects a fault after a random wait in this range.
    pub chaos_interval: (Duration, Duration),
    /// `max_concurrent_reconciles` of every controller.
    pub workers: usize,
    /// How long to wait for the objects to converge once the chaos stopped.
    pub converge_timeout: Duration,
    /// The whole run's deadline: past it the soak stops and reports what everything is
    /// waiting on ([`SoakError::Stalled`]) instead of waiting on.
    pub deadline: Duration,
    /// The soak stops the same way when no write, round or check finished for this long.
    pub stall_timeout: Duration,
    /// Check that resident memory and (when counted) the live heap stay bounded across the
    /// later rounds (long runs only: a short run has too few rounds after warm-up to tell
    /// growth from noise).
    pub check_memory: bool,
    /// Print a line per round.
    pub progress: bool,
    /// Where the API server runs.
    pub server: Placement,
    /// From the end of this round on, the server holds every request forever
    /// ([`rein_testenv::Fault::hang`]): a deliberately hung wait, which the watchdog must
    /// report within [`SoakConfig::stall_timeout`].
    pub hang_after_round: Option<usize>,
    /// Reads the process's live heap (bytes allocated and not freed), when its allocator
    /// counts them (the `soak` binary's does); recorded every round and judged by the memory
    /// check beside the resident set.
    pub heap_bytes: Option<fn() -> usize>,
}

impl SoakConfig {
    /// The run `cargo xtask test` makes (over several seeds): about a thousand objects over
    /// thirty rounds.
    pub fn short(seed: u64) -> SoakConfig {
        SoakConfig {
            seed,
            length: Length::Rounds(30),
            churn: 30,
            population: 120,
            round_pause: Duration::from_millis(300),
            chaos_interval: (Duration::from_millis(100), Duration::from_millis(300)),
            workers: 4,
            converge_timeout: Duration::from_secs(120),
            deadline: Duration::from_secs(300),
            stall_timeout: Duration::from_secs(60),
            check_memory: false,
            progress: false,
            server: Placement::InProcess,
            hang_after_round: None,
            heap_bytes: None,
        }
    }

    /// The run `cargo xtask soak` makes: thousands of objects for `duration`.
    pub fn long(seed: u64, duration: Duration) -> SoakConfig {
        SoakConfig {
            seed,
            length: Length::Time(duration),
            churn: 100,
            population: 1000,
            round_pause: Duration::from_millis(500),
            chaos_interval: (Duration::from_millis(100), Duration::from_millis(400)),
            workers: 4,
            converge_timeout: Duration::from_secs(300),
            // The run, the convergence wait, and three minutes for the checks and the stop.
            deadline: duration + Duration::from_secs(300 + 180),
            stall_timeout: Duration::from_secs(90),
            check_memory: true,
            progress: true,
            server: Placement::InProcess,
            hang_after_round: None,
            heap_bytes: None,
        }
    }
}

/// Runs a soak and returns its figures and every failed check; `Err` only when it could not
/// run to its checks. Must not be called from inside a tokio runtime (it builds its own).
pub fn run(config: &SoakConfig) -> Result<SoakOutcome, SoakError> {
    let runtime = |name: &str, workers: usize| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name(name)
            .enable_all()
            .build()
            .map_err(SoakError::Runtime)
    };
    let server_rt = runtime("soak-apiserver", 1)?;
    let manager_rt = runtime("soak-manager", 2)?;
    let driver_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SoakError::Runtime)?;
    let server = Server::start(&config.server, &server_rt)?;
    let progress = Arc::new(Progress::default());
    let outcome = driver_rt.block_on(async {
        tokio::select! {
            outcome = drive(config, &server, &manager_rt, &progress) => outcome,
            // The report is taken before `select!` drops the stalled run (and with it the
            // writes it shows as in flight).
            (why, report) = async {
                let why = progress.watch(config.deadline, config.stall_timeout).await;
                (why, progress.report(&server, manager_rt.metrics().num_alive_tasks()))
            } => Err(SoakError::Stalled { why, report }),
        }
    });
    progress.forget_manager();
    // A stalled run leaves its tasks behind: dropping the runtimes cancels them.
    drop(manager_rt);
    server.shutdown(&server_rt);
    outcome
}

/// State the controllers share with the checks.
#[derive(Debug, Default)]
struct Shared {
    tracker: Arc<Tracker>,
    pending_cleanups: Arc<Mutex<HashMap<String, String>>>,
    cleanups: Arc<AtomicU64>,
}

async fn drive(
    config: &SoakConfig,
    server: &Server,
    manager_rt: &Runtime,
    progress: &Arc<Progress>,
) -> Result<SoakOutcome, SoakError> {
    let started = Instant::now();
    let kube = kube_client::Client::try_from(server.config()).map_err(SoakError::Client)?;
    let apis = Apis::new(kube.clone(), progress.clone());
    let shared = Shared::default();
    let baseline_tasks = manager_rt.metrics().num_alive_tasks();

    let (mgr, queues) = manager_rt
        .spawn(build_manager(
            server.config(),
            config.workers,
            shared_handles(&shared),
        ))
        .await
        .map_err(SoakError::Task)??;
    progress.manager(&mgr, &queues);
    progress.phase("the manager's start and cache sync");
    let stop = CancellationToken::new();
    let running = manager_rt.spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    let start_timeout = Duration::from_secs(60);
    if tokio::time::timeout(start_timeout, mgr.elected())
        .await
        .is_err()
    {
        stop.cancel();
        return Err(SoakError::StartTimeout(start_timeout));
    }

    let chaos_stop = CancellationToken::new();
    let chaos = tokio::spawn(chaos::run(
        server.faults(),
        config.seed,
        config.chaos_interval,
        chaos_stop.clone(),
    ));
    let mut model = Model::default();
    let mut rng = StdRng::seed_from_u64(config.seed);
    let sizing = Sizing {
        churn: config.churn,
        population: config.population,
    };
    let mut rss_kib = Vec::new();
    let mut server_rss_kib = Vec::new();
    let mut heap_kib = Vec::new();
    let mut tasks_peak = 0;
    let mut rounds = 0;
    let mut write_error = None;
    while rounds == 0
        || match config.length {
            Length::Rounds(n) => rounds < n,
            Length::Time(d) => started.elapsed() < d,
        }
    {
        progress.phase(format!("round {} of the writer", rounds + 1));
        if let Err(err) = model.round(&apis, &mut rng, sizing).await {
            write_error = Some(err);
            break;
        }
        rounds += 1;
        // The server's request log is for tests asserting on traffic; keep it from growing.
        server.clear_requests();
        if config.hang_after_round == Some(rounds) {
            server.faults().hang(usize::MAX, "/");
        }
        tasks_peak = tasks_peak.max(manager_rt.metrics().num_alive_tasks());
        let rss = checks::rss_kib().unwrap_or(0);
        rss_kib.push(rss);
        let server_rss = server.child_rss_kib();
        server_rss_kib.extend(server_rss);
        let heap = config.heap_bytes.map(|f| f() as u64 / 1024);
        heap_kib.extend(heap);
        if config.progress {
            let heap = heap.map_or(String::new(), |k| format!("  heap {k:>7} KiB"));
            let server_rss =
                server_rss.map_or(String::new(), |k| format!("  server rss {k:>7} KiB"));
            println!(
                "round {rounds:>4}  {:>6.1}s  writes {:>7}  live sources {:>5}  rss {:>7} KiB{heap}{server_rss}",
                started.elapsed().as_secs_f64(),
                model.writes,
                model.sources.len(),
                rss
            );
        }
        tokio::time::sleep(config.round_pause).await;
    }
    chaos_stop.cancel();
    let faults = chaos.await.map_err(SoakError::Task)?;
    if let Some(err) = write_error {
        progress.phase(format!("the manager's stop after a write failed: {err}"));
        stop.cancel();
        let _ = running.await;
        return Err(err);
    }
    let chaos_time = started.elapsed();

    let mut failures = Vec::new();
    let calm = Instant::now();
    progress.phase("the wait for the objects to converge");
    let converged = poll(progress, config.converge_timeout, || {
        checks::desired_state(&kube, &model)
    })
    .await;
    let convergence = match converged {
        Ok(()) => Some(calm.elapsed()),
        Err(problems) => {
            failures.push(SoakFailure::NotConverged {
                timeout: config.converge_timeout,
                problems: problems.to_string(),
            });
            None
        }
    };
    // The cache check runs even when the objects did not converge: a cache that lost an event
    // is the likeliest reason for that, and this says which.
    {
        let (cached, live) = (mgr.client(), mgr.api_reader());
        progress.phase("the check that the caches match the server");
        let synced = poll(progress, Duration::from_secs(30), || {
            checks::cache_matches_server(&cached, &live)
        })
        .await;
        if let Err(problems) = synced {
            failures.push(SoakFailure::CacheDiverged {
                problems: match server.env() {
                    Some(env) => format!("{problems}{}", list_watch_log(env, &problems)),
                    None => problems.to_string(),
                },
            });
        }
        progress.phase("the check that no per-key state is left");
        if let Err(problems) = poll(progress, Duration::from_secs(30), || async {
            idle(&queues, &shared, &model)
        })
        .await
        {
            failures.push(SoakFailure::KeyStateLeaked {
                detail: problems.to_string(),
            });
        }
    }
    let (count, first) = shared.tracker.violations();
    if count > 0 {
        failures.push(SoakFailure::ConcurrentReconcile {
            count,
            first: first.unwrap_or_default(),
        });
    }
    let live_objects = live_object_count(&mgr).await;

    // Stop the manager, drop every handle on it, and wait for its tasks to end.
    progress.phase("the manager's stop");
    stop.cancel();
    match running.await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => failures.push(SoakFailure::ManagerFailed {
            message: render(&err),
        }),
        Err(err) => failures.push(SoakFailure::ManagerFailed {
            message: render(&err),
        }),
    }
    progress.forget_manager();
    drop(queues);
    drop(mgr);
    let alive = || manager_rt.metrics().num_alive_tasks();
    progress.phase("the wait for the manager's tasks to end");
    let drained = poll(progress, Duration::from_secs(30), || async {
        let mut p = Problems::default();
        if alive() > baseline_tasks {
            p.push(format!("{} tasks alive", alive()));
        }
        p
    })
    .await;
    if drained.is_err() {
        failures.push(SoakFailure::TasksLeaked {
            alive: alive(),
            baseline: baseline_tasks,
        });
    }
    if config.check_memory {
        failures.extend(memory_growth("resident memory", &rss_kib));
        failures.extend(memory_growth("the live heap", &heap_kib));
    }

    let counts = shared.tracker.counts();
    let report = SoakReport {
        seed: config.seed,
        rounds,
        faults,
        objects_created: model.created.len(),
        live_objects,
        writes: model.writes,
        reconciles: counts.iter().map(|(k, v)| (k.to_string(), v.0)).collect(),
        reconcile_errors: counts.iter().map(|(k, v)| (k.to_string(), v.1)).collect(),
        cleanups: shared.cleanups.load(std::sync::atomic::Ordering::SeqCst),
        chaos_time,
        convergence,
        rss_kib,
        server_rss_kib,
        heap_kib,
        tasks_baseline: baseline_tasks,
        tasks_peak,
        tasks_after: alive(),
    };
    Ok(SoakOutcome { report, failures })
}

/// Handles on the shared state, for the controllers.
fn shared_handles(shared: &Shared) -> Shared {
    Shared {
        tracker: shared.tracker.clone(),
        pending_cleanups: shared.pending_cleanups.clone(),
        cleanups: shared.cleanups.clone(),
    }
}

/// The three controllers' queues.
pub(crate) type Queues = Vec<(&'static str, RequestQueue)>;

/// Builds the manager and its controllers (on the manager's runtime).
async fn build_manager(
    config: kube_client::Config,
    workers: usize,
    shared: Shared,
) -> Result<(Manager, Queues), SoakError> {
    let mgr = Manager::builder(config)
        .build()
        .await
        .map_err(SoakError::Manager)?;
    let options = ControllerOptions {
        max_concurrent_reconciles: workers,
        // Tests in one process may run several soaks; names need not be unique.
        skip_name_validation: true,
        ..ControllerOptions::default()
    };
    let tracked = |name, inner| Tracked {
        name,
        tracker: shared.tracker.clone(),
        inner,
    };
    let build_error = |name| move |source| SoakError::Controller { name, source };
    let mirror = ControllerManagedBy::new(&mgr)
        .named("soak-mirror")
        .for_::<ConfigMap>()
        .owns::<ConfigMap>()
        .with_options(options.clone())
        .complete(tracked(
            "soak-mirror",
            Mirror {
                client: mgr.client(),
            },
        ))
        .map_err(build_error("soak-mirror"))?;
    let guard = ControllerManagedBy::new(&mgr)
        .named("soak-guard")
        .for_::<Secret>()
        .with_options(options.clone())
        .complete(Tracked {
            name: "soak-guard",
            tracker: shared.tracker.clone(),
            inner: Guard {
                client: mgr.client(),
                pending: shared.pending_cleanups.clone(),
                cleanups: shared.cleanups.clone(),
            },
        })
        .map_err(build_error("soak-guard"))?;
    let scaler = ControllerManagedBy::new(&mgr)
        .named("soak-scaler")
        .for_::<ReplicaSet>()
        .owns::<Pod>()
        .with_options(options)
        .complete(Tracked {
            name: "soak-scaler",
            tracker: shared.tracker.clone(),
            inner: Scaler {
                client: mgr.client(),
            },
        })
        .map_err(build_error("soak-scaler"))?;
    let queues = vec![
        ("soak-mirror", mirror.queue().clone()),
        ("soak-guard", guard.queue().clone()),
        ("soak-scaler", scaler.queue().clone()),
    ];
    Ok((mgr, queues))
}

/// Per-key state left once everything converged: queued or in-flight keys, keys inside a
/// reconcile, retry counts not forgotten, finalizer cleanups not completed.
fn idle(queues: &Queues, shared: &Shared, model: &Model) -> Problems {
    let mut problems = Problems::default();
    for (name, queue) in queues {
        if !queue.is_empty() || queue.in_flight() > 0 {
            problems.push(format!(
                "{name}: {} queued, {} in flight",
                queue.len(),
                queue.in_flight()
            ));
        }
    }
    if shared.tracker.active() > 0 {
        problems.push(format!(
            "{} key(s) inside a reconcile",
            shared.tracker.active()
        ));
    }
    let pending = lock(&shared.pending_cleanups);
    if !pending.is_empty() {
        let keys: Vec<&String> = pending.keys().take(5).collect();
        problems.push(format!(
            "{} finalizer cleanup(s) never completed: {keys:?}",
            pending.len()
        ));
    }
    for name in &model.created {
        for key in [name.clone(), mirror_name(name)] {
            let req = Request::new(NAMESPACE, key);
            for (controller, queue) in queues {
                let retries = queue.num_requeues(&req);
                if retries > 0 {
                    problems.push(format!(
                        "{controller}: {req} keeps {retries} retry count(s)"
                    ));
                }
            }
        }
    }
    problems
}

/// For a diagnosis of a diverged cache: the list and watch requests the server answered since
/// the last round for the kinds named in `problems` (the log is cleared every round).
fn list_watch_log(env: &rein_testenv::TestEnv, problems: &Problems) -> String {
    let text = problems.to_string();
    let mut out = String::new();
    for (kind, plural) in [
        ("configmap", "/configmaps"),
        ("secret", "/secrets"),
        ("replicaset", "/replicasets"),
        ("pod", "/pods"),
    ] {
        if !text.contains(&format!("{kind} ")) {
            continue;
        }
        let requests: Vec<_> = env
            .requests()
            .into_iter()
            .filter(|r| r.method == "GET" && r.path.ends_with(plural))
            .collect();
        out.push_str(&format!(
            "\n    {kind} list/watch requests since the last round:"
        ));
        for r in requests.iter().rev().take(12).rev() {
            let query = r.query.as_deref().unwrap_or("");
            out.push_str(&format!(
                "\n      {} {}?{query} -> {}",
                r.method, r.path, r.status
            ));
        }
    }
    out
}

/// Objects in the manager's cache at the end (every kind the controllers watch).
async fn live_object_count(mgr: &Manager) -> usize {
    let client = mgr.client();
    let opts = rein::client::ListOptions::default();
    let mut n = 0;
    n += client
        .list::<ConfigMap>(&opts)
        .await
        .map_or(0, |l| l.items.len());
    n += client
        .list::<Secret>(&opts)
        .await
        .map_or(0, |l| l.items.len());
    n += client
        .list::<ReplicaSet>(&opts)
        .await
        .map_or(0, |l| l.items.len());
    n += client.list::<Pod>(&opts).await.map_or(0, |l| l.items.len());
    n
}

/// Polls `check` every 100 ms until it finds no problems, for at most `timeout`; returns the
/// last problems found on timeout. Each finished check counts as progress for the watchdog.
async fn poll<F, Fut>(progress: &Progress, timeout: Duration, mut check: F) -> Result<(), Problems>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Problems>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let problems = check().await;
        progress.tick();
        if problems.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(problems);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Memory (the resident set, or the live heap) must plateau once the writer's population is
/// steady: its mean over the last quarter of the rounds may exceed the mean over the second
/// quarter (the first quarter is warm-up, while the population grows to its target) by at most
/// 25 % + 32 MiB. The slack covers allocator fragmentation, an in-process API server's bounded
/// watch history and buffers that grow to a high-water mark; a leak per write or per reconcile
/// (thousands of each per round) grows without bound and crosses it over a run of several
/// minutes.
fn memory_growth(what: &'static str, kib: &[u64]) -> Option<SoakFailure> {
    let n = kib.len();
    if n < 8 {
        return None;
    }
    let mean = |s: &[u64]| s.iter().sum::<u64>() / s.len().max(1) as u64;
    let from_kib = mean(&kib[n / 4..n / 2]);
    let to_kib = mean(&kib[n - n / 4..]);
    let bound_kib = from_kib / 4 + 32 * 1024;
    (to_kib > from_kib + bound_kib).then_some(SoakFailure::MemoryGrew {
        what,
        from_kib,
        to_kib,
        bound_kib,
    })
}

/// An error with its chain of sources on one line.
fn render(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_growth_allows_a_plateau_and_flags_steady_growth() {
        let flat: Vec<u64> = [
            100_000, 150_000, 160_000, 161_000, 160_500, 162_000, 161_000, 163_000,
        ]
        .into();
        assert!(memory_growth("rss", &flat).is_none());
        let growing: Vec<u64> = (0..16).map(|i| 100_000 + i * 20_000).collect();
        assert!(matches!(
            memory_growth("rss", &growing),
            Some(SoakFailure::MemoryGrew { .. })
        ));
        assert!(
            memory_growth("rss", &growing[..4]).is_none(),
            "too few rounds to judge"
        );
    }
}
