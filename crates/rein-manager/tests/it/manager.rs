//! The Manager against rein-testenv: start order, cache-sync gating, graceful stop, failing
//! runnables, and leader election between two managers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};
use kube_client::Api;
use kube_client::api::PostParams;
use parking_lot::Mutex;
use rein_controller::BoxError;
use rein_manager::leaderelection::LeaderElectionConfig;
use rein_manager::{Error, LeaderElectionOptions, Manager, Options, RunnableFn};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

async fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn manager(env: &TestEnv, options: Options) -> Manager {
    Manager::builder(env.config())
        .options(options)
        .build()
        .await
        .expect("manager builds")
}

fn spawn_start(
    mgr: &Manager,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<Result<(), Error>>,
) {
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    (stop, task)
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "namespace": "default" },
        "spec": { "containers": [{ "name": "c", "image": "nginx" }] }
    }))
    .unwrap()
}

#[tokio::test]
async fn runnables_start_after_caches_sync_and_leader_ones_last() {
    let env = TestEnv::start().await.unwrap();
    Api::<Pod>::namespaced(env.client(), "default")
        .create(&PostParams::default(), &pod("gateway"))
        .await
        .unwrap();
    let mgr = manager(&env, Options::default()).await;
    // An informer that exists before start must have synced before any runnable runs.
    mgr.cache().informer_for::<Pod>().await.unwrap();

    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    for (name, leader) in [("leader", true), ("other", false)] {
        let (log, mgr2) = (log.clone(), mgr.clone());
        let runnable = RunnableFn::new(move |stop: CancellationToken| {
            let (log, mgr) = (log.clone(), mgr2.clone());
            async move {
                log.lock()
                    .push(format!("{name} synced={}", mgr.caches_synced()));
                // The Pod is already in the synced cache.
                let key = rein_scheme::ObjectKey::new("default", "gateway");
                let cached = mgr.cache().get::<Pod>(&key).await.is_ok();
                log.lock().push(format!("{name} cached={cached}"));
                stop.cancelled().await;
                Ok(())
            }
        });
        let runnable = if leader {
            runnable
        } else {
            runnable.without_leader_election()
        };
        mgr.add(Arc::new(runnable)).unwrap();
    }

    let (stop, task) = spawn_start(&mgr);
    wait_for("both runnables", || log.lock().len() >= 4).await;
    mgr.elected().await;
    let lines = log.lock().clone();
    let started: Vec<_> = lines.iter().filter(|l| l.contains("synced")).collect();
    assert_eq!(started, ["other synced=true", "leader synced=true"]);
    assert!(lines.contains(&"other cached=true".to_owned()), "{lines:?}");
    assert!(
        lines.contains(&"leader cached=true".to_owned()),
        "{lines:?}"
    );
    // A runnable added while running starts at once.
    let late = Arc::new(AtomicBool::new(false));
    let flag = late.clone();
    mgr.add(Arc::new(RunnableFn::new(move |stop: CancellationToken| {
        let flag = flag.clone();
        async move {
            flag.store(true, Ordering::SeqCst);
            stop.cancelled().await;
            Ok(())
        }
    })))
    .unwrap();
    wait_for("the late runnable", || late.load(Ordering::SeqCst)).await;

    stop.cancel();
    task.await.unwrap().unwrap();
    assert!(matches!(
        mgr.add(Arc::new(RunnableFn::new(|_| async { Ok(()) }))),
        Err(Error::Stopping)
    ));
    assert!(matches!(
        mgr.start(CancellationToken::new()).await,
        Err(Error::AlreadyStarted)
    ));
}

/// A runnable that, once stopped, needs `linger` to finish its current work.
fn slow_worker(
    linger: Duration,
    finished: &Arc<AtomicBool>,
    running: &Arc<AtomicBool>,
) -> RunnableFn {
    let (finished, running) = (finished.clone(), running.clone());
    RunnableFn::new(move |stop: CancellationToken| {
        let (finished, running) = (finished.clone(), running.clone());
        async move {
            running.store(true, Ordering::SeqCst);
            stop.cancelled().await;
            tokio::time::sleep(linger).await;
            finished.store(true, Ordering::SeqCst);
            Ok(())
        }
    })
}

