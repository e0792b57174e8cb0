//! Micro-benchmarks of the store, the index and DeltaFIFO against client-go's published figures.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::core::ObjectMeta;
use rein_informer::{DeltaFifo, DeltaFifoOptions, Fifo, Indexer, NAMESPACE_INDEX};

const OBJECTS: usize = 100_000;
const NAMESPACES: usize = 100;

fn objects(rv: &str) -> Vec<Arc<ConfigMap>> {
    (0..OBJECTS)
        .map(|i| {
            let mut labels = BTreeMap::new();
            labels.insert("app".to_string(), format!("app-{}", i % 10));
            labels.insert("tier".to_string(), "web".to_string());
            Arc::new(ConfigMap {
                metadata: ObjectMeta {
                    namespace: Some(format!("ns-{}", i % NAMESPACES)),
                    name: Some(format!("obj-{i}")),
                    resource_version: Some(rv.to_string()),
                    labels: Some(labels),
                    ..Default::default()
                },
                ..Default::default()
            })
        })
        .collect()
}

fn store_insert() -> Indexer<ConfigMap> {
    let objs = objects("1");
    let store: Indexer<ConfigMap> = Indexer::new();
    let start = Instant::now();
    for o in objs {
        store.add(o);
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "BENCH|informer-store|insert 100k objects, namespace index|{:.2}|M objects/s|client-go 0.71 M/s; aim >= 1.42",
        OBJECTS as f64 / secs / 1e6
    );
    store
}

fn by_index(store: &Indexer<ConfigMap>) {
    let lookups = 10_000;
    let start = Instant::now();
    let mut total = 0usize;
    for i in 0..lookups {
        total += store
            .by_index(NAMESPACE_INDEX, &format!("ns-{}", i % NAMESPACES))
            .map(|v| v.len())
            .unwrap_or(0);
    }
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(total, lookups * OBJECTS / NAMESPACES);
    println!(
        "BENCH|informer-store|by_index returning 1,000 objects|{:.0}|lookups/s|client-go 4,000/s; aim >= 8,000",
        lookups as f64 / secs
    );
}

/// `retain`: the producer keeps its own reference to every object until after the clock
/// stops, so the figure is the queue's alone (like client-go's, whose objects the garbage
/// collector frees later); otherwise the consumer frees each object as it pops it, inside the
/// timed window and under DeltaFIFO's lock.
fn delta_fifo(retain: bool) {
    let adds = objects("1");
    let updates = objects("2");
    let kept: Vec<Arc<ConfigMap>> = if retain {
        adds.iter().chain(updates.iter()).cloned().collect()
    } else {
        Vec::new()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let secs = rt.block_on(async move {
        let fifo: Arc<DeltaFifo<ConfigMap>> = Arc::new(DeltaFifo::new(DeltaFifoOptions::default()));
        let start = Instant::now();
        let consumer = {
            let fifo = fifo.clone();
            tokio::spawn(async move {
                let mut seen = 0usize;
                while fifo
                    .pop(&mut |deltas, _| {
                        seen += deltas.len();
                        Ok(())
                    })
                    .await
                    .is_ok()
                {}
                seen
            })
        };
        for o in adds {
            fifo.add(o);
        }
        for o in updates {
            fifo.update(o);
        }
        fifo.close();
        let seen = consumer.await.expect("consumer");
        assert_eq!(seen, 2 * OBJECTS);
        start.elapsed().as_secs_f64()
    });
    drop(kept);
    let case = if retain {
        "add 100k + update 100k, one consumer"
    } else {
        "add 100k + update 100k, one consumer freeing the objects"
    };
    let note = if retain {
        "client-go 0.40 M/s; aim >= 0.80"
    } else {
        "includes freeing 200k ConfigMaps under the queue lock"
    };
    println!(
        "BENCH|informer-deltafifo|{case}|{:.2}|M deltas/s|{note}",
        2.0 * OBJECTS as f64 / secs / 1e6
    );
}

fn main() {
    let store = store_insert();
    by_index(&store);
    drop(store);
    delta_fifo(true);
    delta_fifo(false);
}
