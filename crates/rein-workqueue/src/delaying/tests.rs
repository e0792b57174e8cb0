//! Tests for the delaying queue: client-go's `delaying_queue_test.go` behaviours.

use std::time::Duration;

use tokio::time::{Instant, timeout};

use super::*;

const MS: Duration = Duration::from_millis(1);

async fn alive_tasks_reach_zero() {
    let metrics = tokio::runtime::Handle::current().metrics();
    timeout(Duration::from_secs(60), async {
        while metrics.num_alive_tasks() > 0 {
            tokio::time::sleep(MS).await;
        }
    })
    .await
    .expect("background tasks ended");
}

#[tokio::test(start_paused = true)]
async fn item_is_handed_out_after_its_delay() {
    let queue = DelayingQueue::new();
    let start = Instant::now();
    queue.add_after("a", 50 * MS);
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.waiting_len(), 1);
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), 50 * MS);
    assert_eq!(queue.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_at_once() {
    let queue = DelayingQueue::new();
    queue.add_after("a", Duration::ZERO);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.waiting_len(), 0);
}

/// client-go `TestDeduping`: the earliest requested time wins, and only one add results.
#[tokio::test(start_paused = true)]
async fn earlier_ready_time_wins() {
    let queue = DelayingQueue::new();
    let start = Instant::now();
    queue.add_after("a", 50 * MS);
    queue.add_after("a", 70 * MS);
    assert_eq!(queue.waiting_len(), 1);
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), 50 * MS);
    queue.done(&"a");
    // The later request never produces a second add.
    assert!(timeout(Duration::from_secs(1), queue.get()).await.is_err());

    let start = Instant::now();
    queue.add_after("b", 70 * MS);
    queue.add_after("b", 50 * MS);
    assert_eq!(queue.get().await, Some("b"));
    assert_eq!(start.elapsed(), 50 * MS);
    assert!(timeout(Duration::from_secs(1), queue.get()).await.is_err());
}

/// client-go `TestAddTwoFireEarly`.
#[tokio::test(start_paused = true)]
async fn a_new_earlier_item_fires_first() {
    let queue = DelayingQueue::new();
    queue.add_after("first", Duration::from_secs(1));
    queue.add_after("second", 50 * MS);
    tokio::time::sleep(60 * MS).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some("second"));
    queue.add_after("third", 2 * Duration::from_secs(1));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some("first"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(queue.get().await, Some("third"));
}

/// client-go `TestCopyShifting`: release order follows ready time, not add order.
#[tokio::test(start_paused = true)]
async fn items_are_released_in_ready_time_order() {
    let queue = DelayingQueue::new();
    queue.add_after("one", Duration::from_secs(1));
    queue.add_after("two", 500 * MS);
    queue.add_after("three", 250 * MS);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(queue.len(), 3);
    assert_eq!(queue.get().await, Some("three"));
    assert_eq!(queue.get().await, Some("two"));
    assert_eq!(queue.get().await, Some("one"));
}

#[tokio::test(start_paused = true)]
async fn waiting_item_that_is_also_queued_is_absorbed() {
    let queue = DelayingQueue::new();
    queue.add("a");
    queue.add_after("a", 10 * MS);
    tokio::time::sleep(20 * MS).await;
    assert_eq!(queue.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn shut_down_discards_waiting_items_and_ends_the_timer_task() {
    let queue = DelayingQueue::new();
    for i in 0..100 {
        queue.add_after(i, Duration::from_secs(i + 1));
    }
    tokio::task::yield_now().await;
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        1
    );
    queue.shut_down();
    alive_tasks_reach_zero().await;
    assert_eq!(queue.waiting_len(), 0);
    queue.add_after(1000, MS);
    assert_eq!(queue.waiting_len(), 0);
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_stops_the_timers_too() {
    let queue = DelayingQueue::new();
    queue.add_after(1, Duration::from_secs(3600));
    tokio::task::yield_now().await;
    queue.shut_down_with_drain().await;
    alive_tasks_reach_zero().await;
}

#[tokio::test(start_paused = true)]
async fn dropping_every_handle_ends_the_timer_task() {
    let queue = DelayingQueue::new();
    queue.add_after(1, Duration::from_secs(3600));
    tokio::task::yield_now().await;
    drop(queue);
    alive_tasks_reach_zero().await;
}

#[tokio::test(start_paused = true)]
async fn many_waiting_items_share_one_task() {
    let queue = DelayingQueue::new();
    for i in 0..10_000u64 {
        queue.add_after(i, Duration::from_millis(10_000 - i));
    }
    tokio::task::yield_now().await;
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        1
    );
    let mut previous = None;
    for _ in 0..10_000 {
        let item = queue.get().await.unwrap();
        if let Some(previous) = previous {
            assert!(item < previous, "released in ready-time order");
        }
        previous = Some(item);
        queue.done(&item);
    }
}
