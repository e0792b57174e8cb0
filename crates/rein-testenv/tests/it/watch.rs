//! Watch protocol tests through kube-client: bookmarks, streaming lists, 410 Expired,
//! selector transitions, timeouts and closed watches.

use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use rein_testenv::TestEnv;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(10);

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("cm")
}

/// The next event, leaving out those of the namespace's root CA ConfigMap.
async fn next<S>(stream: &mut S) -> Option<WatchEvent<ConfigMap>>
where
    S: Stream<Item = Result<WatchEvent<ConfigMap>, kube_client::Error>> + Unpin,
{
    loop {
        let event = tokio::time::timeout(WAIT, stream.try_next())
            .await
            .expect("an event in time")
            .expect("a well-formed event");
        match &event {
            Some(e) if name_of(e).1 == crate::ROOT_CA => continue,
            _ => return event,
        }
    }
}

/// The next event that is not a bookmark.
async fn next_change<S>(stream: &mut S) -> Option<WatchEvent<ConfigMap>>
where
    S: Stream<Item = Result<WatchEvent<ConfigMap>, kube_client::Error>> + Unpin,
{
    loop {
        match next(stream).await {
            Some(WatchEvent::Bookmark(_)) => continue,
            other => return other,
        }
    }
}

fn name_of(event: &WatchEvent<ConfigMap>) -> (&'static str, String) {
    match event {
        WatchEvent::Added(c) => ("ADDED", c.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Modified(c) => ("MODIFIED", c.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Deleted(c) => ("DELETED", c.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Bookmark(_) => ("BOOKMARK", String::new()),
        WatchEvent::Error(e) => ("ERROR", e.message.clone()),
    }
}

#[tokio::test]
async fn bookmarks_carry_the_current_version() {
    let env = TestEnv::builder()
        .bookmark_interval(Duration::from_millis(50))
        .start()
        .await
        .expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let created = cms
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .expect("creates");
    let rv = created.metadata.resource_version.expect("rv");
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watches")
        .boxed();
    loop {
        if let Some(WatchEvent::Bookmark(b)) = next(&mut stream).await {
            let at: u64 = b.metadata.resource_version.parse().expect("numeric");
            assert!(at >= rv.parse::<u64>().expect("numeric"));
            assert_eq!(b.types.kind, "ConfigMap");
            break;
        }
    }
}

#[tokio::test]
async fn streaming_lists_end_initial_events_with_an_annotated_bookmark() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for name in ["a", "b"] {
        cms.create(&PostParams::default(), &cm(name, json!({})))
            .await
            .expect("creates");
    }
    let mut stream = cms
        .watch(&WatchParams::streaming_lists(), "")
        .await
        .expect("watches")
        .boxed();
    let mut added = Vec::new();
    loop {
        match next(&mut stream).await.expect("open") {
            WatchEvent::Added(c) => added.push(c.metadata.name.expect("name")),
            WatchEvent::Bookmark(b) => {
                assert_eq!(
                    b.metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .map(String::as_str),
                    Some("true")
                );
                break;
            }
            other => panic!("unexpected {:?}", name_of(&other)),
        }
    }
    assert_eq!(added, ["a", "b"]);
}

#[tokio::test]
async fn compacted_history_answers_410_expired() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let first = cms
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .expect("creates");
    cms.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .expect("creates");
    env.faults().compact();
    let rv = first.metadata.resource_version.expect("rv");
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch starts")
        .boxed();
    match next(&mut stream).await {
        Some(WatchEvent::Error(status)) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
        }
        other => panic!("expected 410, got {:?}", other.as_ref().map(name_of)),
    }
}

#[tokio::test]
async fn small_history_expires_old_versions() {
    let env = TestEnv::builder()
        .watch_history(3)
        .start()
        .await
        .expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let first = cms
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .expect("creates");
    for i in 0..5 {
        cms.create(&PostParams::default(), &cm(&format!("x{i}"), json!({})))
            .await
            .expect("creates");
    }
    let rv = first.metadata.resource_version.expect("rv");
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch starts")
        .boxed();
    assert!(matches!(next(&mut stream).await, Some(WatchEvent::Error(s)) if s.code == 410));
}

