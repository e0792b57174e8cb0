//! Load: thousands of objects and hundreds of concurrent watchers stay correct.

use std::collections::HashSet;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use rein_testenv::TestEnv;
use serde_json::json;

const OBJECTS: usize = 2_000;
const WATCHERS: usize = 200;
/// Objects are spread over this many label groups; each watcher selects one group, so the
/// server filters every event for every watcher while the (debug-built) clients decode a share.
const GROUPS: usize = 10;
const PER_GROUP: usize = OBJECTS / GROUPS;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_watchers_see_every_object() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let start_rv = cms
        .list(&ListParams::default())
        .await
        .expect("lists")
        .metadata
        .resource_version
        .expect("rv");

    let mut watchers = Vec::new();
    for w in 0..WATCHERS {
        let selector = format!("group=g{}", w % GROUPS);
        let stream = cms
            .watch(
                &WatchParams::default().labels(&selector).disable_bookmarks(),
                &start_rv,
            )
            .await
            .expect("watches");
        watchers.push(tokio::spawn(async move {
            let mut stream = stream.boxed();
            let mut seen = HashSet::new();
            let mut last_rv = 0u64;
            while seen.len() < PER_GROUP {
                match stream.try_next().await {
                    Ok(Some(WatchEvent::Added(c))) => {
                        let rv: u64 = c
                            .metadata
                            .resource_version
                            .as_deref()
                            .unwrap_or("0")
                            .parse()
                            .unwrap_or(0);
                        assert!(rv > last_rv, "events arrive in resourceVersion order");
                        last_rv = rv;
                        seen.insert(c.metadata.name.unwrap_or_default());
                    }
                    Ok(Some(other)) => panic!("unexpected event {other:?}"),
                    Ok(None) => break,
                    Err(e) => panic!("watch failed: {e}"),
                }
            }
            seen.len()
        }));
    }

    futures::stream::iter(0..OBJECTS)
        .map(|i| {
            let cms = cms.clone();
            async move {
                let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("cm-{i:05}"), "labels": {"group": format!("g{}", i % GROUPS)}}, "data": {"i": i.to_string()}})).expect("cm");
                cms.create(&PostParams::default(), &cm).await.expect("creates");
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;

    for w in watchers {
        let seen = tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .expect("in time")
            .expect("joins");
        assert_eq!(seen, PER_GROUP);
    }
    let listed = cms.list(&ListParams::default()).await.expect("lists");
    // And the namespace's root CA ConfigMap.
    assert_eq!(listed.items.len(), OBJECTS + 1);
    let paged = cms
        .list(&ListParams::default().limit(500))
        .await
        .expect("pages");
    assert_eq!(
        paged.metadata.remaining_item_count,
        Some((OBJECTS + 1 - 500) as i64)
    );
}
