//! Unit tests of runnable groups and options (no API server needed).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rein_controller::Runnable;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::group::{Group, Stopped, wait_for};
use super::*;

fn counting(started: &Arc<AtomicUsize>, linger: Duration) -> Arc<dyn Runnable> {
    let started = started.clone();
    Arc::new(RunnableFn::new(move |stop: CancellationToken| {
        let started = started.clone();
        async move {
            started.fetch_add(1, Ordering::SeqCst);
            stop.cancelled().await;
            tokio::time::sleep(linger).await;
            Ok(())
        }
    }))
}

#[test]
fn default_options_match_controller_runtime() {
    let options = Options::default();
    assert_eq!(
        options.graceful_shutdown_timeout,
        Some(Duration::from_secs(30))
    );
    assert!(options.leader_election.is_none());
    assert!(options.health_probes.is_none());
    assert!(options.metrics.is_none());
    assert!(options.cache.default_transform.is_some());
    let le = LeaderElectionOptions::new("my-lock");
    assert_eq!(le.config.lease_duration, Duration::from_secs(15));
    assert_eq!(le.config.renew_deadline, Duration::from_secs(10));
    assert_eq!(le.config.retry_period, Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn group_queues_until_started_then_starts_additions_at_once() {
    let started = Arc::new(AtomicUsize::new(0));
    let (errors, _rx) = mpsc::unbounded_channel();
    let mut group = Group::new("test");
    assert!(group.add(counting(&started, Duration::ZERO)));
    tokio::task::yield_now().await;
    assert_eq!(started.load(Ordering::SeqCst), 0);

    group.start(CancellationToken::new(), errors);
    assert!(group.add(counting(&started, Duration::ZERO)));
    let deadline = Instant::now() + Duration::from_secs(5);
    while started.load(Ordering::SeqCst) < 2 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    let tasks = group.begin_stop();
    assert_eq!(wait_for(tasks, None).await, Stopped::InTime);
    assert!(
        !group.add(counting(&started, Duration::ZERO)),
        "stopping groups refuse runnables"
    );
}

#[tokio::test(start_paused = true)]
async fn slow_runnables_are_aborted_at_the_deadline() {
    let started = Arc::new(AtomicUsize::new(0));
    let (errors, _rx) = mpsc::unbounded_channel();
    let mut group = Group::new("test");
    group.add(counting(&started, Duration::from_secs(1)));
    group.add(counting(&started, Duration::from_secs(60)));
    group.start(CancellationToken::new(), errors);
    while started.load(Ordering::SeqCst) < 2 {
        tokio::task::yield_now().await;
    }
    let begun = Instant::now();
    let tasks = group.begin_stop();
    let outcome = wait_for(tasks, Some(begun + Duration::from_secs(5))).await;
    assert_eq!(outcome, Stopped::TimedOut);
    assert_eq!(begun.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn failing_and_panicking_runnables_report_errors() {
    let (errors, mut rx) = mpsc::unbounded_channel();
    let mut group = Group::new("test");
    group.add(Arc::new(RunnableFn::new(|_stop| async {
        Err::<(), BoxError>("boom".into())
    })));
    group.add(Arc::new(RunnableFn::new(explode)));
    group.start(CancellationToken::new(), errors);
    let mut messages = vec![
        rx.recv().await.unwrap().to_string(),
        rx.recv().await.unwrap().to_string(),
    ];
    messages.sort();
    assert_eq!(messages, ["boom", "runnable panicked: kaboom"]);
}

#[test]
fn runnable_fn_says_whether_it_needs_leader_election() {
    let leader = RunnableFn::new(|_stop| async { Ok(()) });
    assert!(leader.needs_leader_election());
    assert!(!leader.without_leader_election().needs_leader_election());
}

async fn explode(_stop: CancellationToken) -> Result<(), BoxError> {
    panic!("kaboom")
}

fn unreachable_config() -> kube_client::Config {
    kube_client::Config::new("http://127.0.0.1:9".parse().unwrap())
}

#[tokio::test]
async fn leader_election_options_are_checked_at_build_time() {
    let build = |le: LeaderElectionOptions| async move {
        Manager::builder(unreachable_config())
            .options(Options::default().leader_election(le))
            .build()
            .await
    };
    assert!(matches!(
        build(LeaderElectionOptions::new("").namespace("default")).await,
        Err(Error::MissingLeaderElectionId)
    ));
    // Outside a cluster there is no namespace to default to.
    if crate::config::in_cluster_namespace().is_none() {
        assert!(matches!(
            build(LeaderElectionOptions::new("lock")).await,
            Err(Error::MissingLeaderElectionNamespace)
        ));
    }
    let bad = crate::leaderelection::LeaderElectionConfig {
        renew_deadline: Duration::from_secs(20),
        ..Default::default()
    };
    let err = build(
        LeaderElectionOptions::new("lock")
            .namespace("default")
            .config(bad),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::LeaderElection(_)), "{err:?}");
    assert!(
        build(LeaderElectionOptions::new("lock").namespace("default"))
            .await
            .is_ok()
    );
}
