//! Active-active sharding against rein-testenv: several managers in one process, each with its
//! own client, identity and tokio runtime (so killing a replica drops every task it had, as a
//! killed process would), share the ConfigMaps of a namespace through a ring.
//!
//! A recorder notes the start and finish of every reconcile on the real clock; the checks
//! (`Recorder::check`) are that no key was ever reconciled by two replicas at once, and that no
//! key went unreconciled for longer than the Lease duration plus the hand-over allowance plus
//! its requeue period. The clock is real (rein-testenv answers on its own runtime thread and a
//! paused clock would skip ahead while requests are in flight); conditions are polled with
//! deadlines, and timings are only bounded with generous allowances.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube_client::Api;
use kube_client::api::{ListParams, PostParams};
use kube_client::core::PartialObjectMeta;
use rein::controller::{
    Action, BuildError, Context, ControllerManagedBy, ControllerOptions, Reconciler, Request,
};
use rein::manager::leaderelection::LeaderElectionConfig;
use rein::manager::sharding::ShardingOptions;
use rein::manager::{LeaderElectionOptions, Manager, Options};
use rein_testenv::TestEnv;
use rein_tests::sharded::{
    DRAIN_LABEL, LEASE_DURATION, NS, REQUEUE, RING, Recorder, Replica, SHARD_LABEL, Step, Work,
    lease,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How many ConfigMaps the ring shares.
const KEYS: usize = 60;
/// The hand-over allowance on top of the Lease duration: coordinator passes, watch delivery
/// and a loaded machine.
const HANDOVER_ALLOWANCE: Duration = Duration::from_secs(8);
/// How long the outage test holds every request: twice the renew deadline.
const OUTAGE: Duration = Duration::from_secs(4);
/// How long any awaited condition may take.
const PATIENCE: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// The server's view.

/// The shard each `cm-*` ConfigMap is assigned to (`None`: unassigned or draining).
async fn assignments(env: &TestEnv) -> BTreeMap<String, Option<String>> {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let list = api
        .list(&ListParams::default())
        .await
        .expect("list configmaps");
    list.items
        .iter()
        .filter(|cm| {
            cm.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("cm-"))
        })
        .map(|cm| {
            let labels = cm.metadata.labels.clone().unwrap_or_default();
            let shard = labels
                .get(SHARD_LABEL)
                .filter(|_| !labels.contains_key(DRAIN_LABEL))
                .cloned();
            (
                format!("{NS}/{}", cm.metadata.name.clone().unwrap_or_default()),
                shard,
            )
        })
        .collect()
}

/// Whether every Secret carries its owner ConfigMap's shard label.
async fn secrets_follow_owners(env: &TestEnv) -> bool {
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let secrets: Api<Secret> = Api::namespaced(env.client(), NS);
    let owners: BTreeMap<String, Option<String>> = cms
        .list(&ListParams::default())
        .await
        .expect("list configmaps")
        .items
        .into_iter()
        .map(|cm| {
            let shard = cm.metadata.labels.and_then(|l| l.get(SHARD_LABEL).cloned());
            (cm.metadata.uid.unwrap_or_default(), shard)
        })
        .collect();
    let list = secrets
        .list(&ListParams::default())
        .await
        .expect("list secrets");
    list.items
        .iter()
        .filter(|s| {
            s.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("sec-"))
        })
        .all(|s| {
            let owner = s.metadata.owner_references.as_ref().and_then(|r| r.first());
            let want = owner.and_then(|o| owners.get(&o.uid).cloned().flatten());
            let have = s
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SHARD_LABEL).cloned());
            want.is_some() && want == have
        })
}

/// Polls until every key is assigned to a member of `members`, every member owns some keys,
/// secrets follow their owners, and every key was reconciled by its owner since; returns how
/// many keys each member owns.
async fn wait_balanced(
    env: &TestEnv,
    recorder: &Recorder,
    members: &[&str],
    what: &str,
) -> BTreeMap<String, usize> {
    wait_spread(env, recorder, members, true, what).await
}

