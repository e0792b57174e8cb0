//! Tests for the plain queue: client-go's `queue_test.go` behaviours in our own words.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::timeout;

use super::*;

/// True if `get` is still waiting after a (paused-clock) second.
async fn get_blocks<T: Item>(queue: &Queue<T>) -> bool {
    timeout(Duration::from_secs(1), queue.get()).await.is_err()
}

#[tokio::test(start_paused = true)]
async fn hands_out_in_fifo_order() {
    let queue = Queue::new();
    for i in 0..5 {
        queue.add(i);
    }
    assert_eq!(queue.len(), 5);
    for i in 0..5 {
        assert_eq!(queue.get().await, Some(i));
        queue.done(&i);
    }
    assert!(queue.is_empty());
}

#[tokio::test(start_paused = true)]
async fn adds_before_processing_collapse_into_one() {
    let queue = Queue::new();
    queue.add("a");
    queue.add("b");
    queue.add("a");
    queue.add("a");
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(queue.get().await, Some("b"));
    assert!(get_blocks(&queue).await);
}

#[tokio::test(start_paused = true)]
async fn item_added_while_processing_comes_back_once_after_done() {
    let queue = Queue::new();
    queue.add("a");
    let item = queue.get().await.unwrap();
    queue.add("a");
    queue.add("a");
    // Not counted and not handed to a second worker while in flight.
    assert_eq!(queue.len(), 0);
    assert!(get_blocks(&queue).await);
    queue.done(&item);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some("a"));
    queue.done(&"a");
    assert!(get_blocks(&queue).await);
}

#[tokio::test(start_paused = true)]
async fn re_added_item_goes_to_the_back() {
    let queue = Queue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    queue.add("b");
    queue.add("a");
    queue.done(&a);
    assert_eq!(queue.get().await, Some("b"));
    assert_eq!(queue.get().await, Some("a"));
}

#[tokio::test(start_paused = true)]
async fn done_of_an_unknown_or_waiting_item_is_harmless() {
    let queue = Queue::new();
    queue.done(&"nothing");
    queue.add("a");
    queue.done(&"a"); // queued, not processing: no effect
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some("a"));
    queue.done(&"a");
    queue.done(&"a");
    assert!(queue.is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_item_queued_again_by_done_is_waiting_not_processing() {
    // `done` queues a re-added item again at the back: from then on it counts as waiting (a
    // stray `done` is harmless, adds collapse into it), and once handed out again it is
    // processing (an add then waits for its `done`).
    let queue = Queue::new();
    queue.add("a");
    queue.add("b");
    let a = queue.get().await.unwrap();
    queue.add("a");
    queue.done(&a);
    queue.done(&"a"); // waiting again, not processing: no effect
    queue.add("a");
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.get().await, Some("b"));
    assert_eq!(queue.get().await, Some("a"));
    queue.add("a");
    queue.add("a");
    assert_eq!(queue.len(), 0);
    queue.done(&"a");
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some("a"));
    queue.done(&"a");
    queue.done(&"b");
    assert!(get_blocks(&queue).await);
}

#[tokio::test(start_paused = true)]
async fn waiting_getter_is_woken_by_add() {
    let queue = Queue::new();
    let getter = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    queue.add(7);
    assert_eq!(getter.await.unwrap(), Some(7));
}

#[tokio::test(start_paused = true)]
async fn cancelled_get_loses_nothing() {
    let queue = Queue::new();
    assert!(get_blocks(&queue).await); // a get future dropped while waiting
    let getter = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    queue.add(1);
    assert_eq!(getter.await.unwrap(), Some(1));
}

/// Spawns `n` getters on the current runtime and lets them park on the empty queue.
async fn parked_getters<T: Item>(
    queue: &Queue<T>,
    n: usize,
) -> Vec<tokio::task::JoinHandle<Option<T>>> {
    let getters = (0..n)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move { queue.get().await })
        })
        .collect();
    tokio::task::yield_now().await;
    getters
}

/// The result of a parked getter, failing if it is not woken within a (paused-clock) minute.
async fn woken<T>(getter: tokio::task::JoinHandle<Option<T>>) -> Option<T> {
    timeout(Duration::from_secs(60), getter)
        .await
        .expect("a parked getter was not woken")
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_adds_reaches_every_parked_getter() {
    let queue = Queue::new();
    let getters = parked_getters(&queue, 3).await;
    // Five adds without yielding: three parked getters to wake, two items left queued.
    for i in 0..5 {
        queue.add(i);
    }
    let mut got: Vec<_> = Vec::new();
    for getter in getters {
        got.push(woken(getter).await.unwrap());
    }
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2]);
    assert_eq!(queue.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_requeue_by_done_wakes_a_parked_getter() {
    let queue = Queue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    queue.add("a"); // dirty while processing
    let getters = parked_getters(&queue, 1).await;
    queue.done(&a);
    assert_eq!(woken(getters.into_iter().next().unwrap()).await, Some("a"));
}

#[tokio::test(start_paused = true)]
async fn a_parked_getter_still_wakes_after_another_was_cancelled() {
    let queue = Queue::new();
    // A getter counted as parked, then dropped: its count must not swallow a later wake-up.
    assert!(get_blocks(&queue).await);
    let getters = parked_getters(&queue, 1).await;
    queue.add(1);
    assert_eq!(woken(getters.into_iter().next().unwrap()).await, Some(1));
    // And the next add, with no getter parked, is simply queued.
    queue.add(2);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some(2));
}

