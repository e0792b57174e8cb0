//! Informer behaviour against rein-testenv: sync, relists on 410, tombstones, late handlers,
//! resync, transforms, indexers and chaos convergence.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::core::v1::Secret;
use kube_client::api::Api;
use kube_client::core::{ApiResource, ObjectMeta};
use rein_informer::HasSynced;
use rein_informer::{
    ApiListerWatcher, CompactOptions, IndexFunc, Indexer, Indexers, InformerSpec, ListWatchOptions,
    MetaTransform, QueueKind, SharedIndexInformer, SharedInformerFactory, StoreKind,
    meta_namespace_key,
};
use rein_scheme::GroupVersionKind;
use rein_scheme::labels::Selector;
use rein_testenv::{Fault, TestEnv};
use tokio_util::sync::CancellationToken;

const INFORMER_PATH: &str = "/api/v1/configmaps";

fn informer(env: &TestEnv, queue: QueueKind) -> Arc<SharedIndexInformer<ConfigMap>> {
    informer_with(env, queue, Indexer::new())
}

fn informer_with(
    env: &TestEnv,
    queue: QueueKind,
    indexer: Indexer<ConfigMap>,
) -> Arc<SharedIndexInformer<ConfigMap>> {
    let lw = ApiListerWatcher::<ConfigMap>::new(
        env.client(),
        ListWatchOptions {
            label_selector: Some("app=demo".into()),
            ..Default::default()
        },
    );
    Arc::new(SharedIndexInformer::from_arc_with_indexer(
        Arc::new(lw),
        options(queue),
        indexer,
    ))
}

fn start(inf: &Arc<SharedIndexInformer<ConfigMap>>, stop: &CancellationToken) {
    let inf = inf.clone();
    let stop = stop.clone();
    tokio::spawn(async move { inf.run(stop).await });
}