#[tokio::test]
async fn graceful_stop_waits_for_in_flight_work() {
    let env = TestEnv::start().await.unwrap();
    let mgr = manager(&env, Options::default()).await;
    let (finished, running) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    mgr.add(Arc::new(slow_worker(
        Duration::from_millis(300),
        &finished,
        &running,
    )))
    .unwrap();
    let (stop, task) = spawn_start(&mgr);
    wait_for("the worker", || running.load(Ordering::SeqCst)).await;
    stop.cancel();
    task.await.unwrap().unwrap();
    assert!(
        finished.load(Ordering::SeqCst),
        "start returned before the work finished"
    );
}

#[tokio::test]
async fn work_outliving_the_grace_period_is_an_error() {
    let env = TestEnv::start().await.unwrap();
    let grace = Duration::from_millis(200);
    let mgr = manager(
        &env,
        Options::default().graceful_shutdown_timeout(Some(grace)),
    )
    .await;
    let (finished, running) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    mgr.add(Arc::new(slow_worker(
        Duration::from_secs(600),
        &finished,
        &running,
    )))
    .unwrap();
    let (stop, task) = spawn_start(&mgr);
    wait_for("the worker", || running.load(Ordering::SeqCst)).await;
    stop.cancel();
    let err = task.await.unwrap().unwrap_err();
    assert!(
        matches!(err, Error::GracePeriodExceeded(d) if d == grace),
        "{err:?}"
    );
    assert!(!finished.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_failing_runnable_stops_the_manager_with_its_error() {
    let env = TestEnv::start().await.unwrap();
    let mgr = manager(&env, Options::default()).await;
    let (finished, running) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    mgr.add(Arc::new(slow_worker(Duration::ZERO, &finished, &running)))
        .unwrap();
    mgr.add(Arc::new(RunnableFn::new(|_stop| async {
        Err::<(), BoxError>("boom".into())
    })))
    .unwrap();
    let (_stop, task) = spawn_start(&mgr);
    let err = task.await.unwrap().unwrap_err();
    let Error::Runnable(source) = &err else {
        panic!("expected a runnable error, got {err:?}");
    };
    assert_eq!(source.to_string(), "boom");
    assert!(
        finished.load(Ordering::SeqCst),
        "the other runnables were stopped"
    );
}

/// Leader-only work that counts how many managers run it at once.
#[derive(Default, Clone)]
struct Leaders {
    active: Arc<AtomicUsize>,
    max: Arc<AtomicUsize>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Leaders {
    fn runnable(&self, who: &'static str) -> RunnableFn {
        let this = self.clone();
        RunnableFn::new(move |stop: CancellationToken| {
            let this = this.clone();
            async move {
                let now = this.active.fetch_add(1, Ordering::SeqCst) + 1;
                this.max.fetch_max(now, Ordering::SeqCst);
                this.log.lock().push(format!("{who} started"));
                stop.cancelled().await;
                this.log.lock().push(format!("{who} stopped"));
                this.active.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            }
        })
    }

    fn has(&self, line: &str) -> bool {
        self.log.lock().iter().any(|l| l == line)
    }
}

fn elected_options(identity: &str) -> Options {
    Options::default().leader_election(
        LeaderElectionOptions::new("rein-manager-test")
            .namespace("default")
            .identity(identity)
            .config(LeaderElectionConfig {
                lease_duration: Duration::from_secs(3),
                renew_deadline: Duration::from_secs(1),
                retry_period: Duration::from_millis(200),
                ..LeaderElectionConfig::default()
            }),
    )
}

#[tokio::test]
async fn two_managers_one_leader_and_a_takeover() {
    let env = TestEnv::start().await.unwrap();
    let leaders = Leaders::default();
    let a = manager(&env, elected_options("a")).await;
    a.add(Arc::new(leaders.runnable("a"))).unwrap();
    let (stop_a, task_a) = spawn_start(&a);
    wait_for("a to lead", || leaders.has("a started")).await;

    let b = manager(&env, elected_options("b")).await;
    b.add(Arc::new(leaders.runnable("b"))).unwrap();
    let (stop_b, task_b) = spawn_start(&b);
    // b is up (its caches synced) but must not run leader-only work while a leads.
    wait_for("b to be running", || b.caches_synced()).await;
    let gets = env
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/leases/rein-manager-test"))
        .count();
    wait_for("b to retry a few times", || {
        env.requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path.ends_with("/leases/rein-manager-test"))
            .count()
            >= gets + 3
    })
    .await;
    assert!(!leaders.has("b started"));

    stop_a.cancel();
    task_a.await.unwrap().unwrap();
    wait_for("b to take over", || leaders.has("b started")).await;
    assert_eq!(leaders.max.load(Ordering::SeqCst), 1);

    // client-go's lock events, regarding the Lease.
    let events = Api::<Event>::namespaced(env.client(), "default");
    let expected = ["a became leader", "a stopped leading", "b became leader"];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let messages: Vec<String> = events
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("LeaderElection"))
            .filter(|e| e.involved_object.kind.as_deref() == Some("Lease"))
            .filter_map(|e| e.message)
            .collect();
        if expected.iter().all(|m| messages.iter().any(|x| x == m)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "leader election events missing: {messages:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop_b.cancel();
    task_b.await.unwrap().unwrap();
}

/// The messages of the Events in `default` with `reason`.
async fn event_messages(env: &TestEnv, reason: &str) -> Vec<String> {
    Api::<Event>::namespaced(env.client(), "default")
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter_map(|e| e.message)
        .collect()
}

/// A program's `main`: a manager on a runtime of its own, which ends (dropping every task
/// still running on it) as soon as `start` returns.
fn run_to_exit(config: kube_client::Config, subject: Pod) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let mgr = Manager::builder(config)
            .options(elected_options("solo"))
            .build()
            .await
            .unwrap();
        let recorder = mgr.event_recorder("stopping-test");
        let leading = Arc::new(AtomicBool::new(false));
        mgr.add(Arc::new(RunnableFn::new({
            let leading = leading.clone();
            move |stop: CancellationToken| {
                let (recorder, subject, leading) =
                    (recorder.clone(), subject.clone(), leading.clone());
                async move {
                    leading.store(true, Ordering::SeqCst);
                    stop.cancelled().await;
                    // A leader-only runnable's last word, as a reconcile's last Event would be.
                    recorder.normal(&subject, "Stopping", "the runnable was told to stop");
                    Ok::<(), BoxError>(())
                }
            }
        })))
        .unwrap();
        let (stop, task) = spawn_start(&mgr);
        wait_for("the manager to lead", || leading.load(Ordering::SeqCst)).await;
        stop.cancel();
        task.await.unwrap().unwrap();
        // A recorder of a stopped manager drops what it is given, with a log line, at once.
        mgr.event_recorder("late")
            .normal(&subject_pod(), "Late", "after the stop");
    });
    drop(runtime);
}

