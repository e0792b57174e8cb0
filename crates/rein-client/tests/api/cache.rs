//! The cache and the delegating client: routing proved by what the server saw, selectors,
//! namespace restriction, field indexes, transforms.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use rein_client::cache::{ByObject, Cache, CacheOptions};
use rein_client::{
    Client, ClientOptions, Error, ListOptions, PartialObjectMeta, Patch, PatchParams, PostParams,
};
use rein_informer::{CompactOptions, StoreKind};
use rein_scheme::GroupVersionKind;
use rein_scheme::ObjectKey;
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

use crate::support::{config_map, pod};

/// A started cache with a delegating client over it; the cache stops when the guard drops.
struct Running {
    env: TestEnv,
    cache: Cache,
    client: Client,
    stop: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn running(options: CacheOptions, client_options: ClientOptions) -> Running {
    let env = TestEnv::start().await.unwrap();
    let cache = Cache::new(env.client(), options);
    let client = Client::builder(env.client())
        .cache(cache.clone())
        .options(client_options)
        .build();
    let stop = CancellationToken::new();
    tokio::spawn({
        let (cache, stop) = (cache.clone(), stop.clone());
        async move { cache.start(stop).await }
    });
    assert!(cache.wait_for_cache_sync().await);
    Running {
        env,
        cache,
        client,
        stop,
    }
}

/// Waits (generously) until `check` holds.
async fn eventually<F, Fut>(mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..400 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("condition not met within 10s");
}

fn gets_of(env: &TestEnv, path_end: &str) -> usize {
    env.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with(path_end))
        .count()
}

#[tokio::test]
async fn cached_reads_do_not_reach_the_server() {
    let r = running(
        CacheOptions::default(),
        ClientOptions::default().uncached::<Secret>(),
    )
    .await;
    let live = Client::new(r.env.client());
    live.create(&pod("default", "p", &[]), &PostParams::default())
        .await
        .unwrap();
    live.create(
        &Secret {
            metadata: crate::support::meta("default", "s"),
            ..Default::default()
        },
        &PostParams::default(),
    )
    .await
    .unwrap();
    let key = ObjectKey::new("default", "p");
    // The first read starts the Pod informer; the created pod shows up once it has synced.
    eventually(|| async { r.client.get::<Pod>(&key).await.is_ok() }).await;
    r.env.clear_requests();
    for _ in 0..5 {
        r.client.get::<Pod>(&key).await.unwrap();
    }
    r.client
        .list::<Pod>(&ListOptions::default().namespace("default"))
        .await
        .unwrap();
    assert_eq!(gets_of(&r.env, "/pods/p"), 0, "{:?}", r.env.requests());
    assert!(
        !r.env.requests().iter().any(|q| q.method == "GET"
            && q.path.ends_with("/pods")
            && !q.query.as_deref().unwrap_or_default().contains("watch")),
        "no list went to the server"
    );

    // Uncached kinds and the API reader go to the server.
    r.client
        .get::<Secret>(&ObjectKey::new("default", "s"))
        .await
        .unwrap();
    assert_eq!(gets_of(&r.env, "/secrets/s"), 1);
    r.client.api_reader().get::<Pod>(&key).await.unwrap();
    assert_eq!(gets_of(&r.env, "/pods/p"), 1);

    // Dynamic objects are read live unless caching them is enabled.
    let pods = r
        .client
        .dynamic()
        .resource(&GroupVersionKind::new("", "v1", "Pod"))
        .await
        .unwrap();
    pods.get(&key).await.unwrap();
    assert_eq!(gets_of(&r.env, "/pods/p"), 2);

    let missing = r
        .client
        .get::<Pod>(&ObjectKey::new("default", "nope"))
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
}

