//! A delaying queue hands an item out once its delay has passed; a repeated add_after keeps the earlier time (Go original: workqueue.NewTypedDelayingQueue and AddAfter).
// smoke-args: --quick
// smoke-expect: order: now, soon, later
// smoke-expect: none handed out before its delay
// smoke-expect: delaying_queue finished

use std::time::{Duration, Instant};

use rein::workqueue::DelayingQueue;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let unit = if rein_examples::quick_mode() {
        Duration::from_millis(200)
    } else {
        Duration::from_secs(1)
    };
    let queue = DelayingQueue::new();
    let start = Instant::now();
    queue.add_after("later", 3 * unit);
    queue.add_after("soon", 2 * unit);
    queue.add_after("soon", unit); // the earlier ready time wins
    queue.add_after("now", Duration::ZERO); // no delay: added at once
    println!("ready: {}, waiting: {}", queue.len(), queue.waiting_len());
    let mut order = Vec::new();
    let mut early = false;
    for minimum in [0.0, 1.0, 3.0] {
        let item = queue.get().await.expect("queue is open");
        let units = start.elapsed().as_secs_f64() / unit.as_secs_f64();
        early |= units < minimum;
        println!("got {item:?} after ~{} units", units.floor());
        order.push(item);
        queue.done(&item);
    }
    println!("order: {}", order.join(", "));
    if !early {
        println!("none handed out before its delay");
    }
    queue.shut_down();
    println!("delaying_queue finished");
    Ok(())
}