fn cache_state(inf: &SharedIndexInformer<ConfigMap>) -> HashMap<String, String> {
    inf.indexer()
        .list()
        .iter()
        .map(|o| {
            (
                meta_namespace_key(o.as_ref()),
                o.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

async fn sync_and_follow(queue: QueueKind) {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..3 {
        create(&api, &format!("pre-{i}")).await;
    }
    let inf = informer(&env, queue);
    let rec = Recorder::default();
    let reg = inf.add_event_handler(rec.clone()).unwrap();
    let stop = CancellationToken::new();
    start(&inf, &stop);
    eventually(20, "initial sync", || inf.has_synced() && reg.has_synced()).await;
    assert_eq!(inf.indexer().len(), 3);
    assert!(
        rec.events()
            .iter()
            .all(|e| matches!(e, Seen::Add { initial: true, .. }))
    );

    create(&api, "live").await;
    update(&api, "pre-0", "1").await;
    delete(&api, "pre-1").await;
    let want = server_state(&api).await;
    eventually(20, "cache follows the watch", || cache_state(&inf) == want).await;
    eventually(20, "handler follows the watch", || rec.mirror() == want).await;
    assert!(rec.events().contains(&Seen::Delete {
        key: "default/pre-1".into(),
        tombstone: false
    }));
    assert!(inf.last_sync_resource_version().is_some());
    // The initial sync used a streaming list, not a LIST: the server supports it.
    let informer_requests: Vec<_> = env
        .requests()
        .into_iter()
        .filter(|r| r.path == INFORMER_PATH)
        .collect();
    assert!(informer_requests[0].has_query("sendInitialEvents", "true"));
    assert!(
        !informer_requests.iter().any(|r| !r.is_watch()),
        "no fallback LIST: {informer_requests:?}"
    );
    stop.cancel();
}

/// With streaming lists turned off the reflector pages through a LIST, then watches.
#[tokio::test]
async fn paged_list_then_watch() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..7 {
        create(&api, &format!("p{i}")).await;
    }
    let lw = ApiListerWatcher::<ConfigMap>::new(env.client(), crate::support::demo_objects());
    let mut opts = options(QueueKind::RealFifo);
    opts.reflector.use_watch_list = false;
    opts.reflector.page_size = Some(3);
    let inf = Arc::new(SharedIndexInformer::new(lw, opts));
    let stop = CancellationToken::new();
    start(&inf, &stop);
    eventually(20, "initial sync", || inf.has_synced()).await;
    assert_eq!(inf.indexer().len(), 7);
    let lists = env
        .requests()
        .into_iter()
        .filter(|r| r.path == INFORMER_PATH && !r.is_watch())
        .count();
    assert_eq!(lists, 3, "7 objects in pages of 3");
    // client-go `TestReflectorListAndWatch` "UseWatchList disabled": the first page asks for
    // `resourceVersion=0` with its `limit`, so it may be served from the watch cache.
    let first = env
        .requests()
        .into_iter()
        .find(|r| r.path == INFORMER_PATH && !r.is_watch())
        .expect("a LIST");
    assert!(
        first.has_query("resourceVersion", "0") && first.has_query("limit", "3"),
        "{first:?}"
    );
    create(&api, "after").await;
    eventually(20, "watch delivers", || inf.indexer().len() == 8).await;
    stop.cancel();
}

#[tokio::test]
async fn list_watch_sync_real_fifo() {
    sync_and_follow(QueueKind::RealFifo).await;
}

#[tokio::test]
async fn list_watch_sync_delta_fifo() {
    sync_and_follow(QueueKind::DeltaFifo).await;
}

/// A deletion that happens while the informer cannot watch, followed by a compaction, is
/// discovered by the relist (after a 410) and delivered as a tombstone.
async fn relist_after_expiry_delivers_tombstones(queue: QueueKind) {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    create(&api, "keep").await;
    create(&api, "doomed").await;
    let inf = informer(&env, queue);
    let rec = Recorder::default();
    inf.add_event_handler(rec.clone()).unwrap();
    let stop = CancellationToken::new();
    start(&inf, &stop);
    eventually(20, "initial sync", || inf.has_synced()).await;

    let faults = env.faults();
    faults.inject(Fault::server_error(usize::MAX).matching(INFORMER_PATH));
    faults.close_watches();
    delete(&api, "doomed").await;
    update(&api, "keep", "2").await;
    faults.compact();
    faults.clear();

    let want = server_state(&api).await;
    eventually(20, "relist converges", || cache_state(&inf) == want).await;
    eventually(20, "handler converges", || rec.mirror() == want).await;
    assert!(
        rec.events().contains(&Seen::Delete {
            key: "default/doomed".into(),
            tombstone: true
        }),
        "{:?}",
        rec.events()
    );
    rec.assert_ordered();
    stop.cancel();
}

/// A compact cache (JSON decoded on read, two objects kept decoded) follows the watch and a
/// relist after a 410 exactly as the typed one: handlers get the previous object in updates
/// (decoded from bytes once it left the cache of decoded objects) and tombstones.
async fn a_compact_cache_follows_the_watch_and_a_relist(queue: QueueKind) {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..4 {
        create(&api, &format!("pre-{i}")).await;
    }
    let indexer = Indexer::compact(CompactOptions { decoded_cache: 2 });
    let inf = informer_with(&env, queue, indexer);
    assert!(inf.indexer().is_compact());
    let rec = Recorder::default();
    inf.add_event_handler(rec.clone()).unwrap();
    let stop = CancellationToken::new();
    start(&inf, &stop);
    eventually(20, "initial sync", || inf.has_synced()).await;
    let listed = server_state(&api).await;
    create(&api, "live").await;
    update(&api, "pre-0", "1").await;
    delete(&api, "pre-1").await;
    let want = server_state(&api).await;
    eventually(20, "cache follows the watch", || cache_state(&inf) == want).await;
    eventually(20, "handler follows the watch", || rec.mirror() == want).await;
    assert!(rec.events().contains(&Seen::Update {
        key: "default/pre-0".into(),
        old_rv: listed["default/pre-0"].clone(),
        new_rv: want["default/pre-0"].clone(),
    }));

    let faults = env.faults();
    faults.inject(Fault::server_error(usize::MAX).matching(INFORMER_PATH));
    faults.close_watches();
    delete(&api, "pre-2").await;
    update(&api, "pre-3", "2").await;
    faults.compact();
    faults.clear();
    let want = server_state(&api).await;
    eventually(20, "relist converges", || cache_state(&inf) == want).await;
    eventually(20, "handler converges", || rec.mirror() == want).await;
    assert!(rec.events().contains(&Seen::Delete {
        key: "default/pre-2".into(),
        tombstone: true
    }));
    assert_eq!(
        inf.indexer()
            .by_index(rein_informer::NAMESPACE_INDEX, "default")
            .unwrap()
            .len(),
        want.len()
    );
    rec.assert_ordered();
    stop.cancel();
}

#[tokio::test]
async fn compact_cache_real_fifo() {
    a_compact_cache_follows_the_watch_and_a_relist(QueueKind::RealFifo).await;
}

#[tokio::test]
async fn compact_cache_delta_fifo() {
    a_compact_cache_follows_the_watch_and_a_relist(QueueKind::DeltaFifo).await;
}

#[tokio::test]
async fn relist_on_410_real_fifo() {
    relist_after_expiry_delivers_tombstones(QueueKind::RealFifo).await;
}

#[tokio::test]
async fn relist_on_410_delta_fifo() {
    relist_after_expiry_delivers_tombstones(QueueKind::DeltaFifo).await;
}

#[tokio::test]
async fn late_handler_gets_synthetic_adds_then_live_events() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..5 {
        create(&api, &format!("o{i}")).await;
    }
    let inf = informer(&env, QueueKind::RealFifo);
    let stop = CancellationToken::new();
    start(&inf, &stop);
    eventually(20, "initial sync", || inf.has_synced()).await;

    let late = Recorder::default();
    let reg = inf.add_event_handler(late.clone()).unwrap();
    eventually(20, "late handler synced", || reg.has_synced()).await;
    let adds: Vec<_> = late
        .events()
        .into_iter()
        .filter(|e| matches!(e, Seen::Add { initial: true, .. }))
        .collect();
    assert_eq!(adds.len(), 5);

    create(&api, "after").await;
    eventually(20, "live event", || {
        late.events()
            .iter()
            .any(|e| matches!(e, Seen::Add { key, initial: false, .. } if key == "default/after"))
    })
    .await;

    // A removed handler gets nothing more. A witness handler that stays registered sees the
    // later events, so by then they have been distributed, and not to the removed handler.
    let witness = Recorder::default();
    let witness_reg = inf.add_event_handler(witness.clone()).unwrap();
    eventually(20, "witness synced", || witness_reg.has_synced()).await;
    inf.remove_event_handler(&reg);
    let before = late.events().len();
    create(&api, "unseen").await;
    update(&api, "unseen", "1").await;
    eventually(20, "the witness sees the later events", || {
        witness
            .events()
            .iter()
            .any(|e| matches!(e, Seen::Update { key, .. } if key == "default/unseen"))
    })
    .await;
    assert_eq!(late.events().len(), before, "{:?}", late.events());
    stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn per_handler_resync_periods() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    create(&api, "a").await;
    let lw = ApiListerWatcher::<ConfigMap>::new(env.client(), crate::support::demo_objects());
    let mut opts = options(QueueKind::RealFifo);
    opts.resync_period = Duration::from_secs(10);
    let inf = Arc::new(SharedIndexInformer::new(lw, opts));
    let fast = Recorder::default();
    let never = Recorder::default();
    let default = Recorder::default();
    inf.add_event_handler_with_resync(fast.clone(), Duration::from_secs(2))
        .unwrap();
    inf.add_event_handler_with_resync(never.clone(), Duration::ZERO)
        .unwrap();
    inf.add_event_handler(default.clone()).unwrap();
    let stop = CancellationToken::new();
    start(&inf, &stop);
    eventually(20, "initial sync", || inf.has_synced()).await;

    let resyncs = |r: &Recorder| {
        r.events()
            .iter()
            .filter(|e| matches!(e, Seen::Update { old_rv, new_rv, .. } if old_rv == new_rv))
            .count()
    };
    tokio::time::sleep(Duration::from_secs(21)).await;
    eventually(5, "resyncs delivered", || resyncs(&default) >= 2).await;
    let (f, n, d) = (resyncs(&fast), resyncs(&never), resyncs(&default));
    assert_eq!(n, 0, "a handler with period zero never resyncs");
    assert!(f >= 8, "2 s handler resynced {f} times in ~21 s");
    assert!(d <= 3, "10 s handler resynced {d} times in ~21 s");
    stop.cancel();
}

#[tokio::test]
async fn transform_runs_before_storing() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    create(&api, "t").await;
    let inf = informer(&env, QueueKind::RealFifo);
    inf.set_transform(|mut cm: ConfigMap| {
        cm.metadata.managed_fields = None;
        cm.data = None;
        cm
    })
    .unwrap();
    let stop = CancellationToken::new();
    start(&inf, &stop);
    eventually(20, "initial sync", || inf.has_synced()).await;
    update(&api, "t", "changed").await;
    eventually(20, "update seen", || {
        inf.indexer()
            .get_by_key("default/t")
            .is_some_and(|o| o.metadata.resource_version != Some("1".into()))
    })
    .await;
    for o in inf.indexer().list() {
        assert!(o.data.is_none() && o.metadata.managed_fields.is_none());
    }
    assert!(inf.set_transform(|cm| cm).is_err(), "only before start");
    stop.cancel();
}

/// The ready-made `strip_managed_fields` transform drops the server's managedFields and keeps
/// everything else; without it, the (compacted, default) cache holds the server's object exactly.
#[tokio::test]
async fn strip_managed_fields_transform_and_compaction_keep_the_object() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let pp = kube_client::api::PostParams {
        field_manager: Some("test-manager".into()),
        ..Default::default()
    };
    api.create(&pp, &configmap("m", "0")).await.expect("create");
    let on_server = api.get("m").await.expect("get");
    assert!(
        on_server
            .metadata
            .managed_fields
            .as_ref()
            .is_some_and(|m| !m.is_empty()),
        "the server records managedFields"
    );
    let stripped = informer(&env, QueueKind::RealFifo);
    stripped
        .set_transform(rein_informer::strip_managed_fields::<ConfigMap>)
        .unwrap();
    let plain = informer(&env, QueueKind::RealFifo);
    let stop = CancellationToken::new();
    start(&stripped, &stop);
    start(&plain, &stop);
    eventually(20, "initial sync", || {
        stripped.has_synced() && plain.has_synced()
    })
    .await;

    let got = stripped.indexer().get_by_key("default/m").expect("cached");
    assert!(got.metadata.managed_fields.is_none());
    let mut expected = on_server.clone();
    expected.metadata.managed_fields = None;
    assert_eq!(*got, expected, "only managedFields removed");
    let got = plain.indexer().get_by_key("default/m").expect("cached");
    assert_eq!(
        *got, on_server,
        "the compacted copy equals the decoded object"
    );
    stop.cancel();
}

