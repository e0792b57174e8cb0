//! Leader-election chaos against rein-testenv: two and three candidates (bare electors and
//! whole managers) compete for one Lease while its path fails, throttles, stalls and is
//! partitioned and leaders are killed; safety is judged from the server's record of the
//! leader-only writes and of the Lease's versions.
//!
//! Every leader-only write creates a ConfigMap `<who>-t<term>-<seq>`. rein-testenv has one
//! global resourceVersion counter (like etcd's revision), so the resourceVersions of those
//! ConfigMaps and of every version of the Lease (replayed from the server's watch history)
//! give the one true order of all of them. A *term* is one run of one elector (a restarted
//! replica starts a new term). The safety checks (`History::check`):
//! - every leader-only write by `W` lands while the Lease's latest version names `W` as
//!   holder: nobody writes outside its own lease, so two leaders never act at once;
//! - every term's writes form one contiguous run (once B has written, A never writes again
//!   until A re-acquires in a new term), in the order they were made;
//! - every hand-over of the Lease from a holder that did not release it happens at least
//!   `lease_duration` after that holder's last renewal (the successor waited the lease out),
//!   and counts one `leaseTransition`.
//!
//! The clock is real (rein-testenv answers on its own runtime thread, and tokio's paused
//! clock would skip ahead while requests are in flight), so timings are short and only
//! ordering is asserted; failover times are printed. Faults stall a request for less than
//! the margin `lease_duration - renew_deadline` (2 s here): a leader-only write held up longer
//! than that can land after a successor took over — Leases are not fencing tokens, in
//! client-go neither (see docs/reliability.md, known limits).

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube_client::Api;
use kube_client::api::{ListParams, PostParams, WatchEvent, WatchParams};
use rein::manager::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock,
};
use rein::manager::{LeaderElectionOptions, Manager, Options, RunnableFn};
use rein_testenv::{Fault, TestEnv};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const LEASE: &str = "chaos-lock";
const LEASE_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases/chaos-lock";
const WRITE_LABEL: &str = "chaos-write";
const WRITE_EVERY: Duration = Duration::from_millis(25);
/// How long any awaited condition may take on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(40);

/// The lease duration of [`config`].
const LEASE_DURATION: Duration = Duration::from_secs(3);

/// Short real durations: 3 s lease, 1 s renew deadline, 200 ms retry period.
fn config(release_on_cancel: bool) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: LEASE_DURATION,
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(200),
        release_on_cancel,
        name: "chaos".into(),
    }
}

// ---------------------------------------------------------------------------------------------
// What the candidates did, on the test's clock.

#[derive(Debug, Clone, PartialEq, Eq)]
enum Happening {
    /// `on_started_leading` ran.
    Started,
    /// The leader-only work saw its token fire and will write no more.
    StoppedActing,
}

#[derive(Debug, Clone)]
struct Entry {
    at: Instant,
    who: String,
    term: u32,
    what: Happening,
}

#[derive(Debug, Clone, Default)]
struct Journal(Arc<Mutex<Vec<Entry>>>);

impl Journal {
    fn push(&self, who: &str, term: u32, what: Happening) {
        self.0.lock().unwrap().push(Entry {
            at: Instant::now(),
            who: who.to_owned(),
            term,
            what,
        });
    }

    fn entries(&self) -> Vec<Entry> {
        self.0.lock().unwrap().clone()
    }

    /// The identity currently acting (started and not yet stopped), if any.
    fn acting(&self) -> Option<String> {
        let entries = self.entries();
        let mut acting: Vec<(String, u32)> = Vec::new();
        for e in &entries {
            match e.what {
                Happening::Started => acting.push((e.who.clone(), e.term)),
                Happening::StoppedActing => acting.retain(|t| *t != (e.who.clone(), e.term)),
            }
        }
        acting.pop().map(|(who, _)| who)
    }

    /// When `who` (or anyone but `who` when `others`) last started leading, after `since`.
    fn started_after(&self, since: Instant, who: &str, others: bool) -> Option<Entry> {
        self.entries()
            .into_iter()
            .find(|e| e.what == Happening::Started && e.at >= since && ((e.who == who) != others))
    }
}

// ---------------------------------------------------------------------------------------------
// The leader-only work: one ConfigMap per write.

