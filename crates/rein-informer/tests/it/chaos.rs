//! Chaos convergence: writers race with dropped watches, 410s, 5xx/429 answers and compactions;
//! afterwards every cache equals the server and every handler saw each object's events in order.

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::Api;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rein_informer::{ApiListerWatcher, QueueKind, SharedIndexInformer, meta_namespace_key};
use rein_testenv::{Fault, TestEnv};
use tokio_util::sync::CancellationToken;

async fn writer(api: Api<ConfigMap>, seed: u64, id: usize, ops: usize) {
    let mut rng = StdRng::seed_from_u64(seed * 100 + id as u64);
    let mut live: Vec<String> = Vec::new();
    for i in 0..ops {
        let choice = rng.random_range(0..10);
        if live.is_empty() || choice < 4 {
            let name = format!("w{id}-{i}");
            create(&api, &name).await;
            live.push(name);
        } else if choice < 8 {
            let name = &live[rng.random_range(0..live.len())];
            update(&api, name, &i.to_string()).await;
        } else {
            let name = live.swap_remove(rng.random_range(0..live.len()));
            delete(&api, &name).await;
        }
    }
}

async fn chaos(seed: u64, queue: QueueKind) {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..10 {
        create(&api, &format!("seed-{i}")).await;
    }
    let lw = ApiListerWatcher::<ConfigMap>::new(env.client(), crate::support::demo_objects());
    // Odd seeds run with client-go's default of relisting at the first 500 on a watch; even
    // seeds re-watch through 500s for up to 30 s (longer than the run), so there only 410s
    // relist.
    let relist_on_500 = seed % 2 == 1;
    let mut opts = options(queue);
    if relist_on_500 {
        opts.reflector.max_internal_error_retry_duration = Duration::ZERO;
    }
    let inf = Arc::new(SharedIndexInformer::new(lw, opts));
    let early = Recorder::default();
    inf.add_event_handler(early.clone()).unwrap();
    let stop = CancellationToken::new();
    {
        let inf = inf.clone();
        let stop = stop.clone();
        tokio::spawn(async move { inf.run(stop).await });
    }

    let writers: Vec<_> = (0..3)
        .map(|id| tokio::spawn(writer(api.clone(), seed, id, 40)))
        .collect();
    let faults = env.faults();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut late = None;
    for round in 0..12 {
        tokio::time::sleep(Duration::from_millis(rng.random_range(5..40))).await;
        // The first round forces a relist where a 500 on the watch does (odd seeds), and
        // compacts and drops watches otherwise (a 410 when the informer lags the compaction).
        let pick = if round == 0 {
            if relist_on_500 { 5 } else { 1 }
        } else {
            rng.random_range(0..5)
        };
        match pick {
            5 => {
                faults.inject(Fault::server_error(1).matching("/api/v1/configmaps"));
                faults.close_watches();
            }
            0 => faults.close_watches(),
            1 => {
                faults.compact();
                faults.close_watches();
            }
            2 => faults.inject(Fault::server_error(2).matching("/api/v1/configmaps")),
            3 => faults.inject(Fault::too_many_requests(2, 0).matching("/api/v1/configmaps")),
            _ => faults.compact(),
        }
        if round == 6 {
            let rec = Recorder::default();
            inf.add_event_handler(rec.clone()).unwrap();
            late = Some(rec);
        }
    }
    for w in writers {
        w.await.expect("writer");
    }
    faults.clear();
    let want = server_state(&api).await;
    let cache = || {
        inf.indexer()
            .list()
            .iter()
            .map(|o| {
                (
                    meta_namespace_key(o.as_ref()),
                    o.metadata.resource_version.clone().unwrap_or_default(),
                )
            })
            .collect::<std::collections::HashMap<_, _>>()
    };
    eventually(30, "cache converges", || cache() == want).await;
    eventually(30, "early handler converges", || early.mirror() == want).await;
    early.assert_ordered();
    assert_tombstones_truthful(&early, &want);
    let initial_lists = env
        .requests()
        .iter()
        .filter(|r| {
            r.path == "/api/v1/configmaps"
                && (!r.is_watch() || r.has_query("sendInitialEvents", "true"))
        })
        .count();
    if relist_on_500 {
        assert!(
            initial_lists >= 2,
            "expected at least one relist, saw {initial_lists} lists"
        );
    }
    if let Some(late) = late {
        eventually(30, "late handler converges", || late.mirror() == want).await;
        late.assert_ordered();
        assert_tombstones_truthful(&late, &want);
    }
    stop.cancel();
}

/// Deletions missed during a relist arrive as tombstones, and only true ones: names are never
/// reused, so a tombstoned key must be gone from the server and never seen again afterwards.
fn assert_tombstones_truthful(rec: &Recorder, want: &std::collections::HashMap<String, String>) {
    let events = rec.events();
    for (i, e) in events.iter().enumerate() {
        let Seen::Delete {
            key,
            tombstone: true,
        } = e
        else {
            continue;
        };
        assert!(!want.contains_key(key), "tombstone for live object {key}");
        let revived = events[i + 1..].iter().any(|later| match later {
            Seen::Add { key: k, .. } | Seen::Update { key: k, .. } => k == key,
            Seen::Delete { .. } => false,
        });
        assert!(!revived, "{key} seen again after its tombstone");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_converges_real_fifo() {
    for seed in 1..=6 {
        chaos(seed, QueueKind::RealFifo).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_converges_delta_fifo() {
    for seed in 11..=14 {
        chaos(seed, QueueKind::DeltaFifo).await;
    }
}