fn subject_pod() -> Pod {
    pod("subject")
}

#[test]
fn events_recorded_while_stopping_are_written_before_start_returns() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let env = runtime.block_on(TestEnv::start()).unwrap();
    let created = runtime
        .block_on(
            Api::<Pod>::namespaced(env.client(), "default")
                .create(&PostParams::default(), &subject_pod()),
        )
        .unwrap();
    let config = env.config();
    std::thread::spawn(move || run_to_exit(config, created))
        .join()
        .unwrap();

    // The program's runtime is gone; what was not written by now never will be. The manager
    // wrote its Events on the way down (controller-runtime stops its recorder provider last),
    // including leader election's "stopped leading", recorded as the elector ended.
    runtime.block_on(async {
        assert_eq!(
            event_messages(&env, "Stopping").await,
            ["the runnable was told to stop"]
        );
        let leader = event_messages(&env, "LeaderElection").await;
        for message in ["solo became leader", "solo stopped leading"] {
            assert!(
                leader.iter().any(|m| m == message),
                "{message:?} not in {leader:?}"
            );
        }
        assert!(event_messages(&env, "Late").await.is_empty());
        env.shutdown().await;
    });
}

#[tokio::test]
async fn a_manager_cut_off_from_the_server_stops_leading_before_its_lease_expires() {
    let env = TestEnv::start().await.unwrap();
    let leaders = Leaders::default();
    let a = manager(&env, elected_options("a")).await;
    a.add(Arc::new(leaders.runnable("a"))).unwrap();
    let (_stop_a, task_a) = spawn_start(&a);
    wait_for("a to lead", || leaders.has("a started")).await;
    let b = manager(&env, elected_options("b")).await;
    b.add(Arc::new(leaders.runnable("b"))).unwrap();
    let (stop_b, task_b) = spawn_start(&b);
    wait_for("b to be running", || b.caches_synced()).await;

    env.faults().pause();
    // a cannot renew: its leader work stops and its manager fails, while b cannot act yet.
    wait_for("a to stop leading", || leaders.has("a stopped")).await;
    let err = task_a.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::LeaderElectionLost), "{err:?}");
    assert!(!leaders.has("b started"));

    env.faults().resume();
    wait_for("b to take over", || leaders.has("b started")).await;
    assert_eq!(leaders.max.load(Ordering::SeqCst), 1);
    let log = leaders.log.lock().clone();
    let a_stopped = log.iter().position(|l| l == "a stopped").unwrap();
    let b_started = log.iter().position(|l| l == "b started").unwrap();
    assert!(a_stopped < b_started, "{log:?}");
    stop_b.cancel();
    task_b.await.unwrap().unwrap();
}

