//! Unit tests for resync bookkeeping and per-listener delivery.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use tokio_util::sync::CancellationToken;

use super::processor::{Listener, Notification, Processor, determine_resync};
use crate::testutil::cm;
use crate::{Fifo, RealFifo, ResourceEventHandlerFuncs};

#[test]
fn resync_period_is_zero_or_at_least_the_check_period() {
    let s = Duration::from_secs;
    assert_eq!(determine_resync(s(0), s(10)), s(0));
    assert_eq!(
        determine_resync(s(5), s(0)),
        s(0),
        "informer without resync"
    );
    assert_eq!(
        determine_resync(s(5), s(10)),
        s(10),
        "raised to the check period"
    );
    assert_eq!(determine_resync(s(30), s(10)), s(30));
}

fn listener(period: Duration, seen: Arc<AtomicUsize>) -> Arc<Listener<ConfigMap>> {
    let queue: Arc<dyn Fifo<ConfigMap>> = Arc::new(RealFifo::default());
    let handler = ResourceEventHandlerFuncs::new().on_update(move |_, _| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    let queues = Arc::new(super::Queues { all: vec![queue] });
    Arc::new(Listener::new(Arc::new(handler), period, period, queues))
}

#[tokio::test(start_paused = true)]
async fn only_due_listeners_receive_resync_updates() {
    let processor = Processor::new();
    let (fast_seen, never_seen) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let fast = listener(Duration::from_secs(2), fast_seen.clone());
    let never = listener(Duration::ZERO, never_seen.clone());
    let stop = CancellationToken::new();
    let handle = tokio::runtime::Handle::current();
    fast.spawn(&handle, &stop);
    never.spawn(&handle, &stop);
    processor.add(fast);
    processor.add(never);

    let obj = cm("ns", "a", "1");
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if processor.should_resync() {
            processor.distribute(Notification::Update(obj.clone(), obj.clone()), true);
        }
    }
    // Let the listener tasks drain.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(never_seen.load(Ordering::SeqCst), 0);
    assert_eq!(fast_seen.load(Ordering::SeqCst), 5, "every 2 s over 10 s");

    // A real change goes to everyone.
    let newer = cm("ns", "a", "2");
    processor.distribute(Notification::Update(obj, newer), false);
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(never_seen.load(Ordering::SeqCst), 1);
    stop.cancel();
}

#[tokio::test]
async fn removed_listener_gets_nothing_more() {
    let processor = Processor::new();
    let seen = Arc::new(AtomicUsize::new(0));
    let l = listener(Duration::ZERO, seen.clone());
    let id = l.id;
    let stop = CancellationToken::new();
    l.spawn(&tokio::runtime::Handle::current(), &stop);
    processor.add(l);
    assert!(processor.remove(id));
    assert!(!processor.remove(id), "removing twice is a no-op");
    let obj = cm("ns", "a", "1");
    processor.distribute(Notification::Update(obj.clone(), cm("ns", "a", "2")), false);
    tokio::task::yield_now().await;
    assert_eq!(seen.load(Ordering::SeqCst), 0);
}
