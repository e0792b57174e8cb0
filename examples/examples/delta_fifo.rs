//! DeltaFIFO as a Store plus `pop`: per-key delta lists, delete dedup, relist tombstones, `has_synced`, `close` (Go original: client-go tools/cache DeltaFIFO used directly, as in its delta_fifo_test.go).
// smoke-args: --quick
// smoke-expect: pop ns/a: [Added rv=1, Updated rv=2]
// smoke-expect: pop ns/b: [Added rv=1, Deleted tombstone]
// smoke-expect: has_synced after initial list: true
// smoke-expect: delta_fifo finished

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::core::ObjectMeta;
use rein::informer::{
    DeletedObject, Delta, DeltaFifo, DeltaFifoOptions, DeltaObject, Fifo, Indexer,
    meta_namespace_key,
};

fn cm(name: &str, rv: &str) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn describe(deltas: &[Delta<ConfigMap>]) -> String {
    let parts: Vec<String> = deltas
        .iter()
        .map(|d| match &d.object {
            DeltaObject::Object(DeletedObject::Tombstone { .. }) => {
                format!("{:?} tombstone", d.kind)
            }
            DeltaObject::Object(DeletedObject::Object(o)) => format!(
                "{:?} rv={}",
                d.kind,
                o.metadata.resource_version.as_deref().unwrap_or("")
            ),
            other => format!("{:?} {other:?}", d.kind),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

async fn pop_and_print(fifo: &DeltaFifo<ConfigMap>, store: &Indexer<ConfigMap>) {
    let store = store.clone();
    let result = fifo
        .pop(&mut |deltas, initial| {
            let key = deltas
                .last()
                .and_then(|d| d.as_object())
                .map(|o| match o {
                    DeletedObject::Object(obj) => meta_namespace_key(obj.as_ref()),
                    DeletedObject::Tombstone { key, .. } => key.clone(),
                })
                .unwrap_or_default();
            println!("pop {key}: {} (initial list: {initial})", describe(&deltas));
            // Apply to the consumer's store, as an informer would.
            for d in &deltas {
                match d.as_object() {
                    Some(DeletedObject::Object(o))
                        if d.kind != rein::informer::DeltaType::Deleted =>
                    {
                        store.update(o.clone());
                    }
                    Some(_) => {
                        store.delete_by_key(&key);
                    }
                    None => {}
                }
            }
            Ok(())
        })
        .await;
    if result.is_err() {
        println!("queue closed and empty");
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let quick = rein_examples::quick_mode();
    // The consumer's store doubles as the FIFO's "known objects".
    let store: Indexer<ConfigMap> = Indexer::new();
    let fifo = DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(store.clone()),
        emit_replaced: true,
        ..Default::default()
    });

    // The initial list: two objects.
    fifo.replace(vec![cm("x", "1"), cm("y", "1")], "1".into());
    println!("has_synced before popping: {}", fifo.has_synced());
    pop_and_print(&fifo, &store).await;
    pop_and_print(&fifo, &store).await;
    println!("has_synced after initial list: {}", fifo.has_synced());

    // Deltas for one key accumulate in one entry and keep their place in line.
    fifo.add(cm("a", "1"));
    fifo.add(cm("b", "1"));
    fifo.update(cm("a", "2"));
    println!("queued keys: {:?}", fifo.list_keys());
    pop_and_print(&fifo, &store).await;

    // A relist that lacks b (queued) and x (known) yields tombstones for both.
    fifo.replace(vec![cm("y", "1"), cm("a", "2")], "5".into());
    pop_and_print(&fifo, &store).await;
    while !fifo.is_empty() {
        pop_and_print(&fifo, &store).await;
    }
    println!("store after relist: {:?}", {
        let mut k = store.list_keys();
        k.sort();
        k
    });

    // Closing lets consumers drain, then pop reports the end.
    fifo.close();
    pop_and_print(&fifo, &store).await;
    if !quick {
        println!("(run without --quick shows the same: the FIFO is deterministic)");
    }
    println!("delta_fifo finished");
    Ok(())
}
