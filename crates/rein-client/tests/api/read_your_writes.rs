//! Read-your-own-writes against rein-testenv: with the cache's watch held back by fault
//! injection, a read after a write through the same client sees the write (and, with the
//! option off, provably does not); deletes, status writes, lists, and the bounded wait.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, PodStatus};
use rein_client::cache::{Cache, CacheOptions};
use rein_client::metrics::{WaitOutcome, read_your_writes_waits};
use rein_client::{
    Client, ClientOptions, Error, ListOptions, OnTimeout, Patch, PatchParams, PostParams,
    ReadYourWrites,
};
use rein_scheme::ObjectKey;
use rein_testenv::{Fault, TestEnv};
use tokio_util::sync::CancellationToken;

use crate::support::{config_map, pod};

/// A started cache and two clients over it: `on` (read-your-own-writes, with a wait long
/// enough for the informer's reconnect backoff) and `off`.
struct Rig {
    env: TestEnv,
    cache: Cache,
    on: Client,
    off: Client,
    stop: CancellationToken,
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Rig {
    async fn start() -> Rig {
        let env = TestEnv::start().await.unwrap();
        let cache = Cache::new(env.client(), CacheOptions::default());
        let on = Rig::client(
            &env,
            &cache,
            ReadYourWrites::default().timeout(Duration::from_secs(60)),
        );
        let off = Rig::client(&env, &cache, ReadYourWrites::disabled());
        let stop = CancellationToken::new();
        tokio::spawn({
            let (cache, stop) = (cache.clone(), stop.clone());
            async move { cache.start(stop).await }
        });
        assert!(cache.wait_for_cache_sync().await);
        // Start (and sync) the informers the tests write to.
        on.list::<ConfigMap>(&ListOptions::default()).await.unwrap();
        on.list::<Pod>(&ListOptions::default()).await.unwrap();
        Rig {
            env,
            cache,
            on,
            off,
            stop,
        }
    }

    fn client(env: &TestEnv, cache: &Cache, ryow: ReadYourWrites) -> Client {
        Client::builder(env.client())
            .cache(cache.clone())
            .options(ClientOptions::default().read_your_writes(ryow))
            .build()
    }

    /// Holds back the cache's watch of `collection` (e.g. `/api/v1/configmaps`): its stream
    /// ends now and every new watch or list of the collection fails until [`Rig::release`].
    /// Writes go to namespaced paths and are not affected.
    fn hold(&self, collection: &str) {
        self.env
            .faults()
            .inject(Fault::server_error(100_000).matching(collection));
        self.env.faults().close_watches();
    }

    /// Lets the cache's informers reconnect (after their backoff step) and catch up.
    fn release(&self) {
        self.env.faults().clear();
    }
}

/// Runs `read` in a task and checks it is still waiting a moment later (the watch is held, so
/// it cannot have caught up; this only proves it did not answer stale at once).
async fn still_waiting<T: Send + 'static>(
    read: impl Future<Output = T> + Send + 'static,
) -> tokio::task::JoinHandle<T> {
    let read = tokio::spawn(read);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !read.is_finished(),
        "the read answered while the watch was held back"
    );
    read
}

fn data(cm: &ConfigMap) -> Option<&str> {
    cm.data.as_ref()?.get("v").map(String::as_str)
}

