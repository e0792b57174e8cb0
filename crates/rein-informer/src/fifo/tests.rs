//! Unit tests for DeltaFIFO and RealFIFO (behaviours of client-go's delta_fifo and RealFIFO tests).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::testutil::cm;
use crate::{DeletedObject, DeltaObject, DeltaType, Indexer};

type Popped = (Vec<(DeltaType, String, bool)>, bool);

fn describe(deltas: &[Delta<ConfigMap>]) -> Vec<(DeltaType, String, bool)> {
    deltas
        .iter()
        .map(|d| match &d.object {
            DeltaObject::Object(DeletedObject::Object(o)) => (
                d.kind,
                o.metadata.resource_version.clone().unwrap_or_default(),
                false,
            ),
            DeltaObject::Object(DeletedObject::Tombstone { obj, .. }) => (
                d.kind,
                obj.metadata.resource_version.clone().unwrap_or_default(),
                true,
            ),
            DeltaObject::List { objects, .. } => (d.kind, objects.len().to_string(), false),
            DeltaObject::None => (d.kind, String::new(), false),
            DeltaObject::ResourceVersion(rv) => (d.kind, rv.clone(), false),
        })
        .collect()
}

async fn pop_one(q: &dyn Fifo<ConfigMap>) -> Popped {
    let mut out = None;
    q.pop(&mut |deltas, initial| {
        out = Some((describe(&deltas), initial));
        Ok(())
    })
    .await
    .expect("queue open");
    out.expect("process ran")
}

fn fifo() -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions::default())
}

fn fifo_known(known: &Indexer<ConfigMap>) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(known.clone()),
        ..Default::default()
    })
}

use DeltaType::*;

fn d(kind: DeltaType, rv: &str) -> (DeltaType, String, bool) {
    (kind, rv.to_string(), false)
}
fn tomb(rv: &str) -> (DeltaType, String, bool) {
    (Deleted, rv.to_string(), true)
}

#[tokio::test]
async fn add_then_replace_empty_yields_tombstone() {
    let f = fifo();
    f.add(cm("ns", "o", "1"));
    f.replace(vec![], "2".into());
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "1"), tomb("1")]);
}

#[tokio::test]
async fn delete_then_replace_dedups_tombstone() {
    let f = fifo();
    f.add(cm("ns", "o", "1"));
    f.delete(cm("ns", "o", "2"));
    f.replace(vec![], "3".into());
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "1"), d(Deleted, "2")]);
}

#[tokio::test]
async fn repeated_replaces_emit_sync_then_one_tombstone() {
    let f = fifo();
    f.add(cm("ns", "o", "1"));
    f.replace(vec![cm("ns", "o", "1")], "1".into());
    f.replace(vec![cm("ns", "o", "1")], "1".into());
    f.replace(vec![], "2".into());
    assert_eq!(
        pop_one(&f).await.0,
        vec![d(Added, "1"), d(Sync, "1"), d(Sync, "1"), tomb("1")]
    );

    let f = fifo();
    f.add(cm("ns", "o", "1"));
    f.replace(vec![], "2".into());
    f.replace(vec![], "3".into());
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "1"), tomb("1")]);
}

#[tokio::test]
async fn replace_with_delete_delta_in_queue() {
    let known = Indexer::new();
    known.add(cm("ns", "o", "1"));
    let f = fifo_known(&known);
    f.delete(cm("ns", "o", "1"));
    f.replace(vec![cm("ns", "o", "2")], "2".into());
    assert_eq!(pop_one(&f).await.0, vec![d(Deleted, "1"), d(Sync, "2")]);
}

#[tokio::test]
async fn replace_emits_replaced_and_tombstones_for_known_objects() {
    let known = Indexer::new();
    known.add(cm("ns", "gone", "1"));
    known.add(cm("ns", "kept", "1"));
    let f = DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(known.clone()),
        emit_replaced: true,
        ..Default::default()
    });
    f.replace(vec![cm("ns", "kept", "2")], "2".into());
    assert!(!f.has_synced());
    let first = pop_one(&f).await;
    let second = pop_one(&f).await;
    let all = [first.0.clone(), second.0.clone()];
    assert!(all.contains(&vec![d(Replaced, "2")]), "{all:?}");
    assert!(all.contains(&vec![tomb("1")]), "{all:?}");
    assert!(
        first.1 && second.1,
        "both popped as part of the initial list"
    );
    assert!(f.has_synced());
}