/// A plain HTTP/1.1 GET: the status code and the body.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn readyz_fails_until_the_caches_sync() {
    let env = TestEnv::start().await.unwrap();
    let loopback: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mgr = manager(&env, Options::default().health_probe_bind_address(loopback)).await;
    mgr.add_healthz_check("ping", rein_manager::healthz::ping())
        .unwrap();
    // With the API server paused, the Pod informer cannot list, so the caches cannot sync.
    mgr.cache().informer_for::<Pod>().await.unwrap();
    env.faults().pause();
    let (stop, task) = spawn_start(&mgr);
    wait_for("the probe server", || mgr.health_probe_address().is_some()).await;
    let addr = mgr.health_probe_address().unwrap();

    let (status, body) = http_get(addr, "/readyz?verbose").await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("[-]cache-sync failed"), "{body}");
    assert_eq!(http_get(addr, "/healthz").await.0, 200);

    env.faults().resume();
    wait_for("the caches to sync", || mgr.caches_synced()).await;
    let (status, body) = http_get(addr, "/readyz?verbose").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("[+]cache-sync ok"), "{body}");
    stop.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn metrics_show_the_leader_election_status() {
    let env = TestEnv::start().await.unwrap();
    let loopback: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut options = elected_options("metrics-a").metrics_bind_address(loopback);
    if let Some(le) = options.leader_election.as_mut() {
        le.id = "rein-manager-metrics".into();
    }
    let mgr = manager(&env, options).await;
    let (stop, task) = spawn_start(&mgr);
    mgr.elected().await;
    let addr = mgr.metrics_address().unwrap();
    let (status, body) = http_get(addr, "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        body.contains(r#"leader_election_master_status{name="rein-manager-metrics"} 1"#),
        "{body}"
    );
    stop.cancel();
    task.await.unwrap().unwrap();
}

