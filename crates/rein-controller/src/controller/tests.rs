//! Unit tests for the controller's worker loop, with tokio's paused clock.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::reconcile::{TerminalError, reconciler_fn};

/// Waits (in virtual time) until `cond` holds.
async fn until(cond: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(3600), async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("condition never became true");
}

fn start(
    c: &Controller,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<Result<(), BoxError>>,
) {
    let stop = CancellationToken::new();
    let c = c.clone();
    let s = stop.clone();
    (stop, tokio::spawn(async move { c.start(s).await }))
}

#[derive(Default)]
struct Log {
    calls: Mutex<Vec<(Request, Instant)>>,
}

impl Log {
    fn count(&self) -> usize {
        self.calls.lock().len()
    }
    fn times(&self) -> Vec<Instant> {
        self.calls.lock().iter().map(|(_, t)| *t).collect()
    }
}

#[test]
fn names_are_validated_and_unique() {
    let r = || reconciler_fn(|_, _| async { Ok::<_, BoxError>(Action::done()) });
    assert!(matches!(
        Controller::new("", r(), ControllerOptions::default()),
        Err(Error::EmptyName)
    ));
    assert!(matches!(
        Controller::new("has space", r(), ControllerOptions::default()),
        Err(Error::InvalidName { .. })
    ));
    let first = Controller::new("unique-name-test", r(), ControllerOptions::default()).unwrap();
    assert!(matches!(
        Controller::new("unique-name-test", r(), ControllerOptions::default()),
        Err(Error::DuplicateName { .. })
    ));
    let skip = ControllerOptions {
        skip_name_validation: true,
        ..ControllerOptions::default()
    };
    Controller::new("unique-name-test", r(), skip).unwrap();
    // A name is unique among live controllers: dropping one gives it back.
    drop(first);
    let again = Controller::new("unique-name-test", r(), ControllerOptions::default()).unwrap();
    // Scopes are separate: a manager's (here a fresh one) does not see the process's names.
    let scope = crate::ControllerNames::new();
    let scoped = Controller::new_in(
        "unique-name-test",
        r(),
        ControllerOptions::default(),
        &scope,
    )
    .unwrap();
    assert!(scope.contains("unique-name-test"));
    assert!(matches!(
        Controller::new_in(
            "unique-name-test",
            r(),
            ControllerOptions::default(),
            &scope
        ),
        Err(Error::DuplicateName { .. })
    ));
    drop((again, scoped));
    assert!(!scope.contains("unique-name-test"));
}

