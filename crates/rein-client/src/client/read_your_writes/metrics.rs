//! `rein_client_read_your_writes_waits_total` and `rein_client_read_your_writes_wait_seconds`:
//! how often a read waited for the cache to reach this client's own writes, and how long.

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use crate::metrics::registry;

/// How a read that waited for the cache to reach the client's own writes ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitOutcome {
    /// The cache reached the writes; the read answered from it.
    CaughtUp,
    /// The wait timed out (the read answered stale, or failed, per
    /// [`OnTimeout`](super::OnTimeout)).
    TimedOut,
}

impl WaitOutcome {
    /// The label value: `caught_up` or `timed_out`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CaughtUp => "caught_up",
            Self::TimedOut => "timed_out",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WaitLabels {
    kind: String,
    verb: String,
    outcome: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

struct Metrics {
    waits: Family<WaitLabels, Counter>,
    seconds: Family<KindLabel, Histogram>,
}

fn buckets() -> Histogram {
    // 100 µs … ~6.5 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 17))
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let m = Metrics {
            waits: Family::default(),
            seconds: Family::new_with_constructor(buckets),
        };
        let mut r = registry().lock();
        r.register(
            "rein_client_read_your_writes_waits",
            "Reads through the cache-backed client that waited for the cache to reach the client's own writes, by kind, verb and outcome (caught_up or timed_out)",
            m.waits.clone(),
        );
        r.register(
            "rein_client_read_your_writes_wait_seconds",
            "How long reads waited for the cache to reach the client's own writes, by kind",
            m.seconds.clone(),
        );
        m
    })
}

pub(super) fn record(kind: &str, verb: &str, outcome: WaitOutcome, waited: std::time::Duration) {
    let m = metrics();
    m.waits
        .get_or_create(&WaitLabels {
            kind: kind.to_owned(),
            verb: verb.to_owned(),
            outcome: outcome.as_str().to_owned(),
        })
        .inc();
    m.seconds
        .get_or_create(&KindLabel {
            kind: kind.to_owned(),
        })
        .observe(waited.as_secs_f64());
}

/// How many reads of `kind` with `verb` (`get` or `list`) waited for the cache to reach this
/// process's own writes and ended with `outcome`.
pub fn read_your_writes_waits(kind: &str, verb: &str, outcome: WaitOutcome) -> u64 {
    metrics()
        .waits
        .get_or_create(&WaitLabels {
            kind: kind.to_owned(),
            verb: verb.to_owned(),
            outcome: outcome.as_str().to_owned(),
        })
        .get()
}