#[tokio::test]
async fn dynamic_objects_through_the_cache_when_enabled() {
    let r = running(
        CacheOptions::default(),
        ClientOptions::default().cache_unstructured(true),
    )
    .await;
    Client::new(r.env.client())
        .create(
            &config_map("default", "cm", &[("a", "1")]),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let cms = r
        .client
        .dynamic()
        .resource(&GroupVersionKind::new("", "v1", "ConfigMap"))
        .await
        .unwrap();
    let key = ObjectKey::new("default", "cm");
    eventually(|| async { cms.get(&key).await.is_ok() }).await;
    r.env.clear_requests();
    let got = cms.get(&key).await.unwrap();
    assert_eq!(got.data["data"]["a"], "1");
    assert_eq!(gets_of(&r.env, "/configmaps/cm"), 0);
}

#[tokio::test]
async fn label_selectors_limits_and_unsupported_options() {
    let r = running(CacheOptions::default(), ClientOptions::default()).await;
    let live = Client::new(r.env.client());
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        live.create(
            &pod("default", name, &[("app", app)]),
            &PostParams::default(),
        )
        .await
        .unwrap();
    }
    eventually(|| async {
        r.client
            .list::<Pod>(&ListOptions::default())
            .await
            .is_ok_and(|l| l.items.len() == 3)
    })
    .await;
    let web = r
        .client
        .list::<Pod>(&ListOptions::default().matching_labels([("app", "web")]))
        .await
        .unwrap();
    assert_eq!(web.items.len(), 2);
    let limited = r
        .client
        .list::<Pod>(&ListOptions::default().limit(1))
        .await
        .unwrap();
    assert_eq!(limited.items.len(), 1);
    assert!(matches!(
        r.client
            .list::<Pod>(&ListOptions::default().continue_token("x"))
            .await,
        Err(Error::CacheUnsupported { .. })
    ));
    assert!(matches!(
        r.client
            .list::<Pod>(&ListOptions::default().fields("spec.nodeName!=x".parse().unwrap()))
            .await,
        Err(Error::CacheUnsupported { .. })
    ));
    assert!(matches!(
        r.client
            .list::<Pod>(&ListOptions::default().matching_fields([("spec.nodeName", "n")]))
            .await,
        Err(Error::CacheUnsupported { .. })
    ));
}

/// `ByObject::store` makes one kind's cache compact (JSON decoded on read): reads, selectors
/// and field indexes answer as for a typed kind, and only that kind is compact.
#[tokio::test]
async fn a_compact_kind_answers_reads_selectors_and_field_indexes() {
    let options = CacheOptions::default().by_object::<Pod>(ByObject {
        store: Some(StoreKind::Compact(CompactOptions { decoded_cache: 1 })),
        ..Default::default()
    });
    let r = running(options, ClientOptions::default()).await;
    r.cache
        .index_field::<Pod>("spec.nodeName", |p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .into_iter()
                .collect()
        })
        .unwrap();
    let live = Client::new(r.env.client());
    for (ns, name, node, app) in [
        ("default", "a", "n1", "web"),
        ("default", "b", "n2", "web"),
        ("kube-public", "c", "n1", "db"),
    ] {
        let mut p = pod(ns, name, &[]);
        p.spec.as_mut().unwrap().node_name = Some(node.into());
        p.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        live.create(&p, &PostParams::default()).await.unwrap();
    }
    let on_n1 = ListOptions::default().matching_fields([("spec.nodeName", "n1")]);
    eventually(|| async {
        r.client
            .list::<Pod>(&on_n1)
            .await
            .is_ok_and(|l| l.items.len() == 2)
    })
    .await;
    let web = r
        .client
        .list::<Pod>(
            &ListOptions::default()
                .matching_labels([("app", "web")])
                .namespace("default"),
        )
        .await
        .unwrap();
    let mut names: Vec<_> = web
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    let c: Arc<Pod> = r
        .client
        .get(&ObjectKey::new("kube-public", "c"))
        .await
        .unwrap();
    assert_eq!(
        c.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some("n1"),
        "decoded whole"
    );
    let pods = r.cache.informer_for::<Pod>().await.unwrap();
    assert!(pods.indexer().is_compact());
    let config_maps = r.cache.informer_for::<ConfigMap>().await.unwrap();
    assert!(
        !config_maps.indexer().is_compact(),
        "other kinds stay typed"
    );
}