#[tokio::test]
async fn selectors_turn_label_changes_into_added_and_deleted() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let params = WatchParams::default().labels("team=a").disable_bookmarks();
    let mut stream = cms.watch(&params, "0").await.expect("watches").boxed();
    cms.create(&PostParams::default(), &cm("x", json!({"team": "b"})))
        .await
        .expect("creates");
    let relabel = |team: &str| Patch::Merge(json!({"metadata": {"labels": {"team": team}}}));
    cms.patch("x", &PatchParams::default(), &relabel("a"))
        .await
        .expect("patches");
    cms.patch("x", &PatchParams::default(), &relabel("a2"))
        .await
        .expect("patches");
    let events = [
        name_of(&next_change(&mut stream).await.expect("open")),
        name_of(&next_change(&mut stream).await.expect("open")),
    ];
    assert_eq!(
        events,
        [("ADDED", "x".to_string()), ("DELETED", "x".to_string())]
    );
}

#[tokio::test]
async fn field_selector_watch_sees_only_the_named_object() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let params = WatchParams::default()
        .fields("metadata.name=wanted")
        .disable_bookmarks();
    let mut stream = cms.watch(&params, "0").await.expect("watches").boxed();
    cms.create(&PostParams::default(), &cm("other", json!({})))
        .await
        .expect("creates");
    cms.create(&PostParams::default(), &cm("wanted", json!({})))
        .await
        .expect("creates");
    assert_eq!(
        name_of(&next_change(&mut stream).await.expect("open")),
        ("ADDED", "wanted".to_string())
    );
}

#[tokio::test]
async fn watches_in_one_namespace_ignore_others() {
    let env = TestEnv::start().await.expect("starts");
    let in_default: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let in_system: Api<ConfigMap> = Api::namespaced(env.client(), "kube-system");
    let mut stream = in_default
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .expect("watches")
        .boxed();
    in_system
        .create(&PostParams::default(), &cm("elsewhere", json!({})))
        .await
        .expect("creates");
    in_default
        .create(&PostParams::default(), &cm("here", json!({})))
        .await
        .expect("creates");
    assert_eq!(
        name_of(&next_change(&mut stream).await.expect("open")),
        ("ADDED", "here".to_string())
    );
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut stream = cms
        .watch(&WatchParams::default().timeout(1).disable_bookmarks(), "0")
        .await
        .expect("watches")
        .boxed();
    assert!(
        next(&mut stream).await.is_none(),
        "the stream ends after timeoutSeconds"
    );
}

#[tokio::test]
async fn close_watches_ends_open_streams() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut stream = cms
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .expect("watches")
        .boxed();
    cms.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .expect("creates");
    assert!(next(&mut stream).await.is_some());
    env.faults().close_watches();
    assert!(next(&mut stream).await.is_none(), "closed by the fault");
    let watches = env.requests().into_iter().filter(|r| r.is_watch()).count();
    assert_eq!(watches, 1);
}

#[tokio::test]
async fn a_bookmark_never_overtakes_an_older_event() {
    // A client resumes from a bookmark's version, so every event at or below it must be
    // written first, even when more than one write's worth of events is waiting (found by
    // reading: a bookmark used to follow only the first 256 KiB of a backlog).
    let env = TestEnv::builder()
        .bookmark_interval(Duration::from_millis(1))
        .start()
        .await
        .expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let params = WatchParams::default(); // bookmarks are on by default
    let mut stream = cms.watch(&params, "0").await.expect("watches").boxed();
    // A backlog of ~1.6 MiB the watch cannot write while the client is not reading.
    let payload = "x".repeat(8 * 1024);
    let writes = (0..200).map(|i| {
        let cms = cms.clone();
        let mut c = cm(&format!("big-{i}"), json!({}));
        c.data = Some([("payload".to_string(), payload.clone())].into());
        async move { cms.create(&PostParams::default(), &c).await }
    });
    let created = futures::future::try_join_all(writes)
        .await
        .expect("creates");
    let last: u64 = created
        .iter()
        .filter_map(|c| c.metadata.resource_version.as_deref()?.parse().ok())
        .max()
        .expect("versions");
    let mut seen = 0;
    let mut bookmarked = 0u64;
    while seen < created.len() {
        match next(&mut stream).await.expect("the watch stays open") {
            WatchEvent::Bookmark(b) => {
                bookmarked = b.metadata.resource_version.parse().expect("numeric");
            }
            WatchEvent::Added(c) => {
                let rv: u64 = c
                    .metadata
                    .resource_version
                    .as_deref()
                    .and_then(|v| v.parse().ok())
                    .expect("numeric");
                assert!(
                    rv > bookmarked,
                    "ADDED at {rv} arrived after a bookmark at {bookmarked}"
                );
                seen += 1;
            }
            other => panic!("unexpected {:?}", name_of(&other)),
        }
    }
    assert!(bookmarked <= last);
}