/// The env list of a Pod whose container has `n` variables, as an informer caches it, with
/// object compaction on or off (both paths: the streaming list and a live watch event).
async fn cached_env_capacity(compact: bool) -> Vec<(usize, usize)> {
    use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodSpec};
    let env = TestEnv::start().await.expect("testenv");
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(env.client(), "default");
    let pod = |name: &str| Pod {
        metadata: kube_client::core::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("busybox".into()),
                env: Some(
                    (0..5)
                        .map(|i| EnvVar {
                            name: format!("V{i}"),
                            value: Some(i.to_string()),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let pp = kube_client::api::PostParams::default();
    pods.create(&pp, &pod("listed")).await.expect("create");
    let lw = ApiListerWatcher::<Pod>::new(env.client(), ListWatchOptions::default());
    let mut opts = options(QueueKind::RealFifo);
    opts.reflector.compact_objects = compact;
    let inf = Arc::new(SharedIndexInformer::new(lw, opts));
    let stop = CancellationToken::new();
    {
        let (inf, stop) = (inf.clone(), stop.clone());
        tokio::spawn(async move { inf.run(stop).await });
    }
    eventually(20, "initial sync", || inf.has_synced()).await;
    pods.create(&pp, &pod("watched")).await.expect("create");
    eventually(20, "watch event", || {
        inf.indexer().get_by_key("default/watched").is_some()
    })
    .await;
    stop.cancel();
    ["default/listed", "default/watched"]
        .iter()
        .map(|key| {
            let p = inf.indexer().get_by_key(key).expect("cached");
            let env = p.spec.as_ref().unwrap().containers[0].env.as_ref().unwrap();
            (env.len(), env.capacity())
        })
        .collect()
}

/// Compaction (the default) stores every list at exactly its length: the decoded object's
/// spare `Vec` capacity (serde grows 0, 4, 8…) is not kept in the cache.
#[tokio::test]
async fn objects_are_compacted_before_caching() {
    for (len, cap) in cached_env_capacity(true).await {
        assert_eq!((len, cap), (5, 5), "compacted: no spare capacity");
    }
    // Without compaction the decoded object is kept as serde grew it.
    for (len, cap) in cached_env_capacity(false).await {
        assert!(len == 5 && cap > len, "as decoded: {len} of {cap}");
    }
}

#[tokio::test]
async fn indexers_added_after_start() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    create(&api, "x").await;
    create(&api, "y").await;
    let inf = informer(&env, QueueKind::RealFifo);
    let stop = CancellationToken::new();
    start(&inf, &stop);
    eventually(20, "initial sync", || inf.has_synced()).await;

    let by_value: IndexFunc<ConfigMap> = Arc::new(|cm: &ConfigMap| {
        cm.data
            .as_ref()
            .and_then(|d| d.get("v").cloned())
            .into_iter()
            .collect()
    });
    let mut ix: Indexers<ConfigMap> = HashMap::new();
    ix.insert("value".into(), by_value);
    inf.add_indexers(ix).unwrap();
    assert_eq!(inf.indexer().by_index("value", "0").unwrap().len(), 2);
    update(&api, "x", "9").await;
    eventually(20, "index follows updates", || {
        inf.indexer().index_keys("value", "9").unwrap() == vec!["default/x".to_string()]
    })
    .await;
    assert_eq!(inf.indexer().by_index("value", "0").unwrap().len(), 1);
    stop.cancel();
}

#[tokio::test]
async fn factory_shares_informers_and_listers() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    create(&api, "f").await;
    let factory = SharedInformerFactory::new(env.client(), Duration::ZERO);
    let a = factory.informer::<ConfigMap>();
    let b = factory.informer::<ConfigMap>();
    assert!(Arc::ptr_eq(&a, &b));
    let lister = factory.lister::<ConfigMap>();
    let stop = CancellationToken::new();
    factory.start(stop.clone());
    assert!(factory.wait_for_cache_sync(&stop).await);
    assert!(lister.get("default", "f").is_some());
    let sel = Selector::parse("app=demo").unwrap();
    assert!(!lister.namespaced("default").list(&sel).is_empty());
    assert!(lister.namespaced("kube-system").list(&sel).is_empty());
    stop.cancel();
    factory.shutdown().await;
}

/// Per-kind settings live in one spec: the typed and the dynamic informer of a kind both take
/// its selector and transform over the defaults, other kinds keep the defaults, and every
/// informer (typed or dynamic, created before or after `start`) runs from `start` and stops
/// with one `shutdown`.
#[tokio::test]
async fn factory_builds_every_informer_from_its_kind_spec() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    create(&api, "labelled").await;
    let mut plain = configmap("plain", "0");
    plain.metadata.labels = None;
    api.create(&Default::default(), &plain)
        .await
        .expect("create");
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    secrets
        .create(
            &Default::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some("s".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .expect("create secret");

    let mark: MetaTransform = Arc::new(|meta: &mut ObjectMeta| {
        meta.annotations = Some([("seen".to_string(), "yes".to_string())].into());
    });
    let factory = SharedInformerFactory::new(env.client(), Duration::ZERO)
        .with_default_spec(InformerSpec {
            namespace: Some("default".into()),
            ..Default::default()
        })
        .with_spec(
            GroupVersionKind::new("", "v1", "ConfigMap"),
            InformerSpec {
                label_selector: Some("app=demo".into()),
                transform: Some(mark),
                store: Some(StoreKind::Compact(CompactOptions::default())),
                ..Default::default()
            },
        );
    let typed = factory.informer::<ConfigMap>();
    let stop = CancellationToken::new();
    factory.start(stop.clone());
    // Created after the first start: runs from the next one, like the typed informers.
    let resource = ApiResource::erase::<ConfigMap>(&());
    let dynamic = factory.dynamic_informer(&resource, true);
    let other = factory.informer::<Secret>();
    assert!(factory.has_informer::<ConfigMap>() && factory.has_dynamic_informer(&resource));
    factory.start(stop.clone());
    assert!(factory.wait_for_cache_sync(&stop).await);

    for keys in [typed.indexer().list_keys(), dynamic.indexer().list_keys()] {
        assert_eq!(keys, vec!["default/labelled".to_string()]);
    }
    let seen = typed
        .indexer()
        .get_by_key("default/labelled")
        .expect("cached");
    assert_eq!(
        seen.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("seen")),
        Some(&"yes".to_string())
    );
    // The ConfigMap spec's store applies to the typed and the dynamic informer alike.
    assert!(typed.indexer().is_compact() && dynamic.indexer().is_compact());
    assert!(
        !other.indexer().is_compact(),
        "the defaults keep objects typed"
    );
    let secret = other.indexer().get_by_key("default/s").expect("cached");
    assert!(
        secret.metadata.annotations.is_none(),
        "the defaults have no transform"
    );

    let statuses = factory.informer_statuses();
    let kinds: Vec<String> = statuses.iter().map(|(k, _)| k.to_string()).collect();
    assert_eq!(
        kinds,
        [
            "v1, Kind=ConfigMap",
            "v1, Kind=ConfigMap",
            "v1, Kind=Secret"
        ]
    );
    assert!(statuses.iter().all(|(_, s)| s.synced && !s.stopped));
    stop.cancel();
    factory.shutdown().await;
    assert!(factory.informer_statuses().iter().all(|(_, s)| s.stopped));
}

/// `wait_for_cache_sync` returns once the informer and a handler registration have synced
/// (woken by the queue's signal and the listener's last initial add, not by polling).
#[tokio::test]
async fn wait_for_cache_sync_returns_when_synced() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..3 {
        create(&api, &format!("o{i}")).await;
    }
    let inf = informer(&env, QueueKind::RealFifo);
    let rec = Recorder::default();
    let reg = inf.add_event_handler(rec.clone()).unwrap();
    let stop = CancellationToken::new();
    start(&inf, &stop);
    let synced = tokio::time::timeout(
        Duration::from_secs(30),
        rein_informer::wait_for_cache_sync(&stop, &[inf.as_ref(), &reg]),
    )
    .await
    .expect("synced within the timeout");
    assert!(synced);
    assert!(inf.has_synced() && reg.has_synced());
    assert_eq!(rec.events().len(), 3, "every initial add handled");

    // A handler registered after the sync: its registration waits for its synthetic adds.
    let late = Recorder::default();
    let late_reg = inf.add_event_handler(late.clone()).unwrap();
    assert!(rein_informer::wait_for_cache_sync(&stop, &[&late_reg]).await);
    assert_eq!(late.events().len(), 3);
    stop.cancel();
}

