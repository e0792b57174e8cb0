//! Unit tests for the request queue: de-duplication, priorities, delays, backoff, in-flight.

use std::time::Duration;

use tokio::time::Instant;

use super::*;

fn req(name: &str) -> Request {
    Request::new("ns", name)
}

fn queue() -> RequestQueue {
    RequestQueue::new("test")
}

#[tokio::test(start_paused = true)]
async fn adds_of_one_key_collapse() {
    let q = queue();
    for _ in 0..10 {
        q.add(req("a"));
    }
    q.add(req("b"));
    assert_eq!(q.len(), 2);
    assert_eq!(q.get().await.unwrap().0, req("a"));
    assert_eq!(q.get().await.unwrap().0, req("b"));
    assert!(q.is_empty());
}

#[tokio::test(start_paused = true)]
async fn higher_priority_first_then_fifo() {
    let q = queue();
    q.add_with_priority(req("low"), LOW_PRIORITY);
    q.add(req("a"));
    q.add(req("b"));
    q.add_with_priority(req("low"), LOW_PRIORITY);
    q.add_with_priority(req("hi"), 10);
    let mut order = Vec::new();
    for _ in 0..4 {
        order.push(q.get().await.unwrap().0.name().to_owned());
    }
    assert_eq!(order, ["hi", "a", "b", "low"]);
}

#[tokio::test(start_paused = true)]
async fn re_add_keeps_the_highest_priority() {
    let q = queue();
    q.add_with_priority(req("x"), LOW_PRIORITY);
    q.add(req("y"));
    q.add(req("x"));
    let (first, prio) = q.get().await.unwrap();
    assert_eq!((first.name(), prio), ("y", 0));
    let (second, prio) = q.get().await.unwrap();
    assert_eq!((second.name(), prio), ("x", 0));
}

#[tokio::test(start_paused = true)]
async fn in_flight_key_is_not_handed_out_twice() {
    let q = queue();
    q.add(req("a"));
    let (a, _) = q.get().await.unwrap();
    q.add(req("a"));
    q.add(req("b"));
    assert_eq!(q.len(), 2);
    assert_eq!(q.in_flight(), 1);
    assert_eq!(q.get().await.unwrap().0, req("b"));
    assert_eq!(q.in_flight(), 2, "the queue's own count of keys handed out");
    // "a" is still in flight: a get must wait until done.
    let q2 = q.clone();
    let waiter = tokio::spawn(async move { q2.get().await });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    q.done(&a);
    assert_eq!(waiter.await.unwrap().unwrap().0, req("a"));
    q.done(&req("b"));
    assert_eq!(q.in_flight(), 1, "a is in flight again, b is done");
}

#[tokio::test(start_paused = true)]
async fn delayed_items_wait_and_earliest_ready_time_wins() {
    let q = queue();
    let start = Instant::now();
    q.add_after(req("a"), Duration::from_secs(10));
    q.add_after(req("a"), Duration::from_secs(3));
    assert!(q.is_empty());
    q.get().await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    q.add(req("b"));
    q.add_after(req("b"), Duration::from_secs(5));
    q.get().await.unwrap();
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(3),
        "a ready item stays ready"
    );
}

#[tokio::test(start_paused = true)]
async fn rate_limited_adds_back_off_exponentially_until_forgotten() {
    let q = queue();
    let mut delays = Vec::new();
    for _ in 0..4 {
        let t = Instant::now();
        q.add_rate_limited(req("a"));
        let (r, _) = q.get().await.unwrap();
        q.done(&r);
        delays.push(t.elapsed());
    }
    assert_eq!(delays, [5, 10, 20, 40].map(Duration::from_millis).to_vec());
    assert_eq!(q.num_requeues(&req("a")), 4);
    q.forget(&req("a"));
    assert_eq!(q.num_requeues(&req("a")), 0);
}

#[tokio::test(start_paused = true)]
async fn shut_down_wakes_getters_and_ignores_adds() {
    let q = queue();
    let q2 = q.clone();
    let waiter = tokio::spawn(async move { q2.get().await });
    tokio::task::yield_now().await;
    q.shut_down();
    assert!(waiter.await.unwrap().is_none());
    q.add(req("a"));
    assert!(q.is_empty());
    assert!(q.get().await.is_none());
}