#[tokio::test]
async fn keys_keep_their_place_in_line() {
    let f = fifo();
    f.add(cm("ns", "a", "1"));
    f.add(cm("ns", "b", "1"));
    f.update(cm("ns", "a", "2"));
    f.add(cm("ns", "c", "1"));
    assert_eq!(f.list_keys(), vec!["ns/a", "ns/b", "ns/c"]);
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "1"), d(Updated, "2")]);
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "1")]);
}

#[tokio::test]
async fn delete_of_unknown_object_is_ignored() {
    let f = fifo();
    f.delete(cm("ns", "x", "1"));
    assert!(f.is_empty());

    let known = Indexer::new();
    known.add(cm("ns", "x", "1"));
    let f = fifo_known(&known);
    f.delete(cm("ns", "y", "1"));
    assert!(f.is_empty());
    f.delete(cm("ns", "x", "2"));
    assert_eq!(pop_one(&f).await.0, vec![d(Deleted, "2")]);
}

#[tokio::test]
async fn consecutive_deletes_collapse() {
    let f = fifo();
    f.add(cm("ns", "o", "1"));
    f.delete(cm("ns", "o", "2"));
    f.delete(cm("ns", "o", "3"));
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "1"), d(Deleted, "2")]);
}

#[tokio::test]
async fn resync_skips_keys_with_pending_deltas() {
    let known = Indexer::new();
    known.add(cm("ns", "a", "1"));
    known.add(cm("ns", "b", "1"));
    let f = fifo_known(&known);
    f.update(cm("ns", "a", "2"));
    f.resync();
    assert_eq!(pop_one(&f).await.0, vec![d(Updated, "2")]);
    assert_eq!(pop_one(&f).await.0, vec![d(Sync, "1")]);
    assert!(f.is_empty());
    // Without known objects a resync does nothing.
    let plain = fifo();
    plain.resync();
    assert!(plain.is_empty());
}

#[tokio::test]
async fn has_synced_after_initial_items_are_popped() {
    let f = fifo();
    assert!(!f.has_synced());
    f.replace(vec![cm("ns", "a", "1"), cm("ns", "b", "1")], "1".into());
    assert!(!f.has_synced());
    assert!(pop_one(&f).await.1);
    assert!(!f.has_synced());
    assert!(pop_one(&f).await.1);
    assert!(f.has_synced());
    f.add(cm("ns", "c", "1"));
    assert!(
        !pop_one(&f).await.1,
        "later items are not in the initial list"
    );

    let g = fifo();
    g.add(cm("ns", "a", "1"));
    assert!(
        g.has_synced(),
        "an add before any replace marks the queue populated"
    );
}

#[tokio::test]
async fn requeue_puts_deltas_back_when_enabled() {
    let f = DeltaFifo::new(DeltaFifoOptions {
        requeue_on_error: true,
        ..Default::default()
    });
    f.add(cm("ns", "a", "1"));
    f.pop(&mut |_, _| Err(Requeue)).await.unwrap();
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "1")]);

    let g = fifo();
    g.add(cm("ns", "a", "1"));
    g.pop(&mut |_, _| Err(Requeue)).await.unwrap();
    assert!(g.is_empty(), "requeue is opt-in");
}

#[tokio::test]
async fn add_if_not_present_does_not_overwrite() {
    let f = fifo();
    f.add(cm("ns", "a", "1"));
    f.add_if_not_present(
        "ns/a".into(),
        vec![Delta::object(Updated, cm("ns", "a", "9"))],
    );
    f.add_if_not_present(
        "ns/b".into(),
        vec![Delta::object(Updated, cm("ns", "b", "9"))],
    );
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "1")]);
    assert_eq!(pop_one(&f).await.0, vec![d(Updated, "9")]);
}

#[tokio::test]
async fn pop_waits_for_an_item_and_close_drains_first() {
    let f = Arc::new(fifo());
    let waiter = {
        let f = f.clone();
        tokio::spawn(async move { pop_one(f.as_ref()).await })
    };
    tokio::task::yield_now().await;
    f.add(cm("ns", "a", "1"));
    let got = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.0, vec![d(Added, "1")]);

    f.add(cm("ns", "b", "1"));
    f.close();
    assert!(f.is_closed());
    assert_eq!(pop_one(f.as_ref()).await.0, vec![d(Added, "1")]);
    assert_eq!(f.pop(&mut |_, _| Ok(())).await, Err(QueueClosed));
}

#[tokio::test]
async fn close_wakes_a_blocked_pop() {
    let f: Arc<DeltaFifo<ConfigMap>> = Arc::new(fifo());
    let waiter = {
        let f = f.clone();
        tokio::spawn(async move { f.pop(&mut |_, _| Ok(())).await })
    };
    tokio::task::yield_now().await;
    f.close();
    let res = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(res, Err(QueueClosed));
}

