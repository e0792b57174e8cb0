//! How the reflector answers watch errors (client-go's `TestBackoffOnTooManyRequests`,
//! `TestNoRelistOnTooManyRequests`, `TestRetryInternalError`): 429s and, within their window,
//! 500s re-watch from the last resource version without relisting; Retry-After is honoured;
//! past the window a 500 relists.

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::Api;
use rein_informer::{ApiListerWatcher, QueueKind, SharedIndexInformer};
use rein_testenv::{Fault, RequestRecord, TestEnv};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const INFORMER_PATH: &str = "/api/v1/configmaps";

/// Far above the tests' backoff (20–400 ms) and above how far the paused clock drifts while
/// requests are in flight on the server's thread (a few seconds over a whole test), so only a
/// reflector that honours Retry-After can take this long.
const RETRY_AFTER_SECS: u64 = 100;

fn informer_requests(env: &TestEnv) -> Vec<RequestRecord> {
    env.requests()
        .into_iter()
        .filter(|r| r.path == INFORMER_PATH)
        .collect()
}

fn lists(env: &TestEnv) -> usize {
    informer_requests(env)
        .iter()
        .filter(|r| !r.is_watch())
        .count()
}

fn watches_answered(env: &TestEnv, status: u16) -> usize {
    informer_requests(env)
        .iter()
        .filter(|r| r.is_watch() && r.status == status)
        .count()
}

/// A client without kube-client's own retry layer (which would absorb 429s, waiting out
/// Retry-After itself), so the reflector sees every error answer.
fn client_without_retries(env: &TestEnv) -> kube_client::Client {
    let mut config = env.config();
    config.default_retry = false;
    kube_client::Client::try_from(config).expect("client")
}

/// Starts an informer, waits for its sync and for one live event (so the watch is
/// established and not "very short" when the test closes it).
async fn synced_informer(
    env: &TestEnv,
    api: &Api<ConfigMap>,
    streaming: bool,
    max_internal_error_retry: Duration,
) -> (Arc<SharedIndexInformer<ConfigMap>>, CancellationToken) {
    let mut opts = options(QueueKind::RealFifo);
    opts.reflector.use_watch_list = streaming;
    opts.reflector.max_internal_error_retry_duration = max_internal_error_retry;
    synced_informer_with(env, api, opts).await
}

async fn synced_informer_with(
    env: &TestEnv,
    api: &Api<ConfigMap>,
    mut opts: rein_informer::InformerOptions,
) -> (Arc<SharedIndexInformer<ConfigMap>>, CancellationToken) {
    create(api, "before").await;
    let lw = ApiListerWatcher::<ConfigMap>::new(
        client_without_retries(env),
        crate::support::demo_objects(),
    );
    opts.queue = QueueKind::RealFifo;
    let inf = Arc::new(SharedIndexInformer::new(lw, opts));
    let stop = CancellationToken::new();
    {
        let inf = inf.clone();
        let stop = stop.clone();
        tokio::spawn(async move { inf.run(stop).await });
    }
    eventually(120, "initial sync", || inf.has_synced()).await;
    create(api, "live").await;
    eventually(120, "a live event", || {
        inf.indexer().get_by_key("default/live").is_some()
    })
    .await;
    // Keep the watch open past client-go's "very short watch" second.
    tokio::time::sleep(Duration::from_secs(2)).await;
    (inf, stop)
}

async fn four_429s_rewatch_without_relisting(streaming: bool) {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut opts = options(QueueKind::RealFifo);
    opts.reflector.use_watch_list = streaming;
    opts.reflector.max_internal_error_retry_duration = Duration::ZERO;
    // Raise the cap above the hint so the full Retry-After is obeyed.
    opts.reflector.max_retry_after = Duration::from_secs(2 * RETRY_AFTER_SECS);
    let (inf, stop) = synced_informer_with(&env, &api, opts).await;
    let lists_before = lists(&env);
    let watches_before = informer_requests(&env).len();

    let faults = env.faults();
    faults.inject(Fault::too_many_requests(4, RETRY_AFTER_SECS).matching(INFORMER_PATH));
    let t0 = Instant::now();
    faults.close_watches();
    create(&api, "after").await;
    eventually(3600, "the informer resumes watching", || {
        inf.indexer().get_by_key("default/after").is_some()
    })
    .await;

    assert_eq!(watches_answered(&env, 429), 4);
    assert_eq!(lists(&env), lists_before, "a 429 never causes a relist");
    let new: Vec<_> = informer_requests(&env).split_off(watches_before);
    assert!(
        new.iter()
            .all(|r| r.is_watch() && !r.has_query("sendInitialEvents", "true")),
        "only plain re-watches after the 429s: {new:?}"
    );
    assert_eq!(
        new.len(),
        5,
        "four refused watches, then one that worked: {new:?}"
    );
    // Each 429 carried a Retry-After far above the backoff, and each was waited out.
    assert!(
        t0.elapsed() >= Duration::from_secs(4 * RETRY_AFTER_SECS),
        "Retry-After honoured: {:?}",
        t0.elapsed()
    );
    stop.cancel();
}

