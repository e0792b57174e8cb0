//! Tests for the priority queue: controller-runtime's `priorityqueue_test.go` behaviours.

use std::time::Duration;

use tokio::time::{Instant, timeout};

use super::*;

const MS: Duration = Duration::from_millis(1);

async fn get_blocks<T: Item>(queue: &PriorityQueue<T>) -> bool {
    timeout(Duration::from_secs(1), queue.get()).await.is_err()
}

#[tokio::test(start_paused = true)]
async fn higher_priority_first_fifo_within_a_priority() {
    let queue = PriorityQueue::new();
    queue.add_with_opts(AddOptions::priority(-100), "low-1");
    queue.add("mid-1");
    queue.add_with_opts(AddOptions::priority(10), "high");
    queue.add("mid-2");
    queue.add_with_opts(AddOptions::priority(-100), "low-2");
    assert_eq!(queue.len(), 5);
    let mut order = Vec::new();
    for _ in 0..5 {
        order.push(queue.get_with_priority().await.unwrap());
    }
    assert_eq!(
        order,
        [
            ("high", 10),
            ("mid-1", 0),
            ("mid-2", 0),
            ("low-1", -100),
            ("low-2", -100)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn re_adding_keeps_one_entry_with_the_highest_priority() {
    let queue = PriorityQueue::new();
    queue.add_with_opts(AddOptions::priority(-100), "a");
    queue.add_with_opts(AddOptions::priority(-100), "b");
    queue.add("c");
    queue.add("a"); // raised to 0: goes behind "c"
    queue.add_with_opts(AddOptions::priority(-200), "c"); // lower: no change
    assert_eq!(queue.len(), 3);
    assert_eq!(queue.get_with_priority().await, Some(("c", 0)));
    assert_eq!(queue.get_with_priority().await, Some(("a", 0)));
    assert_eq!(queue.get_with_priority().await, Some(("b", -100)));
}

#[tokio::test(start_paused = true)]
async fn item_in_flight_is_not_handed_out_twice_but_counts_in_len() {
    let queue = PriorityQueue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    queue.add("a");
    queue.add("b");
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.get().await, Some("b"));
    assert!(get_blocks(&queue).await);
    queue.done(&a);
    assert_eq!(queue.get().await, Some("a"));
    queue.done(&"a");
    queue.done(&"b");
    assert_eq!(queue.len(), 0);
    assert!(get_blocks(&queue).await);
}

#[tokio::test(start_paused = true)]
async fn item_re_added_in_flight_keeps_its_place() {
    let queue = PriorityQueue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    queue.add("a");
    queue.add("b");
    queue.done(&a);
    // "a" was re-added before "b", so it comes first once unlocked.
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(queue.get().await, Some("b"));
}

#[tokio::test(start_paused = true)]
async fn add_after_waits_and_earlier_time_wins() {
    let queue = PriorityQueue::new();
    let start = Instant::now();
    queue.add_after("a", 100 * MS);
    queue.add_after("a", 50 * MS);
    queue.add_after("a", 70 * MS);
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), 50 * MS);
    queue.done(&"a");
    assert!(get_blocks(&queue).await);
}