#[tokio::test]
async fn real_fifo_keeps_every_event_in_order() {
    let f: RealFifo<ConfigMap> = RealFifo::default();
    f.add(cm("ns", "a", "1"));
    f.delete(cm("ns", "a", "2"));
    f.delete(cm("ns", "a", "3"));
    f.delete(cm("ns", "unknown", "4"));
    assert_eq!(f.len(), 4);
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "1")]);
    assert_eq!(pop_one(&f).await.0, vec![d(Deleted, "2")]);
    assert_eq!(pop_one(&f).await.0, vec![d(Deleted, "3"), d(Deleted, "4")]);
    assert!(f.is_empty());
}

/// client-go `TestRealFIFO_PopMultipleDeltaInBatch`: a batch holds each key once and closes at
/// a key it already holds; it also closes at the end of the initial list and at the batch
/// size.
#[tokio::test]
async fn real_fifo_pop_multiple_delta_in_batch() {
    const UNLIMITED: usize = 999_999;
    type Case = (
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        usize,
    );
    // (name, initial list, then updated, batch size) -> batches of (name, kind) below.
    type Batches = Vec<Vec<(DeltaType, &'static str)>>;
    let cases: [(Case, Batches); 5] = [
        (
            (
                "non-split: unique items",
                &["foo1", "foo2", "foo3"],
                &[],
                UNLIMITED,
            ),
            vec![vec![(ReplacedAll, "3")]],
        ),
        (
            (
                "split due to initial list",
                &["foo1", "foo2"],
                &["foo3", "foo4"],
                2,
            ),
            vec![
                vec![(ReplacedAll, "2")],
                vec![(Updated, "foo3"), (Updated, "foo4")],
            ],
        ),
        (
            (
                "non-unique #1: one item updated twice",
                &["foo1"],
                &["foo1", "foo1"],
                UNLIMITED,
            ),
            vec![
                vec![(ReplacedAll, "1")],
                vec![(Updated, "foo1")],
                vec![(Updated, "foo1")],
            ],
        ),
        (
            (
                "non-unique #2: repeat at the start",
                &["foo1", "foo2"],
                &["foo2", "foo3"],
                UNLIMITED,
            ),
            vec![
                vec![(ReplacedAll, "2")],
                vec![(Updated, "foo2"), (Updated, "foo3")],
            ],
        ),
        (
            (
                "non-unique #3: repeat in the middle",
                &["foo1", "foo2", "foo3"],
                &["foo2", "foo3", "foo2", "foo1"],
                UNLIMITED,
            ),
            vec![
                vec![(ReplacedAll, "3")],
                vec![(Updated, "foo2"), (Updated, "foo3")],
                vec![(Updated, "foo2"), (Updated, "foo1")],
            ],
        ),
    ];
    for ((name, initial, updates, batch_size), expected) in cases {
        let f: RealFifo<ConfigMap> = RealFifo::new(RealFifoOptions {
            batch_size,
            ..Default::default()
        });
        f.replace(
            initial.iter().map(|n| cm("ns", n, "1")).collect(),
            "1".into(),
        );
        for n in updates {
            f.update(cm("ns", n, "2"));
        }
        let mut got = Vec::new();
        while !f.is_empty() {
            let mut batch = Vec::new();
            f.pop(&mut |deltas, _| {
                batch = deltas
                    .iter()
                    .map(|d| match &d.object {
                        DeltaObject::Object(o) => {
                            (d.kind, o.object().metadata.name.clone().unwrap_or_default())
                        }
                        DeltaObject::List { objects, .. } => (d.kind, objects.len().to_string()),
                        _ => (d.kind, String::new()),
                    })
                    .collect();
                Ok(())
            })
            .await
            .expect("queue open");
            got.push(batch);
        }
        let expected: Vec<Vec<(DeltaType, String)>> = expected
            .into_iter()
            .map(|b| b.into_iter().map(|(k, n)| (k, n.to_string())).collect())
            .collect();
        assert_eq!(got, expected, "{name}");
    }
}

/// A custom key function decides which deltas share a batch.
#[tokio::test]
async fn real_fifo_batches_by_its_key_function() {
    let by_namespace: crate::KeyFunc<ConfigMap> =
        Arc::new(|o: &ConfigMap| o.metadata.namespace.clone().unwrap_or_default());
    let f = RealFifo::with_key_fn(RealFifoOptions::default(), by_namespace);
    f.add(cm("ns", "a", "1"));
    f.add(cm("ns", "b", "2"));
    f.add(cm("other", "c", "3"));
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "1")]);
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "2"), d(Added, "3")]);
}

