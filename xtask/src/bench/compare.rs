//! The side-by-side comparison: one row per (case, metric) with rein, kube-runtime, the ratio and
//! whether the aim is met.

use std::collections::BTreeMap;

use super::figure::Figure;

/// Side names as the harness prints them.
const REIN: &str = "rein";
const KUBE: &str = "kube-runtime";
const KUBE_STREAMING: &str = "kube-runtime-streaming";

/// Count metrics: checked for completeness, not compared.
const COUNTS: [&str; 3] = [
    "objects cached",
    "update events applied",
    "objects reconciled",
];

/// The order of cases and metrics in the table and chart (unknown ones last).
const CASES: [&str; 14] = [
    "initial-sync",
    "initial-sync-alike",
    "metadata-only",
    "metadata-only-alike",
    "multi-namespace",
    "multi-namespace-alike",
    "watch",
    "watch-alike",
    "watch-backlog",
    "watch-backlog-alike",
    "controller-c1",
    "controller-c16",
    "controller-paced-c1",
    "controller-paced-c16",
];
const METRICS: [&str; 14] = [
    "time to synced",
    "events per second",
    "events per CPU-second",
    "writer rate",
    "time to all reconciled",
    "arrival latency p50",
    "arrival latency p99",
    "latency p50",
    "latency p99",
    "latency p99 to informer notification",
    "peak RSS",
    FULL_OBJECTS_PEAK,
    "RSS after sync",
    "CPU time",
];

/// The metadata-only case's row comparing rein's metadata-only peak RSS with kube-runtime's
/// full-object cache (its `initial-sync` default: the same Pods), the aim for it.
const FULL_OBJECTS_PEAK: &str = "peak RSS vs kube-runtime's full-object default";

fn rank(order: &[&str], name: &str) -> usize {
    order.iter().position(|n| *n == name).unwrap_or(order.len())
}

/// What a row is aiming for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Aim {
    /// No aim: shown for information.
    None,
    /// rein / kube-runtime at most this (time and memory).
    RatioAtMost(f64),
    /// rein / kube-runtime at least this (throughput).
    RatioAtLeast(f64),
    /// rein's own value below this.
    Below(f64),
}

/// One compared figure.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) case: String,
    pub(crate) metric: String,
    pub(crate) unit: String,
    pub(crate) rein: Option<f64>,
    pub(crate) kube: Option<f64>,
    pub(crate) kube_streaming: Option<f64>,
    pub(crate) aim: Aim,
}

impl Row {
    /// Whether a bigger value is better (throughput) rather than worse (time, memory).
    pub(crate) fn higher_is_better(&self) -> bool {
        self.unit.ends_with("/s")
    }

    /// rein / kube-runtime (default configuration).
    pub(crate) fn ratio(&self) -> Option<f64> {
        ratio(self.rein?, self.kube?)
    }

    /// rein / kube-runtime with streaming lists.
    pub(crate) fn ratio_streaming(&self) -> Option<f64> {
        ratio(self.rein?, self.kube_streaming?)
    }

    /// How many times better rein is than kube-runtime (above 1: rein ahead).
    pub(crate) fn advantage(&self) -> Option<f64> {
        let r = self.ratio()?;
        let a = if self.higher_is_better() { r } else { 1.0 / r };
        a.is_finite().then_some(a)
    }

    /// Whether the aim is met; `None` without an aim or without figures.
    pub(crate) fn met(&self) -> Option<bool> {
        match self.aim {
            Aim::None => None,
            Aim::RatioAtMost(x) => Some(self.ratio()? <= x),
            Aim::RatioAtLeast(x) => Some(self.ratio()? >= x),
            Aim::Below(x) => Some(self.rein? < x),
        }
    }

