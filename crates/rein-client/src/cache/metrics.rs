//! Informer and reflector metrics, read from every live cache's informers at scrape time (a
//! Prometheus collector, so the informers' hot path counts nothing twice), labelled
//! `{name="<kind>"}`:
//!
//! - `reflector_lists_total`, `reflector_watches_total` and `reflector_last_resource_version`,
//!   under the names client-go's reflector metrics had;
//! - `rein_reflector_relists_total` (lists after the first), `rein_reflector_watch_events_total`,
//!   `rein_informer_store_objects` and `rein_informer_synced` (1 once the initial list is in
//!   the cache), which client-go never published.
//!
//! Caches of the same kind in one process (tests start several) are summed; the resource
//! version is the highest.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::{Cache, Inner};
use crate::metrics::registry;

/// Every cache made in this process, for the collector; dead ones are dropped on scrape.
fn caches() -> &'static Mutex<Vec<Weak<Inner>>> {
    static CACHES: OnceLock<Mutex<Vec<Weak<Inner>>>> = OnceLock::new();
    CACHES.get_or_init(|| {
        registry()
            .lock()
            .register_collector(Box::new(InformerCollector));
        Mutex::new(Vec::new())
    })
}

/// Makes `inner`'s informers visible to the metrics collector.
pub(super) fn track(inner: &Arc<Inner>) {
    caches().lock().push(Arc::downgrade(inner));
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

/// One kind's figures, summed over caches.
#[derive(Debug, Default)]
struct Figures {
    lists: u64,
    relists: u64,
    watches: u64,
    events: u64,
    store: u64,
    synced: bool,
    resource_version: i64,
}

/// A metric's name, help text and value.
type Series<T> = (&'static str, &'static str, fn(&Figures) -> T);

#[derive(Debug)]
struct InformerCollector;

impl InformerCollector {
    fn figures() -> BTreeMap<String, Figures> {
        let live: Vec<Arc<Inner>> = {
            let mut caches = caches().lock();
            caches.retain(|w| w.strong_count() > 0);
            caches.iter().filter_map(Weak::upgrade).collect()
        };
        let mut out: BTreeMap<String, Figures> = BTreeMap::new();
        for inner in live {
            for (kind, status) in (Cache { inner }).informer_statuses() {
                let f = out.entry(kind).or_default();
                f.store += status.store_size as u64;
                f.synced |= status.synced;
                if let Some(r) = status.reflector {
                    f.lists += r.lists;
                    f.relists += r.lists.saturating_sub(1);
                    f.watches += r.watches;
                    f.events += r.events;
                    let rv = r
                        .last_sync_resource_version
                        .and_then(|rv| rv.parse::<i64>().ok())
                        .unwrap_or(0);
                    f.resource_version = f.resource_version.max(rv);
                }
            }
        }
        out
    }
}

impl Collector for InformerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let figures = Self::figures();
        if figures.is_empty() {
            return Ok(());
        }
        let counter = |value: fn(&Figures) -> u64| {
            let family = Family::<NameLabel, Counter>::default();
            for (name, f) in &figures {
                family
                    .get_or_create(&NameLabel { name: name.clone() })
                    .inc_by(value(f));
            }
            family
        };
        let gauge = |value: fn(&Figures) -> i64| {
            let family = Family::<NameLabel, Gauge>::default();
            for (name, f) in &figures {
                family
                    .get_or_create(&NameLabel { name: name.clone() })
                    .set(value(f));
            }
            family
        };
        let counters: [Series<u64>; 4] = [
            (
                "reflector_lists",
                "Total number of API lists done by the reflectors",
                |f| f.lists,
            ),
            (
                "reflector_watches",
                "Total number of API watches done by the reflectors",
                |f| f.watches,
            ),
            (
                "rein_reflector_relists",
                "Lists after a reflector's first (after a watch expired or failed)",
                |f| f.relists,
            ),
            (
                "rein_reflector_watch_events",
                "Watch events read by the reflectors",
                |f| f.events,
            ),
        ];
        for (name, help, value) in counters {
            let family = counter(value);
            family.encode(encoder.encode_descriptor(name, help, None, family.metric_type())?)?;
        }
        let gauges: [Series<i64>; 3] = [
            (
                "reflector_last_resource_version",
                "Last resource version seen for the reflectors",
                |f| f.resource_version,
            ),
            (
                "rein_informer_store_objects",
                "Objects in the informers' caches",
                |f| i64::try_from(f.store).unwrap_or(i64::MAX),
            ),
            (
                "rein_informer_synced",
                "1 once an informer's initial list is in its cache",
                |f| i64::from(f.synced),
            ),
        ];
        for (name, help, value) in gauges {
            let family = gauge(value);
            family.encode(encoder.encode_descriptor(name, help, None, family.metric_type())?)?;
        }
        Ok(())
    }
}