/// A reconciler that takes a while: `started` when it begins, `finished` when it is done.
struct SlowReconciler {
    started: Arc<AtomicBool>,
    finished: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl rein_controller::Reconciler for SlowReconciler {
    type Error = BoxError;

    async fn reconcile(
        &self,
        _ctx: rein_controller::Context,
        _req: rein_controller::Request,
    ) -> Result<rein_controller::Action, BoxError> {
        self.started.store(true, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.finished.store(true, Ordering::SeqCst);
        Ok(rein_controller::Action::done())
    }
}

#[tokio::test]
async fn graceful_stop_lets_a_running_reconcile_finish() {
    let env = TestEnv::start().await.unwrap();
    let mgr = manager(&env, Options::default()).await;
    let (started, finished) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let controller = rein_controller::Controller::new(
        "manager-test-slow",
        SlowReconciler {
            started: started.clone(),
            finished: finished.clone(),
        },
        rein_controller::ControllerOptions::default(),
    )
    .unwrap();
    mgr.add(Arc::new(controller.clone())).unwrap();
    let (stop, task) = spawn_start(&mgr);
    mgr.elected().await;
    controller
        .queue()
        .add(rein_controller::Request::new("default", "slow"));
    wait_for("the reconcile to begin", || started.load(Ordering::SeqCst)).await;
    stop.cancel();
    task.await.unwrap().unwrap();
    assert!(
        finished.load(Ordering::SeqCst),
        "the manager returned before the running reconcile finished"
    );
}

#[tokio::test]
async fn release_on_cancel_hands_over_after_leader_work_stopped() {
    let env = TestEnv::start().await.unwrap();
    let leaders = Leaders::default();
    // A 60 s lease: b can only take over within the test's wait because a released it.
    let releasing = |identity: &str| {
        let mut options = elected_options(identity);
        if let Some(le) = options.leader_election.as_mut() {
            le.id = "rein-manager-release".into();
            le.config.lease_duration = Duration::from_secs(60);
            le.config.release_on_cancel = true;
        }
        options
    };
    let a = manager(&env, releasing("a")).await;
    a.add(Arc::new(leaders.runnable("a"))).unwrap();
    let (stop_a, task_a) = spawn_start(&a);
    wait_for("a to lead", || leaders.has("a started")).await;
    let b = manager(&env, releasing("b")).await;
    b.add(Arc::new(leaders.runnable("b"))).unwrap();
    let (stop_b, task_b) = spawn_start(&b);
    wait_for("b to be running", || b.caches_synced()).await;

    stop_a.cancel();
    task_a.await.unwrap().unwrap();
    wait_for("b to take over", || leaders.has("b started")).await;
    let log = leaders.log.lock().clone();
    assert_eq!(log, ["a started", "a stopped", "b started"]);
    stop_b.cancel();
    task_b.await.unwrap().unwrap();
}

/// A request the server never answers fails once the manager's request timeout passes (here
/// one second), through the manager's client, instead of waiting forever; the next request
/// goes through. The server shows the held request until the client gives up.
#[tokio::test]
async fn a_request_the_server_never_answers_fails_at_the_request_timeout() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use rein_client::timeout::RequestTimeouts;
    use rein_scheme::ObjectKey;
    use rein_testenv::{Fault, RequestStage};

    let env = TestEnv::start().await.expect("testenv");
    let limit = Duration::from_secs(1);
    let mgr = manager(
        &env,
        Options::default().request_timeouts(RequestTimeouts {
            request: Some(limit),
            ..RequestTimeouts::default()
        }),
    )
    .await;
    let path = "/api/v1/namespaces/default/configmaps/held";
    env.faults().inject(Fault::hang(1).matching(path));
    let key = ObjectKey::new("default", "held");
    let reader = mgr.api_reader();
    let started = std::time::Instant::now();
    let held = tokio::spawn(async move { reader.get::<ConfigMap>(&key).await });
    wait_for("the server to hold the request", || {
        env.requests_in_flight()
            .iter()
            .any(|r| r.path == path && r.stage == RequestStage::Hung)
    })
    .await;
    let err = held.await.unwrap().expect_err("a held request fails");
    assert!(
        started.elapsed() >= limit,
        "gave up early: {:?}",
        started.elapsed()
    );
    let mut chain = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        chain.push_str(&format!(": {s}"));
        source = s.source();
    }
    assert!(
        chain.contains(&format!(
            "the request to {path} timed out after 1s (no response)"
        )),
        "{chain}"
    );
    // The hang was used up: the same read now reaches the server (the object does not exist).
    let again = mgr
        .api_reader()
        .get::<ConfigMap>(&ObjectKey::new("default", "held"))
        .await
        .expect_err("not found");
    assert!(again.is_not_found(), "{again}");
}

/// Throttling is retried as client-go retries it: only when the server sends `Retry-After`,
/// after exactly that long, at most ten times; then the 429 reaches the caller. (kube-client's
/// default retry backs off exponentially to 1,000 s over 15 retries, so a server whose 429s
/// outlast the traffic held a request for minutes: the soak's hang, docs/reliability.md.)
#[tokio::test]
async fn throttling_is_retried_ten_times_as_the_server_asks_then_returned() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use rein_scheme::ObjectKey;
    use rein_testenv::Fault;

    let env = TestEnv::start().await.expect("testenv");
    let mgr = manager(&env, Options::default()).await;
    let path = "/api/v1/namespaces/default/configmaps/throttled";
    env.faults()
        .inject(Fault::too_many_requests(1000, 0).matching(path));
    let err = mgr
        .api_reader()
        .get::<ConfigMap>(&ObjectKey::new("default", "throttled"))
        .await
        .expect_err("every answer is a 429");
    assert!(err.to_string().contains("TooManyRequests (429)"), "{err}");
    let sent = env.requests().iter().filter(|r| r.path == path).count();
    assert_eq!(sent, 11, "one request and ten retries");
    assert_eq!(env.faults().pending(), 1000 - 11);

    // A 500 without Retry-After is returned at once.
    env.faults().clear();
    env.faults().inject(Fault::server_error(1).matching(path));
    let err = mgr
        .api_reader()
        .get::<ConfigMap>(&ObjectKey::new("default", "throttled"))
        .await
        .expect_err("a 500");
    assert!(err.to_string().contains("ServerError (500)"), "{err}");
    assert_eq!(env.requests().iter().filter(|r| r.path == path).count(), 12);
}