    /// The aim as text.
    pub(crate) fn aim_text(&self) -> String {
        match self.aim {
            Aim::None => "—".to_owned(),
            Aim::RatioAtMost(x) => format!("ratio ≤ {x:.2}"),
            Aim::RatioAtLeast(x) => format!("ratio ≥ {x:.2}"),
            Aim::Below(x) => format!("rein < {x} {}", self.unit),
        }
    }
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// The aims: 1.5× kube-runtime's throughput (so ≤ 1/1.5 of its time), ≤ 0.7× its peak
/// memory, and p99 latency under 5 ms at concurrency 16. A full cache of realistic Pods: peak
/// RSS ≤ 0.35× kube-runtime's default and ≤ 0.8× its best configuration (`-alike`: managedFields
/// stripped on both sides), initial sync in ≤ 0.6× its time. Watch throughput is judged where the
/// client is the bottleneck (`watch-backlog`: a backlog drained at the client's own speed; the
/// live `watch` rate is bounded by the writer and shown for information). Latency is judged
/// on what the issue names, event → reconcile, with the server below saturation
/// (`controller-paced-c16`, `arrival latency p99`); the burst's create → reconcile figures
/// measure the server's queue and are shown for information. A metadata-only cache: peak RSS
/// ≤ 0.1× kube-runtime's full-object default (a row of its own); against kube-runtime's own
/// metadata watcher, and for the multi-namespace cases, shown for information.
fn aim(case: &str, metric: &str) -> Aim {
    match (case, metric) {
        ("initial-sync", "peak RSS") => Aim::RatioAtMost(0.35),
        ("initial-sync-alike", "peak RSS") => Aim::RatioAtMost(0.8),
        ("metadata-only", FULL_OBJECTS_PEAK) => Aim::RatioAtMost(0.1),
        (c, "peak RSS") if c.starts_with("metadata-only") || c.starts_with("multi-namespace") => {
            Aim::None
        }
        (_, "peak RSS") => Aim::RatioAtMost(0.7),
        ("initial-sync", "time to synced") => Aim::RatioAtMost(0.6),
        ("watch-backlog", "events per second") => Aim::RatioAtLeast(1.5),
        ("controller-c1" | "controller-c16", "time to all reconciled") => {
            Aim::RatioAtMost(1.0 / 1.5)
        }
        ("controller-paced-c16", "arrival latency p99") => Aim::Below(5.0),
        _ => Aim::None,
    }
}

/// The comparison rows (in the order figures first appear) and whether every side's count
/// figures agree (every side saw every object).
pub(crate) fn rows(figures: &[Figure]) -> (Vec<Row>, bool) {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
    let mut counts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in figures {
        let Some((case, metric, side)) = f.side_key() else {
            continue;
        };
        if COUNTS.contains(&metric) {
            counts
                .entry(case.to_owned())
                .or_default()
                .push(f.value.clone());
            continue;
        }
        let key = (case.to_owned(), metric.to_owned());
        let row = rows.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            Row {
                case: case.to_owned(),
                metric: metric.to_owned(),
                unit: f.unit.clone(),
                rein: None,
                kube: None,
                kube_streaming: None,
                aim: aim(case, metric),
            }
        });
        let value = f.value.parse().ok();
        match side {
            REIN => row.rein = value,
            KUBE => row.kube = value,
            KUBE_STREAMING => row.kube_streaming = value,
            _ => {}
        }
    }
    let complete = counts.values().all(|v| v.windows(2).all(|w| w[0] == w[1]));
    let full_objects = full_objects_row(&rows);
    let mut rows: Vec<Row> = order.into_iter().filter_map(|k| rows.remove(&k)).collect();
    rows.extend(full_objects);
    rows.sort_by_key(|r| (rank(&CASES, &r.case), rank(&METRICS, &r.metric)));
    (rows, complete)
}

/// rein's metadata-only peak RSS against kube-runtime's full-object default, when both ran.
fn full_objects_row(rows: &BTreeMap<(String, String), Row>) -> Option<Row> {
    let row = |case: &str| rows.get(&(case.to_owned(), "peak RSS".to_owned()));
    let metadata = row("metadata-only")?;
    let full = row("initial-sync")?;
    Some(Row {
        case: metadata.case.clone(),
        metric: FULL_OBJECTS_PEAK.to_owned(),
        unit: metadata.unit.clone(),
        rein: metadata.rein,
        kube: full.kube,
        kube_streaming: full.kube_streaming,
        aim: aim(&metadata.case, FULL_OBJECTS_PEAK),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::figure::parse_figure;

    #[test]
    fn ratios_and_aims() {
        let lines = [
            "BENCH|side-by-side|initial-sync/time to synced/rein|2.0|s|",
            "BENCH|side-by-side|initial-sync/time to synced/kube-runtime|4.0|s|",
            "BENCH|side-by-side|initial-sync/objects cached/rein|100|objects|",
            "BENCH|side-by-side|initial-sync/objects cached/kube-runtime|100|objects|",
            "BENCH|side-by-side|watch-backlog/events per second/rein|900|events/s|",
            "BENCH|side-by-side|watch-backlog/events per second/kube-runtime|1000|events/s|",
            "BENCH|side-by-side|controller-paced-c16/arrival latency p99/rein|3.0|ms|",
        ];
        let figures: Vec<Figure> = lines.iter().filter_map(|l| parse_figure(l)).collect();
        let (rows, complete) = rows(&figures);
        assert!(complete);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].ratio(), Some(0.5));
        assert_eq!(rows[0].advantage(), Some(2.0));
        assert_eq!(rows[0].met(), Some(true));
        assert_eq!(rows[1].met(), Some(false));
        assert!(rows[1].higher_is_better());
        assert_eq!(rows[2].met(), Some(true));
        assert_eq!(rows[2].ratio(), None);
    }

    #[test]
    fn metadata_only_is_also_compared_with_full_objects() {
        let lines = [
            "BENCH|side-by-side|initial-sync/peak RSS/rein|300|MiB|",
            "BENCH|side-by-side|initial-sync/peak RSS/kube-runtime|1000|MiB|",
            "BENCH|side-by-side|metadata-only/peak RSS/rein|50|MiB|",
            "BENCH|side-by-side|metadata-only/peak RSS/kube-runtime|100|MiB|",
        ];
        let figures: Vec<Figure> = lines.iter().filter_map(|l| parse_figure(l)).collect();
        let (rows, _) = rows(&figures);
        let metrics: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.case.as_str(), r.metric.as_str()))
            .collect();
        assert_eq!(
            metrics,
            [
                ("initial-sync", "peak RSS"),
                ("metadata-only", "peak RSS"),
                ("metadata-only", FULL_OBJECTS_PEAK),
            ]
        );
        assert_eq!(rows[1].met(), None);
        assert_eq!(rows[2].ratio(), Some(0.05));
        assert_eq!(rows[2].met(), Some(true));
    }
}