/// Writes `<who>-t<term>-<seq>` ConfigMaps every [`WRITE_EVERY`] until `leading` fires.
async fn act(
    client: kube_client::Client,
    who: String,
    term: u32,
    leading: CancellationToken,
    journal: Journal,
) {
    let api: Api<ConfigMap> = Api::namespaced(client, NS);
    let mut seq = 0u32;
    while !leading.is_cancelled() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("{who}-t{term}-{seq:05}")),
                labels: Some(BTreeMap::from([(WRITE_LABEL.into(), "true".into())])),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([
                ("who".into(), who.clone()),
                ("term".into(), term.to_string()),
                ("seq".into(), seq.to_string()),
            ])),
            ..ConfigMap::default()
        };
        match api.create(&PostParams::default(), &cm).await {
            Ok(_) => seq += 1,
            // An earlier attempt that timed out on our side did land.
            Err(kube_client::Error::Api(status)) if status.is_already_exists() => seq += 1,
            Err(_) => {}
        }
        tokio::select! {
            _ = leading.cancelled() => {}
            _ = tokio::time::sleep(WRITE_EVERY) => {}
        }
    }
    journal.push(&who, term, Happening::StoppedActing);
}

/// One leader-only write as the server stored it.
#[derive(Debug, Clone)]
struct Write {
    rv: u64,
    who: String,
    term: u32,
    seq: u32,
}

/// One version of the Lease as the server stored it.
#[derive(Debug, Clone)]
struct LeaseVersion {
    rv: u64,
    holder: String,
    acquired: Option<Timestamp>,
    renewed: Option<Timestamp>,
    transitions: i32,
}

impl LeaseVersion {
    fn from_lease(lease: &Lease) -> LeaseVersion {
        let spec = lease.spec.clone().unwrap_or_default();
        LeaseVersion {
            rv: resource_version(&lease.metadata),
            holder: spec.holder_identity.unwrap_or_default(),
            acquired: spec.acquire_time.map(|t| t.0),
            renewed: spec.renew_time.map(|t| t.0),
            transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }
}

fn resource_version(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .expect("stored objects have a resourceVersion")
        .parse()
        .expect("rein-testenv's resourceVersions are integers")
}

/// A Lease hand-over from a holder that did not release it, as the server recorded it.
#[derive(Debug, Clone)]
struct Handover {
    from: String,
    to: String,
    /// From the old holder's last renewal to the new holder's acquisition (the stamps both
    /// wrote into the Lease, from one machine's clock).
    after: Duration,
}

/// The server's view: every leader-only write and every Lease version, in resourceVersion
/// order.
#[derive(Debug)]
struct History {
    writes: Vec<Write>,
    lease: Vec<LeaseVersion>,
    /// Consecutive writes of one term: (who, term, number of writes).
    runs: Vec<(String, u32, usize)>,
    handovers: Vec<Handover>,
}

impl History {
    /// Reads the writes and the Lease's history from the server and checks them.
    async fn read_and_check(env: &TestEnv) -> History {
        let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
        let list = api
            .list(&ListParams::default().labels(&format!("{WRITE_LABEL}=true")))
            .await
            .expect("list writes");
        let writes: Vec<Write> = list
            .items
            .iter()
            .map(|cm| {
                let data = cm.data.clone().unwrap_or_default();
                Write {
                    rv: resource_version(&cm.metadata),
                    who: data["who"].clone(),
                    term: data["term"].parse().unwrap(),
                    seq: data["seq"].parse().unwrap(),
                }
            })
            .collect();
        let lease = lease_history(env).await;
        let history = History::new(writes, lease);
        if let Err(violation) = history.check(LEASE_DURATION) {
            panic!("{violation}");
        }
        history
    }

    fn new(mut writes: Vec<Write>, mut lease: Vec<LeaseVersion>) -> History {
        writes.sort_by_key(|w| w.rv);
        lease.sort_by_key(|v| v.rv);
        let mut runs: Vec<(String, u32, usize)> = Vec::new();
        for w in &writes {
            match runs.last_mut() {
                Some((who, term, n)) if *who == w.who && *term == w.term => *n += 1,
                _ => runs.push((w.who.clone(), w.term, 1)),
            }
        }
        let mut handovers = Vec::new();
        for pair in lease.windows(2) {
            let (old, new) = (&pair[0], &pair[1]);
            if old.holder.is_empty() || new.holder.is_empty() || old.holder == new.holder {
                continue;
            }
            let (Some(renewed), Some(acquired)) = (old.renewed, new.acquired) else {
                continue;
            };
            let micros = acquired.as_microsecond() - renewed.as_microsecond();
            handovers.push(Handover {
                from: old.holder.clone(),
                to: new.holder.clone(),
                after: Duration::from_micros(u64::try_from(micros).unwrap_or(0)),
            });
        }
        History {
            writes,
            lease,
            runs,
            handovers,
        }
    }