#[tokio::test]
async fn a_create_then_get_sees_the_write_and_without_the_option_does_not() {
    let rig = Rig::start().await;
    rig.hold("/api/v1/configmaps");

    // Off: the read answers from a cache that has not seen the create.
    rig.off
        .create(
            &config_map("default", "off", &[("v", "1")]),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let stale = rig
        .off
        .get::<ConfigMap>(&ObjectKey::new("default", "off"))
        .await
        .unwrap_err();
    assert!(stale.is_not_found(), "{stale}");

    // On: the read waits until the cache has the created object.
    let before = read_your_writes_waits("ConfigMap", "get", WaitOutcome::CaughtUp);
    let created = rig
        .on
        .create(
            &config_map("default", "on", &[("v", "1")]),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let on = rig.on.clone();
    let read =
        still_waiting(async move { on.get::<ConfigMap>(&ObjectKey::new("default", "on")).await })
            .await;
    rig.release();
    let seen = read.await.unwrap().unwrap();
    assert_eq!(
        seen.metadata.resource_version,
        created.metadata.resource_version
    );
    assert!(read_your_writes_waits("ConfigMap", "get", WaitOutcome::CaughtUp) > before);
}

#[tokio::test]
async fn an_update_then_get_sees_the_new_version() {
    let rig = Rig::start().await;
    let mut cm = rig
        .on
        .create(
            &config_map("default", "cm", &[("v", "1")]),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let key = ObjectKey::new("default", "cm");
    assert_eq!(
        data(&rig.on.get::<ConfigMap>(&key).await.unwrap()),
        Some("1")
    );
    rig.hold("/api/v1/configmaps");

    cm.data = Some([("v".to_string(), "2".to_string())].into());
    rig.off.update(&cm, &PostParams::default()).await.unwrap();
    let stale = rig.off.get::<ConfigMap>(&key).await.unwrap();
    assert_eq!(
        data(&stale),
        Some("1"),
        "off: the cache still has version 1"
    );

    let patch = Patch::Merge(serde_json::json!({"data": {"v": "3"}}));
    rig.on
        .patch::<ConfigMap, _>(&key, &patch, &PatchParams::default())
        .await
        .unwrap();
    let on = rig.on.clone();
    let k = key.clone();
    let read = still_waiting(async move { on.get::<ConfigMap>(&k).await }).await;
    rig.release();
    assert_eq!(data(&read.await.unwrap().unwrap()), Some("3"));
}

#[tokio::test]
async fn a_delete_then_get_sees_it_gone() {
    let rig = Rig::start().await;
    for name in ["a", "b"] {
        rig.on
            .create(&config_map("default", name, &[]), &PostParams::default())
            .await
            .unwrap();
        rig.on
            .get::<ConfigMap>(&ObjectKey::new("default", name))
            .await
            .unwrap();
    }
    rig.hold("/api/v1/configmaps");

    let a = ObjectKey::new("default", "a");
    rig.off
        .delete::<ConfigMap>(&a, &Default::default())
        .await
        .unwrap();
    assert!(
        rig.off.get::<ConfigMap>(&a).await.is_ok(),
        "off: the cache still holds the deleted object"
    );

    let b = ObjectKey::new("default", "b");
    rig.on
        .delete::<ConfigMap>(&b, &Default::default())
        .await
        .unwrap();
    let on = rig.on.clone();
    let k = b.clone();
    let read = still_waiting(async move { on.get::<ConfigMap>(&k).await }).await;
    rig.release();
    let gone = read.await.unwrap().unwrap_err();
    assert!(gone.is_not_found(), "{gone}");
}

#[tokio::test]
async fn a_status_write_then_get_sees_the_status() {
    let rig = Rig::start().await;
    let created = rig
        .on
        .create(&pod("default", "p", &[]), &PostParams::default())
        .await
        .unwrap();
    let key = ObjectKey::new("default", "p");
    rig.on.get::<Pod>(&key).await.unwrap();
    rig.hold("/api/v1/pods");

    let phase = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.clone());
    let mut running = created.clone();
    running.status = Some(PodStatus {
        phase: Some("Running".into()),
        ..Default::default()
    });
    rig.off
        .status()
        .update(&running, &PostParams::default())
        .await
        .unwrap();
    assert_eq!(
        phase(&rig.off.get::<Pod>(&key).await.unwrap()),
        phase(&created),
        "off: the cache still has the status before the write"
    );

    let patch = Patch::Merge(serde_json::json!({"status": {"phase": "Succeeded"}}));
    rig.on
        .status()
        .patch::<Pod, _>(&key, &patch, &PatchParams::default())
        .await
        .unwrap();
    let on = rig.on.clone();
    let k = key.clone();
    let read = still_waiting(async move { on.get::<Pod>(&k).await }).await;
    rig.release();
    assert_eq!(
        phase(&read.await.unwrap().unwrap()).as_deref(),
        Some("Succeeded")
    );
}

#[tokio::test]
async fn a_list_waits_for_every_write_of_the_kind_in_its_namespace() {
    let rig = Rig::start().await;
    rig.hold("/api/v1/configmaps");
    rig.off
        .create(&config_map("default", "off", &[]), &PostParams::default())
        .await
        .unwrap();
    let names = |l: &rein_client::ObjectList<Arc<ConfigMap>>| -> Vec<String> {
        l.items
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .filter(|n| n != "kube-root-ca.crt")
            .collect()
    };
    let off = rig
        .off
        .list::<ConfigMap>(&ListOptions::default().namespace("default"))
        .await
        .unwrap();
    assert!(names(&off).is_empty(), "off: {:?}", names(&off));

    for name in ["x", "y"] {
        rig.on
            .create(&config_map("default", name, &[]), &PostParams::default())
            .await
            .unwrap();
    }
    // A list of another namespace has nothing to wait for.
    let other = rig
        .on
        .list::<ConfigMap>(&ListOptions::default().namespace("kube-system"))
        .await
        .unwrap();
    assert!(names(&other).is_empty());
    let on = rig.on.clone();
    let read = still_waiting(async move {
        on.list::<ConfigMap>(&ListOptions::default().namespace("default"))
            .await
    })
    .await;
    rig.release();
    let listed = read.await.unwrap().unwrap();
    assert_eq!(names(&listed), ["off", "x", "y"]);
}

#[tokio::test]
async fn the_wait_is_bounded_then_answers_stale_or_fails() {
    let rig = Rig::start().await;
    let serve = Rig::client(
        &rig.env,
        &rig.cache,
        ReadYourWrites::default().timeout(Duration::from_millis(300)),
    );
    let fail = Rig::client(
        &rig.env,
        &rig.cache,
        ReadYourWrites::default()
            .timeout(Duration::from_millis(300))
            .on_timeout(OnTimeout::Fail),
    );
    rig.hold("/api/v1/configmaps");
    let timed_out = || read_your_writes_waits("ConfigMap", "get", WaitOutcome::TimedOut);
    let before = timed_out();

    serve
        .create(&config_map("default", "s", &[]), &PostParams::default())
        .await
        .unwrap();
    let stale = serve
        .get::<ConfigMap>(&ObjectKey::new("default", "s"))
        .await
        .unwrap_err();
    assert!(stale.is_not_found(), "answers what the cache has: {stale}");
    assert_eq!(timed_out(), before + 1);

    fail.create(&config_map("default", "f", &[]), &PostParams::default())
        .await
        .unwrap();
    let err = fail
        .get::<ConfigMap>(&ObjectKey::new("default", "f"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::ReadYourWritesTimeout { after, .. } if after == Duration::from_millis(300)),
        "{err:?}"
    );
    // Reads of other objects do not wait.
    assert!(
        fail.get::<ConfigMap>(&ObjectKey::new("default", "s"))
            .await
            .unwrap_err()
            .is_not_found()
    );
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &rein_client::metrics::registry().lock())
        .unwrap();
    assert!(
        text.contains("rein_client_read_your_writes_waits_total{kind=\"ConfigMap\",verb=\"get\",outcome=\"timed_out\"}"),
        "{text}"
    );
}

/// A read waiting for this client's own write ends at once when the cache stops (the
/// manager's shutdown), answering from the cache, instead of waiting out its timeout and
/// warning that the cache did not catch up.
#[tokio::test]
async fn a_stopped_cache_ends_the_wait_at_once() {
    let env = TestEnv::start().await.unwrap();
    let cache = Cache::new(env.client(), CacheOptions::default());
    let on = Rig::client(
        &env,
        &cache,
        ReadYourWrites::default()
            .timeout(Duration::from_secs(3600))
            .on_timeout(OnTimeout::Fail),
    );
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (cache, stop) = (cache.clone(), stop.clone());
        async move { cache.start(stop).await }
    });
    assert!(cache.wait_for_cache_sync().await);
    on.list::<ConfigMap>(&ListOptions::default()).await.unwrap();
    env.faults()
        .inject(Fault::server_error(100_000).matching("/api/v1/configmaps"));
    env.faults().close_watches();
    on.create(
        &config_map("default", "late", &[("v", "1")]),
        &PostParams::default(),
    )
    .await
    .unwrap();
    let read = still_waiting({
        let on = on.clone();
        async move {
            on.get::<ConfigMap>(&ObjectKey::new("default", "late"))
                .await
        }
    })
    .await;
    stop.cancel();
    let answer = tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the wait ended with the cache, not after its hour")
        .unwrap();
    // Answered from the cache, which never saw the create: not a read-your-writes timeout.
    assert!(answer.unwrap_err().is_not_found());
    running.await.unwrap().unwrap();
}
