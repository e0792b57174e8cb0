//! Watch: a chunked stream of JSON events from a resourceVersion, with selectors (including
//! the ADDED/DELETED transitions a selector implies), bookmarks, `timeoutSeconds`, streaming
//! lists (`sendInitialEvents`), and 410 Expired as an ERROR event. A watch from a
//! resourceVersion the server has not reached starts at once and sends only later changes; a
//! streaming list from one first waits for it, as kube-apiserver's watch cache does.

use std::convert::Infallible;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::json;
use tokio::sync::mpsc;

use super::State;
use super::body::{self, Body};
use super::list::{self as list_handler, Selection, served_as_stored, write_served};
use super::query::Query;
use super::route::ResourcePath;
use super::table::Include;
use crate::resources::ResourceDef;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::{Event, EventType, Stored, Subscription, WatchStart};

/// What one watch sends: which namespace, which selectors, as which version.
struct Filter {
    namespace: Option<String>,
    select: Selection,
    /// The resource, served at `version` (a custom resource's schema for it prunes and
    /// defaults objects stored in another version).
    def: Arc<ResourceDef>,
    version: String,
    api_version: String,
    kind: String,
    /// Send each object as a one-row `meta.k8s.io` Table (`kubectl get -w`).
    table: Option<Include>,
    /// Send each object as `PartialObjectMetadata` (metadata-only watches).
    partial: bool,
    /// The resource has webhook conversion (objects go out as stored; the stream is converted).
    converted: bool,
    /// Whether a Table event went out: kube-apiserver sends the column definitions with the
    /// first only (`NoHeaders` after it).
    headers_sent: AtomicBool,
}

impl Filter {
    fn matches(&self, obj: &Stored) -> bool {
        // `get` rather than `pointer`: this runs for every event and every watcher, and
        // `pointer` allocates per path segment.
        if let Some(ns) = &self.namespace
            && obj.namespace() != ns
        {
            return false;
        }
        self.select.matches(obj)
    }

    /// The event type this watch reports for `event`, if any.
    fn translate(&self, event: &Event) -> Option<EventType> {
        let now = self.matches(&event.object);
        let before = event.old.as_deref().is_some_and(|o| self.matches(o));
        match event.kind {
            EventType::Added => now.then_some(EventType::Added),
            EventType::Deleted => (before || now).then_some(EventType::Deleted),
            EventType::Modified => match (before, now) {
                (true, true) => Some(EventType::Modified),
                (false, true) => Some(EventType::Added),
                (true, false) => Some(EventType::Deleted),
                (false, false) => None,
            },
        }
    }

    fn encode_into(&self, out: &mut Vec<u8>, kind: EventType, event: &Event) {
        let obj = &event.object;
        if self.table.is_none()
            && !self.partial
            && (self.converted
                || served_as_stored(&self.def, &self.version, &self.api_version, obj))
        {
            // The common case: the stored bytes, copied once into this watcher's buffer.
            event.write_line(kind, out);
            return;
        }
        let _ = write!(out, "{{\"type\":\"{}\",\"object\":", kind.as_str());
        if let Some(include) = self.table {
            let version = self.api_version.rsplit('/').next().unwrap_or_default();
            let mut table = super::table::table(
                &self.def,
                version,
                &[&obj.value()],
                super::table::Page {
                    rv: event.rv,
                    continue_token: None,
                    remaining: None,
                },
                include,
            );
            if self.headers_sent.swap(true, Ordering::Relaxed) {
                table["columnDefinitions"] = serde_json::Value::Null;
            }
            crate::canonical::write(out, &table);
        } else if self.partial {
            let partial = super::represent::partial_object(&obj.decode());
            crate::canonical::write(out, &partial);
        } else {
            write_served(out, &self.def, &self.version, &self.api_version, obj);
        }
        out.extend_from_slice(b"}\n");
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let (kind, api_version) = if self.partial {
            ("PartialObjectMetadata", "meta.k8s.io/v1")
        } else {
            (self.kind.as_str(), self.api_version.as_str())
        };
        // The object as kube-apiserver sends it: an empty object of the kind, in canonical
        // form (`spec: {…}`, `status: {}` and all).
        let object = json!({"kind": kind, "apiVersion": api_version, "metadata": meta});
        let mut out = b"{\"type\":\"BOOKMARK\",\"object\":".to_vec();
        crate::canonical::write(&mut out, &object);
        out.extend_from_slice(b"}\n");
        Bytes::from(out)
    }
}