    /// The safety checks of the module docs; the first violation found, described.
    fn check(&self, lease_duration: Duration) -> Result<(), String> {
        // 1. Every write lands under its writer's lease: the Lease's latest version before it
        //    (in the server's order) names the writer as holder.
        for w in &self.writes {
            let holder = self
                .lease
                .iter()
                .take_while(|v| v.rv < w.rv)
                .last()
                .map(|v| v.holder.as_str());
            if holder != Some(w.who.as_str()) {
                return Err(format!(
                    "{} (term {}) wrote at resourceVersion {} while the lease was held by \
                     {holder:?}: two leaders acted at once. Runs in server order: {:?}",
                    w.who, w.term, w.rv, self.runs
                ));
            }
        }
        // 2. Each term is one contiguous run: no write of an earlier leader after a later one.
        let mut seen = HashSet::new();
        for (who, term, _) in &self.runs {
            if !seen.insert((who.clone(), *term)) {
                return Err(format!(
                    "{who} (term {term}) wrote again after another leader had written: two \
                     leaders acted at once. Runs in server order: {:?}",
                    self.runs
                ));
            }
        }
        // 3. Within a term, writes land in the order they were made.
        for pair in self.writes.windows(2) {
            if pair[0].who == pair[1].who
                && pair[0].term == pair[1].term
                && pair[0].seq >= pair[1].seq
            {
                return Err(format!("writes of one term out of order: {pair:?}"));
            }
        }
        // 4. The Lease changes hands only once it expired or was released, and every change
        //    of holder counts one transition. The stamps are microseconds; allow a little
        //    for the candidates reading the wall clock just after their monotonic one.
        let slack = Duration::from_millis(5);
        for handover in &self.handovers {
            if handover.after + slack < lease_duration {
                return Err(format!(
                    "{} took the lease over {:?} after {}'s last renewal, before it expired \
                     ({lease_duration:?})",
                    handover.to, handover.after, handover.from
                ));
            }
        }
        for pair in self.lease.windows(2) {
            let (old, new) = (&pair[0], &pair[1]);
            let changed = !new.holder.is_empty() && new.holder != old.holder;
            let expected = old.transitions + i32::from(changed);
            if new.transitions != expected {
                return Err(format!(
                    "leaseTransitions went from {} to {} as the holder went from {:?} to {:?}",
                    old.transitions, new.transitions, old.holder, new.holder
                ));
            }
        }
        Ok(())
    }

    fn writers(&self) -> Vec<String> {
        let mut writers: Vec<String> = Vec::new();
        for (who, _, _) in &self.runs {
            if writers.last() != Some(who) {
                writers.push(who.clone());
            }
        }
        writers
    }