/// A cached read of a kind whose informer cannot sync (the server holds its list) fails after
/// the cache's `informer_sync_timeout` with a typed error, instead of waiting for ever.
#[tokio::test]
async fn a_cached_read_fails_when_its_informer_cannot_sync_in_time() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use rein_client::Error as ClientError;
    use rein_client::cache::CacheOptions;
    use rein_scheme::ObjectKey;
    use rein_testenv::Fault;

    let env = TestEnv::start().await.expect("testenv");
    let after = Duration::from_secs(1);
    let mgr = manager(
        &env,
        Options::default().cache(CacheOptions {
            informer_sync_timeout: Some(after),
            ..CacheOptions::default()
        }),
    )
    .await;
    env.faults()
        .inject(Fault::hang(1000).matching("/api/v1/configmaps"));
    let (stop, task) = spawn_start(&mgr);
    mgr.elected().await;
    let started = std::time::Instant::now();
    let err = mgr
        .client()
        .get::<ConfigMap>(&ObjectKey::new("default", "any"))
        .await
        .expect_err("the informer cannot sync");
    assert!(started.elapsed() >= after);
    match &err {
        ClientError::CacheSyncTimeout {
            kind,
            after: waited,
        } => {
            assert_eq!(kind, "v1, Kind=ConfigMap");
            assert_eq!(*waited, after);
        }
        other => panic!("expected CacheSyncTimeout, got {other}"),
    }
    assert_eq!(
        err.to_string(),
        "failed waiting for the v1, Kind=ConfigMap informer to sync: not synced after 1s"
    );
    stop.cancel();
    task.await.unwrap().unwrap();
}

/// `Options::webhook` serves once the manager starts (it used to bind a port nothing served):
/// `/readyz` includes a `webhook` check that passes once it accepts connections, and a
/// defaulter registered on `Manager::webhook_server` answers an AdmissionReview over TLS.
#[tokio::test]
async fn the_webhook_server_of_the_options_serves_once_the_manager_starts() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use rein_manager::webhook::{
        AdmissionClient, AdmissionError, CustomDefaulter, GeneratedCertificates, Operation,
        WebhookServerOptions, review_request,
    };

    struct Labeler;

    #[async_trait::async_trait]
    impl CustomDefaulter<ConfigMap> for Labeler {
        async fn default(&self, cm: &mut ConfigMap) -> Result<(), AdmissionError> {
            cm.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert("defaulted".into(), "yes".into());
            Ok(())
        }
    }

    let env = TestEnv::start().await.expect("testenv");
    let certs = GeneratedCertificates::generate(&["localhost", "127.0.0.1"]).expect("certs");
    let options = Options::default()
        .health_probe_bind_address("127.0.0.1:0".parse().unwrap())
        .webhook(WebhookServerOptions {
            bind_address: "127.0.0.1:0".parse().unwrap(),
            cert: certs.cert_source(),
            ..WebhookServerOptions::default()
        });
    let mgr = manager(&env, options).await;
    let server = mgr
        .webhook_server()
        .expect("the webhook server of the options");
    let path = server
        .register_defaulter::<ConfigMap, _>(Labeler)
        .expect("register");
    let (stop, task) = spawn_start(&mgr);
    let mut probes = None;
    wait_for("the health probe server", || {
        probes = mgr.health_probe_address();
        probes.is_some()
    })
    .await;
    let probes = probes.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (code, body) = http_get(probes, "/readyz?verbose").await;
        if code == 200 {
            assert!(body.contains("[+]webhook ok"), "{body}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never ready: {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let client =
        AdmissionClient::new(server.local_addr(), "localhost", &certs.ca_pem).expect("client");
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "c", "namespace": "default" }
    }))
    .unwrap();
    let review = review_request(Operation::Create, Some(&cm), None).expect("review");
    let resp = client.review(&path, &review).await.expect("answered");
    assert!(resp.allowed);
    assert!(resp.patch.is_some(), "the defaulter's patch");
    stop.cancel();
    task.await.unwrap().unwrap();
}