impl crate::TestEnv {
    /// How many watches the server holds now: one for each watch request it is serving, until
    /// it has let go of everything the watch held (its task and its subscription to the
    /// store's changes) — soon after the client goes away, the watch times out
    /// (`timeoutSeconds`) or is closed ([`Faults::close_watches`]), whether or not anything
    /// changed meanwhile. The server's own controllers watch too (the ClusterRole aggregation
    /// controller, one), so compare with a count taken first: a test that opens and drops
    /// watches can check it comes back down.
    ///
    /// [`Faults::close_watches`]: crate::Faults::close_watches
    pub fn open_watches(&self) -> usize {
        self.state.store.lock().watch_count()
    }
}

/// Answers a watch request with a streaming body.
pub(crate) async fn serve(
    state: &Arc<State>,
    path: &ResourcePath,
    q: &Query,
    table: Option<Include>,
    partial: bool,
) -> Response<Body> {
    match start(state, path, q, table, partial).await {
        Ok(resp) => resp,
        Err(e) => body::error(&e),
    }
}

/// A watch response that carries one ERROR event with `err`'s `Status` and ends: how
/// kube-apiserver reports a failure found after the request was accepted (a too old or too
/// large resourceVersion).
fn error_stream(err: &ApiError) -> Response<Body> {
    let event = json!({"type": "ERROR", "object": err.to_status()});
    let mut line = serde_json::to_vec(&event).unwrap_or_default();
    line.push(b'\n');
    let stream =
        futures::stream::once(async move { Ok::<_, Infallible>(Frame::data(Bytes::from(line))) });
    streaming(StreamBody::new(stream).boxed())
}

