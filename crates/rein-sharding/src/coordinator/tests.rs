//! The coordinator's view of shard Leases, on tokio's paused clock: a shard is live while its
//! Lease names it and its record changed within the Lease duration, by local observation.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::Term;
use crate::ShardingOptions;
use crate::options::{LEASE_RING_LABEL, LEASE_SHARD_LABEL};
use crate::sharding::Shared;

fn term() -> Term {
    // Never contacted: `live_shards` only reads what it is given.
    let config = kube_client::Config::new("http://127.0.0.1:9".parse().expect("url"));
    let kube = kube_client::Client::try_from(config).expect("client");
    let options = ShardingOptions::new("ring")
        .namespace("ns")
        .shard_id("me")
        .resolve()
        .expect("options");
    Term::new(Arc::new(Shared::new(options, kube)))
}

fn lease(namespace: &str, shard: &str, holder: &str, renewals: u32) -> Arc<Lease> {
    Arc::new(Lease {
        metadata: ObjectMeta {
            name: Some(format!("ring-shard-{shard}")),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([
                (LEASE_RING_LABEL.to_owned(), "ring".to_owned()),
                (LEASE_SHARD_LABEL.to_owned(), shard.to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.to_owned()),
            lease_duration_seconds: Some(2),
            // The renew time changes with every renewal: a different record.
            renew_time: Some(MicroTime(
                Timestamp::from_second(1_700_000_000 + i64::from(renewals)).expect("time"),
            )),
            ..LeaseSpec::default()
        }),
    })
}

#[tokio::test(start_paused = true)]
async fn a_lease_is_live_until_unchanged_for_its_duration() {
    let mut term = term();
    let first = [lease("ns", "a", "a", 0)];
    assert_eq!(term.live_shards(&first, Instant::now()), ["a"]);
    tokio::time::advance(Duration::from_millis(1900)).await;
    assert_eq!(term.live_shards(&first, Instant::now()), ["a"]);
    // Renewed just in time: live for another two seconds from now.
    let renewed = [lease("ns", "a", "a", 1)];
    tokio::time::advance(Duration::from_millis(50)).await;
    assert_eq!(term.live_shards(&renewed, Instant::now()), ["a"]);
    tokio::time::advance(Duration::from_millis(1900)).await;
    assert_eq!(term.live_shards(&renewed, Instant::now()), ["a"]);
    tokio::time::advance(Duration::from_millis(100)).await;
    assert!(term.live_shards(&renewed, Instant::now()).is_empty());
}

#[tokio::test(start_paused = true)]
async fn released_foreign_and_other_namespace_leases_are_not_live() {
    let mut term = term();
    let leases = [
        lease("ns", "released", "", 0),
        lease("ns", "taken", "someone-else", 0),
        lease("elsewhere", "other-ns", "other-ns", 0),
        lease("ns", "b", "b", 0),
    ];
    assert_eq!(term.live_shards(&leases, Instant::now()), ["b"]);
}

#[tokio::test(start_paused = true)]
async fn a_new_coordinator_gives_every_lease_a_full_duration() {
    // A Lease last renewed long ago by the clock in its record still counts as renewed when
    // first seen: only local observation judges expiry.
    tokio::time::advance(Duration::from_secs(3600)).await;
    let mut term = term();
    let stale = [lease("ns", "a", "a", 0)];
    assert_eq!(term.live_shards(&stale, Instant::now()), ["a"]);
    tokio::time::advance(Duration::from_secs(2)).await;
    assert!(term.live_shards(&stale, Instant::now()).is_empty());
}
