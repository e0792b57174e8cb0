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
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube_client::Api;
use kube_client::api::{ListParams, PostParams};
use rein::controller::{Action, Context, ControllerManagedBy, ControllerOptions, Request};
use rein::manager::sharding::ShardingOptions;
use rein::manager::{Manager, Options};
use rein_testenv::TestEnv;
use rein_tests::sharded::{
    DRAIN_LABEL, LEASE_DURATION, NS, REQUEUE, Recorder, Replica, SHARD_LABEL, Work, lease,
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
        if settled && secrets_follow_owners(env).await {
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
    let sharding = ShardingOptions::new("probed")
        .namespace(NS)
        .shard_id("solo")
        .lease(lease())
        .kind::<ConfigMap>();
    let loopback: std::net::SocketAddr = "127.0.0.1:0".parse().expect("address");
    let options = Options::default()
        .sharding(sharding)
        .health_probe_bind_address(loopback)
        .metrics_bind_address(loopback);
    let mgr = Manager::builder(env.config())
        .options(options)
        .build()
        .await
        .expect("manager");
    let reconciler = rein::controller::reconciler_fn(|_ctx: Context, _req: Request| async {
        Ok::<_, std::convert::Infallible>(Action::done())
    });
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
            if ready.contains(" 200 ") && all_owned {
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
    // Hold a's next reconcile of the key in flight.
    open.send_replace(false);
    let deadline = Instant::now() + PATIENCE;
    while !recorder.in_flight("a", &key) {
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