#[tokio::test(start_paused = true)]
async fn a_ready_item_stays_ready_when_added_with_a_delay() {
    let queue = PriorityQueue::new();
    queue.add("a");
    queue.add_after("a", Duration::from_secs(10));
    assert_eq!(queue.len(), 1);
    let start = Instant::now();
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_waiting_item_added_now_becomes_ready() {
    let queue = PriorityQueue::new();
    queue.add_after("a", Duration::from_secs(10));
    queue.add_with_opts(AddOptions::priority(5), "a");
    assert_eq!(queue.get_with_priority().await, Some(("a", 5)));
}

#[tokio::test(start_paused = true)]
async fn items_becoming_ready_are_ordered_by_priority_then_readiness() {
    let queue = PriorityQueue::new();
    queue.add_with_opts(AddOptions::default().after(20 * MS), "late");
    queue.add_with_opts(AddOptions::default().after(10 * MS), "early");
    queue.add_with_opts(AddOptions::priority(1).after(30 * MS), "urgent");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(queue.len(), 3);
    assert_eq!(queue.get().await, Some("urgent"));
    assert_eq!(queue.get().await, Some("early"));
    assert_eq!(queue.get().await, Some("late"));
}

#[tokio::test(start_paused = true)]
async fn rate_limited_adds_use_the_limiter_and_the_shorter_delay() {
    let queue = PriorityQueue::new(); // exponential from 5 ms
    let start = Instant::now();
    queue.add_rate_limited("a");
    assert_eq!(queue.num_requeues(&"a"), 1);
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), 5 * MS);
    queue.done(&"a");

    let start = Instant::now();
    queue.add_rate_limited("a"); // 10 ms
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), 10 * MS);
    queue.done(&"a");

    // `after` shorter than the limiter's 20 ms wins.
    let start = Instant::now();
    queue.add_with_opts(AddOptions::default().after(2 * MS).rate_limited(), "a");
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), 2 * MS);
    queue.forget(&"a");
    assert_eq!(queue.num_requeues(&"a"), 0);
}

#[tokio::test(start_paused = true)]
async fn shut_down_returns_none_at_once_and_ignores_adds() {
    let queue = PriorityQueue::new();
    queue.add(1);
    let waiting = tokio::spawn({
        let queue = queue.clone();
        async move {
            let first = queue.get().await;
            let second = queue.get().await;
            (first, second)
        }
    });
    tokio::task::yield_now().await;
    queue.add_after(2, Duration::from_secs(1));
    queue.shut_down();
    assert!(queue.shutting_down());
    queue.add(3);
    assert_eq!(waiting.await.unwrap(), (Some(1), None));
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_waits_for_items_in_flight() {
    let queue = PriorityQueue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    let drainer = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shut_down_with_drain().await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!drainer.is_finished());
    queue.done(&a);
    timeout(Duration::from_secs(10), drainer)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn shut_down_ends_the_timer_task() {
    let queue = PriorityQueue::new();
    queue.add_after(1, Duration::from_secs(3600));
    tokio::task::yield_now().await;
    let metrics = tokio::runtime::Handle::current().metrics();
    assert_eq!(metrics.num_alive_tasks(), 1);
    queue.shut_down();
    timeout(Duration::from_secs(10), async {
        while metrics.num_alive_tasks() > 0 {
            tokio::time::sleep(MS).await;
        }
    })
    .await
    .expect("timer task ended");
}

#[tokio::test(start_paused = true)]
async fn waiting_getter_is_woken_when_an_item_becomes_ready() {
    let queue = PriorityQueue::new();
    let getter = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    queue.add_after(9, 30 * MS);
    assert_eq!(getter.await.unwrap(), Some(9));
}

#[tokio::test(start_paused = true)]
async fn every_parked_getter_is_woken_by_adds_timers_and_done() {
    let queue = PriorityQueue::new();
    queue.add("in-flight");
    let in_flight = queue.get().await.unwrap();
    queue.add("in-flight"); // parked until done
    let getters: Vec<_> = (0..4)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move { queue.get().await })
        })
        .collect();
    tokio::task::yield_now().await;
    // Four parked getters: two adds, one timer release and one requeue by done wake them all.
    queue.add("a");
    queue.add("b");
    queue.add_after("later", 30 * MS);
    queue.done(&in_flight);
    let mut got = Vec::new();
    for getter in getters {
        let item = timeout(Duration::from_secs(60), getter)
            .await
            .expect("a parked getter was not woken");
        got.push(item.unwrap().unwrap());
    }
    got.sort_unstable();
    assert_eq!(got, ["a", "b", "in-flight", "later"]);
}