    fn lease_transitions(&self) -> i32 {
        self.lease.last().map(|v| v.transitions).unwrap_or_default()
    }
}

/// Every version the Lease had, replayed from the server's watch history (which keeps every
/// change in these short tests; a gap would show as a 410 and fail the test).
async fn lease_history(env: &TestEnv) -> Vec<LeaseVersion> {
    let api: Api<Lease> = Api::namespaced(env.client(), NS);
    let newest = resource_version(&api.get(LEASE).await.expect("the lease exists").metadata);
    let params = WatchParams::default()
        .fields(&format!("metadata.name={LEASE}"))
        .timeout(60);
    let mut events = api
        .watch(&params, "1")
        .await
        .expect("watch the lease's history")
        .boxed();
    let mut versions: Vec<LeaseVersion> = Vec::new();
    while versions.last().is_none_or(|v| v.rv < newest) {
        let event = tokio::time::timeout(PATIENCE, events.next())
            .await
            .expect("the lease's history in time")
            .expect("the history reaches the newest version")
            .expect("a watch event");
        match event {
            WatchEvent::Added(lease) | WatchEvent::Modified(lease) => {
                versions.push(LeaseVersion::from_lease(&lease));
            }
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Deleted(lease) => panic!("the lease was deleted: {lease:?}"),
            WatchEvent::Error(status) => panic!("the lease's history is gone: {status:?}"),
        }
    }
    // The replay holds at least every Lease write the server answered with success.
    let answered = env
        .requests()
        .iter()
        .filter(|r| {
            let collection = LEASE_PATH.rsplit_once('/').map(|(c, _)| c);
            let create = r.method == "POST" && Some(r.path.as_str()) == collection;
            let update = r.method == "PUT" && r.path == LEASE_PATH;
            (create || update) && (200..300).contains(&r.status)
        })
        .count();
    assert!(
        versions.len() >= answered,
        "{} lease versions replayed but {answered} writes answered",
        versions.len()
    );
    versions
}

/// How many writes the server holds, and by whom.
async fn writes_by(env: &TestEnv, who: Option<&str>) -> usize {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let Ok(list) = api
        .list(&ListParams::default().labels(&format!("{WRITE_LABEL}=true")))
        .await
    else {
        return 0;
    };
    list.items
        .iter()
        .filter(|cm| {
            who.is_none_or(|who| {
                cm.data
                    .as_ref()
                    .is_some_and(|d| d.get("who").map(String::as_str) == Some(who))
            })
        })
        .count()
}

async fn wait_for(what: &str, mut condition: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// A network partition for one candidate's Lease traffic.

/// A TCP proxy in front of the API server. `cut` turns it into a black hole (open connections
/// and new ones hang silently, as in a network partition); `heal` drops the held connections
/// and forwards again.
#[derive(Debug)]
struct Proxy {
    addr: SocketAddr,
    cut: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl Proxy {
    async fn start(env: &TestEnv) -> Proxy {
        let upstream: SocketAddr = env
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

    fn client(&self, env: &TestEnv) -> kube_client::Client {
        let mut config = env.config();
        config.cluster_url = format!("http://{}", self.addr).parse().expect("proxy url");
        kube_client::Client::try_from(config).expect("proxy client")
    }

    fn cut(&self) {
        self.cut.send_replace(true);
    }

    fn heal(&self) {
        self.cut.send_replace(false);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.heal();
    }
}

async fn forward(mut conn: TcpStream, upstream: SocketAddr, mut cut: watch::Receiver<bool>) {
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

// ---------------------------------------------------------------------------------------------
// A replica: a supervisor running one elector term after another, like a restarting process.

struct Replica {
    name: String,
    proxy: Proxy,
    stop: CancellationToken,
    supervisor: Option<JoinHandle<()>>,
    next_term: Arc<AtomicU32>,
    work: Arc<Mutex<Option<JoinHandle<()>>>>,
    config: LeaderElectionConfig,
    journal: Journal,
    lease_client: kube_client::Client,
    work_client: kube_client::Client,
}

impl Replica {
    /// A replica whose Lease traffic goes through its own [`Proxy`] and whose leader-only
    /// writes go straight to the server.
    async fn start(
        env: &TestEnv,
        name: &str,
        config: LeaderElectionConfig,
        journal: &Journal,
    ) -> Replica {
        let proxy = Proxy::start(env).await;
        let lease_client = proxy.client(env);
        let mut replica = Replica {
            name: name.to_owned(),
            proxy,
            stop: CancellationToken::new(),
            supervisor: None,
            next_term: Arc::new(AtomicU32::new(0)),
            work: Arc::default(),
            config,
            journal: journal.clone(),
            lease_client,
            work_client: env.client(),
        };
        replica.spawn();
        replica
    }

    fn spawn(&mut self) {
        let name = self.name.clone();
        let config = self.config.clone();
        let journal = self.journal.clone();
        let lease_client = self.lease_client.clone();
        let work_client = self.work_client.clone();
        let next_term = self.next_term.clone();
        let work = self.work.clone();
        let stop = self.stop.clone();
        self.supervisor = Some(tokio::spawn(async move {
            while !stop.is_cancelled() {
                // A new term only once the previous one's work has stopped, as after a restart.
                let previous = work.lock().unwrap().take();
                if let Some(previous) = previous {
                    let _ = previous.await;
                }
                let term = next_term.fetch_add(1, Ordering::SeqCst);
                let lock = LeaseLock::new(lease_client.clone(), NS, LEASE, name.clone());
                let started = {
                    let (name, journal, work, work_client) = (
                        name.clone(),
                        journal.clone(),
                        work.clone(),
                        work_client.clone(),
                    );
                    move |leading: CancellationToken| {
                        journal.push(&name, term, Happening::Started);
                        let task = tokio::spawn(act(
                            work_client.clone(),
                            name.clone(),
                            term,
                            leading,
                            journal.clone(),
                        ));
                        *work.lock().unwrap() = Some(task);
                    }
                };
                let callbacks = LeaderCallbacks::new(started, || {});
                let elector =
                    LeaderElector::new(config.clone(), lock, callbacks).expect("valid config");
                elector.run(stop.clone()).await;
            }
            let last = work.lock().unwrap().take();
            if let Some(last) = last {
                let _ = last.await;
            }
        }));
    }

    /// Kills the replica: its elector vanishes mid-flight without releasing the lease (its
    /// leader token fires as the elector is dropped, as the work of a killed process ends).
    async fn kill(&mut self) {
        if let Some(supervisor) = self.supervisor.take() {
            supervisor.abort();
            let _ = supervisor.await;
        }
        let work = self.work.lock().unwrap().take();
        if let Some(work) = work {
            let _ = work.await;
        }
    }

    /// Starts a killed replica again (a new term, same identity).
    fn restart(&mut self) {
        if self.supervisor.is_none() {
            self.spawn();
        }
    }

    /// Stops the replica (releasing the lease if so configured) and waits for it.
    async fn stop(&mut self) {
        self.stop.cancel();
        if let Some(supervisor) = self.supervisor.take() {
            supervisor.await.expect("supervisor");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A tiny deterministic random source (the seed is printed so a failure can be replayed).

#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.below(to - from))
    }
}

fn seed() -> u64 {
    std::env::var("REIN_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
        | 1
}

// ---------------------------------------------------------------------------------------------
// The tests.

#[tokio::test]
async fn two_electors_fail_over_after_the_leader_is_killed() {
    let env = TestEnv::start().await.unwrap();
    let journal = Journal::default();
    let mut a = Replica::start(&env, "a", config(false), &journal).await;
    let mut b = Replica::start(&env, "b", config(false), &journal).await;

    wait_for("a leader", async || journal.acting().is_some()).await;
    let leader = journal.acting().unwrap();
    wait_for("the leader's first writes", async || {
        writes_by(&env, Some(&leader)).await >= 5
    })
    .await;
    let (killed, survivor) = if leader == "a" {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let killed_at = Instant::now();
    killed.kill().await;
    wait_for("the survivor to take over", async || {
        journal.started_after(killed_at, &leader, true).is_some()
    })
    .await;
    let took_over = journal.started_after(killed_at, &leader, true).unwrap();
    assert_eq!(took_over.who, survivor.name);
    let survivor_name = survivor.name.clone();
    wait_for("the survivor's writes", async || {
        writes_by(&env, Some(&survivor_name)).await >= 5
    })
    .await;

    survivor.stop().await;
    let history = History::read_and_check(&env).await;
    assert_eq!(
        history.writers(),
        vec![leader.clone(), survivor_name.clone()]
    );
    let handovers: Vec<_> = history.handovers.iter().map(|h| (&h.from, &h.to)).collect();
    assert_eq!(handovers, vec![(&leader, &survivor_name)], "{history:?}");
    println!(
        "failover after killing the leader: {:?} after its last renewal (server's record), \
         {:?} after the kill (lease 3 s, retries every 200..440 ms)",
        history.handovers[0].after,
        took_over.at - killed_at
    );
}

#[tokio::test]
async fn a_leader_cut_off_from_its_lease_stops_acting_before_another_takes_over() {
    let env = TestEnv::start().await.unwrap();
    let journal = Journal::default();
    let mut a = Replica::start(&env, "a", config(false), &journal).await;
    wait_for("a to lead", async || {
        journal.acting().as_deref() == Some("a")
    })
    .await;
    let mut b = Replica::start(&env, "b", config(false), &journal).await;
    wait_for("a's first writes", async || {
        writes_by(&env, Some("a")).await >= 5
    })
    .await;

    // a can no longer reach the Lease but its leader-only writes still reach the server:
    // only its own renew deadline can stop it from acting beside b.
    let cut_at = Instant::now();
    a.proxy.cut();
    wait_for("b to take over", async || {
        journal.started_after(cut_at, "b", false).is_some()
    })
    .await;
    wait_for("b's writes", async || writes_by(&env, Some("b")).await >= 5).await;

    let entries = journal.entries();
    let a_stopped = entries
        .iter()
        .find(|e| e.who == "a" && e.term == 0 && e.what == Happening::StoppedActing)
        .expect("a stopped acting")
        .at;
    let b_started = journal.started_after(cut_at, "b", false).unwrap().at;
    assert!(
        a_stopped < b_started,
        "a still acted when b started: {entries:#?}"
    );
    println!(
        "cut-off leader stopped after {:?}; successor started after {:?} (renew deadline 1 s, lease 3 s)",
        a_stopped - cut_at,
        b_started - cut_at
    );

    a.proxy.heal();
    a.stop().await;
    b.stop().await;
    let history = History::read_and_check(&env).await;
    assert_eq!(history.writers(), vec!["a".to_owned(), "b".to_owned()]);
}

#[tokio::test]
async fn three_electors_never_act_at_once_under_lease_chaos() {
    let env = TestEnv::start().await.unwrap();
    let journal = Journal::default();
    let mut replicas = Vec::new();
    for name in ["a", "b", "c"] {
        replicas.push(Replica::start(&env, name, config(false), &journal).await);
    }
    wait_for("a leader", async || journal.acting().is_some()).await;

    let seed = seed();
    println!("chaos seed {seed} (replay with REIN_CHAOS_SEED={seed})");
    let mut rng = Rng(seed);
    let faults = env.faults();
    let mut actions: BTreeMap<&str, usize> = BTreeMap::new();
    // Three rounds: random faults on the Lease path for 3 s, then the acting leader is
    // killed, so the others must take over through whatever the faults left behind.
    for _round in 0..3 {
        let round_ends = Instant::now() + Duration::from_secs(3);
        while Instant::now() < round_ends {
            match rng.below(6) {
                0 => {
                    let n = 1 + rng.below(6) as usize;
                    faults.inject(Fault::server_error(n).matching(LEASE_PATH));
                    *actions.entry("lease 500s").or_default() += 1;
                }
                1 => {
                    let n = 1 + rng.below(3) as usize;
                    faults.inject(Fault::too_many_requests(n, 1).matching(LEASE_PATH));
                    *actions.entry("lease 429s").or_default() += 1;
                }
                2 => {
                    // Latency plus a pause stay below the 2 s margin (module docs).
                    faults.set_latency(rng.millis(20, 300));
                    tokio::time::sleep(rng.millis(200, 1_500)).await;
                    faults.set_latency(Duration::ZERO);
                    *actions.entry("latency").or_default() += 1;
                }
                3 => {
                    faults.pause();
                    tokio::time::sleep(rng.millis(100, 1_200)).await;
                    faults.resume();
                    *actions.entry("server paused").or_default() += 1;
                }
                4 => {
                    if let Some(leader) = journal.acting() {
                        let replica = replicas.iter().find(|r| r.name == leader).unwrap();
                        replica.proxy.cut();
                        tokio::time::sleep(rng.millis(300, 3_000)).await;
                        replica.proxy.heal();
                        *actions.entry("leader partitioned").or_default() += 1;
                    }
                }
                _ => {
                    faults.close_watches();
                    *actions.entry("watches closed").or_default() += 1;
                }
            }
            tokio::time::sleep(rng.millis(50, 500)).await;
        }
        wait_for("a leader to kill", async || journal.acting().is_some()).await;
        let leader = journal.acting().unwrap();
        let index = replicas.iter().position(|r| r.name == leader).unwrap();
        replicas[index].kill().await;
        let killed_at = Instant::now();
        *actions.entry("leader killed").or_default() += 1;
        // Another identity takes over (through what is left of the faults); then the killed
        // replica comes back as a new term and competes again.
        wait_for("another replica to take over", async || {
            journal.started_after(killed_at, &leader, true).is_some()
        })
        .await;
        replicas[index].restart();
    }

    // Calm: someone leads and writes again.
    faults.clear();
    faults.resume();
    faults.set_latency(Duration::ZERO);
    for replica in &mut replicas {
        replica.proxy.heal();
        replica.restart();
    }
    let before = writes_by(&env, None).await;
    wait_for("a leader writing after the chaos", async || {
        writes_by(&env, None).await >= before + 5
    })
    .await;
    // And a last hand-over: the leader dies for good, another replica carries on.
    let last = journal.acting().expect("a leader after the chaos");
    let index = replicas.iter().position(|r| r.name == last).unwrap();
    replicas[index].kill().await;
    let killed_at = Instant::now();
    wait_for("another replica to take over", async || {
        journal.started_after(killed_at, &last, true).is_some()
    })
    .await;
    let successor = journal.started_after(killed_at, &last, true).unwrap().who;
    let before = writes_by(&env, Some(&successor)).await;
    wait_for("the successor's writes", async || {
        writes_by(&env, Some(&successor)).await >= before + 3
    })
    .await;
    for replica in &mut replicas {
        replica.stop().await;
    }

    let history = History::read_and_check(&env).await;
    let failovers: Vec<Duration> = history.handovers.iter().map(|h| h.after).collect();
    let mut holders: Vec<&str> = Vec::new();
    for version in &history.lease {
        if holders.last() != Some(&version.holder.as_str()) {
            holders.push(&version.holder);
        }
    }
    println!("lease holders in the server's order: {holders:?}");
    println!(
        "chaos: {actions:?}; {} writes in {} terms by {:?}; {} lease versions, {} transitions; \
         hand-overs after the last renewal: {failovers:?}",
        history.writes.len(),
        history.runs.len(),
        history.writers(),
        history.lease.len(),
        history.lease_transitions(),
    );
    // Every kill (three in the chaos, one after it) forced a hand-over to another identity,
    // on the server's record too.
    assert!(history.handovers.len() >= 4, "{:?}", history.handovers);
    assert!(
        history.handovers.last().is_some_and(|h| h.from == last),
        "{:?}",
        history.handovers
    );
}

// ---------------------------------------------------------------------------------------------
// Whole managers.

async fn manager(
    env: &TestEnv,
    name: &str,
    config: LeaderElectionConfig,
    journal: &Journal,
) -> (
    CancellationToken,
    JoinHandle<Result<(), rein::manager::Error>>,
) {
    let options = Options::default()
        .leader_election(
            LeaderElectionOptions::new(LEASE)
                .namespace(NS)
                .identity(name)
                .config(config),
        )
        .graceful_shutdown_timeout(Some(Duration::from_secs(10)));
    let manager = Manager::builder(env.config())
        .options(options)
        .build()
        .await
        .expect("manager");
    let (who, journal, client) = (name.to_owned(), journal.clone(), env.client());
    manager
        .add(Arc::new(RunnableFn::new(move |leading| {
            journal.push(&who, 0, Happening::Started);
            let work = act(client.clone(), who.clone(), 0, leading, journal.clone());
            async move {
                work.await;
                Ok(())
            }
        })))
        .expect("add the leader-only runnable");
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let stop = stop.clone();
        async move { manager.start(stop).await }
    });
    (stop, task)
}

/// Stops managers one leader at a time and checks that each hand-over is clean.
async fn hand_over_through(names: &[&str], release_on_cancel: bool, lease_faults: bool) {
    let env = TestEnv::start().await.unwrap();
    let journal = Journal::default();
    let mut managers = BTreeMap::new();
    for name in names {
        managers.insert(
            name.to_string(),
            manager(&env, name, config(release_on_cancel), &journal).await,
        );
    }
    let mut order = Vec::new();
    while !managers.is_empty() {
        wait_for("a leading manager", async || journal.acting().is_some()).await;
        let leader = journal.acting().unwrap();
        wait_for("the leader's writes", async || {
            writes_by(&env, Some(&leader)).await >= 3
        })
        .await;
        if lease_faults {
            env.faults()
                .inject(Fault::server_error(3).matching(LEASE_PATH));
        }
        let (stop, task) = managers.remove(&leader).unwrap();
        stop.cancel();
        task.await
            .expect("manager task")
            .expect("a stopped manager returns Ok");
        order.push(leader);
    }
    let history = History::read_and_check(&env).await;
    assert_eq!(history.writers(), order);
    assert!(history.lease_transitions() >= i32::try_from(names.len()).unwrap() - 1);
}

#[tokio::test]
async fn two_managers_hand_over_after_the_lease_expires() {
    hand_over_through(&["a", "b"], false, false).await;
}

#[tokio::test]
async fn three_managers_hand_over_at_once_with_release_on_cancel_despite_lease_errors() {
    hand_over_through(&["a", "b", "c"], true, true).await;
}

// ---------------------------------------------------------------------------------------------
// A lost lease is not released.

#[tokio::test]
async fn a_leader_that_lost_its_lease_does_not_release_it() {
    let env = TestEnv::start().await.unwrap();
    let proxy = Proxy::start(&env).await;
    let lock = LeaseLock::new(proxy.client(&env), NS, LEASE, "a");
    let (leading_tx, mut leading_rx) = watch::channel(None::<CancellationToken>);
    let callbacks = LeaderCallbacks::new(
        move |leading: CancellationToken| {
            leading_tx.send_replace(Some(leading));
        },
        || {},
    );
    // release_on_cancel: a *stopped* leader would give the lease up at once.
    let elector = LeaderElector::new(config(true), lock, callbacks).unwrap();
    let run = tokio::spawn({
        let elector = elector.clone();
        async move { elector.run(CancellationToken::new()).await }
    });
    let leading = tokio::time::timeout(PATIENCE, leading_rx.wait_for(Option::is_some))
        .await
        .expect("a leads in time")
        .unwrap()
        .clone()
        .unwrap();

    // Cut off until the renew deadline passes, then reachable again at once: the release
    // would go through now, and must not be tried, as the leader-only work of a lost term
    // may still be winding down.
    proxy.cut();
    tokio::time::timeout(PATIENCE, leading.cancelled())
        .await
        .expect("the renew deadline ends the term");
    proxy.heal();
    tokio::time::timeout(PATIENCE, run)
        .await
        .expect("run returns after losing the lease")
        .unwrap();

    let lease = Api::<Lease>::namespaced(env.client(), NS)
        .get(LEASE)
        .await
        .unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(
        spec.holder_identity.as_deref(),
        Some("a"),
        "a lost lease must expire by itself, not be released"
    );
    assert_eq!(spec.lease_duration_seconds, Some(3));
}

// ---------------------------------------------------------------------------------------------
// The checker itself: each rule flags what it is there to flag.

fn write(rv: u64, who: &str, term: u32, seq: u32) -> Write {
    Write {
        rv,
        who: who.into(),
        term,
        seq,
    }
}

fn version(
    rv: u64,
    holder: &str,
    acquired_ms: i64,
    renewed_ms: i64,
    transitions: i32,
) -> LeaseVersion {
    let at = |ms: i64| Some(Timestamp::from_millisecond(1_700_000_000_000 + ms).unwrap());
    LeaseVersion {
        rv,
        holder: holder.into(),
        acquired: at(acquired_ms),
        renewed: at(renewed_ms),
        transitions,
    }
}

/// a leads (rv 1–4), its lease expires, b takes over at rv 5 and writes at rv 7.
fn clean_history() -> (Vec<Write>, Vec<LeaseVersion>) {
    let writes = vec![
        write(2, "a", 0, 0),
        write(4, "a", 0, 1),
        write(7, "b", 0, 0),
    ];
    let lease = vec![
        version(1, "a", 0, 0, 0),
        version(3, "a", 0, 200, 0),
        version(5, "b", 3_300, 3_300, 1),
    ];
    (writes, lease)
}

#[test]
fn the_checker_accepts_a_clean_hand_over() {
    let (writes, lease) = clean_history();
    let history = History::new(writes, lease);
    assert_eq!(history.check(LEASE_DURATION), Ok(()));
    assert_eq!(history.writers(), vec!["a".to_owned(), "b".to_owned()]);
    assert_eq!(history.handovers[0].after, Duration::from_millis(3_100));
}

#[test]
fn the_checker_flags_a_write_outside_the_writers_lease() {
    // a writes once more after b acquired, before b's first write: the runs alone (a, b)
    // look clean; the Lease's order shows the overlap.
    let (mut writes, lease) = clean_history();
    writes.push(write(6, "a", 0, 2));
    let err = History::new(writes, lease)
        .check(LEASE_DURATION)
        .unwrap_err();
    assert!(
        err.contains("while the lease was held by Some(\"b\")"),
        "{err}"
    );
}

#[test]
fn the_checker_flags_interleaved_terms() {
    let writes = vec![
        write(2, "a", 0, 0),
        write(3, "a", 1, 0),
        write(4, "a", 0, 1),
    ];
    let lease = vec![version(1, "a", 0, 0, 0)];
    let err = History::new(writes, lease)
        .check(LEASE_DURATION)
        .unwrap_err();
    assert!(err.contains("wrote again after another leader"), "{err}");
}

#[test]
fn the_checker_flags_writes_out_of_order() {
    let writes = vec![write(2, "a", 0, 1), write(3, "a", 0, 0)];
    let lease = vec![version(1, "a", 0, 0, 0)];
    let err = History::new(writes, lease)
        .check(LEASE_DURATION)
        .unwrap_err();
    assert!(err.contains("out of order"), "{err}");
}

#[test]
fn the_checker_flags_a_takeover_before_the_lease_expired() {
    let (writes, mut lease) = clean_history();
    lease[2] = version(5, "b", 2_000, 2_000, 1);
    let err = History::new(writes, lease)
        .check(LEASE_DURATION)
        .unwrap_err();
    assert!(err.contains("before it expired"), "{err}");
}

#[test]
fn the_checker_flags_an_uncounted_transition() {
    let (writes, mut lease) = clean_history();
    lease[2].transitions = 0;
    let err = History::new(writes, lease)
        .check(LEASE_DURATION)
        .unwrap_err();
    assert!(err.contains("leaseTransitions"), "{err}");
}
