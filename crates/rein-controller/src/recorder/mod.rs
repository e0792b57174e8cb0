//! The event recorder: Events about objects, with client-go-style aggregation of repeats, a
//! per-object rate limit, and never blocking the caller.
//!
//! Events are written through `events.k8s.io/v1` when the server serves it (client-go's
//! `tools/events`: `regarding`, `note`, `action`, `reportingController`/`reportingInstance`,
//! `eventTime`, and a `series` for repeats), else as core/v1 Events (client-go's
//! `tools/record`); [`RecorderOptions::api`] fixes the choice. An event recorded inside a
//! reconcile carries the controller and reconcile id (the `reconcile_id` of the reconcile's log
//! span) as the annotations `rein.dev/controller` and `rein.dev/reconcile-id`.
//!
//! `event(..)` only puts the event on a bounded channel (dropping it, with a log line, when the
//! channel is full); a background task correlates and writes it. The correlation follows
//! client-go's `EventCorrelator`: a token bucket per object (burst 25, one token per 5 min) drops
//! spam; ten distinct messages with the same reason within 10 min are combined into one event
//! whose message starts `(combined from similar events): `; an identical repeat bumps `count`
//! and `lastTimestamp` (core/v1) or `series.count` and `series.lastObservedTime`
//! (events.k8s.io/v1) of the existing Event with a merge patch instead of creating a new one.
//! (client-go's events library writes a series' count only every 30 minutes; rein writes each
//! repeat that passes the rate limit, so the count is current.)
//!
//! A [`RecorderProvider`] (controller-runtime's recorder provider, which the manager holds)
//! makes recorders that share one shutdown: [`RecorderProvider::stop`] writes what every
//! recorder still holds, then ends their writers, so a program that stops its manager loses no
//! Event (such as leader election's "stopped leading") to the runtime ending under it.

mod correlator;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube_client::Resource;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use correlator::{Correlator, Pending};

/// Annotation naming the controller whose reconcile recorded the event.
pub const CONTROLLER_ANNOTATION: &str = "rein.dev/controller";
/// Annotation carrying the reconcile id (the `reconcile_id` of the reconcile's log span).
pub const RECONCILE_ID_ANNOTATION: &str = "rein.dev/reconcile-id";

/// Which events API the recorder writes to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EventsApi {
    /// `events.k8s.io/v1` when the server serves it (asked once), else core/v1.
    #[default]
    Auto,
    /// Always core/v1 Events (client-go's `tools/record`).
    Core,
    /// Always `events.k8s.io/v1` Events (client-go's `tools/events`).
    EventsV1,
}

/// Normal or Warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something may need attention.
    Warning,
}

impl EventType {
    /// The API value: `Normal` or `Warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Recorder settings; the defaults are client-go's.
#[derive(Debug, Clone)]
pub struct RecorderOptions {
    /// Events kept waiting for the writer before new ones are dropped.
    pub buffer: usize,
    /// Events per object allowed in a burst.
    pub burst: u32,
    /// One more event per object is allowed after each period.
    pub refill_every: Duration,
    /// Distinct messages for one reason within `similar_window` before they are combined.
    pub similar_threshold: usize,
    /// The window for combining similar events.
    pub similar_window: Duration,
    /// The host recorded as the event source; the reporting instance is this, or
    /// `<component>-<hostname>` when unset.
    pub host: Option<String>,
    /// Which events API to write to.
    pub api: EventsApi,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions {
            buffer: 1000,
            burst: 25,
            refill_every: Duration::from_secs(300),
            similar_threshold: 10,
            similar_window: Duration::from_secs(600),
            host: None,
            api: EventsApi::Auto,
        }
    }
}

/// Records Events about objects on behalf of a component (a controller's name). Cheap to
/// clone; the writer task ends when every clone is dropped.
#[derive(Clone)]
pub struct EventRecorder {
    tx: mpsc::Sender<Pending>,
    component: Arc<str>,
}

impl fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventRecorder")
            .field("component", &self.component)
            .finish_non_exhaustive()
    }
}

impl EventRecorder {
    /// A recorder writing with `client` as `component`; spawns its writer task (call inside a
    /// tokio runtime).
    pub fn new(
        client: kube_client::Client,
        component: impl Into<String>,
        options: RecorderOptions,
    ) -> Self {
        Self::spawn(client, component.into(), options, None)
    }

    /// A recorder whose writer also ends, after writing what it holds, when `stop` fires;
    /// `tracker` tracks the writer.
    fn spawn(
        client: kube_client::Client,
        component: String,
        options: RecorderOptions,
        shutdown: Option<(&CancellationToken, &TaskTracker)>,
    ) -> Self {
        let component: Arc<str> = Arc::from(component);
        let (tx, rx) = mpsc::channel(options.buffer.max(1));
        let correlator = Correlator::new(client, component.clone(), options);
        match shutdown {
            Some((stop, tracker)) => {
                tracker.spawn(correlator.run(rx, stop.clone()));
            }
            None => {
                tokio::spawn(correlator.run(rx, CancellationToken::new()));
            }
        }
        EventRecorder { tx, component }
    }