#[tokio::test(start_paused = true)]
async fn a_signalled_getter_whose_item_was_taken_parks_again() {
    let queue = Queue::new();
    let getters = parked_getters(&queue, 1).await;
    // The parked getter is signalled, but this task takes the item before it runs.
    queue.add(1);
    assert_eq!(queue.get().await, Some(1));
    tokio::task::yield_now().await;
    // It went back to waiting and is woken by the next add.
    queue.add(2);
    assert_eq!(woken(getters.into_iter().next().unwrap()).await, Some(2));
}

#[tokio::test(start_paused = true)]
async fn a_worker_that_always_finds_an_item_lets_other_tasks_run() {
    // One thread: a worker whose queue never empties must still yield to other tasks.
    let queue = Queue::new();
    queue.add(0_u32);
    let other_ran = Arc::new(AtomicUsize::new(0));
    tokio::spawn({
        let other_ran = other_ran.clone();
        async move {
            other_ran.store(1, Ordering::SeqCst);
        }
    });
    let mut handled = 0;
    while other_ran.load(Ordering::SeqCst) == 0 {
        let item = queue.get().await.unwrap();
        queue.done(&item);
        queue.add(item + 1);
        handled += 1;
        assert!(handled < 10_000, "the worker never yielded");
    }
}

#[tokio::test(start_paused = true)]
async fn a_worker_works_through_a_backlog_before_it_yields() {
    // One thread: with 3,000 items queued the worker takes every get that leaves 1,024 or
    // more without yielding; the first get that leaves fewer ends its turn, so the next one
    // yields.
    let queue = Queue::new();
    for i in 0..3_000_u32 {
        queue.add(i);
    }
    let other_ran = Arc::new(AtomicUsize::new(0));
    tokio::spawn({
        let other_ran = other_ran.clone();
        async move {
            other_ran.store(1, Ordering::SeqCst);
        }
    });
    let mut handled = 0;
    while other_ran.load(Ordering::SeqCst) == 0 {
        let item = queue.get().await.unwrap();
        queue.done(&item);
        handled += 1;
    }
    assert!(
        (3_000 - 1_024..=3_000 - 1_024 + 2).contains(&handled),
        "yielded after {handled} items"
    );
}

#[tokio::test(start_paused = true)]
async fn a_caught_up_worker_lets_repeated_adds_collapse() {
    // One thread: a producer adds the same 10 keys in each of 200 rounds, yielding between
    // rounds; a worker that took every queued key whenever it ran would take 10 per round.
    // Ending its turn after each item it takes from a short queue, it takes about one per
    // round, and every key is still processed after its last add.
    const ROUNDS: usize = 200;
    let queue: Queue<usize> = Queue::new();
    let added: Arc<Vec<AtomicUsize>> = Arc::new((0..10).map(|_| AtomicUsize::new(0)).collect());
    let worker = tokio::spawn({
        let (queue, added) = (queue.clone(), added.clone());
        async move {
            let mut seen = [0_usize; 10];
            let mut gets = 0;
            while let Some(key) = queue.get().await {
                seen[key] = added[key].load(Ordering::SeqCst);
                queue.done(&key);
                gets += 1;
            }
            (gets, seen)
        }
    });
    for round in 1..=ROUNDS {
        for (key, added) in added.iter().enumerate() {
            added.store(round, Ordering::SeqCst);
            queue.add(key);
        }
        tokio::task::yield_now().await;
    }
    queue.shut_down_with_drain().await;
    let (gets, seen) = worker.await.unwrap();
    assert_eq!(seen, [ROUNDS; 10], "a key's last add was not processed");
    assert!(
        gets < 2 * ROUNDS,
        "{gets} gets for {ROUNDS} rounds of 10 keys"
    );
}