/// [`wait_balanced`], checking the Secrets' labels only if `secrets_follow` (their ring has
/// them follow their owners).
async fn wait_spread(
    env: &TestEnv,
    recorder: &Recorder,
    members: &[&str],
    secrets_follow: bool,
    what: &str,
) -> BTreeMap<String, usize> {
    let deadline = Instant::now() + PATIENCE;
    let members: BTreeSet<&str> = members.iter().copied().collect();
    loop {
        let since = Instant::now();
        let assigned = assignments(env).await;
        let counts =
            assigned
                .values()
                .flatten()
                .fold(BTreeMap::<String, usize>::new(), |mut m, s| {
                    *m.entry(s.clone()).or_default() += 1;
                    m
                });
        let settled = assigned.len() == KEYS
            && assigned
                .values()
                .all(|s| s.as_deref().is_some_and(|s| members.contains(s)))
            && counts.len() == members.len();
        if settled && (!secrets_follow || secrets_follow_owners(env).await) {
            // The owners reconcile their keys (within a few requeue periods).
            let until = Instant::now() + PATIENCE;
            loop {
                let all = assigned.iter().all(|(key, shard)| {
                    recorder.reconciled_since(shard.as_deref().unwrap_or_default(), key, since)
                });
                if all {
                    return counts;
                }
                assert!(
                    Instant::now() < until,
                    "{what}: owners did not reconcile their keys"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not balanced over {members:?} after {PATIENCE:?}: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Each member owns between half and twice its fair share.
fn assert_spread(counts: &BTreeMap<String, usize>, what: &str) {
    let fair = KEYS as f64 / counts.len() as f64;
    for (shard, n) in counts {
        let n = *n as f64;
        assert!(
            n >= fair * 0.5 && n <= fair * 2.0,
            "{what}: {shard} owns {n} keys, fair share {fair:.1}: {counts:?}"
        );
    }
    println!("{what}: {counts:?}");
}

async fn create_objects(env: &TestEnv) {
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let secrets: Api<Secret> = Api::namespaced(env.client(), NS);
    for i in 0..KEYS {
        let cm = cms
            .create(
                &PostParams::default(),
                &ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(format!("cm-{i}")),
                        ..ObjectMeta::default()
                    },
                    ..ConfigMap::default()
                },
            )
            .await
            .expect("create configmap");
        if i % 6 == 0 {
            let owner = OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: format!("cm-{i}"),
                uid: cm.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            };
            secrets
                .create(
                    &PostParams::default(),
                    &Secret {
                        metadata: ObjectMeta {
                            name: Some(format!("sec-{i}")),
                            owner_references: Some(vec![owner]),
                            ..ObjectMeta::default()
                        },
                        ..Secret::default()
                    },
                )
                .await
                .expect("create secret");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The tests.

/// Three replicas share the keys; a fourth joins (keys move to it through the drain
/// handshake); one stops gracefully (its Lease is released, its keys move at once); one is
/// killed (its keys move once its Lease expired). Throughout, no key is reconciled by two
/// replicas at once, and owned Secrets follow their ConfigMap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_join_leave_and_die_without_overlap() {
    let env = TestEnv::start().await.expect("testenv");
    create_objects(&env).await;
    let recorder = Recorder::default();

    let mut replicas: BTreeMap<&str, Replica> = ["r0", "r1", "r2"]
        .into_iter()
        .map(|id| (id, Replica::start(&env, id, &recorder, Work::Sleep)))
        .collect();
    let counts = wait_balanced(&env, &recorder, &["r0", "r1", "r2"], "three replicas").await;
    assert_spread(&counts, "three replicas");

    replicas.insert("r3", Replica::start(&env, "r3", &recorder, Work::Sleep));
    let counts = wait_balanced(&env, &recorder, &["r0", "r1", "r2", "r3"], "r3 joined").await;
    assert_spread(&counts, "r3 joined");

    let restarts = replicas.remove("r1").expect("r1").stop().await;
    println!("r1 restarted {restarts} times before it stopped");
    let counts = wait_balanced(&env, &recorder, &["r0", "r2", "r3"], "r1 stopped").await;
    assert_spread(&counts, "r1 stopped");

    replicas.remove("r2").expect("r2").kill();
    let counts = wait_balanced(&env, &recorder, &["r0", "r3"], "r2 killed").await;
    assert_spread(&counts, "r2 killed");

    let longest = recorder
        .check(LEASE_DURATION + HANDOVER_ALLOWANCE + REQUEUE)
        .unwrap_or_else(|problem| panic!("{problem}"));
    println!("longest gap between reconciles of one key: {longest:?}");
    for (_, replica) in replicas {
        replica.stop().await;
    }
}

/// The API server stops answering for longer than the renew deadline: every replica loses
/// its Lease and stops reconciling; restarted (as Pods would be), the ring re-forms and every
/// key is owned and reconciled again, never by two replicas at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_api_server_rebalances_without_overlap() {
    let env = TestEnv::start().await.expect("testenv");
    create_objects(&env).await;
    let recorder = Recorder::default();
    let replicas: Vec<Replica> = ["a", "b", "c"]
        .into_iter()
        .map(|id| Replica::start(&env, id, &recorder, Work::Sleep))
        .collect();
    wait_balanced(&env, &recorder, &["a", "b", "c"], "before the outage").await;

    // Hold every request for twice the renew deadline.
    env.faults().pause();
    tokio::time::sleep(OUTAGE).await;
    env.faults().resume();

    let counts = wait_balanced(&env, &recorder, &["a", "b", "c"], "after the outage").await;
    assert_spread(&counts, "after the outage");
    // Unreconciled for the outage itself, plus the Lease and the hand-over.
    let longest = recorder
        .check(OUTAGE + LEASE_DURATION + HANDOVER_ALLOWANCE + REQUEUE)
        .unwrap_or_else(|problem| panic!("{problem}"));
    println!("longest gap between reconciles of one key: {longest:?}");
    let mut restarts = 0;
    for replica in replicas {
        let id = replica.id.clone();
        let n = replica.stop().await;
        println!("{id} restarted {n} times");
        restarts += n;
    }
    assert!(
        restarts >= 1,
        "some replica must have lost its lease in the outage"
    );
}

/// `GET path` over HTTP/1.0; the status line and body.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    response
}

/// The `/readyz` of a sharded manager passes its `shard` check once the replica joined the
/// ring and fails after it left; `/metrics` carries the per-shard series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_and_metrics_reflect_the_ring() {
    let env = TestEnv::start().await.expect("testenv");
    create_objects(&env).await;
    let sharding = ring_of("probed", "solo", lease());
    let loopback: std::net::SocketAddr = "127.0.0.1:0".parse().expect("address");
    let options = Options::default()
        .sharding(sharding)
        .health_probe_bind_address(loopback)
        .metrics_bind_address(loopback);
    let mgr = manager(&env, options).await;
    let reconciler = no_op();
    ControllerManagedBy::new(&mgr)
        .for_::<ConfigMap>()
        .named("probed-configmaps")
        .with_options(ControllerOptions {
            need_leader_election: false,
            ..ControllerOptions::default()
        })
        .complete(mgr.sharded::<ConfigMap, _>(reconciler).expect("sharded"))
        .expect("controller");
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    let deadline = Instant::now() + PATIENCE;
    let metrics = loop {
        let member = mgr.sharding().is_some_and(|s| s.is_member());
        if let (true, Some(probes), Some(metrics)) =
            (member, mgr.health_probe_address(), mgr.metrics_address())
        {
            let ready = http_get(probes, "/readyz/shard").await;
            let scraped = http_get(metrics, "/metrics").await;
            let owned = "rein_shard_keys_owned{ring=\"probed\",shard=\"solo\",kind=\"ConfigMap\"}";
            // All keys assigned to the only shard and seen by its cache.
            let all_owned = scraped
                .lines()
                .find(|l| l.starts_with(owned))
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|v| v.parse::<usize>().ok())
                .is_some_and(|n| n >= KEYS);
            // The coordinator counts an assignment once its write returned, which may come
            // after the watch event that put the object in the shard's cache.
            let counted = scraped
                .contains("rein_shard_assignments_total{ring=\"probed\",kind=\"ConfigMap\"}");
            if ready.contains(" 200 ") && all_owned && counted {
                break scraped;
            }
        }
        assert!(Instant::now() < deadline, "the replica never became ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for series in [
        "rein_shard_member{ring=\"probed\",shard=\"solo\"} 1",
        "rein_shard_ring_members{ring=\"probed\"} 1",
        "rein_shard_assignments_total{ring=\"probed\",kind=\"ConfigMap\"}",
    ] {
        assert!(
            metrics.contains(series),
            "{series} missing from:\n{metrics}"
        );
    }
    stop.cancel();
    running.await.expect("manager task").expect("manager");
    assert!(
        !mgr.sharding().expect("sharding").is_member(),
        "a stopped replica left the ring"
    );
}

// ---------------------------------------------------------------------------------------------
// A network partition for one replica.

/// A TCP proxy in front of the API server. `cut` turns it into a black hole (open connections
/// and new ones hang silently, as in a network partition); `heal` drops the held connections
/// and forwards again.
struct Proxy {
    addr: std::net::SocketAddr,
    cut: watch::Sender<bool>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(env: &TestEnv) -> Proxy {
        let upstream: std::net::SocketAddr = env
            .base_url()
            .trim_start_matches("http://")
            .parse()
            .expect("testenv serves plain HTTP on an IP address");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let cut = watch::Sender::new(false);
        let cut_rx = cut.subscribe();
        let accept = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(forward(conn, upstream, cut_rx.clone()));
            }
        });
        Proxy { addr, cut, accept }
    }

    fn config(&self, env: &TestEnv) -> kube_client::Config {
        let mut config = env.config();
        config.cluster_url = format!("http://{}", self.addr).parse().expect("proxy url");
        config
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut.send_replace(false);
    }
}

