//! Unit tests for the channel source and the event sink.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::event::{CreateEvent, GenericEvent};
use crate::handler::EnqueueRequestForObject;
use crate::predicate::{BoxPredicate, Funcs};
use crate::queue::RequestQueue;
use crate::reconcile::Request;

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

async fn until(cond: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("condition never became true");
}

#[tokio::test]
async fn channel_fans_out_to_every_destination() {
    let (tx, rx) = mpsc::channel(4);
    let source = Channel::new(rx).buffer_size(1);
    let q1 = RequestQueue::new("c1");
    let q2 = RequestQueue::new("c2");
    let stop = CancellationToken::new();
    for q in [&q1, &q2] {
        let sink = EventSink::new(Arc::new(EnqueueRequestForObject), vec![], q.clone());
        source.start(sink, stop.clone()).await.unwrap();
    }
    for name in ["a", "b", "c"] {
        tx.send(GenericEvent::new(pod(name))).await.unwrap();
    }
    until(|| q1.len() == 3 && q2.len() == 3).await;
    assert_eq!(q1.get().await.unwrap().0, Request::new("ns", "a"));
    stop.cancel();
}

#[tokio::test]
async fn sink_applies_predicates_in_order() {
    let q = RequestQueue::new("sink");
    let only_generic: BoxPredicate<Pod> = Arc::new(
        Funcs::new()
            .on_create(|_| false)
            .on_update(|_| false)
            .on_delete(|_| false),
    );
    let sink = EventSink::new(
        Arc::new(EnqueueRequestForObject),
        vec![only_generic],
        q.clone(),
    );
    sink.create(&CreateEvent {
        object: Arc::new(pod("dropped")),
        is_in_initial_list: false,
    });
    sink.generic(&GenericEvent::new(pod("kept")));
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await.unwrap().0, Request::new("ns", "kept"));
}

/// Lists one fixed Pod; its watch never sends. The informer's data, not a stand-in for the
/// code under test (the Kind source and its sync wait).
struct OnePod;

#[async_trait::async_trait]
impl rein_informer::ListerWatcher<Pod> for OnePod {
    async fn list(
        &self,
        _: &kube_client::api::ListParams,
    ) -> Result<rein_informer::ListPage<Pod>, kube_client::Error> {
        let mut p = pod("only");
        p.metadata.resource_version = Some("1".into());
        Ok(rein_informer::ListPage {
            items: vec![p],
            resource_version: "1".into(),
            continue_token: None,
        })
    }

    async fn watch(
        &self,
        _: &kube_client::api::WatchParams,
        _: &str,
    ) -> Result<rein_informer::WatchStream<Pod>, kube_client::Error> {
        Ok(Box::pin(futures::stream::pending()))
    }

    fn supports_watch_list(&self) -> bool {
        false
    }
}

/// The informer source's sync wait wakes on the sync signals: on the paused clock it ends
/// with no time passed (the old 100 ms poll advanced it), and the initial add is queued.
#[tokio::test(start_paused = true)]
async fn informer_source_sync_wait_wakes_without_polling() {
    let informer = Arc::new(rein_informer::SharedIndexInformer::new(
        OnePod,
        rein_informer::InformerOptions::default(),
    ));
    let source = Informer::new(informer.clone());
    let queue = RequestQueue::new("sync");
    let stop = CancellationToken::new();
    let sink = EventSink::new(Arc::new(EnqueueRequestForObject), vec![], queue.clone());
    source.start(sink, stop.clone()).await.unwrap();
    let source = Arc::new(source);
    let started = tokio::time::Instant::now();
    // The wait starts before the informer runs, so it has to wait for the sync.
    let waiter = {
        let (source, stop) = (source.clone(), stop.clone());
        tokio::spawn(async move { source.wait_for_sync(stop).await })
    };
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!waiter.is_finished(), "the informer has not run yet");
    let run = {
        let (informer, stop) = (informer.clone(), stop.clone());
        tokio::spawn(async move { informer.run(stop).await })
    };
    waiter.await.unwrap().unwrap();
    assert_eq!(started.elapsed(), Duration::ZERO, "the sync wait slept");
    assert_eq!(queue.len(), 1);
    stop.cancel();
    run.await.unwrap();
}
