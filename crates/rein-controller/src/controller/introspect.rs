//! Live queue introspection: what each controller's queue holds right now (the keys waiting,
//! those in flight and for how long, those backing off with their next attempt and failure
//! count), from code and, through rein-manager's metrics server, over HTTP.

use std::sync::{OnceLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use rein_workqueue::{ItemSnapshot, ItemState};
use serde_json::{Value, json};

use super::{Controller, Inner};
use crate::reconcile::Request;

/// One controller's queue at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSnapshot {
    /// The controller's name.
    pub controller: String,
    /// Every request the queue holds, ready ones first in the order they will be handed out,
    /// then those in flight (longest first), then those waiting by their next attempt.
    pub items: Vec<ItemSnapshot<Request>>,
}

impl QueueSnapshot {
    /// Requests ready to be reconciled, in the order they will be handed out.
    pub fn waiting(&self) -> impl Iterator<Item = &ItemSnapshot<Request>> {
        self.items
            .iter()
            .filter(|i| matches!(i.state, ItemState::Ready))
    }

    /// Requests being reconciled now.
    pub fn in_flight(&self) -> impl Iterator<Item = &ItemSnapshot<Request>> {
        self.items
            .iter()
            .filter(|i| matches!(i.state, ItemState::InFlight { .. }))
    }

    /// Requests waiting for a later attempt: backing off after failures, or added with a delay
    /// (`requeue_after`).
    pub fn backing_off(&self) -> impl Iterator<Item = &ItemSnapshot<Request>> {
        self.items
            .iter()
            .filter(|i| matches!(i.state, ItemState::Waiting { .. }))
    }

    /// The snapshot as JSON, as the metrics server's `/debug/queues` serves it:
    /// `{"controller", "waiting": [{key, priority, failures}], "inFlight": [{key, seconds,
    /// requeued}], "backoff": [{key, nextAttemptInSeconds, failures, priority}]}`.
    pub fn to_json(&self) -> Value {
        let secs = |d: &Duration| (d.as_secs_f64() * 1000.0).round() / 1000.0;
        let waiting: Vec<Value> = self
            .waiting()
            .map(|i| json!({"key": i.item.to_string(), "priority": i.priority, "failures": i.failures}))
            .collect();
        let in_flight: Vec<Value> = self
            .in_flight()
            .filter_map(|i| match &i.state {
                ItemState::InFlight { for_, requeued } => Some(json!({
                    "key": i.item.to_string(),
                    "seconds": secs(for_),
                    "requeued": requeued,
                })),
                _ => None,
            })
            .collect();
        let backoff: Vec<Value> = self
            .backing_off()
            .filter_map(|i| match &i.state {
                ItemState::Waiting { ready_in } => Some(json!({
                    "key": i.item.to_string(),
                    "nextAttemptInSeconds": secs(ready_in),
                    "failures": i.failures,
                    "priority": i.priority,
                })),
                _ => None,
            })
            .collect();
        json!({
            "controller": self.controller,
            "waiting": waiting,
            "inFlight": in_flight,
            "backoff": backoff,
        })
    }
}

/// Every controller made in this process, for [`queue_snapshots`]; dead ones are dropped.
fn controllers() -> &'static Mutex<Vec<Weak<Inner>>> {
    static CONTROLLERS: OnceLock<Mutex<Vec<Weak<Inner>>>> = OnceLock::new();
    CONTROLLERS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Makes a new controller visible to [`queue_snapshots`].
pub(super) fn track(inner: &std::sync::Arc<Inner>) {
    let mut all = controllers().lock();
    all.retain(|w| w.strong_count() > 0);
    all.push(std::sync::Arc::downgrade(inner));
}

/// The queues of every live controller in this process, sorted by controller name.
pub fn queue_snapshots() -> Vec<QueueSnapshot> {
    let live: Vec<Controller> = {
        let mut all = controllers().lock();
        all.retain(|w| w.strong_count() > 0);
        all.iter()
            .filter_map(Weak::upgrade)
            .map(|inner| Controller { inner })
            .collect()
    };
    let mut out: Vec<QueueSnapshot> = live.iter().map(Controller::queue_snapshot).collect();
    out.sort_by(|a, b| a.controller.cmp(&b.controller));
    out
}

impl Controller {
    /// What this controller's queue holds right now (see [`QueueSnapshot`]).
    pub fn queue_snapshot(&self) -> QueueSnapshot {
        QueueSnapshot {
            controller: self.inner.name.to_string(),
            items: self.inner.queue.snapshot(),
        }
    }
}