#[tokio::test]
async fn field_indexes_answer_matching_fields() {
    let r = running(CacheOptions::default(), ClientOptions::default()).await;
    r.cache
        .index_field::<Pod>("spec.nodeName", |p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .into_iter()
                .collect()
        })
        .unwrap();
    let live = Client::new(r.env.client());
    for (ns, name, node) in [
        ("default", "a", "n1"),
        ("default", "b", "n2"),
        ("kube-public", "c", "n1"),
    ] {
        let mut p = pod(ns, name, &[]);
        p.spec.as_mut().unwrap().node_name = Some(node.into());
        live.create(&p, &PostParams::default()).await.unwrap();
    }
    let on_n1 = ListOptions::default().matching_fields([("spec.nodeName", "n1")]);
    eventually(|| async {
        r.client
            .list::<Pod>(&on_n1)
            .await
            .is_ok_and(|l| l.items.len() == 2)
    })
    .await;
    let in_default = r
        .client
        .list::<Pod>(&on_n1.clone().namespace("default"))
        .await
        .unwrap();
    assert_eq!(in_default.items.len(), 1);
    assert_eq!(in_default.items[0].metadata.name.as_deref(), Some("a"));
    // Adding the same index twice is a typed error.
    assert!(matches!(
        r.cache
            .index_field::<Pod>("spec.nodeName", |_: &Pod| Vec::new()),
        Err(Error::Informer { .. })
    ));
}

#[tokio::test]
async fn namespace_restriction_and_per_kind_selectors() {
    let options = CacheOptions::default()
        .namespace("default")
        .by_object::<ConfigMap>(ByObject {
            label_selector: Some("cached=yes".parse().unwrap()),
            ..Default::default()
        });
    let r = running(options, ClientOptions::default()).await;
    let live = Client::new(r.env.client());
    live.create(&pod("default", "in", &[]), &PostParams::default())
        .await
        .unwrap();
    live.create(&pod("kube-public", "out", &[]), &PostParams::default())
        .await
        .unwrap();
    let mut yes = config_map("default", "yes", &[]);
    yes.metadata.labels = Some([("cached".to_string(), "yes".to_string())].into());
    live.create(&yes, &PostParams::default()).await.unwrap();
    live.create(&config_map("default", "no", &[]), &PostParams::default())
        .await
        .unwrap();

    eventually(|| async {
        r.client
            .list::<Pod>(&ListOptions::default())
            .await
            .is_ok_and(|l| l.items.len() == 1)
    })
    .await;
    // Outside the cache's namespace: a typed error, as controller-runtime's "unknown
    // namespace for the cache".
    assert!(matches!(
        r.client
            .get::<Pod>(&ObjectKey::new("kube-public", "out"))
            .await,
        Err(Error::NamespaceNotCached { .. })
    ));
    eventually(|| async {
        r.client
            .get::<ConfigMap>(&ObjectKey::new("default", "yes"))
            .await
            .is_ok()
    })
    .await;
    assert!(
        r.client
            .get::<ConfigMap>(&ObjectKey::new("default", "no"))
            .await
            .unwrap_err()
            .is_not_found()
    );
    // The watches the server saw were namespace-scoped for pods.
    assert!(
        r.env
            .requests()
            .iter()
            .any(|q| q.path == "/api/v1/namespaces/default/pods")
    );
}

#[tokio::test]
async fn reads_before_start_fail_and_informer_for_syncs() {
    let env = TestEnv::start().await.unwrap();
    let cache = Cache::new(env.client(), CacheOptions::default());
    assert!(matches!(
        cache.get::<Pod>(&ObjectKey::new("default", "x")).await,
        Err(Error::CacheNotRunning { .. })
    ));
    // An informer requested before start is created but not run.
    let informer = cache.informer_for::<ConfigMap>().await.unwrap();
    assert!(!informer.has_started());
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (cache, stop) = (cache.clone(), stop.clone());
        async move { cache.start(stop).await }
    });
    assert!(cache.wait_for_cache_sync().await);
    assert!(informer.has_synced());
    // After start, a new informer is synced by the time it is handed out.
    let pods = cache.informer_for::<Pod>().await.unwrap();
    assert!(pods.has_synced());
    stop.cancel();
    task.await.unwrap().unwrap();
    assert!(!cache.wait_for_cache_sync().await);
}