async fn forward(
    mut conn: TcpStream,
    upstream: std::net::SocketAddr,
    mut cut: watch::Receiver<bool>,
) {
    if !*cut.borrow_and_update() {
        let Ok(mut server) = TcpStream::connect(upstream).await else {
            return;
        };
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut conn, &mut server) => return,
            _ = cut.wait_for(|cut| *cut) => {}
        }
    }
    // Partitioned: hold the connection without a word until healed, then drop it.
    let _ = cut.wait_for(|cut| !*cut).await;
}

/// One replica is cut off from the API server for twice the Lease duration. Its cache keeps
/// its keys and its reconciler needs no server, so only the renew deadline stops it: it must
/// stop before the others take its keys over (no overlap), its keys must move to the others,
/// and once healed it rejoins and gets its share back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_replica_stops_before_its_keys_move() {
    let env = TestEnv::start().await.expect("testenv");
    create_objects(&env).await;
    let recorder = Recorder::default();
    let proxy = Proxy::start(&env).await;
    let replicas = vec![
        Replica::start(&env, "p0", &recorder, Work::Sleep),
        Replica::start_with(proxy.config(&env), "p1", &recorder, Work::Sleep),
        Replica::start(&env, "p2", &recorder, Work::Sleep),
    ];
    wait_balanced(&env, &recorder, &["p0", "p1", "p2"], "before the partition").await;

    proxy.cut.send_replace(true);
    let counts = wait_balanced(&env, &recorder, &["p0", "p2"], "p1 partitioned").await;
    assert_spread(&counts, "p1 partitioned");
    proxy.cut.send_replace(false);
    let counts = wait_balanced(&env, &recorder, &["p0", "p1", "p2"], "p1 healed").await;
    assert_spread(&counts, "p1 healed");

    let longest = recorder
        .check(LEASE_DURATION + HANDOVER_ALLOWANCE + REQUEUE)
        .unwrap_or_else(|problem| panic!("{problem}"));
    println!("longest gap between reconciles of one key: {longest:?}");
    let mut restarts = Vec::new();
    for replica in replicas {
        let id = replica.id.clone();
        restarts.push((id, replica.stop().await));
    }
    println!("restarts: {restarts:?}");
    assert!(
        restarts.iter().any(|(id, n)| id == "p1" && *n >= 1),
        "p1 must have lost its lease: {restarts:?}"
    );
}