/// Paged list + watch: exactly one LIST however many 429s the watch gets.
#[tokio::test(start_paused = true)]
async fn too_many_requests_on_watch_rewatch_list_watch() {
    four_429s_rewatch_without_relisting(false).await;
}

/// Streaming list: the 429s are answered by plain re-watches, not a new streaming list.
#[tokio::test(start_paused = true)]
async fn too_many_requests_on_watch_rewatch_streaming() {
    four_429s_rewatch_without_relisting(true).await;
}

/// A hostile Retry-After (an hour) is cut to `max_retry_after` (default 30 s): four 429s cost
/// four capped waits, not four hours, and still no relist.
#[tokio::test(start_paused = true)]
async fn retry_after_is_capped() {
    const HOSTILE_SECS: u64 = 3600;
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut opts = options(QueueKind::RealFifo);
    opts.reflector.use_watch_list = false;
    let cap = opts.reflector.max_retry_after;
    assert_eq!(cap, Duration::from_secs(30), "documented default");
    let (inf, stop) = synced_informer_with(&env, &api, opts).await;
    let lists_before = lists(&env);

    let faults = env.faults();
    faults.inject(Fault::too_many_requests(4, HOSTILE_SECS).matching(INFORMER_PATH));
    let t0 = Instant::now();
    faults.close_watches();
    create(&api, "after").await;
    eventually(4 * HOSTILE_SECS, "the informer resumes watching", || {
        inf.indexer().get_by_key("default/after").is_some()
    })
    .await;

    let waited = t0.elapsed();
    assert_eq!(watches_answered(&env, 429), 4);
    assert_eq!(lists(&env), lists_before, "a 429 never causes a relist");
    assert!(
        waited >= 4 * cap,
        "each capped wait is still obeyed: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(HOSTILE_SECS),
        "no single hostile Retry-After was obeyed: {waited:?}"
    );
    stop.cancel();
}

/// 500s on the watch within the retry window re-watch from the last resource version.
#[tokio::test(start_paused = true)]
async fn internal_errors_within_the_window_rewatch() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let (inf, stop) = synced_informer(&env, &api, false, Duration::from_secs(30)).await;
    let lists_before = lists(&env);

    let faults = env.faults();
    faults.inject(Fault::server_error(3).matching(INFORMER_PATH));
    faults.close_watches();
    create(&api, "after").await;
    eventually(120, "the informer resumes watching", || {
        inf.indexer().get_by_key("default/after").is_some()
    })
    .await;
    assert_eq!(watches_answered(&env, 500), 3);
    assert_eq!(
        lists(&env),
        lists_before,
        "500s within the window never relist"
    );
    stop.cancel();
}

/// Past the window, the reflector gives up re-watching and relists; once the server
/// recovers the cache converges.
#[tokio::test(start_paused = true)]
async fn internal_errors_past_the_window_relist() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    // A window and backoff far above the paused clock's drift while requests are in flight.
    let window = Duration::from_secs(300);
    let mut opts = options(QueueKind::RealFifo);
    opts.reflector.use_watch_list = false;
    opts.reflector.max_internal_error_retry_duration = window;
    opts.reflector.backoff.initial = Duration::from_secs(10);
    opts.reflector.backoff.max = Duration::from_secs(20);
    opts.reflector.backoff.jitter = 0.0;
    let (inf, stop) = synced_informer_with(&env, &api, opts).await;
    let lists_before = lists(&env);

    let faults = env.faults();
    faults.inject(Fault::server_error(usize::MAX).matching(INFORMER_PATH));
    let t0 = Instant::now();
    faults.close_watches();
    // Within the window (paused clock) the reflector only re-watches.
    tokio::time::sleep(window - Duration::from_secs(10)).await;
    assert_eq!(lists(&env), lists_before, "no relist within the window");
    eventually(3600, "a relist", || lists(&env) > lists_before).await;
    let relisted_after = t0.elapsed();
    let failed_watches = watches_answered(&env, 500);
    faults.clear();

    assert!(
        relisted_after >= window,
        "kept re-watching for the whole window: relisted after {relisted_after:?}"
    );
    assert!(
        failed_watches >= 2,
        "re-watched before giving up: {failed_watches}"
    );
    create(&api, "after").await;
    let want = server_state(&api).await;
    eventually(3600, "convergence", || {
        inf.indexer().len() == want.len() && inf.indexer().get_by_key("default/after").is_some()
    })
    .await;
    stop.cancel();
}