#[tokio::test]
async fn the_default_transform_drops_managed_fields() {
    let r = running(CacheOptions::default(), ClientOptions::default()).await;
    let live = Client::new(r.env.client());
    let applied = live
        .apply(
            &config_map("default", "cm", &[("a", "1")]),
            Some("tester"),
            false,
        )
        .await
        .unwrap();
    assert!(
        applied.metadata.managed_fields.is_some(),
        "the server records managed fields"
    );
    let key = ObjectKey::new("default", "cm");
    eventually(|| async { r.client.get::<ConfigMap>(&key).await.is_ok() }).await;
    let cached: Arc<ConfigMap> = r.client.get(&key).await.unwrap();
    assert_eq!(cached.data.as_ref().unwrap()["a"], "1");
    assert!(cached.metadata.managed_fields.is_none());
}

/// Kinds with per-kind settings and kinds on the defaults live in the same registry: one
/// `start` runs them, `informer_statuses` lists them all, and when `start` returns every one
/// of them has stopped.
#[tokio::test]
async fn per_kind_and_default_informers_share_one_start_and_stop() {
    let env = TestEnv::start().await.unwrap();
    let options = CacheOptions::default().by_object::<ConfigMap>(ByObject {
        label_selector: Some("cached=yes".parse().unwrap()),
        ..Default::default()
    });
    let cache = Cache::new(env.client(), options);
    let config_maps = cache.informer_for::<ConfigMap>().await.unwrap();
    let pods = cache.informer_for::<Pod>().await.unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (cache, stop) = (cache.clone(), stop.clone());
        async move { cache.start(stop).await }
    });
    assert!(cache.wait_for_cache_sync().await);
    assert!(config_maps.has_synced() && pods.has_synced());
    let secrets = cache.informer_for::<Secret>().await.unwrap();
    let kinds: Vec<String> = cache
        .informer_statuses()
        .into_iter()
        .map(|(kind, status)| {
            assert!(status.started && status.synced, "{kind}: {status}");
            kind
        })
        .collect();
    assert_eq!(
        kinds,
        ["v1, Kind=ConfigMap", "v1, Kind=Pod", "v1, Kind=Secret"]
    );
    stop.cancel();
    task.await.unwrap().unwrap();
    for stopped in [
        config_maps.is_stopped(),
        pods.is_stopped(),
        secrets.is_stopped(),
    ] {
        assert!(stopped);
    }
}

#[tokio::test]
async fn cached_reads_share_the_cached_object_without_a_copy() {
    let r = running(CacheOptions::default(), ClientOptions::default()).await;
    let live = Client::new(r.env.client());
    live.create(
        &config_map("default", "shared", &[("a", "1")]),
        &PostParams::default(),
    )
    .await
    .unwrap();
    let key = ObjectKey::new("default", "shared");
    eventually(|| async { r.client.get::<ConfigMap>(&key).await.is_ok() }).await;

    let first = r.client.get::<ConfigMap>(&key).await.unwrap();
    let second = r.client.get::<ConfigMap>(&key).await.unwrap();
    assert!(
        Arc::ptr_eq(&first, &second),
        "two gets: one object, no copy"
    );
    let informer = r.cache.existing_informer_for::<ConfigMap>().unwrap();
    let held = informer.indexer().get_by_key("default/shared").unwrap();
    assert!(
        Arc::ptr_eq(&first, &held),
        "a get is the cache's own object"
    );
    let listed = r
        .client
        .list::<ConfigMap>(&ListOptions::default().namespace("default"))
        .await
        .unwrap();
    let in_list = listed
        .items
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some("shared"))
        .unwrap();
    assert!(
        Arc::ptr_eq(in_list, &first),
        "a list item is the cache's own object"
    );
    let from_cache = r.cache.get::<ConfigMap>(&key).await.unwrap();
    assert!(Arc::ptr_eq(&from_cache, &first));

    // Read, modify, update: the owned copy is one call away and the cache is untouched.
    let mut owned = Arc::unwrap_or_clone(second);
    owned.data = Some([("a".to_string(), "2".to_string())].into());
    let stored = r
        .client
        .update(&owned, &PostParams::default())
        .await
        .unwrap();
    assert_eq!(first.data.as_ref().unwrap()["a"], "1");
    let after = r.client.get::<ConfigMap>(&key).await.unwrap();
    assert_eq!(after.data.as_ref().unwrap()["a"], "2");
    assert_eq!(
        after.metadata.resource_version,
        stored.metadata.resource_version
    );
    assert!(
        !Arc::ptr_eq(&after, &first),
        "the update replaced the cached object"
    );
}

