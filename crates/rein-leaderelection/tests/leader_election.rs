//! Leader election against rein-testenv: one leader at a time, hand-over, release, cut-off.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube_client::Api;
use parking_lot::Mutex;
use rein_leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

const LEASE: &str = "rein-test-lock";

/// Short real durations: 3 s lease, 1 s renew deadline, 200 ms retry.
fn fast_config(release_on_cancel: bool) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(200),
        release_on_cancel,
        name: "test".into(),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Started(String),
    /// The leader token fired, at this wall-clock time.
    LeaderTokenCancelled(String, Timestamp),
    Stopped(String),
}

/// A log shared by every candidate of a test, plus a count of current leaders.
#[derive(Default, Clone)]
struct Log {
    events: Arc<Mutex<Vec<Event>>>,
    leading: Arc<Mutex<usize>>,
    max_leading: Arc<Mutex<usize>>,
}

impl Log {
    fn events(&self) -> Vec<Event> {
        self.events.lock().clone()
    }

    fn has(&self, event: &Event) -> bool {
        self.events.lock().contains(event)
    }

    fn started(&self, id: &str) -> bool {
        self.has(&Event::Started(id.into()))
    }

    fn token_cancelled(&self, id: &str) -> bool {
        self.events
            .lock()
            .iter()
            .any(|e| matches!(e, Event::LeaderTokenCancelled(who, _) if who == id))
    }
}

struct Candidate {
    id: String,
    elector: LeaderElector,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

fn candidate(env: &TestEnv, id: &str, config: LeaderElectionConfig, log: &Log) -> Candidate {
    let lock = LeaseLock::new(env.client(), "default", LEASE, id);
    let started_log = log.clone();
    let stopped_log = log.clone();
    let started_id = id.to_owned();
    let stopped_id = id.to_owned();
    let callbacks = LeaderCallbacks::new(
        move |token: CancellationToken| {
            let log = started_log.clone();
            let id = started_id.clone();
            log.events.lock().push(Event::Started(id.clone()));
            {
                let mut leading = log.leading.lock();
                *leading += 1;
                let mut max = log.max_leading.lock();
                *max = (*max).max(*leading);
            }
            tokio::spawn(async move {
                token.cancelled().await;
                *log.leading.lock() -= 1;
                log.events
                    .lock()
                    .push(Event::LeaderTokenCancelled(id, Timestamp::now()));
            });
        },
        move || {
            stopped_log
                .events
                .lock()
                .push(Event::Stopped(stopped_id.clone()))
        },
    );
    let elector = LeaderElector::new(config, lock, callbacks).expect("valid config");
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let elector = elector.clone();
        let stop = stop.clone();
        async move { elector.run(stop).await }
    });
    Candidate {
        id: id.to_owned(),
        elector,
        stop,
        task,
    }
}

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

fn lease_gets(env: &TestEnv) -> usize {
    env.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with(&format!("/leases/{LEASE}")))
        .count()
}

async fn lease(env: &TestEnv) -> Lease {
    Api::<Lease>::namespaced(env.client(), "default")
        .get(LEASE)
        .await
        .expect("lease exists")
}

#[tokio::test]
async fn exactly_one_of_two_candidates_leads() {
    let env = TestEnv::start().await.unwrap();
    let log = Log::default();
    let a = candidate(&env, "a", fast_config(false), &log);
    let b = candidate(&env, "b", fast_config(false), &log);

    wait_for("a leader", || log.started("a") || log.started("b")).await;
    let (leader, follower) = if log.started("a") { (&a, &b) } else { (&b, &a) };
    wait_for("the follower to see the leader", || {
        follower.elector.leader().as_deref() == Some(leader.id.as_str())
    })
    .await;
    // The follower keeps trying (it reads the lease on every attempt) and keeps failing.
    let gets = lease_gets(&env);
    wait_for("five more follower attempts", || {
        lease_gets(&env) >= gets + 5
    })
    .await;

    assert!(leader.elector.is_leader());
    assert!(!follower.elector.is_leader());
    assert!(!log.started(&follower.id));
    assert_eq!(*log.max_leading.lock(), 1);
    let spec = lease(&env).await.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(leader.id.as_str()));
    assert_eq!(spec.lease_duration_seconds, Some(3));
    assert_eq!(spec.lease_transitions, Some(0));

    for c in [&a, &b] {
        c.stop.cancel();
    }
    for c in [a, b] {
        c.task.await.unwrap();
    }
    assert!(log.has(&Event::Stopped("a".into())) && log.has(&Event::Stopped("b".into())));
}