/// A manager whose caches cannot sync (the server holds the informer's list) fails `start`
/// after `cache_sync_timeout` instead of sitting unready for ever.
#[tokio::test]
async fn start_fails_when_the_caches_do_not_sync_in_time() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use rein_testenv::Fault;

    let env = TestEnv::start().await.expect("testenv");
    let limit = Duration::from_secs(1);
    let mgr = manager(&env, Options::default().cache_sync_timeout(Some(limit))).await;
    // An informer the cache must sync before anything starts.
    mgr.cache()
        .informer_for::<ConfigMap>()
        .await
        .expect("created before start");
    env.faults()
        .inject(Fault::hang(1000).matching("/api/v1/configmaps"));
    let started = std::time::Instant::now();
    let err = mgr
        .start(CancellationToken::new())
        .await
        .expect_err("the caches cannot sync");
    assert!(
        matches!(err, Error::CacheSyncTimeout(d) if d == limit),
        "{err:?}"
    );
    assert!(started.elapsed() >= limit);
    assert_eq!(
        err.to_string(),
        "waiting for the caches to sync: not synced after 1s"
    );
}

/// `Options::rate_limit` puts client-go's QPS/burst limiter on the manager's client: with a
/// burst of 1 at 20 QPS, eleven reads cannot take less than half a second.
#[tokio::test]
async fn the_rate_limit_option_paces_the_managers_requests() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use rein_client::limiter::RateLimitConfig;
    use rein_scheme::ObjectKey;

    let env = TestEnv::start().await.expect("testenv");
    let mgr = manager(
        &env,
        Options::default().rate_limit(RateLimitConfig::new(20.0, 1)),
    )
    .await;
    let path = "/api/v1/namespaces/default/configmaps/paced";
    let started = std::time::Instant::now();
    for _ in 0..11 {
        let err = mgr
            .api_reader()
            .get::<ConfigMap>(&ObjectKey::new("default", "paced"))
            .await
            .expect_err("not found");
        assert!(err.is_not_found(), "{err}");
    }
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(500), "not paced: {took:?}");
    assert_eq!(env.requests().iter().filter(|r| r.path == path).count(), 11);
}

/// A manager built on a kube-client the user made sends every request through it, with the
/// user's own tower layers.
#[tokio::test]
async fn a_manager_uses_the_kube_client_it_is_given() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use rein_scheme::ObjectKey;

    let env = TestEnv::start().await.expect("testenv");
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let layer = tower::util::MapRequestLayer::new(move |req: http::Request<_>| {
        log.lock().push(req.uri().path().to_owned());
        req
    });
    let kube = kube_client::client::ClientBuilder::try_from(env.config())
        .expect("client builder")
        .with_layer(&layer)
        .build();
    let mgr = Manager::builder(env.config())
        .kube_client(kube)
        .build()
        .await
        .expect("manager builds");
    let path = "/api/v1/namespaces/default/configmaps/mine";
    let err = mgr
        .api_reader()
        .get::<ConfigMap>(&ObjectKey::new("default", "mine"))
        .await
        .expect_err("not found");
    assert!(err.is_not_found(), "{err}");
    assert!(seen.lock().iter().any(|p| p == path), "{:?}", seen.lock());

    // The cache lists through it too.
    let (stop, running) = spawn_start(&mgr);
    mgr.elected().await;
    mgr.client()
        .list::<ConfigMap>(&rein_client::ListOptions::default().namespace("default"))
        .await
        .expect("a cached list");
    assert!(
        seen.lock().iter().any(|p| p == "/api/v1/configmaps"),
        "{:?}",
        seen.lock()
    );
    stop.cancel();
    running.await.expect("manager task").expect("manager stops");
}