#[tokio::test]
async fn metadata_only_cache_holds_metadata_and_no_spec() {
    let r = running(CacheOptions::default(), ClientOptions::default()).await;
    let live = Client::new(r.env.client());
    live.create(
        &pod("default", "meta", &[("app", "web")]),
        &PostParams::default(),
    )
    .await
    .unwrap();
    let key = ObjectKey::new("default", "meta");
    eventually(|| async { r.client.get::<PartialObjectMeta<Pod>>(&key).await.is_ok() }).await;
    let got = r.client.get::<PartialObjectMeta<Pod>>(&key).await.unwrap();
    assert_eq!(got.metadata.labels.as_ref().unwrap()["app"], "web");
    // The server sent the PartialObjectMetadata representation, not the Pod.
    assert_eq!(got.types.as_ref().unwrap().kind, "PartialObjectMetadata");
    assert_eq!(got.types.as_ref().unwrap().api_version, "meta.k8s.io/v1");

    // The metadata-only informer is its own; no full Pod informer was made, and what the
    // cache holds has no spec or status.
    assert!(r.cache.existing_informer_for::<Pod>().is_none());
    let informer = r
        .cache
        .existing_informer_for::<PartialObjectMeta<Pod>>()
        .unwrap();
    let held = informer.indexer().list();
    assert_eq!(held.len(), 1);
    for obj in &held {
        let json = serde_json::to_value(&**obj).unwrap();
        assert!(json.get("spec").is_none(), "{json}");
        assert!(json.get("status").is_none(), "{json}");
        assert_eq!(json["kind"], "PartialObjectMetadata");
    }

    // The watch is metadata-only too: a label change arrives.
    live.patch::<Pod, _>(
        &key,
        &Patch::Merge(serde_json::json!({"metadata": {"labels": {"app": "api"}}})),
        &PatchParams::default(),
    )
    .await
    .unwrap();
    eventually(|| async {
        r.client
            .get::<PartialObjectMeta<Pod>>(&key)
            .await
            .is_ok_and(|m| m.metadata.labels.as_ref().unwrap()["app"] == "api")
    })
    .await;
    let listed = r
        .client
        .list::<PartialObjectMeta<Pod>>(&ListOptions::default().matching_labels([("app", "api")]))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);

    // Uncached reads and patches ask the server for metadata only as well.
    let direct = r
        .client
        .api_reader()
        .get::<PartialObjectMeta<Pod>>(&key)
        .await
        .unwrap();
    assert_eq!(direct.types.as_ref().unwrap().kind, "PartialObjectMetadata");
    let direct_list = r
        .client
        .api_reader()
        .list::<PartialObjectMeta<Pod>>(&ListOptions::default().namespace("default"))
        .await
        .unwrap();
    assert_eq!(direct_list.items.len(), 1);
    let patched = r
        .client
        .patch::<PartialObjectMeta<Pod>, _>(
            &key,
            &Patch::Merge(serde_json::json!({"metadata": {"annotations": {"seen": "yes"}}})),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.metadata.annotations.as_ref().unwrap()["seen"],
        "yes"
    );
    assert_eq!(
        patched.types.as_ref().unwrap().kind,
        "PartialObjectMetadata"
    );

    // A metadata-only object cannot be written whole.
    assert!(matches!(
        r.client.update(&*got, &PostParams::default()).await,
        Err(Error::InvalidInput { .. })
    ));
}