/// A relist shares unchanged objects with the cache (same `Arc`, the listed copy is dropped
/// at once) instead of holding a second copy of the whole list; changed objects are new.
async fn relist_shares_unchanged_objects(streaming: bool) {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    create(&api, "same").await;
    create(&api, "changed").await;
    let lw = ApiListerWatcher::<ConfigMap>::new(env.client(), crate::support::demo_objects());
    let mut opts = options(QueueKind::RealFifo);
    opts.reflector.use_watch_list = streaming;
    opts.reflector.max_internal_error_retry_duration = Duration::ZERO;
    let inf = Arc::new(SharedIndexInformer::new(lw, opts));
    let stop = CancellationToken::new();
    start(&inf, &stop);
    eventually(20, "initial sync", || inf.has_synced()).await;
    let same_before = inf.indexer().get_by_key("default/same").unwrap();
    let initial_lists = |env: &TestEnv| {
        env.requests()
            .iter()
            .filter(|r| {
                r.path == INFORMER_PATH
                    && (!r.is_watch() || r.has_query("sendInitialEvents", "true"))
            })
            .count()
    };
    assert_eq!(initial_lists(&env), 1);

    // Break the watch so the change is only seen by the relist that a 500 forces.
    let faults = env.faults();
    faults.inject(Fault::server_error(1).matching(INFORMER_PATH));
    faults.close_watches();
    update(&api, "changed", "2").await;
    let want = server_state(&api).await;
    eventually(20, "relist converges", || cache_state(&inf) == want).await;
    assert!(initial_lists(&env) >= 2, "relisted");
    let same_after = inf.indexer().get_by_key("default/same").unwrap();
    assert!(
        Arc::ptr_eq(&same_before, &same_after),
        "the unchanged object is the cached one, not a second copy"
    );
    stop.cancel();
}