#[tokio::test(start_paused = true)]
async fn a_worker_that_always_finds_an_item_lets_other_tasks_run() {
    let queue = PriorityQueue::new();
    queue.add(0_u32);
    let other_ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    tokio::spawn({
        let other_ran = other_ran.clone();
        async move { other_ran.store(true, std::sync::atomic::Ordering::SeqCst) }
    });
    let mut handled = 0;
    while !other_ran.load(std::sync::atomic::Ordering::SeqCst) {
        let item = queue.get().await.unwrap();
        queue.done(&item);
        queue.add(item + 1);
        handled += 1;
        assert!(handled < 10_000, "the worker never yielded");
    }
}

#[test]
fn debug_shows_the_queue_state() {
    let queue = PriorityQueue::new();
    queue.add(1);
    assert!(format!("{queue:?}").contains("ready: 1"));
}

#[tokio::test(start_paused = true)]
async fn raising_the_priority_of_an_item_in_flight_applies_after_done() {
    let queue = PriorityQueue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    queue.add_with_opts(AddOptions::priority(-1), "a");
    queue.add_with_opts(AddOptions::priority(3), "a");
    queue.add("b");
    assert_eq!(queue.len(), 2);
    queue.done(&a);
    assert_eq!(queue.get_with_priority().await, Some(("a", 3)));
    assert_eq!(queue.get_with_priority().await, Some(("b", 0)));
}

#[tokio::test(start_paused = true)]
async fn waiting_item_in_flight_is_parked_when_it_becomes_ready() {
    let queue = PriorityQueue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    queue.add_after("a", 10 * MS);
    assert_eq!(queue.waiting_len(), 1);
    tokio::time::sleep(20 * MS).await;
    assert_eq!(queue.waiting_len(), 0);
    assert_eq!(queue.len(), 1);
    assert!(get_blocks(&queue).await);
    queue.done(&a);
    assert_eq!(queue.get().await, Some("a"));
}

#[tokio::test(start_paused = true)]
async fn a_snapshot_shows_ready_in_flight_and_backing_off_items() {
    let q: PriorityQueue<&str> = PriorityQueue::new();
    q.add_with_opts(AddOptions::priority(-10), "low");
    q.add_with_opts(AddOptions::priority(5), "high");
    q.add("busy");
    q.add_with_opts(AddOptions::priority(5), "first");
    // "high" and "first" share priority 5: FIFO within it.
    assert_eq!(q.get().await, Some("high"));
    tokio::time::advance(Duration::from_secs(2)).await;
    q.add_rate_limited("failing");
    q.add_rate_limited("failing");
    q.add_after("later", Duration::from_secs(30));

    let snapshot = q.snapshot();
    let view: Vec<(&str, ItemState, Option<i32>, u32)> = snapshot
        .iter()
        .map(|s| (s.item, s.state.clone(), s.priority, s.failures))
        .collect();
    assert_eq!(
        view,
        vec![
            ("first", ItemState::Ready, Some(5), 0),
            ("busy", ItemState::Ready, Some(0), 0),
            ("low", ItemState::Ready, Some(-10), 0),
            (
                "high",
                ItemState::InFlight {
                    for_: Duration::from_secs(2),
                    requeued: false
                },
                None,
                0
            ),
            (
                "failing",
                ItemState::Waiting {
                    ready_in: Duration::from_millis(5)
                },
                Some(0),
                2
            ),
            (
                "later",
                ItemState::Waiting {
                    ready_in: Duration::from_secs(30)
                },
                Some(0),
                0
            ),
        ]
    );
    q.add("high");
    assert!(matches!(
        q.snapshot()
            .iter()
            .find(|s| s.item == "high")
            .map(|s| &s.state),
        Some(ItemState::InFlight { requeued: true, .. })
    ));
    q.done(&"high");
    assert_eq!(
        q.snapshot()
            .iter()
            .find(|s| s.item == "high")
            .map(|s| &s.state),
        Some(&ItemState::Ready)
    );
}
