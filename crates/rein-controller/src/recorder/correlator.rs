//! The recorder's writer task: spam filter, similar-event combining, identical-event counting.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube_client::Api;
use kube_client::api::{Patch, PatchParams, PostParams};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{EventType, RecorderOptions};

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
    pub(super) message: String,
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

pub(super) struct Correlator {
    client: kube_client::Client,
    component: Arc<str>,
    options: RecorderOptions,
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
        Correlator {
            client,
            component,
            options,
            buckets: HashMap::new(),
            similar: HashMap::new(),
            written: HashMap::new(),
        }
    }

    pub(super) async fn run(mut self, mut rx: mpsc::Receiver<Pending>) {
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
        let now = Time(Timestamp::now());
        if let Some(prev) = self.written.get(&identical_key).cloned() {
            let api: Api<Event> = Api::namespaced(self.client.clone(), &prev.namespace);
            let patch = serde_json::json!({
                "count": prev.count + 1,
                "lastTimestamp": now,
                "message": message,
            });
            match api
                .patch(&prev.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
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
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
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
            reporting_component: Some(self.component.to_string()),
            reporting_instance: self.options.host.clone(),
            ..Event::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => {
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
}
