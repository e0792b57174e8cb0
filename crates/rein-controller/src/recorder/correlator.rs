//! The recorder's writer task: spam filter, similar-event combining, identical-event counting,
//! and writing through `events.k8s.io/v1` or core/v1.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::api::events::v1 as events_v1;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube_client::Api;
use kube_client::api::{Patch, PatchParams, PostParams};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    CONTROLLER_ANNOTATION, EventType, EventsApi, RECONCILE_ID_ANNOTATION, RecorderOptions,
};
use crate::reconcile::CurrentReconcile;

/// Prefix of a combined event's message.
pub(super) const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// How many objects/keys the correlator tracks before it starts over.
const MAX_TRACKED: usize = 4096;

/// An event waiting to be written.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) involved: ObjectReference,
    pub(super) event_type: EventType,
    pub(super) reason: String,
    /// What was done (events.k8s.io's `action`); the reason when not given.
    pub(super) action: Option<String>,
    pub(super) message: String,
    /// The reconcile the event was recorded in, if any.
    pub(super) reconcile: Option<CurrentReconcile>,
}

/// The annotations tying an event to the reconcile that recorded it.
fn reconcile_annotations(reconcile: Option<&CurrentReconcile>) -> Option<BTreeMap<String, String>> {
    reconcile.map(|r| {
        BTreeMap::from([
            (CONTROLLER_ANNOTATION.to_owned(), r.controller.to_string()),
            (RECONCILE_ID_ANNOTATION.to_owned(), r.id.to_string()),
        ])
    })
}

/// Identifies the object an event is about.
fn object_key(r: &ObjectReference) -> String {
    format!(
        "{}/{}/{}/{}",
        r.kind.as_deref().unwrap_or(""),
        r.namespace.as_deref().unwrap_or(""),
        r.name.as_deref().unwrap_or(""),
        r.uid.as_deref().unwrap_or("")
    )
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

#[derive(Debug)]
struct Similar {
    messages: HashSet<String>,
    since: Instant,
}

#[derive(Debug, Clone)]
struct Written {
    name: String,
    namespace: String,
    count: i32,
}

/// Which API the events go to, once decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Core,
    EventsV1,
}

pub(super) struct Correlator {
    client: kube_client::Client,
    component: Arc<str>,
    options: RecorderOptions,
    target: Option<Target>,
    instance: String,
    buckets: HashMap<String, Bucket>,
    similar: HashMap<String, Similar>,
    written: HashMap<String, Written>,
}

