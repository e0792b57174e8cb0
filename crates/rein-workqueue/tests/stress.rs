//! Concurrency stress tests: many producers and consumers over a key space with repeats, for
//! every queue kind. Nothing is lost, no key is processed by two consumers at once, and the
//! queue ends empty.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_workqueue::{
    AddOptions, ExponentialFailureRateLimiter, PriorityQueue, PriorityQueueConfig, Queue,
    RateLimitingQueue,
};

const PRODUCERS: u64 = 8;
const CONSUMERS: usize = 8;
const ADDS_PER_PRODUCER: u64 = 4_000;
const KEYS: u64 = 300;

/// Shared bookkeeping: a per-key version bumped before every add, the version each key had
/// when its latest processing started, and the keys in flight.
#[derive(Default)]
struct Ledger {
    added: Vec<AtomicU64>,
    seen: Mutex<HashMap<u64, u64>>,
    in_flight: Mutex<std::collections::HashSet<u64>>,
    processed: AtomicUsize,
}

impl Ledger {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            added: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
            ..Self::default()
        })
    }

    fn before_add(&self, key: u64) {
        self.added[key as usize].fetch_add(1, Ordering::SeqCst);
    }

    fn start(&self, key: u64) {
        assert!(
            self.in_flight.lock().unwrap().insert(key),
            "key {key} handed to two consumers at once"
        );
        let version = self.added[key as usize].load(Ordering::SeqCst);
        self.seen.lock().unwrap().insert(key, version);
    }

    fn finish(&self, key: u64) {
        assert!(self.in_flight.lock().unwrap().remove(&key));
        self.processed.fetch_add(1, Ordering::SeqCst);
    }

    /// Every add was followed by a processing that started after it.
    fn check_nothing_lost(&self) {
        let seen = self.seen.lock().unwrap();
        for key in 0..KEYS {
            let added = self.added[key as usize].load(Ordering::SeqCst);
            if added > 0 {
                assert_eq!(
                    seen.get(&key),
                    Some(&added),
                    "the last add of key {key} was lost"
                );
            }
        }
        assert!(self.in_flight.lock().unwrap().is_empty());
    }
}

fn key(producer: u64, i: u64) -> u64 {
    (producer * 7919 + i * 31) % KEYS
}

async fn wait_until(mut done: impl FnMut() -> bool) {
    tokio::time::timeout(Duration::from_secs(60), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("condition reached in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plain_queue_under_contention() {
    let queue = Queue::new();
    let ledger = Ledger::new();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let (queue, ledger) = (queue.clone(), ledger.clone());
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    ledger.start(key);
                    tokio::task::yield_now().await;
                    ledger.finish(key);
                    queue.done(&key);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (queue, ledger) = (queue.clone(), ledger.clone());
            tokio::spawn(async move {
                for i in 0..ADDS_PER_PRODUCER {
                    let key = key(p, i);
                    ledger.before_add(key);
                    queue.add(key);
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await.unwrap();
    }
    queue.shut_down_with_drain().await;
    for consumer in consumers {
        consumer.await.unwrap();
    }
    ledger.check_nothing_lost();
    assert_eq!(queue.len(), 0);
    assert!(ledger.processed.load(Ordering::SeqCst) >= KEYS as usize);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rate_limited_queue_under_contention() {
    let queue = RateLimitingQueue::new(ExponentialFailureRateLimiter::new(
        Duration::from_micros(50),
        Duration::from_millis(2),
    ));
    let ledger = Ledger::new();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let (queue, ledger) = (queue.clone(), ledger.clone());
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    ledger.start(key);
                    tokio::task::yield_now().await;
                    ledger.finish(key);
                    queue.forget(&key);
                    queue.done(&key);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (queue, ledger) = (queue.clone(), ledger.clone());
            tokio::spawn(async move {
                for i in 0..ADDS_PER_PRODUCER / 4 {
                    let key = key(p, i);
                    ledger.before_add(key);
                    match i % 3 {
                        0 => queue.add(key),
                        1 => queue.add_rate_limited(key),
                        _ => queue.add_after(key, Duration::from_micros(i % 500)),
                    }
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await.unwrap();
    }
    wait_until(|| queue.delaying_queue().waiting_len() == 0).await;
    queue.shut_down_with_drain().await;
    for consumer in consumers {
        consumer.await.unwrap();
    }
    ledger.check_nothing_lost();
    assert_eq!(queue.len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn priority_queue_under_contention() {
    let queue = PriorityQueue::with_config(PriorityQueueConfig::default().rate_limiter(Arc::new(
        ExponentialFailureRateLimiter::new(Duration::from_micros(50), Duration::from_millis(2)),
    )));
    let ledger = Ledger::new();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let (queue, ledger) = (queue.clone(), ledger.clone());
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    ledger.start(key);
                    tokio::task::yield_now().await;
                    ledger.finish(key);
                    queue.forget(&key);
                    queue.done(&key);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (queue, ledger) = (queue.clone(), ledger.clone());
            tokio::spawn(async move {
                for i in 0..ADDS_PER_PRODUCER / 2 {
                    let key = key(p, i);
                    ledger.before_add(key);
                    let options = match i % 4 {
                        0 => AddOptions::default(),
                        1 => AddOptions::priority((i % 7) as i32 - 3),
                        2 => AddOptions::priority(-100).rate_limited(),
                        _ => AddOptions::priority(5).after(Duration::from_micros(i % 300)),
                    };
                    queue.add_with_opts(options, key);
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await.unwrap();
    }
    // The priority queue drops queued items on shut-down: wait until everything is processed.
    // Items already handed out are still processed: `shut_down_with_drain` waits for them.
    wait_until(|| queue.is_empty() && queue.waiting_len() == 0).await;
    queue.shut_down_with_drain().await;
    for consumer in consumers {
        consumer.await.unwrap();
    }
    ledger.check_nothing_lost();
}