#[tokio::test]
async fn stopped_leader_is_replaced_after_its_lease_expires() {
    let env = TestEnv::start().await.unwrap();
    let log = Log::default();
    let a = candidate(&env, "a", fast_config(false), &log);
    wait_for("a to lead", || log.started("a")).await;
    let acquired = lease(&env).await.spec.unwrap().acquire_time;
    let b = candidate(&env, "b", fast_config(false), &log);
    wait_for("b to see a", || b.elector.leader().as_deref() == Some("a")).await;

    a.stop.cancel();
    a.task.await.unwrap();
    assert!(log.token_cancelled("a"));
    assert!(log.has(&Event::Stopped("a".into())));
    // Not released: the lease still names a until b takes it over.
    assert_eq!(
        lease(&env).await.spec.unwrap().holder_identity.as_deref(),
        Some("a")
    );

    wait_for("b to take over", || log.started("b")).await;
    let spec = lease(&env).await.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));
    assert_ne!(spec.acquire_time, acquired);
    assert_eq!(*log.max_leading.lock(), 1);
    b.stop.cancel();
    b.task.await.unwrap();
}

#[tokio::test]
async fn release_on_cancel_hands_over_at_once() {
    let env = TestEnv::start().await.unwrap();
    let log = Log::default();
    // A long lease: b could only take over this quickly because a released it.
    let long = LeaderElectionConfig {
        lease_duration: Duration::from_secs(60),
        ..fast_config(true)
    };
    let a = candidate(&env, "a", long.clone(), &log);
    wait_for("a to lead", || log.started("a")).await;
    let b = candidate(&env, "b", long, &log);
    wait_for("b to see a", || b.elector.leader().as_deref() == Some("a")).await;

    a.stop.cancel();
    a.task.await.unwrap();
    let released = lease(&env).await.spec.unwrap();
    assert!(
        released.holder_identity.as_deref() == Some("")
            || released.holder_identity.as_deref() == Some("b"),
        "{released:?}"
    );

    wait_for("b to take over", || log.started("b")).await;
    let events = log.events();
    let a_cancelled = events
        .iter()
        .position(|e| matches!(e, Event::LeaderTokenCancelled(who, _) if who == "a"))
        .unwrap();
    let b_started = events
        .iter()
        .position(|e| *e == Event::Started("b".into()))
        .unwrap();
    assert!(a_cancelled < b_started, "{events:?}");
    b.stop.cancel();
    b.task.await.unwrap();
}

#[tokio::test]
async fn leader_cut_off_from_the_server_stops_before_its_lease_expires() {
    let env = TestEnv::start().await.unwrap();
    let log = Log::default();
    let config = fast_config(false);
    let a = candidate(&env, "a", config.clone(), &log);
    wait_for("a to lead", || log.started("a")).await;
    let b = candidate(&env, "b", config.clone(), &log);
    wait_for("b to see a", || b.elector.leader().as_deref() == Some("a")).await;

    // Cut everyone off: a cannot renew, b cannot acquire.
    let last_renewal = lease(&env).await.spec.unwrap().renew_time.unwrap().0;
    env.faults().pause();
    wait_for("a to give up leadership", || log.token_cancelled("a")).await;
    assert!(a.elector.is_leader(), "a still believes the lease names it");
    assert!(!log.started("b"));

    // a stopped acting before its lease could expire (renew deadline 1 s < lease 3 s).
    let cancelled_at = log
        .events()
        .iter()
        .find_map(|e| match e {
            Event::LeaderTokenCancelled(who, at) if who == "a" => Some(*at),
            _ => None,
        })
        .unwrap();
    let acted_for = cancelled_at.duration_since(last_renewal);
    assert!(
        acted_for.unsigned_abs() < config.lease_duration,
        "a kept leading {acted_for:?} after its last renewal"
    );
    a.task.await.unwrap();
    assert!(log.has(&Event::Stopped("a".into())));

    env.faults().resume();
    wait_for("b to take over", || log.started("b")).await;
    assert_eq!(*log.max_leading.lock(), 1);
    b.stop.cancel();
    b.task.await.unwrap();
}

#[tokio::test]
async fn a_leader_that_sees_another_holder_stops_at_once() {
    let env = TestEnv::start().await.unwrap();
    let log = Log::default();
    // A long renew deadline: only noticing the intruder can end leadership this quickly.
    let config = LeaderElectionConfig {
        lease_duration: Duration::from_secs(60),
        renew_deadline: Duration::from_secs(50),
        retry_period: Duration::from_millis(200),
        ..fast_config(false)
    };
    let a = candidate(&env, "a", config, &log);
    wait_for("a to lead", || log.started("a")).await;

    // Someone else overwrites the lease (as a candidate with a skewed view might).
    let leases = Api::<Lease>::namespaced(env.client(), "default");
    let mut lease = lease(&env).await;
    if let Some(spec) = lease.spec.as_mut() {
        spec.holder_identity = Some("intruder".into());
    }
    leases
        .replace(LEASE, &Default::default(), &lease)
        .await
        .unwrap();

    wait_for("a to stop leading", || log.token_cancelled("a")).await;
    a.task.await.unwrap();
    assert!(!a.elector.is_leader());
    assert_eq!(a.elector.leader().as_deref(), Some("intruder"));
    assert!(log.has(&Event::Stopped("a".into())));
}