#[tokio::test(start_paused = true)]
async fn a_get_cancelled_while_its_worker_yields_takes_nothing() {
    let queue = Queue::new();
    let worker = tokio::spawn({
        let queue = queue.clone();
        async move {
            queue.add("a");
            queue.add("b");
            // Leaves one item queued: the worker's turn ends.
            assert_eq!(queue.get().await, Some("a"));
            // The next get yields before it takes anything; cancelled there, it took nothing.
            assert!(timeout(Duration::ZERO, queue.get()).await.is_err());
            assert_eq!(queue.len(), 1);
            assert_eq!(queue.get().await, Some("b"));
        }
    });
    worker.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn shut_down_drains_queued_items_then_reports_none() {
    let queue = Queue::new();
    queue.add(1);
    queue.add(2);
    queue.shut_down();
    assert!(queue.shutting_down());
    queue.add(3); // ignored
    assert_eq!(queue.get().await, Some(1));
    assert_eq!(queue.get().await, Some(2));
    assert_eq!(queue.get().await, None);
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_wakes_every_waiting_getter() {
    let queue: Queue<u32> = Queue::new();
    let getters: Vec<_> = (0..5)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move { queue.get().await })
        })
        .collect();
    tokio::task::yield_now().await;
    queue.shut_down();
    for getter in getters {
        assert_eq!(getter.await.unwrap(), None);
    }
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_waits_for_items_in_flight() {
    let queue = Queue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    let drained = Arc::new(AtomicUsize::new(0));
    let drainer = tokio::spawn({
        let queue = queue.clone();
        let drained = drained.clone();
        async move {
            queue.shut_down_with_drain().await;
            drained.store(1, Ordering::SeqCst);
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(drained.load(Ordering::SeqCst), 0);
    assert!(queue.shutting_down());
    queue.done(&a);
    drainer.await.unwrap();
    assert_eq!(drained.load(Ordering::SeqCst), 1);
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn drain_still_delivers_an_item_made_dirty_before_shut_down() {
    let queue = Queue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    queue.add("a"); // dirty while processing
    let drainer = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shut_down_with_drain().await }
    });
    tokio::task::yield_now().await;
    queue.done(&a);
    // Re-queued by done although the queue is shutting down.
    assert_eq!(queue.get().await, Some("a"));
    queue.done(&"a");
    drainer.await.unwrap();
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_aborts_a_drain_wait() {
    let queue = Queue::new();
    queue.add("a");
    let _a = queue.get().await.unwrap();
    let drainer = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shut_down_with_drain().await }
    });
    tokio::task::yield_now().await;
    queue.shut_down();
    timeout(Duration::from_secs(10), drainer)
        .await
        .expect("drain wait ended")
        .unwrap();
}

/// client-go `TestBasic`: 50 producers × 50 adds, 10 consumers, both shut-down modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_producers_and_consumers_for_both_shut_down_modes() {
    for drain in [false, true] {
        let queue = Queue::new();
        let producers: Vec<_> = (0..50)
            .map(|p| {
                let queue = queue.clone();
                tokio::spawn(async move {
                    for i in 0..50 {
                        queue.add(p * 50 + i);
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        let consumers: Vec<_> = (0..10)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move {
                    let mut seen = 0;
                    while let Some(item) = queue.get().await {
                        assert_ne!(item, -1, "an item added after shut-down was returned");
                        seen += 1;
                        tokio::task::yield_now().await;
                        queue.done(&item);
                    }
                    seen
                })
            })
            .collect();
        for producer in producers {
            producer.await.unwrap();
        }
        if drain {
            queue.shut_down_with_drain().await;
        } else {
            queue.shut_down();
        }
        queue.add(-1);
        let mut total = 0;
        for consumer in consumers {
            total += timeout(Duration::from_secs(30), consumer)
                .await
                .expect("consumer ended")
                .unwrap();
        }
        assert_eq!(total, 2500);
        assert_eq!(queue.len(), 0);
    }
}

/// client-go `TestAddWhileProcessing`: consumers re-add what they process, once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn re_adds_while_processing_each_cause_one_more_processing() {
    let queue = Queue::new();
    let processed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let counters = Arc::new(std::sync::Mutex::new(HashSet::new()));
    for i in 0..100 {
        queue.add(i);
    }
    let consumers: Vec<_> = (0..10)
        .map(|_| {
            let queue = queue.clone();
            let processed = processed.clone();
            let counters = counters.clone();
            tokio::spawn(async move {
                while let Some(item) = queue.get().await {
                    let first_time = counters.lock().unwrap().insert(item);
                    if first_time {
                        queue.add(item);
                    }
                    processed.lock().unwrap().push(item);
                    queue.done(&item);
                }
            })
        })
        .collect();
    timeout(Duration::from_secs(30), async {
        while processed.lock().unwrap().len() < 200 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("every item processed twice");
    queue.shut_down();
    for consumer in consumers {
        consumer.await.unwrap();
    }
    let processed = processed.lock().unwrap();
    assert_eq!(processed.len(), 200);
    for i in 0..100 {
        assert_eq!(processed.iter().filter(|&&x| x == i).count(), 2);
    }
}

#[test]
fn usable_outside_a_runtime_without_metrics() {
    let queue = Queue::new();
    queue.add(1);
    assert_eq!(queue.len(), 1);
    assert!(format!("{queue:?}").contains("len: 1"));
}

/// client-go `TestGarbageCollection`: the queue keeps no reference to items it is done with.
#[tokio::test(start_paused = true)]
async fn keeps_no_reference_to_finished_items() {
    let queue = Queue::new();
    let item = Arc::new(42);
    queue.add(item.clone());
    let got = queue.get().await.unwrap();
    queue.done(&got);
    drop(got);
    assert_eq!(Arc::strong_count(&item), 1);
}