/// A 200 response with a streaming JSON body.
fn streaming(body: Body) -> Response<Body> {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

async fn start(
    state: &Arc<State>,
    path: &ResourcePath,
    q: &Query,
    table: Option<Include>,
    partial: bool,
) -> Result<Response<Body>, ApiError> {
    let def = &path.def;
    let mut fields = q.field_selector.clone().unwrap_or_default();
    if let Some(name) = &path.name {
        if !fields.is_empty() {
            fields.push(',');
        }
        fields.push_str(&format!("metadata.name={name}"));
    }
    let labels = LabelSelector::parse(q.label_selector.as_deref().unwrap_or(""))?;
    let fields = FieldSelector::parse(&fields, &list_handler::field_labels(state, path))?;
    let filter = Filter {
        namespace: path.namespace.clone().filter(|_| def.namespaced),
        select: Selection::new(def, labels, fields),
        def: def.clone(),
        version: path.version.clone(),
        api_version: def.api_version(&path.version),
        kind: def.kind.clone(),
        // A converted resource's rows are built once its objects are converted.
        table: table.filter(|_| !super::converted::applies(def)),
        partial,
        converted: super::converted::applies(def),
        headers_sent: AtomicBool::new(false),
    };
    super::options::check_watch(q)?;
    let initial_events = q.send_initial_events == Some(true);
    let requested = list_handler::requested_rv(q)?;
    let start = match requested {
        None => WatchStart::Now,
        Some(rv) if initial_events => {
            // A streaming list sends the state at (or after) `rv`: wait until the store has
            // it, or report the too large version as the stream's one ERROR event.
            if let Err(err) = list_handler::wait_until_fresh(state, rv).await {
                return Ok(error_stream(&err));
            }
            WatchStart::Now
        }
        // A version the server has not reached yet is no error: the watch starts now and
        // sends the changes after it.
        Some(rv) => WatchStart::After(rv),
    };
    let after = match start {
        WatchStart::After(rv) => rv,
        WatchStart::Now => 0,
    };
    // A few chunks between the watch's task and the connection: a client that stops reading
    // makes the task wait (and, once the store's channel is full, be dropped) instead of
    // piling up chunks here.
    let (tx, rx) = mpsc::channel::<Bytes>(RESPONSE_CHUNKS);
    let subscription = state
        .store
        .lock()
        .subscribe(&def.key(), start, filter.namespace.as_deref());
    let sub = match subscription {
        Ok(sub) => sub,
        Err(expired) => {
            return Ok(error_stream(&ApiError::expired(format!(
                "too old resource version: {} ({})",
                expired.requested, expired.oldest
            ))));
        }
    };
    let registered = Registered {
        sub,
        state: state.clone(),
        res: def.key(),
    };
    let job = WatchJob {
        failures_seen: state.faults.inner.watch_failure_count(),
        state: state.clone(),
        filter,
        tx,
        bookmarks: q.allow_bookmarks,
        initial_end: initial_events && q.allow_bookmarks,
        timeout: q.timeout_seconds.map(Duration::from_secs),
        after,
    };
    tokio::spawn(job.run(registered));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    Ok(streaming(StreamBody::new(stream).boxed()))
}

/// A watch's subscription to the store's changes, let go of in the store as soon as the watch
/// ends — however it ends: the client went away, `timeoutSeconds`, shutdown, a panic —
/// rather than at the resource's next write, which may never come.
struct Registered {
    sub: Subscription,
    state: Arc<State>,
    res: crate::resources::ResKey,
}

impl Drop for Registered {
    fn drop(&mut self) {
        // Closed first, so the store sees this subscription as ended. (A watch ends in its own
        // task, never while that task holds the store's lock.)
        self.sub.rx.close();
        self.state.store.lock().unsubscribe_ended(&self.res);
    }
}

/// The task feeding one watch response.
struct WatchJob {
    state: Arc<State>,
    filter: Filter,
    tx: mpsc::Sender<Bytes>,
    bookmarks: bool,
    initial_end: bool,
    timeout: Option<Duration>,
    /// The resourceVersion the watch started from: changes at or before it are not sent
    /// (a watch from a version the server had not reached yet sees only later ones).
    after: u64,
    /// [`crate::faults::FaultState::watch_failure_count`] when the watch started.
    failures_seen: u64,
}

/// Chunks queued between a watch's task and its connection.
const RESPONSE_CHUNKS: usize = 8;

/// Events are batched into chunks of about this size (fewer writes under load).
const CHUNK: usize = 256 * 1024;

/// How long a watch waits for more of a burst before writing it (a lone event is written at
/// once; only when several arrived together does the watch linger, trading at most this much
/// latency for far fewer writes and wake-ups when many watchers follow a busy writer).
const LINGER: Duration = Duration::from_millis(2);

impl WatchJob {
    async fn run(self, mut registered: Registered) {
        let sub = &mut registered.sub;
        let mut buf = Vec::new();
        for event in &sub.initial {
            self.append(&mut buf, event);
            if buf.len() >= CHUNK && !self.flush(&mut buf).await {
                return;
            }
        }
        if self.initial_end {
            buf.extend_from_slice(&self.filter.bookmark(sub.start_rv, true));
        }
        if !self.flush(&mut buf).await {
            return;
        }
        // A timeout too large to add to the clock (`timeoutSeconds=18446744073709551615`) is
        // no deadline, not an overflow panic.
        let deadline = self
            .timeout
            .and_then(|t| tokio::time::Instant::now().checked_add(t));
        let mut ticker = tokio::time::interval(self.state.bookmark_interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            let sleep_until = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = sub.rx.recv() => {
                    let Some(event) = event else {
                        if let Some(err) = self.state.faults.inner.watch_failure_since(self.failures_seen) {
                            let _ = self.flush(&mut buf).await;
                            let mut line = serde_json::to_vec(&json!({"type": "ERROR", "object": err.to_status()})).unwrap_or_default();
                            line.push(b'\n');
                            let _ = self.tx.send(Bytes::from(line)).await;
                        }
                        return;
                    };
                    self.append(&mut buf, &event);
                    if self.drain(&mut buf, sub) > 0 && buf.len() < CHUNK {
                        // A burst: let it go on a moment so one write carries more of it.
                        tokio::time::sleep(LINGER).await;
                        self.drain(&mut buf, sub);
                    }
                    if !self.flush(&mut buf).await {
                        return;
                    }
                }
                _ = ticker.tick(), if self.bookmarks => {
                    let rv = self.state.store.current_rv();
                    if rv < self.after {
                        // Not there yet: a bookmark must not go back before the start.
                        continue;
                    }
                    // Every event up to `rv` is already in the channel: all of them go out
                    // before the bookmark, however many chunks that takes, or a client
                    // resuming from the bookmark would skip those still waiting.
                    loop {
                        self.drain(&mut buf, sub);
                        if buf.len() < CHUNK {
                            break;
                        }
                        if !self.flush(&mut buf).await {
                            return;
                        }
                    }
                    buf.extend_from_slice(&self.filter.bookmark(rv, false));
                    if !self.flush(&mut buf).await {
                        return;
                    }
                }
                () = sleep_until => return,
                () = self.tx.closed() => return,
                () = self.state.shutdown.cancelled() => return,
            }
        }
    }

    /// Appends the events already waiting, up to about one chunk; answers how many.
    fn drain(&self, buf: &mut Vec<u8>, sub: &mut Subscription) -> usize {
        let mut taken = 0;
        while buf.len() < CHUNK {
            match sub.rx.try_recv() {
                Ok(event) => {
                    self.append(buf, &event);
                    taken += 1;
                }
                Err(_) => break,
            }
        }
        taken
    }

    fn append(&self, buf: &mut Vec<u8>, event: &Event) {
        if event.rv <= self.after {
            return;
        }
        if let Some(kind) = self.filter.translate(event) {
            self.filter.encode_into(buf, kind, event);
        }
    }

    /// Sends what is buffered; false once the client is gone.
    async fn flush(&self, buf: &mut Vec<u8>) -> bool {
        if buf.is_empty() {
            return true;
        }
        let chunk = Bytes::from(std::mem::take(buf));
        self.tx.send(chunk).await.is_ok()
    }
}