#[tokio::test]
async fn relist_shares_unchanged_objects_paged() {
    relist_shares_unchanged_objects(false).await;
}

#[tokio::test]
async fn relist_shares_unchanged_objects_streaming() {
    relist_shares_unchanged_objects(true).await;
}

/// `status()` says what the informer is doing: synced and watching; after its watch is closed
/// and the server holds its next watch request, `OpeningWatch` (and the server lists that
/// request as hung), with how long it has waited.
#[tokio::test]
async fn status_shows_the_reflector_step_and_a_held_watch_request() {
    use rein_informer::ReflectorPhase;
    use rein_testenv::RequestStage;

    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    create(&api, "one").await;
    let inf = informer(&env, QueueKind::RealFifo);
    let before = inf.status();
    assert!(!before.started && before.reflector.is_none(), "{before}");
    let stop = CancellationToken::new();
    start(&inf, &stop);
    eventually(20, "watching after the sync", || {
        let s = inf.status();
        s.synced
            && s.reflector
                .is_some_and(|r| r.phase == ReflectorPhase::Watching)
    })
    .await;
    create(&api, "two").await;
    eventually(20, "the event is counted", || {
        inf.status().reflector.is_some_and(|r| r.events >= 1)
    })
    .await;

    env.faults().inject(Fault::hang(1).matching(INFORMER_PATH));
    env.faults().close_watches();
    eventually(20, "the next watch request is held", || {
        inf.status()
            .reflector
            .is_some_and(|r| r.phase == ReflectorPhase::OpeningWatch)
            && env
                .requests_in_flight()
                .iter()
                .any(|r| r.path == INFORMER_PATH && r.stage == RequestStage::Hung)
    })
    .await;
    let status = inf.status();
    let text = status.to_string();
    assert!(
        text.starts_with("synced; reflector OpeningWatch for "),
        "{text}"
    );
    assert!(
        status
            .reflector
            .unwrap()
            .last_sync_resource_version
            .is_some()
    );
    stop.cancel();
    eventually(20, "stopped", || {
        inf.status()
            .reflector
            .is_some_and(|r| r.phase == ReflectorPhase::Stopped)
    })
    .await;
}

