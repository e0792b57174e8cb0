//! The workqueue is fair, stingy (adds collapse before processing; an item added while processing comes back once after `done`), serves many producers and consumers, and tells consumers when it shuts down (Go original: client-go util/workqueue doc.go and queue.go with a pool of workers).
// smoke-args: --quick
// smoke-expect: fair: [a, b, c]
// smoke-expect: stingy: "a" added 3 times, handed out once
// smoke-expect: re-added while processing: handed out again after done
// smoke-expect: 4 producers, 3 consumers: 400 adds over 40 keys
// smoke-expect: workqueue finished

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rein::workqueue::Queue;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let quick = rein_examples::quick_mode();

    // Fair: FIFO in the order of the first add.
    let queue = Queue::new();
    for item in ["a", "b", "c"] {
        queue.add(item);
    }
    let mut order = Vec::new();
    while !queue.is_empty() {
        let item = queue.get().await.expect("queue is open");
        order.push(item);
        queue.done(&item);
    }
    println!("fair: [{}]", order.join(", "));

    // Stingy: adds before processing collapse into one.
    queue.add("a");
    queue.add("a");
    queue.add("a");
    println!(
        "stingy: \"a\" added 3 times, handed out once (len {})",
        queue.len()
    );
    let a = queue.get().await.expect("queue is open");

    // An item added while it is processed is not handed to a second worker; `done` re-queues it.
    queue.add("a");
    println!(
        "while processing: len {} (not handed to anyone else)",
        queue.len()
    );
    queue.done(&a);
    let again = queue.get().await.expect("queue is open");
    queue.done(&again);
    println!("re-added while processing: handed out again after done");

    // Many producers and consumers; the workers stop when the queue shuts down.
    let queue: Queue<String> = Queue::new();
    let in_flight = Arc::new(Mutex::new(HashSet::new()));
    let workers: Vec<_> = (0..3)
        .map(|worker| {
            let queue = queue.clone();
            let in_flight = in_flight.clone();
            tokio::spawn(async move {
                let mut processed = 0;
                while let Some(key) = queue.get().await {
                    assert!(in_flight.lock().expect("lock").insert(key.clone()));
                    tokio::task::yield_now().await;
                    in_flight.lock().expect("lock").remove(&key);
                    queue.done(&key);
                    processed += 1;
                }
                println!("worker {worker}: queue shut down after {processed} items");
                processed
            })
        })
        .collect();
    let rounds = if quick { 100 } else { 1000 };
    let producers: Vec<_> = (0..4)
        .map(|producer| {
            let queue = queue.clone();
            tokio::spawn(async move {
                for i in 0..rounds {
                    queue.add(format!("default/object-{}", (producer * 7 + i) % 40));
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await?;
    }
    println!("4 producers, 3 consumers: {} adds over 40 keys", 4 * rounds);
    queue.shut_down_with_drain().await;
    let mut total = 0;
    for worker in workers {
        total += worker.await?;
    }
    println!("processed {total} times (fewer than the adds: duplicates collapsed)");
    println!("workqueue finished");
    Ok(())
}