#[tokio::test]
async fn real_fifo_replace_and_resync_are_single_atomic_deltas() {
    let f: RealFifo<ConfigMap> = RealFifo::new(RealFifoOptions {
        batch_size: 2,
        ..Default::default()
    });
    f.replace(vec![cm("ns", "a", "1"), cm("ns", "b", "1")], "1".into());
    f.add(cm("ns", "c", "2"));
    f.add(cm("ns", "d", "2"));
    f.add(cm("ns", "e", "2"));
    f.resync();
    f.bookmark("9".into());
    assert!(!f.has_synced());
    let (first, initial) = pop_one(&f).await;
    assert_eq!(first, vec![d(ReplacedAll, "2")]);
    assert!(initial);
    assert!(f.has_synced());
    assert_eq!(pop_one(&f).await.0, vec![d(Added, "2"), d(Added, "2")]);
    assert_eq!(
        pop_one(&f).await.0,
        vec![d(Added, "2")],
        "a batch stops at SyncAll"
    );
    assert_eq!(pop_one(&f).await.0, vec![d(SyncAll, "")]);
    assert_eq!(pop_one(&f).await.0, vec![d(Bookmark, "9")]);
}

/// `wait_synced` wakes the moment the last initial entry has been processed, on the paused
/// clock without any time passing (a poll would have advanced it), for both queues.
#[tokio::test(start_paused = true)]
async fn wait_synced_wakes_when_the_initial_list_is_processed() {
    let queues: [Arc<dyn Fifo<ConfigMap>>; 2] = [
        Arc::new(fifo()),
        Arc::new(RealFifo::new(RealFifoOptions {
            batch_size: 1,
            ..Default::default()
        })),
    ];
    for q in queues {
        let start = tokio::time::Instant::now();
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move { q.wait_synced().await })
        };
        q.replace(vec![cm("ns", "a", "1"), cm("ns", "b", "1")], "1".into());
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        pop_one(q.as_ref()).await;
        tokio::task::yield_now().await;
        let done_early = waiter.is_finished() && !q.has_synced();
        assert!(!done_early, "woken before the initial list was processed");
        while !q.has_synced() {
            pop_one(q.as_ref()).await;
        }
        waiter.await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO);
        // Already synced: resolves at once.
        q.wait_synced().await;
    }
}

#[tokio::test(start_paused = true)]
async fn wait_synced_after_an_empty_list() {
    let q = fifo();
    q.replace(Vec::new(), "1".into());
    q.wait_synced().await;
    assert!(q.has_synced());
}

/// A full RealFIFO makes `wait_for_room` wait until a pop makes room (or the queue closes);
/// writes themselves are never refused.
#[tokio::test]
async fn real_fifo_waits_for_room_at_capacity_and_never_refuses_a_write() {
    use futures::FutureExt;
    let f: RealFifo<ConfigMap> = RealFifo::new(RealFifoOptions {
        batch_size: 1,
        capacity: 2,
    });
    assert!(f.wait_for_room().now_or_never().is_some(), "empty: room");
    f.add(cm("ns", "a", "1"));
    assert!(
        f.wait_for_room().now_or_never().is_some(),
        "one of two: room"
    );
    f.add(cm("ns", "b", "2"));
    f.add(cm("ns", "c", "3"));
    assert_eq!(f.len(), 3, "a write past capacity is still queued");
    let waiter = {
        let f = Arc::new(f);
        let w = f.clone();
        (f, tokio::spawn(async move { w.wait_for_room().await }))
    };
    let (f, waiter) = waiter;
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished(), "full: waits");
    pop_one(f.as_ref()).await;
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished(), "still at capacity after one pop");
    pop_one(f.as_ref()).await;
    waiter.await.unwrap();
    assert_eq!(f.len(), 1);

    // Closing wakes a waiter too, so a stopping reflector is never stuck.
    f.add(cm("ns", "d", "4"));
    let w = f.clone();
    let waiter = tokio::spawn(async move { w.wait_for_room().await });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    f.close();
    waiter.await.unwrap();

    // Capacity 0 never waits.
    let unbounded: RealFifo<ConfigMap> = RealFifo::new(RealFifoOptions {
        batch_size: 1,
        capacity: 0,
    });
    for i in 0..10 {
        unbounded.add(cm("ns", &format!("o{i}"), "1"));
    }
    assert!(unbounded.wait_for_room().now_or_never().is_some());
}