/// One back-pressure mechanism end to end: a handler that stops taking notifications makes
/// its buffer fill to capacity, then the process loop waits, the queue fills, and the
/// reflector stops reading the watch — every buffer bounded, nothing lost once the handler
/// resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stalled_handler_holds_back_the_watch_with_every_buffer_bounded() {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let lw = ApiListerWatcher::<ConfigMap>::new(env.client(), ListWatchOptions::default());
    let inf = Arc::new(SharedIndexInformer::new(lw, options(QueueKind::RealFifo)));
    let (open_tx, open_rx) = std::sync::mpsc::channel::<()>();
    let open_rx = Arc::new(parking_lot::Mutex::new(Some(open_rx)));
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handler = {
        let (gate, seen) = (open_rx.clone(), seen.clone());
        rein_informer::ResourceEventHandlerFuncs::<ConfigMap>::new().on_add(move |cm, _| {
            // The first notification blocks until the test opens the gate.
            if let Some(rx) = gate.lock().take() {
                let _ = rx.recv();
            }
            // Every namespace also holds its `kube-root-ca.crt`.
            if cm
                .metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("held-"))
            {
                seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    inf.add_event_handler(handler).unwrap();
    let stop = CancellationToken::new();
    start(&inf, &stop);
    inf.wait_synced().await;
    let total = 4_000;
    let writes = {
        let api = api.clone();
        tokio::spawn(async move {
            for i in 0..total {
                create(&api, &format!("held-{i}")).await;
            }
        })
    };
    eventually(60, "the reflector waits for queue room", || {
        inf.status().reflector.map(|r| r.phase)
            == Some(rein_informer::ReflectorPhase::WaitingForQueueRoom)
    })
    .await;
    let status = inf.status();
    let (capacity, batch) = (256, rein_informer::RealFifoOptions::default().batch_size);
    assert!(status.handler_buffers[0] <= capacity + batch, "{status}");
    assert!(status.handler_buffers[0] >= capacity, "{status}");
    assert!(
        status.queued <= rein_informer::DEFAULT_REAL_FIFO_CAPACITY + 1,
        "{status}"
    );
    open_tx.send(()).unwrap();
    writes.await.unwrap();
    eventually(60, "every add is delivered", || {
        seen.load(std::sync::atomic::Ordering::Relaxed) == total
    })
    .await;
    stop.cancel();
}
