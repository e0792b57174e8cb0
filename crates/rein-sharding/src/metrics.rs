//! Sharding metrics, registered in `rein_client::metrics::registry()`:
//! `rein_shard_member{ring,shard}`, `rein_shard_keys_owned{ring,shard,kind}`,
//! `rein_shard_drains_total{ring,shard,kind}` (hand-overs acknowledged by this shard),
//! and from the coordinator `rein_shard_ring_members{ring}`,
//! `rein_shard_assignments_total{ring,kind}`, `rein_shard_moves_total{ring,kind,reason}`
//! (`reason` is `drain` or `dead-shard`) and `rein_shard_handover_seconds{ring,kind}` (from
//! asking the old shard to drain to assigning the new one).

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ShardLabels {
    ring: String,
    shard: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ShardKindLabels {
    ring: String,
    shard: String,
    kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RingLabels {
    ring: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RingKindLabels {
    ring: String,
    kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct MoveLabels {
    ring: String,
    kind: String,
    reason: String,
}

fn handover_histogram() -> Histogram {
    // 10 ms … ~80 s.
    Histogram::new(exponential_buckets(0.01, 2.0, 14))
}

struct Families {
    member: Family<ShardLabels, Gauge>,
    keys_owned: Family<ShardKindLabels, Gauge>,
    drains: Family<ShardKindLabels, Counter>,
    ring_members: Family<RingLabels, Gauge>,
    assignments: Family<RingKindLabels, Counter>,
    moves: Family<MoveLabels, Counter>,
    handover: Family<RingKindLabels, Histogram, fn() -> Histogram>,
}

fn families() -> &'static Families {
    static FAMILIES: OnceLock<Families> = OnceLock::new();
    FAMILIES.get_or_init(|| {
        let f = Families {
            member: Family::default(),
            keys_owned: Family::default(),
            drains: Family::default(),
            ring_members: Family::default(),
            assignments: Family::default(),
            moves: Family::default(),
            handover: Family::new_with_constructor(handover_histogram),
        };
        let mut registry = rein_client::metrics::registry().lock();
        registry.register(
            "rein_shard_member",
            "1 while this replica holds its shard Lease in the ring, else 0",
            f.member.clone(),
        );
        registry.register(
            "rein_shard_keys_owned",
            "Objects of a kind assigned to this shard (in its cache)",
            f.keys_owned.clone(),
        );
        registry.register(
            "rein_shard_drains",
            "Objects this shard handed over after the coordinator asked it to drain them",
            f.drains.clone(),
        );
        registry.register(
            "rein_shard_ring_members",
            "Live shards of the ring, as its coordinator sees them",
            f.ring_members.clone(),
        );
        registry.register(
            "rein_shard_assignments",
            "Objects the coordinator assigned to a shard",
            f.assignments.clone(),
        );
        registry.register(
            "rein_shard_moves",
            "Objects the coordinator moved away from a shard, by reason (drain, dead-shard)",
            f.moves.clone(),
        );
        registry.register(
            "rein_shard_handover_seconds",
            "Time from asking the old shard to drain an object to assigning it to the new one",
            f.handover.clone(),
        );
        f
    })
}

/// The per-shard metrics of one replica.
#[derive(Debug, Clone)]
pub(crate) struct ShardMetrics {
    ring: String,
    shard: String,
}

impl ShardMetrics {
    pub(crate) fn new(ring: &str, shard: &str) -> Self {
        ShardMetrics {
            ring: ring.to_owned(),
            shard: shard.to_owned(),
        }
    }

    pub(crate) fn set_member(&self, member: bool) {
        families()
            .member
            .get_or_create(&ShardLabels {
                ring: self.ring.clone(),
                shard: self.shard.clone(),
            })
            .set(i64::from(member));
    }

    fn kind_labels(&self, kind: &str) -> ShardKindLabels {
        ShardKindLabels {
            ring: self.ring.clone(),
            shard: self.shard.clone(),
            kind: kind.to_owned(),
        }
    }

    /// Starts counting a kind's owned keys afresh (a replica's informer replays its objects).
    pub(crate) fn reset_keys_owned(&self, kind: &str) {
        families()
            .keys_owned
            .get_or_create(&self.kind_labels(kind))
            .set(0);
    }

    pub(crate) fn keys_owned(&self, kind: &str, delta: i64) {
        families()
            .keys_owned
            .get_or_create(&self.kind_labels(kind))
            .inc_by(delta);
    }

    pub(crate) fn drained(&self, kind: &str) {
        families()
            .drains
            .get_or_create(&self.kind_labels(kind))
            .inc();
    }
}

/// The coordinator's metrics of one ring.
#[derive(Debug, Clone)]
pub(crate) struct RingMetrics {
    ring: String,
}

impl RingMetrics {
    pub(crate) fn new(ring: &str) -> Self {
        RingMetrics {
            ring: ring.to_owned(),
        }
    }

    pub(crate) fn set_members(&self, n: usize) {
        families()
            .ring_members
            .get_or_create(&RingLabels {
                ring: self.ring.clone(),
            })
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    fn kind_labels(&self, kind: &str) -> RingKindLabels {
        RingKindLabels {
            ring: self.ring.clone(),
            kind: kind.to_owned(),
        }
    }

    pub(crate) fn assigned(&self, kind: &str) {
        families()
            .assignments
            .get_or_create(&self.kind_labels(kind))
            .inc();
    }

    pub(crate) fn moved(&self, kind: &str, reason: &str) {
        families()
            .moves
            .get_or_create(&MoveLabels {
                ring: self.ring.clone(),
                kind: kind.to_owned(),
                reason: reason.to_owned(),
            })
            .inc();
    }

    pub(crate) fn handed_over(&self, kind: &str, took: Duration) {
        families()
            .handover
            .get_or_create(&self.kind_labels(kind))
            .observe(took.as_secs_f64());
    }
}