impl Correlator {
    pub(super) fn new(
        client: kube_client::Client,
        component: Arc<str>,
        options: RecorderOptions,
    ) -> Self {
        let instance = options.host.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME")
                .ok()
                .filter(|h| !h.is_empty())
                .or_else(|| {
                    std::fs::read_to_string("/proc/sys/kernel/hostname")
                        .ok()
                        .map(|h| h.trim().to_owned())
                })
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "unknown".to_owned());
            // client-go's events broadcaster names the instance `<controller>-<hostname>`.
            format!("{component}-{host}")
        });
        Correlator {
            client,
            component,
            options,
            target: None,
            instance,
            buckets: HashMap::new(),
            similar: HashMap::new(),
            written: HashMap::new(),
        }
    }

    /// Writes what arrives until every sender is gone or `stop` fires; after `stop`, takes
    /// no new event and writes the ones already queued, then ends.
    pub(super) async fn run(mut self, mut rx: mpsc::Receiver<Pending>, stop: CancellationToken) {
        loop {
            tokio::select! {
                biased;
                pending = rx.recv() => match pending {
                    Some(pending) => self.record(pending).await,
                    None => return,
                },
                () = stop.cancelled() => break,
            }
        }
        rx.close();
        while let Some(pending) = rx.recv().await {
            self.record(pending).await;
        }
    }

    /// Whether the object still has a token (client-go's spam filter).
    fn allow(&mut self, object: &str) -> bool {
        let now = Instant::now();
        let burst = f64::from(self.options.burst.max(1));
        let per_sec = 1.0
            / self
                .options
                .refill_every
                .as_secs_f64()
                .max(f64::MIN_POSITIVE);
        let bucket = self.buckets.entry(object.to_owned()).or_insert(Bucket {
            tokens: burst,
            last: now,
        });
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_sec).min(burst);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// The message to write: the original, or the combined form once a reason has had too many
    /// distinct messages recently. Returns (message, identical-key message part).
    fn combine(&mut self, key: String, message: &str) -> (String, String) {
        let now = Instant::now();
        let window = self.options.similar_window;
        let entry = self.similar.entry(key).or_insert_with(|| Similar {
            messages: HashSet::new(),
            since: now,
        });
        if now.saturating_duration_since(entry.since) > window {
            entry.messages.clear();
            entry.since = now;
        }
        entry.messages.insert(message.to_owned());
        if entry.messages.len() >= self.options.similar_threshold {
            (
                format!("{COMBINED_PREFIX}{message}"),
                COMBINED_PREFIX.to_owned(),
            )
        } else {
            (message.to_owned(), message.to_owned())
        }
    }

    /// Where events go: fixed by the options, or events.k8s.io/v1 when the server serves it
    /// (asked until the server answers, then remembered), else core/v1.
    async fn target(&mut self) -> Target {
        if let Some(target) = self.target {
            return target;
        }
        let target = match self.options.api {
            EventsApi::Core => Target::Core,
            EventsApi::EventsV1 => Target::EventsV1,
            EventsApi::Auto => match self
                .client
                .list_api_group_resources("events.k8s.io/v1")
                .await
            {
                Ok(list) if list.resources.iter().any(|r| r.name == "events") => Target::EventsV1,
                Ok(_) => Target::Core,
                Err(kube_client::Error::Api(status)) if status.code == 404 => Target::Core,
                Err(err) => {
                    // Not an answer (the server unreachable, say): core/v1 this time, and ask
                    // again with the next event.
                    tracing::debug!(error = %err, "could not ask for events.k8s.io/v1; writing core/v1 this time");
                    return Target::Core;
                }
            },
        };
        self.target = Some(target);
        target
    }

    async fn record(&mut self, p: Pending) {
        // Bounded memory, like client-go's LRU caches: forget everything past the cap.
        for len in [self.buckets.len(), self.similar.len(), self.written.len()] {
            if len > MAX_TRACKED {
                self.buckets.clear();
                self.similar.clear();
                self.written.clear();
                break;
            }
        }
        let object = object_key(&p.involved);
        if !self.allow(&format!("{}|{object}", self.component)) {
            tracing::debug!(object, reason = p.reason, "dropping event: rate limited");
            return;
        }
        let similar_key = format!(
            "{}|{object}|{}|{}",
            self.component,
            p.event_type.as_str(),
            p.reason
        );
        let (message, identity) = self.combine(similar_key.clone(), &p.message);
        let identical_key = format!("{similar_key}|{identity}");
        let target = self.target().await;
        if let Some(prev) = self.written.get(&identical_key).cloned() {
            let mut patch = match target {
                Target::Core => serde_json::json!({
                    "count": prev.count + 1,
                    "lastTimestamp": Time(Timestamp::now()),
                    "message": message,
                }),
                // client-go's events library: a repeat turns the Event into a series.
                Target::EventsV1 => serde_json::json!({
                    "series": {
                        "count": prev.count + 1,
                        "lastObservedTime": MicroTime(Timestamp::now()),
                    },
                    "note": message,
                }),
            };
            // Only a repeat inside a reconcile names one; a `null` would drop every annotation.
            if let Some(annotations) = reconcile_annotations(p.reconcile.as_ref()) {
                patch["metadata"] = serde_json::json!({ "annotations": annotations });
            }
            match self.patch(target, &prev, &patch).await {
                Ok(()) => {
                    if let Some(w) = self.written.get_mut(&identical_key) {
                        w.count += 1;
                    }
                    return;
                }
                Err(err) => {
                    tracing::debug!(event = prev.name, error = %err, "updating the event failed; creating a new one");
                    self.written.remove(&identical_key);
                }
            }
        }
        let namespace = p
            .involved
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let name = format!(
            "{}.{:x}",
            p.involved.name.as_deref().unwrap_or("object"),
            Timestamp::now().as_nanosecond()
        );
        let metadata = ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            annotations: reconcile_annotations(p.reconcile.as_ref()),
            ..ObjectMeta::default()
        };
        let created = match target {
            Target::Core => self.create_core(metadata, p, message).await,
            Target::EventsV1 => self.create_events_v1(metadata, p, message).await,
        };
        match created {
            Ok(()) => {
                self.written.insert(
                    identical_key,
                    Written {
                        name,
                        namespace,
                        count: 1,
                    },
                );
            }
            Err(err) => {
                tracing::warn!(event = name, error = %err, "writing the event failed; dropping it");
            }
        }
    }

    async fn patch(
        &self,
        target: Target,
        prev: &Written,
        patch: &serde_json::Value,
    ) -> Result<(), kube_client::Error> {
        let pp = PatchParams::default();
        let patch = Patch::Merge(patch);
        match target {
            Target::Core => {
                let api: Api<Event> = Api::namespaced(self.client.clone(), &prev.namespace);
                api.patch(&prev.name, &pp, &patch).await.map(drop)
            }
            Target::EventsV1 => {
                let api: Api<events_v1::Event> =
                    Api::namespaced(self.client.clone(), &prev.namespace);
                api.patch(&prev.name, &pp, &patch).await.map(drop)
            }
        }
    }

    async fn create_core(
        &self,
        metadata: ObjectMeta,
        p: Pending,
        message: String,
    ) -> Result<(), kube_client::Error> {
        let now = Time(Timestamp::now());
        let namespace = metadata.namespace.clone().unwrap_or_default();
        let event = Event {
            metadata,
            involved_object: p.involved,
            reason: Some(p.reason),
            message: Some(message),
            type_: Some(p.event_type.as_str().to_owned()),
            count: Some(1),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            source: Some(EventSource {
                component: Some(self.component.to_string()),
                host: self.options.host.clone(),
            }),
            action: p.action,
            reporting_component: Some(self.component.to_string()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        api.create(&PostParams::default(), &event).await.map(drop)
    }

    async fn create_events_v1(
        &self,
        metadata: ObjectMeta,
        p: Pending,
        message: String,
    ) -> Result<(), kube_client::Error> {
        let namespace = metadata.namespace.clone().unwrap_or_default();
        let action = p.action.unwrap_or_else(|| p.reason.clone());
        let event = events_v1::Event {
            metadata,
            event_time: Some(MicroTime(Timestamp::now())),
            regarding: Some(p.involved),
            reason: Some(p.reason),
            action: Some(action),
            note: Some(message),
            type_: Some(p.event_type.as_str().to_owned()),
            reporting_controller: Some(self.component.to_string()),
            reporting_instance: Some(self.instance.clone()),
            ..events_v1::Event::default()
        };
        let api: Api<events_v1::Event> = Api::namespaced(self.client.clone(), &namespace);
        api.create(&PostParams::default(), &event).await.map(drop)
    }
}