#[tokio::test(start_paused = true)]
async fn a_burst_for_one_key_gives_one_reconcile() {
    let log = Arc::new(Log::default());
    let l = log.clone();
    let c = Controller::new(
        "burst",
        reconciler_fn(move |_, req| {
            let l = l.clone();
            async move {
                l.calls.lock().push((req, Instant::now()));
                Ok::<_, BoxError>(Action::done())
            }
        }),
        ControllerOptions::default(),
    )
    .unwrap();
    for _ in 0..100 {
        c.queue().add(Request::new("ns", "a"));
    }
    let (stop, handle) = start(&c);
    until(|| log.count() == 1).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(log.count(), 1);
    stop.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn workers_run_concurrently_but_never_one_key_twice() {
    let active: Arc<Mutex<HashSet<Request>>> = Arc::default();
    let max_seen = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let (a, m, d) = (active.clone(), max_seen.clone(), done.clone());
    let c = Controller::new(
        "concurrency",
        reconciler_fn(move |_, req: Request| {
            let (a, m, d) = (a.clone(), m.clone(), d.clone());
            async move {
                {
                    let mut set = a.lock();
                    assert!(set.insert(req.clone()), "{req} reconciled twice at once");
                    m.fetch_max(set.len(), Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                a.lock().remove(&req);
                d.fetch_add(1, Ordering::SeqCst);
                Ok::<_, BoxError>(Action::done())
            }
        }),
        ControllerOptions {
            max_concurrent_reconciles: 4,
            ..ControllerOptions::default()
        },
    )
    .unwrap();
    let (stop, handle) = start(&c);
    // Keys re-added while in flight must wait for their reconcile to finish.
    for round in 0..5 {
        for i in 0..8 {
            c.queue().add(Request::new("ns", format!("k{i}")));
        }
        until(|| done.load(Ordering::SeqCst) >= (round + 1) * 8 - 4).await;
    }
    until(|| c.queue().is_empty() && c.queue().in_flight() == 0).await;
    assert_eq!(max_seen.load(Ordering::SeqCst), 4);
    stop.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn requeue_after_comes_back_after_the_delay() {
    let log = Arc::new(Log::default());
    let l = log.clone();
    let c = Controller::new(
        "requeue-after",
        reconciler_fn(move |_, req| {
            let l = l.clone();
            async move {
                l.calls.lock().push((req, Instant::now()));
                Ok::<_, BoxError>(Action::requeue_after(Duration::from_secs(30)))
            }
        }),
        ControllerOptions::default(),
    )
    .unwrap();
    c.queue().add(Request::new("ns", "a"));
    let (stop, handle) = start(&c);
    until(|| log.count() == 3).await;
    let t = log.times();
    assert_eq!(t[1] - t[0], Duration::from_secs(30));
    assert_eq!(t[2] - t[1], Duration::from_secs(30));
    stop.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn errors_back_off_exponentially_and_success_forgets() {
    let log = Arc::new(Log::default());
    let l = log.clone();
    let c = Controller::new(
        "backoff",
        reconciler_fn(move |_, req| {
            let l = l.clone();
            async move {
                let n = {
                    let mut calls = l.calls.lock();
                    calls.push((req, Instant::now()));
                    calls.len()
                };
                if n <= 5 {
                    Err::<Action, BoxError>("not yet".into())
                } else {
                    Ok(Action::done())
                }
            }
        }),
        ControllerOptions::default(),
    )
    .unwrap();
    let req = Request::new("ns", "a");
    c.queue().add(req.clone());
    let (stop, handle) = start(&c);
    until(|| log.count() == 6).await;
    let t = log.times();
    let gaps: Vec<Duration> = t.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        gaps,
        [5, 10, 20, 40, 80].map(Duration::from_millis).to_vec()
    );
    until(|| c.queue().in_flight() == 0).await;
    assert_eq!(c.queue().num_requeues(&req), 0);
    stop.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn terminal_errors_are_not_retried() {
    let log = Arc::new(Log::default());
    let l = log.clone();
    let c = Controller::new(
        "terminal",
        reconciler_fn(move |_, req| {
            let l = l.clone();
            async move {
                l.calls.lock().push((req, Instant::now()));
                Err::<Action, _>(TerminalError::new("spec is invalid"))
            }
        }),
        ControllerOptions::default(),
    )
    .unwrap();
    c.queue().add(Request::new("ns", "a"));
    let (stop, handle) = start(&c);
    until(|| log.count() == 1).await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(log.count(), 1);
    assert_eq!(c.inner.metrics.terminal.get(), 1);
    stop.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_panicking_reconcile_is_recovered_and_retried() {
    let log = Arc::new(Log::default());
    let l = log.clone();
    let c = Controller::new(
        "panics",
        reconciler_fn(move |_, req: Request| {
            let l = l.clone();
            async move {
                let n = {
                    let mut calls = l.calls.lock();
                    calls.push((req.clone(), Instant::now()));
                    calls.len()
                };
                if n == 1 {
                    panic!("reconciling {req} blew up");
                }
                Ok::<_, BoxError>(Action::done())
            }
        }),
        ControllerOptions::default(),
    )
    .unwrap();
    c.queue().add(Request::new("ns", "a"));
    let (stop, handle) = start(&c);
    until(|| log.count() == 2).await;
    let t = log.times();
    assert_eq!(t[1] - t[0], Duration::from_millis(5));
    assert_eq!(c.inner.metrics.panics.get(), 1);
    // Still alive: a new request is reconciled.
    c.queue().add(Request::new("ns", "b"));
    until(|| log.count() == 3).await;
    stop.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn stop_waits_for_running_reconciles() {
    let entered = Arc::new(Notify::new());
    let finished = Arc::new(AtomicUsize::new(0));
    let (e, f) = (entered.clone(), finished.clone());
    let c = Controller::new(
        "drain",
        reconciler_fn(move |_, _| {
            let (e, f) = (e.clone(), f.clone());
            async move {
                e.notify_one();
                tokio::time::sleep(Duration::from_secs(5)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok::<_, BoxError>(Action::done())
            }
        }),
        ControllerOptions::default(),
    )
    .unwrap();
    c.queue().add(Request::new("ns", "a"));
    c.queue().add(Request::new("ns", "b"));
    let (stop, handle) = start(&c);
    entered.notified().await;
    stop.cancel();
    handle.await.unwrap().unwrap();
    // The running reconcile finished; the queued one was not started.
    assert_eq!(finished.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn stop_gives_up_after_the_graceful_timeout() {
    let c = Controller::new(
        "drain-timeout",
        reconciler_fn(|_, _| async {
            std::future::pending::<()>().await;
            Ok::<_, BoxError>(Action::done())
        }),
        ControllerOptions {
            graceful_shutdown_timeout: Duration::from_secs(2),
            ..ControllerOptions::default()
        },
    )
    .unwrap();
    c.queue().add(Request::new("ns", "a"));
    let (stop, handle) = start(&c);
    until(|| c.queue().in_flight() == 1).await;
    stop.cancel();
    let err = handle.await.unwrap().unwrap_err();
    assert!(err.to_string().contains("still running"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn starting_twice_is_an_error() {
    let c = Controller::new(
        "twice",
        reconciler_fn(|_, _| async { Ok::<_, BoxError>(Action::done()) }),
        ControllerOptions::default(),
    )
    .unwrap();
    let (stop, handle) = start(&c);
    tokio::task::yield_now().await;
    let err = c.start(CancellationToken::new()).await.unwrap_err();
    assert!(err.to_string().contains("more than once"), "{err}");
    stop.cancel();
    handle.await.unwrap().unwrap();
    assert!(c.needs_leader_election());
}

/// A custom source that never syncs, or fails to start.
struct StuckSource {
    fail: bool,
}

#[async_trait::async_trait]
impl Source<k8s_openapi::api::core::v1::Pod> for StuckSource {
    async fn start(
        &self,
        _sink: crate::source::EventSink<k8s_openapi::api::core::v1::Pod>,
        _stop: CancellationToken,
    ) -> Result<(), BoxError> {
        if self.fail {
            return Err("cannot connect".into());
        }
        Ok(())
    }

    async fn wait_for_sync(&self, stop: CancellationToken) -> Result<(), BoxError> {
        stop.cancelled().await;
        Ok(())
    }

    fn describe(&self) -> String {
        "stuck source".into()
    }
}

#[tokio::test(start_paused = true)]
async fn a_source_that_never_syncs_times_out() {
    let c = Controller::new(
        "sync-timeout",
        reconciler_fn(|_, _| async { Ok::<_, BoxError>(Action::done()) }),
        ControllerOptions {
            cache_sync_timeout: Duration::from_secs(5),
            ..ControllerOptions::default()
        },
    )
    .unwrap();
    c.watch(
        StuckSource { fail: false },
        crate::handler::EnqueueRequestForObject,
        vec![],
    );
    let started = Instant::now();
    let err = c.start(CancellationToken::new()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert!(err.to_string().contains("stuck source"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_source_that_fails_to_start_fails_the_controller() {
    let c = Controller::new(
        "source-fails",
        reconciler_fn(|_, _| async { Ok::<_, BoxError>(Action::done()) }),
        ControllerOptions::default(),
    )
    .unwrap();
    c.watch(
        StuckSource { fail: true },
        crate::handler::EnqueueRequestForObject,
        vec![],
    );
    let err = c.start(CancellationToken::new()).await.unwrap_err();
    assert!(matches!(
        err.downcast_ref::<Error>(),
        Some(Error::SourceStart { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn a_reconcile_past_its_timeout_is_retried() {
    let log = Arc::new(Log::default());
    let l = log.clone();
    let c = Controller::new(
        "reconcile-timeout",
        reconciler_fn(move |_, req| {
            let l = l.clone();
            async move {
                let n = {
                    let mut calls = l.calls.lock();
                    calls.push((req, Instant::now()));
                    calls.len()
                };
                if n == 1 {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Ok::<_, BoxError>(Action::done())
            }
        }),
        ControllerOptions {
            reconciliation_timeout: Some(Duration::from_secs(1)),
            ..ControllerOptions::default()
        },
    )
    .unwrap();
    c.queue().add(Request::new("ns", "slow"));
    let (stop, handle) = start(&c);
    until(|| log.count() == 2).await;
    let t = log.times();
    assert_eq!(t[1] - t[0], Duration::from_millis(1005));
    assert_eq!(
        c.inner.metrics.timeouts.get(),
        1,
        "reconcile_timeouts_total"
    );
    stop.cancel();
    handle.await.unwrap().unwrap();
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn logs_inside_a_reconcile_carry_its_span() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let calls = Arc::new(AtomicUsize::new(0));
    let n = calls.clone();
    let c = Controller::new(
        "span-test",
        reconciler_fn(move |ctx, req| {
            let n = n.clone();
            async move {
                tracing::info!(id = ctx.reconcile_id(), "user log for {}", req.key.name);
                if n.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err::<Action, BoxError>("first attempt fails".into());
                }
                Ok(Action::done())
            }
        }),
        ControllerOptions::default(),
    )
    .unwrap();
    c.queue().add(Request::new("ns", "traced"));
    let (stop, handle) = start(&c);
    until(|| calls.load(Ordering::SeqCst) == 2).await;
    stop.cancel();
    handle.await.unwrap().unwrap();
    let text = String::from_utf8(captured.0.lock().clone()).unwrap();
    let line = |needle: &str| {
        text.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
            .to_owned()
    };
    let first = line("user log for traced id=1");
    assert!(
        first.contains(
            r#"reconcile{controller=span-test namespace="ns" name=traced reconcile_id=1}"#
        ),
        "{first}"
    );
    let error = line("reconciler error; requeueing with backoff");
    assert!(error.contains("reconcile_id=1}"), "{error}");
    assert!(error.contains("first attempt fails"), "{error}");
    let second = line("user log for traced id=2");
    assert!(second.contains("reconcile_id=2}"), "{second}");
}

#[tokio::test(start_paused = true)]
async fn a_queue_snapshot_shows_waiting_in_flight_and_backing_off_requests() {
    let release = Arc::new(Notify::new());
    let failed = Arc::new(AtomicUsize::new(0));
    let busy = Arc::new(AtomicUsize::new(0));
    let (r, f, b) = (release.clone(), failed.clone(), busy.clone());
    let c = Controller::new(
        "introspected",
        reconciler_fn(move |_, req: Request| {
            let (r, f, b) = (r.clone(), f.clone(), b.clone());
            async move {
                match req.key.name.as_str() {
                    "bad" => {
                        f.fetch_add(1, Ordering::SeqCst);
                        Err::<Action, BoxError>("always fails".into())
                    }
                    "busy" => {
                        b.fetch_add(1, Ordering::SeqCst);
                        r.notified().await;
                        Ok(Action::done())
                    }
                    _ => Ok(Action::done()),
                }
            }
        }),
        ControllerOptions {
            max_concurrent_reconciles: 1,
            rate_limiter: Some(Arc::new(
                rein_workqueue::ExponentialFailureRateLimiter::new(
                    Duration::from_secs(10),
                    Duration::from_secs(100),
                ),
            )),
            ..ControllerOptions::default()
        },
    )
    .unwrap();
    c.queue().add(Request::new("ns", "bad"));
    c.queue().add(Request::new("ns", "busy"));
    let (stop, handle) = start(&c);
    until(|| failed.load(Ordering::SeqCst) == 1 && busy.load(Ordering::SeqCst) == 1).await;
    c.queue().add(Request::new("ns", "next"));
    tokio::time::advance(Duration::from_secs(3)).await;

    let snapshot = c.queue_snapshot();
    assert_eq!(snapshot.controller, "introspected");
    let keys =
        |it: &mut dyn Iterator<Item = &rein_workqueue::ItemSnapshot<Request>>| -> Vec<String> {
            it.map(|i| i.item.to_string()).collect()
        };
    assert_eq!(keys(&mut snapshot.waiting()), ["ns/next"]);
    assert_eq!(keys(&mut snapshot.in_flight()), ["ns/busy"]);
    assert_eq!(keys(&mut snapshot.backing_off()), ["ns/bad"]);
    let json = snapshot.to_json();
    assert_eq!(json["inFlight"][0]["key"], "ns/busy");
    assert!(
        json["inFlight"][0]["seconds"].as_f64().unwrap() >= 3.0,
        "{json}"
    );
    assert_eq!(json["backoff"][0]["failures"], 1, "{json}");
    let next = json["backoff"][0]["nextAttemptInSeconds"].as_f64().unwrap();
    assert!(next > 0.0 && next <= 7.0, "{json}");
    assert!(
        crate::queue_snapshots()
            .iter()
            .any(|s| s.controller == "introspected" && s.in_flight().count() == 1),
        "the process-wide view has it"
    );

    release.notify_one();
    stop.cancel();
    handle.await.unwrap().unwrap();
}

/// A source that counts its starts and, once started, delivers one Pod `ns/warm`.
struct CountingSource {
    starts: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Source<k8s_openapi::api::core::v1::Pod> for CountingSource {
    async fn start(
        &self,
        sink: crate::source::EventSink<k8s_openapi::api::core::v1::Pod>,
        _stop: CancellationToken,
    ) -> Result<(), BoxError> {
        self.starts.fetch_add(1, Ordering::SeqCst);
        let mut pod = k8s_openapi::api::core::v1::Pod::default();
        pod.metadata.name = Some("warm".into());
        pod.metadata.namespace = Some("ns".into());
        sink.generic(&crate::event::GenericEvent::new(pod));
        Ok(())
    }

    fn describe(&self) -> String {
        "counting source".into()
    }
}

fn warm_controller(name: &str, enable_warmup: bool) -> (Controller, Arc<Log>, Arc<AtomicUsize>) {
    let log = Arc::new(Log::default());
    let l = log.clone();
    let c = Controller::new(
        name,
        reconciler_fn(move |_, req| {
            let l = l.clone();
            async move {
                l.calls.lock().push((req, Instant::now()));
                Ok::<_, BoxError>(Action::done())
            }
        }),
        ControllerOptions {
            enable_warmup,
            ..ControllerOptions::default()
        },
    )
    .unwrap();
    let starts = Arc::new(AtomicUsize::new(0));
    c.watch(
        CountingSource {
            starts: starts.clone(),
        },
        crate::handler::EnqueueRequestForObject,
        Vec::new(),
    );
    (c, log, starts)
}

#[tokio::test(start_paused = true)]
async fn warm_up_starts_the_sources_but_not_the_workers() {
    let (c, log, starts) = warm_controller("warm-up", true);
    let warm = CancellationToken::new();
    c.warm_up(warm.clone()).await.unwrap();
    assert_eq!(starts.load(Ordering::SeqCst), 1);
    // The event is queued, and nothing reconciles it before the controller starts.
    assert_eq!(c.queue().len(), 1);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(log.count(), 0);

    let (stop, handle) = start(&c);
    until(|| log.count() == 1).await;
    assert_eq!(log.calls.lock()[0].0, Request::new("ns", "warm"));
    // Started once, by the warm-up.
    assert_eq!(starts.load(Ordering::SeqCst), 1);
    stop.cancel();
    handle.await.unwrap().unwrap();
    warm.cancel();
}

#[tokio::test(start_paused = true)]
async fn without_enable_warmup_warm_up_starts_nothing() {
    let (c, log, starts) = warm_controller("no-warm-up", false);
    c.warm_up(CancellationToken::new()).await.unwrap();
    assert_eq!(starts.load(Ordering::SeqCst), 0);
    assert_eq!(c.queue().len(), 0);
    let (stop, handle) = start(&c);
    until(|| log.count() == 1).await;
    assert_eq!(starts.load(Ordering::SeqCst), 1);
    stop.cancel();
    handle.await.unwrap().unwrap();
}