#[tokio::test]
async fn a_manager_with_namespaces_watches_each_and_caches_nothing_outside() {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use rein_client::ListOptions;
    use rein_scheme::ObjectKey;

    let env = TestEnv::start().await.unwrap();
    for ns in ["blue", "green", "red"] {
        Api::<Namespace>::all(env.client())
            .create(
                &PostParams::default(),
                &serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).unwrap(),
            )
            .await
            .unwrap();
        Api::<ConfigMap>::namespaced(env.client(), ns)
            .create(
                &PostParams::default(),
                &serde_json::from_value(serde_json::json!({
                    "metadata": {"name": "cm", "labels": {"test": "namespaces"}}
                }))
                .unwrap(),
            )
            .await
            .unwrap();
    }
    let mgr = manager(&env, Options::default().namespaces(["blue", "green"])).await;
    mgr.cache().informer_for::<ConfigMap>().await.unwrap();
    let (stop, task) = spawn_start(&mgr);
    assert!(mgr.cache().wait_for_cache_sync().await);

    let client = mgr.client();
    let listed = client
        .list::<ConfigMap>(&ListOptions::default().matching_labels([("test", "namespaces")]))
        .await
        .unwrap();
    let mut namespaces: Vec<_> = listed
        .items
        .iter()
        .filter_map(|c| c.metadata.namespace.clone())
        .collect();
    namespaces.sort();
    assert_eq!(namespaces, ["blue", "green"]);
    assert!(matches!(
        client.get::<ConfigMap>(&ObjectKey::new("red", "cm")).await,
        Err(rein_client::Error::NamespaceNotCached { .. })
    ));
    let informer = mgr.cache().existing_informer_for::<ConfigMap>().unwrap();
    assert_eq!(informer.reflector_count(), 2);
    assert!(
        informer
            .indexer()
            .list()
            .iter()
            .all(|c| c.metadata.namespace.as_deref() != Some("red")),
        "nothing outside the set is cached"
    );
    let requests = env.requests();
    for ns in ["blue", "green"] {
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        assert!(
            requests
                .iter()
                .any(|q| q.path == path && q.has_query("watch", "true")),
            "{ns} is watched"
        );
    }
    assert!(!requests.iter().any(|q| q.method == "GET"
        && (q.path == "/api/v1/namespaces/red/configmaps" || q.path == "/api/v1/configmaps")));
    stop.cancel();
    task.await.unwrap().unwrap();
}

/// Controller names are unique per manager: one manager per test (several tests at once)
/// builds the same controllers in each, while one manager refuses a second controller of a
/// name it has.
#[tokio::test]
async fn controller_names_are_unique_per_manager() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use rein_controller::{Action, BuildError, ControllerManagedBy, reconciler_fn};

    let env = TestEnv::start().await.expect("testenv");
    let first = manager(&env, Options::default()).await;
    let second = manager(&env, Options::default()).await;
    let noop = || reconciler_fn(|_, _| async { Ok::<_, BoxError>(Action::done()) });
    for mgr in [&first, &second] {
        ControllerManagedBy::new(mgr)
            .named("abc")
            .for_::<ConfigMap>()
            .complete(noop())
            .expect("each manager has its own names");
    }
    let again = ControllerManagedBy::new(&first)
        .named("abc")
        .for_::<ConfigMap>()
        .complete(noop());
    assert!(
        matches!(
            again,
            Err(BuildError::Controller(
                rein_controller::Error::DuplicateName { .. }
            ))
        ),
        "{again:?}"
    );
}

/// The probe and metrics servers are bound by `build`: their addresses are known before
/// `start` (a test or a sidecar can be told where to look), and a taken port fails `build`.
#[tokio::test]
async fn servers_are_bound_when_build_returns() {
    use rein_manager::healthz::HealthProbeOptions;
    use rein_manager::metrics::MetricsServerOptions;

    let env = TestEnv::start().await.expect("testenv");
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let mgr = manager(
        &env,
        Options {
            health_probes: Some(HealthProbeOptions {
                bind_address: loopback,
                ..HealthProbeOptions::default()
            }),
            metrics: Some(MetricsServerOptions {
                bind_address: loopback,
                ..MetricsServerOptions::default()
            }),
            ..Options::default()
        },
    )
    .await;
    let probes = mgr.health_probe_address().expect("known after build");
    assert!(mgr.metrics_address().is_some(), "known after build");
    assert_ne!(probes.port(), 0);

    let taken = Manager::builder(env.config())
        .options(Options {
            health_probes: Some(HealthProbeOptions {
                bind_address: probes,
                ..HealthProbeOptions::default()
            }),
            ..Options::default()
        })
        .build()
        .await;
    assert!(
        matches!(taken, Err(Error::Server { .. })),
        "a taken port fails build: {:?}",
        taken.err()
    );

    let (stop, task) = spawn_start(&mgr);
    let ready = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(mut s) = tokio::net::TcpStream::connect(probes).await {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let _ = s
                    .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                    .await;
                let mut answer = String::new();
                let _ = s.read_to_string(&mut answer).await;
                if answer.starts_with("HTTP/1.1 200") {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(ready.is_ok(), "the probe server serves once started");
    stop.cancel();
    task.await.expect("joins").expect("stops cleanly");
}