#[tokio::test]
async fn multi_namespace_cache_watches_each_namespace_and_reads_span_them() {
    let options = CacheOptions::default()
        .namespaces(["team-a", "team-b"])
        .by_object::<Secret>(ByObject {
            namespaces: vec!["team-c".into()],
            ..Default::default()
        });
    let r = running(options, ClientOptions::default()).await;
    let live = Client::new(r.env.client());
    for ns in ["team-a", "team-b", "team-c"] {
        live.create(&namespace(ns), &PostParams::default())
            .await
            .unwrap();
        let mut cm = config_map(ns, "settings", &[("ns", ns)]);
        cm.metadata.labels = Some([("test".to_string(), "multi".to_string())].into());
        live.create(&cm, &PostParams::default()).await.unwrap();
        live.create(&secret(ns, "token"), &PostParams::default())
            .await
            .unwrap();
    }
    let multi = ListOptions::default().matching_labels([("test", "multi")]);
    eventually(|| async {
        r.client
            .list::<ConfigMap>(&multi)
            .await
            .is_ok_and(|l| l.items.len() == 2)
    })
    .await;
    let listed = r.client.list::<ConfigMap>(&multi).await.unwrap();
    let namespaces: Vec<_> = listed
        .items
        .iter()
        .map(|c| c.metadata.namespace.clone().unwrap())
        .collect();
    assert_eq!(namespaces, ["team-a", "team-b"]);
    assert!(
        r.client
            .get::<ConfigMap>(&ObjectKey::new("team-b", "settings"))
            .await
            .is_ok()
    );
    let in_a = r
        .client
        .list::<ConfigMap>(&multi.clone().namespace("team-a"))
        .await
        .unwrap();
    assert_eq!(in_a.items.len(), 1);

    // Outside the set: a typed error, not a silent miss.
    match r
        .client
        .get::<ConfigMap>(&ObjectKey::new("team-c", "settings"))
        .await
    {
        Err(Error::NamespaceNotCached {
            namespace, cached, ..
        }) => {
            assert_eq!(namespace, "team-c");
            assert_eq!(cached, ["team-a", "team-b"]);
        }
        other => panic!("expected NamespaceNotCached, got {other:?}"),
    }
    assert!(matches!(
        r.client
            .list::<ConfigMap>(&ListOptions::default().namespace("team-c"))
            .await,
        Err(Error::NamespaceNotCached { .. })
    ));
    // The per-kind namespaces win for Secrets.
    eventually(|| async {
        r.client
            .get::<Secret>(&ObjectKey::new("team-c", "token"))
            .await
            .is_ok()
    })
    .await;
    assert!(matches!(
        r.client
            .get::<Secret>(&ObjectKey::new("team-a", "token"))
            .await,
        Err(Error::NamespaceNotCached { .. })
    ));

    // One reflector, list and watch per namespace; never one across all namespaces.
    let informer = r.cache.existing_informer_for::<ConfigMap>().unwrap();
    assert_eq!(informer.reflector_count(), 2);
    let requests = r.env.requests();
    let watched = |path: &str| {
        requests
            .iter()
            .any(|q| q.path == path && q.has_query("watch", "true"))
    };
    assert!(watched("/api/v1/namespaces/team-a/configmaps"));
    assert!(watched("/api/v1/namespaces/team-b/configmaps"));
    let read = |path: &str| requests.iter().any(|q| q.method == "GET" && q.path == path);
    assert!(!read("/api/v1/namespaces/team-c/configmaps"));
    assert!(!read("/api/v1/configmaps"));
    assert!(watched("/api/v1/namespaces/team-c/secrets"));

    // A delete in one namespace leaves the other's objects in place.
    live.delete::<ConfigMap>(&ObjectKey::new("team-a", "settings"), &Default::default())
        .await
        .unwrap();
    eventually(|| async {
        r.client
            .list::<ConfigMap>(&multi)
            .await
            .is_ok_and(|l| l.items.len() == 1)
    })
    .await;
    assert!(
        r.client
            .get::<ConfigMap>(&ObjectKey::new("team-b", "settings"))
            .await
            .is_ok()
    );
}

fn namespace(name: &str) -> k8s_openapi::api::core::v1::Namespace {
    k8s_openapi::api::core::v1::Namespace {
        metadata: kube_client::core::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn secret(ns: &str, name: &str) -> Secret {
    Secret {
        metadata: crate::support::meta(ns, name),
        string_data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    }
}