/// The sharded soak's short run: replicas killed, stopped and replaced and the API server held
/// while ConfigMaps churn; everything converges, without overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_soak_short() {
    let config = rein_tests::sharded::soak::ShardedSoakConfig::short(7);
    match rein_tests::sharded::soak::run(&config).await {
        Ok(report) => println!("{report}"),
        Err(problem) => panic!("sharded soak failed: {problem}"),
    }
}

/// The labels of ConfigMap `name`.
async fn labels_of(env: &TestEnv, name: &str) -> BTreeMap<String, String> {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let cm = api.get(name).await.expect("get configmap");
    cm.metadata.labels.unwrap_or_default()
}

/// The drain handshake: a key that moves while its old shard reconciles it stays with the old
/// shard (drain label set, no new owner) for as long as that reconcile runs, and goes to the
/// new shard only after it finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moving_key_waits_for_the_reconcile_in_flight() {
    use rein::manager::sharding::{assign, hash_key};

    let env = TestEnv::start().await.expect("testenv");
    create_objects(&env).await;
    let recorder = Recorder::default();
    // A key that moves from "a" to "b" when b joins.
    let gvk = rein::scheme::GroupVersionKind::new("", "v1", "ConfigMap");
    let name = (0..KEYS)
        .map(|i| format!("cm-{i}"))
        .find(|n| {
            let key = rein::scheme::ObjectKey::new(NS, n.as_str());
            assign(&hash_key(&gvk, &key), ["a", "b"]) == Some("b")
        })
        .expect("some key moves to b");
    let key = format!("{NS}/{name}");

    let (open, gate) = watch::channel(true);
    let a = Replica::start(
        &env,
        "a",
        &recorder,
        Work::Gated {
            key: key.clone(),
            open: gate,
        },
    );
    wait_balanced(&env, &recorder, &["a"], "a alone").await;
    // Hold a's next reconcile of the key in flight: one that started after the gate closed
    // (a reconcile already past the gate may still be in flight for its last 20 ms).
    open.send_replace(false);
    let closed = Instant::now();
    let deadline = Instant::now() + PATIENCE;
    while !(recorder.reconciled_since("a", &key, closed) && recorder.in_flight("a", &key)) {
        assert!(Instant::now() < deadline, "a never reconciled {key} again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let b = Replica::start(&env, "b", &recorder, Work::Sleep);
    // The coordinator asks a to drain the key ...
    let deadline = Instant::now() + PATIENCE;
    while !labels_of(&env, &name).await.contains_key(DRAIN_LABEL) {
        assert!(Instant::now() < deadline, "{key} was never asked to drain");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // ... and while a's reconcile runs, the key stays a's: over many coordinator passes
    // (retry period 200 ms), neither a nor the coordinator lets go of it. (Should a lose its
    // Lease on a loaded machine, its manager stops, the reconcile ends and the key may move:
    // a sample counts only if the reconcile was in flight before and after it.)
    let mut held = 0;
    for _ in 0..15 {
        let before = recorder.in_flight("a", &key);
        let labels = labels_of(&env, &name).await;
        if before && recorder.in_flight("a", &key) {
            assert_eq!(labels.get(SHARD_LABEL).map(String::as_str), Some("a"));
            assert!(labels.contains_key(DRAIN_LABEL));
            held += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    open.send_replace(true);
    let counts = wait_balanced(&env, &recorder, &["a", "b"], "after the hand-over").await;
    assert_spread(&counts, "after the hand-over");
    let labels = labels_of(&env, &name).await;
    assert_eq!(labels.get(SHARD_LABEL).map(String::as_str), Some("b"));
    recorder
        .check(LEASE_DURATION + HANDOVER_ALLOWANCE + REQUEUE + Duration::from_secs(3))
        .unwrap_or_else(|problem| panic!("{problem}"));
    let restarts = a.stop().await;
    b.stop().await;
    assert!(
        held == 15 || restarts > 0,
        "a kept its lease but its reconcile of {key} was in flight in only {held} of 15 samples"
    );
}

// ---------------------------------------------------------------------------------------------
// Sharded and singleton controllers in one manager; warm-up; the coordinator's cache.

/// The ring `ring` over the ConfigMaps of `NS`, joined as shard `id` with `lease`.
fn ring_of(ring: &str, id: &str, lease: LeaderElectionConfig) -> ShardingOptions {
    ShardingOptions::new(ring)
        .namespace(NS)
        .shard_id(id)
        .lease(lease)
        .kind::<ConfigMap>()
}

/// A manager with `options`.
async fn manager(env: &TestEnv, options: Options) -> Manager {
    Manager::builder(env.config())
        .options(options)
        .build()
        .await
        .expect("manager")
}

/// A reconciler that does nothing.
fn no_op() -> impl Reconciler {
    rein::controller::reconciler_fn(|_ctx: Context, _req: Request| async {
        Ok::<_, std::convert::Infallible>(Action::done())
    })
}

/// Lease timing for the tests below, which kill no replica: a long duration and renew
/// deadline so that a loaded machine does not cost a replica its Leases mid-test (joins,
/// elections of a free Lease and releases do not wait for the duration).
fn steady_lease() -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_secs(20),
        renew_deadline: Duration::from_secs(15),
        retry_period: Duration::from_millis(200),
        ..LeaderElectionConfig::default()
    }
}

/// What each replica's singleton reconciled: replica → Secret names.
type Singles = Arc<Mutex<BTreeMap<String, BTreeSet<String>>>>;

/// A replica of the mixed operator: a ring sharding the ConfigMaps (not the Secrets), leader
/// election for the singletons, a `sharded()` controller for ConfigMaps and a leader-elected
/// one for Secrets, both through the builder.
async fn mixed_replica(env: &TestEnv, id: &str, recorder: &Recorder, singles: &Singles) -> Manager {
    let sharding = ring_of(RING, id, steady_lease());
    let election = LeaderElectionOptions::new("mixed-singletons")
        .namespace(NS)
        .identity(id)
        .config(steady_lease());
    let options = Options::default()
        .sharding(sharding)
        .leader_election(election);
    let mgr = manager(env, options).await;
    let (replica, recorder) = (id.to_owned(), recorder.clone());
    let sharded = rein::controller::reconciler_fn(move |_ctx: Context, req: Request| {
        let (replica, recorder) = (replica.clone(), recorder.clone());
        async move {
            let key = req.key.to_string();
            recorder.record(&replica, &key, Step::Start);
            tokio::time::sleep(Duration::from_millis(20)).await;
            recorder.record(&replica, &key, Step::Finish);
            Ok::<_, std::convert::Infallible>(Action::requeue_after(REQUEUE))
        }
    });
    let controller = ControllerManagedBy::new(&mgr)
        .for_::<ConfigMap>()
        .named(format!("mixed-configmaps-{id}"))
        .sharded()
        .complete(sharded)
        .expect("sharded controller");
    assert!(!controller.options().need_leader_election);
    let (replica, singles) = (id.to_owned(), singles.clone());
    let singleton = rein::controller::reconciler_fn(move |_ctx: Context, req: Request| {
        let (replica, singles) = (replica.clone(), singles.clone());
        async move {
            singles
                .lock()
                .expect("singles")
                .entry(replica)
                .or_default()
                .insert(req.key.name.clone());
            Ok::<_, std::convert::Infallible>(Action::done())
        }
    });
    let controller = ControllerManagedBy::new(&mgr)
        .for_::<Secret>()
        .named(format!("mixed-secrets-{id}"))
        .leader_elected()
        .complete(singleton)
        .expect("singleton controller");
    assert!(controller.options().need_leader_election);
    mgr
}

/// One manager per replica runs a sharded controller (`sharded()` in the builder) and a
/// leader-elected singleton: the sharded controller's keys are split across both replicas
/// without overlap, the singleton runs only on the leader, and its kind's cache is not
/// filtered by the ring (the leader sees every Secret).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_and_singleton_controllers_share_a_manager() {
    let env = TestEnv::start().await.expect("testenv");
    create_objects(&env).await;
    let recorder = Recorder::default();
    let singles = Singles::default();
    let stop = CancellationToken::new();
    let mut managers = Vec::new();
    for id in ["m0", "m1"] {
        let mgr = mixed_replica(&env, id, &recorder, &singles).await;
        let task = tokio::spawn({
            let (mgr, stop) = (mgr.clone(), stop.clone());
            async move { mgr.start(stop).await }
        });
        managers.push((id, mgr, task));
    }
    let counts = wait_spread(&env, &recorder, &["m0", "m1"], false, "two mixed replicas").await;
    assert_spread(&counts, "two mixed replicas");

    let secrets: BTreeSet<String> = (0..KEYS).step_by(6).map(|i| format!("sec-{i}")).collect();
    let deadline = Instant::now() + PATIENCE;
    let leader = loop {
        let leaders: Vec<&str> = managers
            .iter()
            .filter(|(_, mgr, _)| mgr.elected().now_or_never().is_some())
            .map(|(id, _, _)| *id)
            .collect();
        assert!(leaders.len() <= 1, "two leaders: {leaders:?}");
        if let [leader] = leaders[..] {
            let seen = singles.lock().expect("singles").get(leader).cloned();
            if seen.is_some_and(|seen| secrets.is_subset(&seen)) {
                break leader;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the leader never reconciled every Secret"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let by_replica = singles.lock().expect("singles").clone();
    assert_eq!(
        by_replica.keys().collect::<Vec<_>>(),
        vec![leader],
        "only the leader runs the singleton: {by_replica:?}"
    );
    recorder
        .check(LEASE_DURATION + HANDOVER_ALLOWANCE + REQUEUE)
        .unwrap_or_else(|problem| panic!("{problem}"));
    stop.cancel();
    for (_, _, task) in managers {
        task.await.expect("manager task").expect("manager");
    }
}

/// The builder refuses what would go wrong: a leader-elected controller for a kind the ring
/// shards (its cache holds one replica's share), `sharded()` for a kind the ring does not
/// shard or on a manager without sharding; with `shard_controllers_by_default` a controller
/// for a sharded kind is sharded unless it says `leader_elected()`.
#[tokio::test]
async fn the_builder_checks_sharded_and_singleton_controllers() {
    let env = TestEnv::start().await.expect("testenv");
    let ring = |default: bool| {
        let options = ring_of("checked", "x", steady_lease());
        if default {
            options.shard_controllers_by_default()
        } else {
            options
        }
    };
    let mgr = manager(&env, Options::default().sharding(ring(false))).await;
    let singleton = ControllerManagedBy::new(&mgr)
        .for_::<ConfigMap>()
        .named("checked-singleton")
        .complete(no_op());
    assert!(
        matches!(singleton, Err(BuildError::SingletonOfShardedKind { .. })),
        "{singleton:?}"
    );
    let unsharded = ControllerManagedBy::new(&mgr)
        .for_::<Secret>()
        .named("checked-unsharded")
        .sharded()
        .complete(no_op());
    assert!(
        matches!(unsharded, Err(BuildError::Sharding { .. })),
        "{unsharded:?}"
    );
    let plain = manager(&env, Options::default()).await;
    let no_ring = ControllerManagedBy::new(&plain)
        .for_::<ConfigMap>()
        .named("checked-no-ring")
        .sharded()
        .complete(no_op());
    assert!(
        matches!(no_ring, Err(BuildError::Sharding { .. })),
        "{no_ring:?}"
    );

    let by_default = manager(&env, Options::default().sharding(ring(true))).await;
    let sharded = ControllerManagedBy::new(&by_default)
        .for_::<ConfigMap>()
        .named("checked-by-default")
        .complete(no_op())
        .expect("sharded by default");
    assert!(!sharded.options().need_leader_election);
    let singleton = ControllerManagedBy::new(&by_default)
        .for_::<Secret>()
        .named("checked-secrets")
        .complete(no_op())
        .expect("a singleton of an unsharded kind");
    assert!(singleton.options().need_leader_election);
    let refused = ControllerManagedBy::new(&by_default)
        .for_::<ConfigMap>()
        .named("checked-opted-out")
        .leader_elected()
        .complete(no_op());
    assert!(
        matches!(refused, Err(BuildError::SingletonOfShardedKind { .. })),
        "{refused:?}"
    );
}

/// Reconciles of a leader-elected warm-up test controller: (replica, the Lease's holder when
/// it ran).
type Runs = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Where a warm-up test replica turns warm-up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WarmBy {
    /// The controller's `enable_warmup`.
    Controller,
    /// The manager's `Options::warm_up_controllers`.
    Manager,
    /// Nowhere.
    Nothing,
}

/// A manager with leader election on Lease `warm` and one leader-elected controller for
/// ConfigMaps (warmed up as `warm` says) that notes who held the Lease at each reconcile.
async fn warm_replica(env: &TestEnv, id: &str, warm: WarmBy, runs: &Runs) -> Manager {
    let election = LeaderElectionOptions::new("warm")
        .namespace(NS)
        .identity(id)
        .config(LeaderElectionConfig {
            release_on_cancel: true,
            ..steady_lease()
        });
    let mut options = Options::default().leader_election(election);
    if warm == WarmBy::Manager {
        options = options.warm_up_controllers();
    }
    let mgr = manager(env, options).await;
    let leases: Api<Lease> = Api::namespaced(env.client(), NS);
    let (replica, runs) = (id.to_owned(), runs.clone());
    let reconciler = rein::controller::reconciler_fn(move |_ctx: Context, _req: Request| {
        let (replica, runs, leases) = (replica.clone(), runs.clone(), leases.clone());
        async move {
            let lease = leases.get("warm").await?;
            let holder = lease.spec.and_then(|s| s.holder_identity);
            runs.lock().expect("runs").push((replica, holder));
            Ok::<_, kube_client::Error>(Action::done())
        }
    });
    ControllerManagedBy::new(&mgr)
        .for_::<ConfigMap>()
        .named(format!("warm-{id}"))
        .with_options(ControllerOptions {
            enable_warmup: warm == WarmBy::Controller,
            ..ControllerOptions::default()
        })
        .complete(reconciler)
        .expect("controller");
    mgr
}

/// The ConfigMaps named `cm-*` in `mgr`'s cache, if it has a synced ConfigMap informer.
fn cached_configmaps(mgr: &Manager) -> Option<usize> {
    let informer = mgr.cache().existing_informer_for::<ConfigMap>()?;
    informer.has_synced().then(|| {
        informer
            .indexer()
            .list()
            .iter()
            .filter(|cm| {
                cm.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("cm-"))
            })
            .count()
    })
}

/// A standby with `enable_warmup` (b: the controller's option; d: the manager's
/// `warm_up_controllers`) starts its controller's source before it leads: its cache holds
/// every ConfigMap, synced, while the other replica leads, and it reconciles nothing until it
/// won the election (every reconcile found its replica the Lease's holder). A standby without
/// warm-up (c) has no ConfigMap informer at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_warms_its_cache_up_but_reconciles_only_once_it_leads() {
    let env = TestEnv::start().await.expect("testenv");
    create_objects(&env).await;
    let runs = Runs::default();
    let start = |mgr: &Manager, stop: &CancellationToken| {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };
    let (stop_a, stop_b, stop_c) = (
        CancellationToken::new(),
        CancellationToken::new(),
        CancellationToken::new(),
    );
    let a = warm_replica(&env, "a", WarmBy::Controller, &runs).await;
    let task_a = start(&a, &stop_a);
    tokio::time::timeout(PATIENCE, a.elected())
        .await
        .expect("a leads");
    let b = warm_replica(&env, "b", WarmBy::Controller, &runs).await;
    let task_b = start(&b, &stop_b);
    let c = warm_replica(&env, "c", WarmBy::Nothing, &runs).await;
    let d = warm_replica(&env, "d", WarmBy::Manager, &runs).await;
    let stop_d = CancellationToken::new();
    let task_d = start(&d, &stop_d);
    let task_c = start(&c, &stop_c);

    let deadline = Instant::now() + PATIENCE;
    while cached_configmaps(&b) != Some(KEYS) || cached_configmaps(&d) != Some(KEYS) {
        assert!(
            Instant::now() < deadline,
            "b's or d's cache never warmed up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let deadline = Instant::now() + PATIENCE;
    while !c.caches_synced() {
        assert!(Instant::now() < deadline, "c never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(b.elected().now_or_never().is_none(), "b must not lead yet");
    assert!(d.elected().now_or_never().is_none(), "d must not lead yet");
    assert!(
        c.cache().existing_informer_for::<ConfigMap>().is_none(),
        "c does not warm up"
    );
    assert!(
        runs.lock().expect("runs").iter().all(|(who, _)| who == "a"),
        "only the leader reconciles"
    );

    // a stops and releases the Lease; b or c takes over.
    stop_a.cancel();
    task_a.await.expect("a's task").expect("a");
    let deadline = Instant::now() + PATIENCE;
    let next = loop {
        if let Some((id, _)) = [("b", &b), ("c", &c), ("d", &d)]
            .into_iter()
            .find(|(_, mgr)| mgr.elected().now_or_never().is_some())
        {
            break id;
        }
        assert!(Instant::now() < deadline, "nobody took over");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let deadline = Instant::now() + PATIENCE;
    loop {
        let reconciled = runs
            .lock()
            .expect("runs")
            .iter()
            .filter(|(who, _)| who == next)
            .count();
        if reconciled >= KEYS {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{next} never reconciled everything"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (who, holder) in runs.lock().expect("runs").iter() {
        assert_eq!(
            Some(who),
            holder.as_ref(),
            "{who} reconciled while {holder:?} held the Lease"
        );
    }
    for (stop, task) in [(stop_b, task_b), (stop_c, task_c), (stop_d, task_d)] {
        stop.cancel();
        task.await.expect("manager task").expect("manager");
    }
}

/// The coordinator watches the sharded kinds as `PartialObjectMeta`: its cache holds every
/// ConfigMap's metadata and no ConfigMap's data, and no informer of whole ConfigMaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinator_caches_metadata_only() {
    let env = TestEnv::start().await.expect("testenv");
    create_objects(&env).await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let mut with_data = cms.get("cm-0").await.expect("cm-0");
    with_data.data = Some(BTreeMap::from([("spec".to_owned(), "x".repeat(512))]));
    cms.replace("cm-0", &PostParams::default(), &with_data)
        .await
        .expect("cm-0 with data");
    let sharding = ring_of("meta", "solo", steady_lease());
    let mgr = manager(&env, Options::default().sharding(sharding)).await;
    let reconciler = no_op();
    ControllerManagedBy::new(&mgr)
        .for_::<ConfigMap>()
        .named("meta-configmaps")
        .sharded()
        .complete(reconciler)
        .expect("controller");
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    let sharding = mgr.sharding().expect("sharding").clone();
    let deadline = Instant::now() + PATIENCE;
    let (cache, cached) = loop {
        if let Some(cache) = sharding.coordinator_cache()
            && let Some(informer) = cache.existing_informer_for::<PartialObjectMeta<ConfigMap>>()
        {
            let cached = informer.indexer().list();
            let ours = cached
                .iter()
                .filter(|m| {
                    m.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("cm-"))
                })
                .count();
            if ours == KEYS {
                break (cache, cached);
            }
        }
        assert!(
            Instant::now() < deadline,
            "the coordinator never cached the ConfigMaps"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        cache.existing_informer_for::<ConfigMap>().is_none(),
        "the coordinator holds no whole ConfigMaps"
    );
    for meta in &cached {
        let json = serde_json::to_value(meta.as_ref()).expect("json");
        let fields: BTreeSet<&str> = json
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        assert!(
            fields.is_subset(&BTreeSet::from(["apiVersion", "kind", "metadata"])),
            "the coordinator cached more than metadata: {fields:?}"
        );
    }
    // The replica's own (filtered) cache has the whole objects it reconciles.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let own = mgr
            .cache()
            .get::<ConfigMap>(&rein::scheme::ObjectKey::new(NS, "cm-0"))
            .await;
        if own.is_ok_and(|cm| cm.data.as_ref().is_some_and(|d| d.contains_key("spec"))) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "cm-0 never reached the replica's cache"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.cancel();
    running.await.expect("manager task").expect("manager");
}