    /// The component events are recorded as.
    pub fn component(&self) -> &str {
        &self.component
    }

    /// Records an event about `obj`. Never blocks; drops the event if the writer is far behind.
    /// The reason doubles as the `action` events.k8s.io/v1 requires; see
    /// [`event_with_action`](Self::event_with_action) to name it.
    pub fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        self.send(obj, event_type, reason, None, message);
    }

    /// Records an event about `obj` with the `action` taken (client-go's
    /// `events.EventRecorder.Eventf(regarding, nil, type, reason, action, note)`).
    pub fn event_with_action<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        event_type: EventType,
        reason: &str,
        action: &str,
        message: &str,
    ) {
        self.send(obj, event_type, reason, Some(action), message);
    }

    fn send<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        event_type: EventType,
        reason: &str,
        action: Option<&str>,
        message: &str,
    ) {
        let meta = obj.meta();
        let involved = ObjectReference {
            api_version: Some(K::api_version(&()).into_owned()),
            kind: Some(K::kind(&()).into_owned()),
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            field_path: None,
        };
        let pending = Pending {
            involved,
            event_type,
            reason: reason.to_owned(),
            action: action.map(str::to_owned),
            message: message.to_owned(),
            reconcile: crate::reconcile::current_reconcile(),
        };
        if let Err(err) = self.tx.try_send(pending) {
            tracing::warn!(component = %self.component, reason, error = %err, "dropping event: recorder is busy or stopped");
        }
    }

    /// Records a Normal event.
    pub fn normal<K: Resource<DynamicType = ()>>(&self, obj: &K, reason: &str, message: &str) {
        self.event(obj, EventType::Normal, reason, message);
    }

    /// Records a Warning event.
    pub fn warning<K: Resource<DynamicType = ()>>(&self, obj: &K, reason: &str, message: &str) {
        self.event(obj, EventType::Warning, reason, message);
    }
}

/// Makes [`EventRecorder`]s that share a client and one shutdown (controller-runtime's
/// recorder `Provider`, which its manager stops last): [`stop`](Self::stop) has every
/// recorder it made write the events it still holds, then end. Cheap to clone.
///
/// ```no_run
/// # async fn demo(client: kube_client::Client, pod: k8s_openapi::api::core::v1::Pod) {
/// use rein_controller::recorder::{RecorderOptions, RecorderProvider};
///
/// let provider = RecorderProvider::new(client);
/// let recorder = provider.recorder("my-controller", RecorderOptions::default());
/// recorder.normal(&pod, "Started", "the pod was seen");
/// // Before the program ends: the event above is written (or the deadline passes).
/// let flushed = provider.stop(Some(tokio::time::Instant::now() + std::time::Duration::from_secs(5))).await;
/// assert!(flushed);
/// # }
/// ```
#[derive(Clone)]
pub struct RecorderProvider {
    client: kube_client::Client,
    stop: CancellationToken,
    writers: TaskTracker,
    made: Arc<std::sync::atomic::AtomicBool>,
}

impl fmt::Debug for RecorderProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecorderProvider")
            .field("stopped", &self.stop.is_cancelled())
            .field("writers", &self.writers.len())
            .finish_non_exhaustive()
    }
}

impl RecorderProvider {
    /// A provider whose recorders write with `client`.
    pub fn new(client: kube_client::Client) -> Self {
        RecorderProvider {
            client,
            stop: CancellationToken::new(),
            writers: TaskTracker::new(),
            made: Arc::default(),
        }
    }

    /// Whether this provider has made a recorder (so the program writes Events).
    pub fn has_made_recorders(&self) -> bool {
        self.made.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A recorder writing as `component` (controller-runtime `GetEventRecorderFor`); spawns
    /// its writer task (call inside a tokio runtime). Made after [`stop`](Self::stop), its
    /// writer ends at once and its events are dropped with a log line.
    pub fn recorder(
        &self,
        component: impl Into<String>,
        options: RecorderOptions,
    ) -> EventRecorder {
        self.made.store(true, std::sync::atomic::Ordering::SeqCst);
        if self.stop.is_cancelled() {
            // No writer: every event is refused at `try_send`, and says so.
            let (tx, _) = mpsc::channel(1);
            return EventRecorder {
                tx,
                component: Arc::from(component.into()),
            };
        }
        EventRecorder::spawn(
            self.client.clone(),
            component.into(),
            options,
            Some((&self.stop, &self.writers)),
        )
    }

    /// Stops every recorder made by this provider: each writes the events it already holds,
    /// then ends; events recorded after this are dropped with a log line. Waits for the
    /// writers until `deadline` (`None`: as long as they take) and answers whether they all
    /// finished in time. Calling it again waits again.
    pub async fn stop(&self, deadline: Option<Instant>) -> bool {
        self.stop.cancel();
        self.writers.close();
        match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, self.writers.wait())
                .await
                .is_ok(),
            None => {
                self.writers.wait().await;
                true
            }
        }
    }
}