/// With no window (client-go's default), the first 500 on the watch relists.
#[tokio::test(start_paused = true)]
async fn internal_error_without_a_window_relists() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let (inf, stop) = synced_informer(&env, &api, false, Duration::ZERO).await;
    let lists_before = lists(&env);

    let faults = env.faults();
    faults.inject(Fault::server_error(1).matching(INFORMER_PATH));
    faults.close_watches();
    eventually(120, "a relist", || lists(&env) > lists_before).await;
    assert_eq!(watches_answered(&env, 500), 1);
    create(&api, "after").await;
    eventually(120, "the informer follows again", || {
        inf.indexer().get_by_key("default/after").is_some()
    })
    .await;
    stop.cancel();
}

/// A watch the server ends normally (timeout, restart) is resumed without a relist.
#[tokio::test(start_paused = true)]
async fn closed_watch_rewatches_without_relisting() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let (inf, stop) = synced_informer(&env, &api, false, Duration::ZERO).await;
    let lists_before = lists(&env);
    for round in 0..3 {
        env.faults().close_watches();
        let name = format!("after-{round}");
        create(&api, &name).await;
        eventually(120, "the informer follows", || {
            inf.indexer()
                .get_by_key(&format!("default/{name}"))
                .is_some()
        })
        .await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    assert_eq!(lists(&env), lists_before, "normal closes never relist");
    stop.cancel();
}

/// client-go `TestRetryInternalError` ("retries off"): a watch that the server ends with an
/// ERROR event (500 InternalError, as when etcd loses its leader) ends the list-and-watch
/// cycle without an error — the error handler is not called — and the next cycle relists.
/// With retries on, the same event re-watches from the last resource version instead.
#[tokio::test(start_paused = true)]
async fn an_error_event_ends_the_cycle_without_an_error() {
    for retry_window in [Duration::ZERO, Duration::from_secs(30)] {
        let env = TestEnv::start().await.expect("testenv");
        let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
        create(&api, "before").await;
        let mut opts = options(QueueKind::RealFifo);
        opts.reflector.use_watch_list = false;
        opts.reflector.max_internal_error_retry_duration = retry_window;
        let lw = ApiListerWatcher::<ConfigMap>::new(
            client_without_retries(&env),
            crate::support::demo_objects(),
        );
        let inf = Arc::new(SharedIndexInformer::new(lw, opts));
        let handled = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        {
            let handled = handled.clone();
            inf.set_watch_error_handler(move |_| {
                handled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
            .expect("before start");
        }
        let stop = CancellationToken::new();
        {
            let inf = inf.clone();
            let stop = stop.clone();
            tokio::spawn(async move { inf.run(stop).await });
        }
        eventually(120, "initial sync", || inf.has_synced()).await;
        // A live event: the watch is open on the server.
        create(&api, "live").await;
        eventually(120, "a live event", || {
            inf.indexer().get_by_key("default/live").is_some()
        })
        .await;
        // Past the "very short watch" second, so only the ERROR event ends the stream.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let lists_before = lists(&env);
        let watches_before = informer_requests(&env)
            .iter()
            .filter(|r| r.is_watch())
            .count();

        env.faults().fail_watches(500);
        eventually(120, "a new watch", || {
            informer_requests(&env)
                .iter()
                .filter(|r| r.is_watch())
                .count()
                > watches_before
        })
        .await;
        create(&api, "after").await;
        eventually(120, "the informer follows again", || {
            inf.indexer().get_by_key("default/after").is_some()
        })
        .await;
        let relisted = lists(&env) > lists_before;
        if retry_window.is_zero() {
            assert!(
                relisted,
                "retries off: the next cycle relists: {:?} {:?}",
                informer_requests(&env),
                inf.status()
            );
        } else {
            assert!(!relisted, "retries on: re-watched without a relist");
        }
        assert_eq!(
            handled.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "the cycle ended without an error (window {retry_window:?})"
        );
        let status = inf.status().reflector.expect("running");
        assert!(
            status
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains("code 500")),
            "the error is recorded: {status:?}"
        );
        stop.cancel();
    }
}
