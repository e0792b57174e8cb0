//! The reflector: lists (or stream-lists), then watches, and feeds every change into a queue.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube_client::Resource;
use kube_client::core::WatchEvent;
use kube_client::core::params::{ListParams, WatchParams};
use parking_lot::RwLock;
use rand::Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{Error, Fifo, Indexer, ListerWatcher, WatchStream, meta_namespace_key};

mod backoff;
mod retry;
mod status;

use backoff::Backoff;
pub use backoff::BackoffOptions;
use retry::{InternalErrorRetry, WatchErrorAction, watch_error_action};
use status::StatusCell;
pub use status::{ReflectorPhase, ReflectorStatus};

/// Rewrites an object before it is stored (e.g. strips `managedFields`). Applied exactly once.
pub type TransformFn<K> = Arc<dyn Fn(K) -> K + Send + Sync>;
/// Decides, at each resync tick, whether a resync should happen.
pub type ShouldResyncFn = Arc<dyn Fn() -> bool + Send + Sync>;
/// Called with every error that ends a list-and-watch cycle.
pub type WatchErrorHandler = Arc<dyn Fn(&Error) + Send + Sync>;

const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Reflector settings.
#[derive(Debug, Clone)]
pub struct ReflectorOptions {
    /// Name used in logs.
    pub name: String,
    /// How often the resync check runs (zero: never).
    pub resync_period: Duration,
    /// List page size; `None` follows client-go (500, unpaged for exact-RV relists).
    pub page_size: Option<u32>,
    /// Watches last a random time in `[min, 2·min)`, sent to the server as `timeoutSeconds`.
    pub min_watch_timeout: Duration,
    /// Try a streaming list (`sendInitialEvents`) first, falling back to list+watch.
    pub use_watch_list: bool,
    /// Backoff between list-and-watch cycles and between failed watch attempts.
    pub backoff: BackoffOptions,
    /// How long internal errors (HTTP 500) on the watch are answered by re-watching from the
    /// last resource version before the reflector gives up and relists (client-go's
    /// `MaxInternalErrorRetryDuration`; zero: relist at the first 500). The window opens at
    /// the first 500 and a new one opens after a minute without any.
    pub max_internal_error_retry_duration: Duration,
    /// The longest a server's `Retry-After` (on a 429, as a header or in an ERROR event) is
    /// obeyed. A longer hint is cut to this, so a hostile or buggy server cannot stall the
    /// informer for hours. Default: 30 s, the default backoff maximum. The wait is never
    /// shorter than the reflector's own backoff step.
    pub max_retry_after: Duration,
    /// Store each decoded object in its compact form ([`ListerWatcher::compact`]: for the
    /// API lister-watcher, an exact-capacity clone) and drop the decoded one at once. Costs
    /// one clone per new object; saves the spare `Vec` capacity serde leaves behind (about a
    /// sixth of a realistic Pod's memory). Default: on. Applied after the transform.
    pub compact_objects: bool,
}

impl Default for ReflectorOptions {
    fn default() -> Self {
        ReflectorOptions {
            name: "reflector".into(),
            resync_period: Duration::ZERO,
            page_size: None,
            min_watch_timeout: Duration::from_secs(300),
            use_watch_list: true,
            backoff: BackoffOptions::default(),
            max_internal_error_retry_duration: Duration::from_secs(30),
            max_retry_after: BackoffOptions::default().max,
            compact_objects: true,
        }
    }
}

/// The last synced resource version, written by its reflector only.
#[derive(Debug, Clone, Default)]
struct ResourceVersionCell(Arc<RwLock<Option<String>>>);

impl ResourceVersionCell {
    fn get(&self) -> Option<String> {
        self.0.read().clone()
    }
    fn set(&self, rv: String) {
        *self.0.write() = Some(rv);
    }
}

/// A read handle on a reflector's state ([`Reflector::handle`]): its last synced resource
/// version and status, readable from anywhere while the reflector runs (or after it moved into
/// its task). Cheap to clone.
#[derive(Debug, Clone)]
pub struct ReflectorHandle {
    last_sync: ResourceVersionCell,
    status: StatusCell,
}

impl ReflectorHandle {
    /// The resource version of the last list, event or bookmark applied.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.last_sync.get()
    }

    /// What the reflector is doing now (see [`ReflectorStatus`]).
    pub fn status(&self) -> ReflectorStatus {
        self.status.snapshot(self.last_sync.get())
    }
}

/// Lists and watches through a [`ListerWatcher`] and writes every change into a [`Fifo`].
pub struct Reflector<K> {
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    queue: Arc<dyn Fifo<K>>,
    options: ReflectorOptions,
    should_resync: Option<ShouldResyncFn>,
    transform: Option<TransformFn<K>>,
    watch_error_handler: Option<WatchErrorHandler>,
    last_sync: ResourceVersionCell,
    status: StatusCell,
    state: parking_lot::Mutex<LoopState>,
    known: Option<Indexer<K>>,
}

#[derive(Debug, Default)]
struct LoopState {
    rv_unavailable: bool,
    paginated_result: bool,
    watch_list_unsupported: bool,
}

impl<K> fmt::Debug for Reflector<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("options", &self.options)
            .field("last_sync", &self.last_sync.get())
            .finish()
    }
}

enum WatchEnd {
    /// Stopped by the caller.
    Stopped,
    /// The stream ended normally (server timeout, closed connection): re-watch.
    Closed,
}

impl<K> Reflector<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// A reflector writing into `queue`.
    pub fn new(
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        queue: Arc<dyn Fifo<K>>,
        options: ReflectorOptions,
    ) -> Self {
        Reflector {
            lister_watcher,
            queue,
            options,
            should_resync: None,
            transform: None,
            watch_error_handler: None,
            last_sync: ResourceVersionCell::default(),
            status: StatusCell::default(),
            state: parking_lot::Mutex::new(LoopState::default()),
            known: None,
        }
    }

    /// Lets lists share objects with the consumer's cache: a listed object whose key and
    /// resourceVersion match the cached one is dropped at once and the cached `Arc` is queued
    /// instead, so a relist holds only the changed objects twice, not the whole list.
    pub fn with_known_objects(mut self, known: Option<Indexer<K>>) -> Self {
        self.known = known;
        self
    }

    /// Sets the resync gate (default: always resync when the period elapses).
    pub fn with_should_resync(mut self, f: ShouldResyncFn) -> Self {
        self.should_resync = Some(f);
        self
    }

    /// Sets a transform applied to every object before it is queued.
    pub fn with_transform(mut self, f: Option<TransformFn<K>>) -> Self {
        self.transform = f;
        self
    }

    /// Sets the hook called with every error that ends a list-and-watch cycle.
    pub fn with_watch_error_handler(mut self, f: Option<WatchErrorHandler>) -> Self {
        self.watch_error_handler = f;
        self
    }

    /// A read handle on this reflector's resource version and status, valid for its lifetime
    /// and after.
    pub fn handle(&self) -> ReflectorHandle {
        ReflectorHandle {
            last_sync: self.last_sync.clone(),
            status: self.status.clone(),
        }
    }

    /// The resource version of the last list, event or bookmark applied.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.last_sync.get()
    }

    /// What the reflector is doing now (and for how long), its resource version, and the last
    /// error that ended a list or watch.
    pub fn status(&self) -> ReflectorStatus {
        self.status.snapshot(self.last_sync.get())
    }

    /// Lists and watches until `stop` is cancelled, waiting one backoff step after every cycle.
    pub async fn run(&self, stop: CancellationToken) {
        let mut backoff = Backoff::new(self.options.backoff.clone());
        while !stop.is_cancelled() {
            backoff.attempt_started();
            let mut retry_after = Duration::ZERO;
            if let Err(err) = self.list_and_watch(&stop).await {
                self.status.error(&err);
                retry_after = self.capped_retry_after(&err);
                match &self.watch_error_handler {
                    Some(h) => h(&err),
                    None => default_watch_error_handler(&self.options.name, &err),
                }
            }
            let delay = backoff.next_delay().max(retry_after);
            self.status.set(ReflectorPhase::BackingOff);
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(delay) => {}
            }
        }
        self.status.set(ReflectorPhase::Stopped);
    }

    /// One cycle: a (streaming or paged) list, then watches until a relist is needed.
    pub async fn list_and_watch(&self, stop: &CancellationToken) -> Result<(), Error> {
        let try_stream = self.options.use_watch_list
            && self.lister_watcher.supports_watch_list()
            && !self.state.lock().watch_list_unsupported;
        // A streaming list from an expired version is retried once from the newest one
        // ("" after `rv_unavailable` is set) before falling back to a LIST.
        let mut stream_attempts = if try_stream { 2 } else { 0 };
        while stream_attempts > 0 {
            stream_attempts -= 1;
            match self.watch_list(stop).await {
                Ok(Some(stream)) => return self.watch(Some(stream), stop).await,
                Ok(None) => return Ok(()),
                Err(err) if err.resource_version_unavailable() && stream_attempts > 0 => {
                    self.state.lock().rv_unavailable = true;
                    tracing::debug!(reflector = %self.options.name, error = %err,
                        "streaming list expired; streaming again from the newest version");
                }
                Err(err) if err.is_too_many_requests() => {
                    // The server asked us to slow down: a LIST now would only add load. End
                    // the cycle; the run loop waits (at least Retry-After) and streams again.
                    return Err(err);
                }
                Err(err) => {
                    // A request the server rejects outright means it cannot stream lists:
                    // stop trying. Anything else only falls back for this cycle.
                    let rejected = err.rejected_request();
                    tracing::debug!(reflector = %self.options.name, error = %err, rejected,
                        "streaming list failed; falling back to list and watch");
                    if rejected {
                        self.state.lock().watch_list_unsupported = true;
                    }
                    break;
                }
            }
        }
        if !self.list(stop).await? {
            return Ok(());
        }
        self.watch(None, stop).await
    }

    /// Wraps a listed object, reusing the cached `Arc` when the cache holds the same version.
    fn wrap_listed(&self, obj: K) -> Arc<K> {
        if let Some(known) = &self.known
            && let Some(rv) = obj.meta().resource_version.as_deref()
            && let Some(cached) = known.get(&obj)
            && cached.meta().resource_version.as_deref() == Some(rv)
        {
            return cached;
        }
        self.wrap(obj)
    }

    /// Transforms, compacts and wraps a decoded object (the only place objects are wrapped).
    fn wrap(&self, obj: K) -> Arc<K> {
        let obj = match &self.transform {
            Some(t) => t(obj),
            None => obj,
        };
        if self.options.compact_objects {
            Arc::new(self.lister_watcher.compact(obj))
        } else {
            Arc::new(obj)
        }
    }

    /// The server's Retry-After hint for `err`, cut to `max_retry_after`.
    fn capped_retry_after(&self, err: &Error) -> Duration {
        let hint = err.retry_after().unwrap_or_default();
        if hint > self.options.max_retry_after {
            tracing::debug!(reflector = %self.options.name, ?hint, cap = ?self.options.max_retry_after,
                "capping the server's Retry-After");
        }
        hint.min(self.options.max_retry_after)
    }

    fn relist_resource_version(&self) -> String {
        if self.state.lock().rv_unavailable {
            return String::new();
        }
        self.last_sync.get().unwrap_or_else(|| "0".into())
    }

    fn watch_timeout(&self) -> u32 {
        let min = self.options.min_watch_timeout.as_secs().max(1);
        rand::rng().random_range(min..2 * min) as u32
    }

    /// A paged list; returns false if stopped.
    async fn list(&self, stop: &CancellationToken) -> Result<bool, Error> {
        let mut rv = self.relist_resource_version();
        self.status.set(ReflectorPhase::Listing);
        self.status.list_started();
        loop {
            let result = tokio::select! {
                _ = stop.cancelled() => return Ok(false),
                r = self.list_pages(&rv) => r,
            };
            match result {
                Ok((items, list_rv)) => {
                    self.state.lock().rv_unavailable = false;
                    self.queue.replace(items, list_rv.clone());
                    self.last_sync.set(list_rv);
                    return Ok(true);
                }
                Err(err) if err.resource_version_unavailable() && !rv.is_empty() => {
                    self.state.lock().rv_unavailable = true;
                    rv = String::new();
                }
                Err(err) => return Err(err),
            }
        }
    }

    async fn list_pages(&self, rv: &str) -> Result<(Vec<Arc<K>>, String), Error> {
        let exact = !rv.is_empty() && rv != "0";
        let paginated = self.state.lock().paginated_result;
        let limit = match self.options.page_size {
            Some(n) => Some(n),
            None if exact && !paginated => None,
            None => Some(500),
        };
        let mut params = ListParams {
            limit,
            resource_version: (!rv.is_empty()).then(|| rv.to_string()),
            ..Default::default()
        };
        let mut items = Vec::new();
        let mut page = 0;
        loop {
            let res = self.lister_watcher.list(&params).await;
            let list = match res {
                Ok(list) => list,
                Err(e) if page > 0 && crate::error::client_error_is_expired(&e) => {
                    // The continue token expired: redo one unpaged list at the original version.
                    let full = ListParams {
                        resource_version: (!rv.is_empty()).then(|| rv.to_string()),
                        ..Default::default()
                    };
                    let list =
                        self.lister_watcher
                            .list(&full)
                            .await
                            .map_err(|source| Error::Api {
                                action: "listing",
                                source,
                            })?;
                    let items = list
                        .items
                        .into_iter()
                        .map(|o| self.wrap_listed(o))
                        .collect();
                    return Ok((items, list.resource_version));
                }
                Err(source) => {
                    return Err(Error::Api {
                        action: "listing",
                        source,
                    });
                }
            };
            page += 1;
            let next = list.continue_token;
            let list_rv = list.resource_version;
            items.reserve(list.items.len());
            for o in list.items {
                items.push(self.wrap_listed(o));
            }
            match next {
                Some(token) => {
                    if rv == "0" {
                        self.state.lock().paginated_result = true;
                    }
                    params.continue_token = Some(token);
                    params.resource_version = None;
                }
                None => return Ok((items, list_rv)),
            }
        }
    }

    /// A streaming list; returns the still-open stream once the initial events have ended,
    /// `None` if stopped.
    async fn watch_list(&self, stop: &CancellationToken) -> Result<Option<WatchStream<K>>, Error> {
        let rv = if self.state.lock().rv_unavailable {
            String::new()
        } else {
            self.last_sync.get().unwrap_or_default()
        };
        self.status.set(ReflectorPhase::StreamingList);
        self.status.list_started();
        self.status.watch_started();
        let params = WatchParams {
            bookmarks: true,
            send_initial_events: true,
            timeout: Some(self.watch_timeout()),
            ..Default::default()
        };
        let mut stream = tokio::select! {
            _ = stop.cancelled() => return Ok(None),
            r = self.lister_watcher.watch(&params, &rv) => r.map_err(|source| Error::Api { action: "starting a streaming list", source })?,
        };
        let mut temp: HashMap<String, Arc<K>> = HashMap::new();
        loop {
            let ev = tokio::select! {
                _ = stop.cancelled() => return Ok(None),
                ev = stream.next() => ev,
            };
            match ev {
                None => return Err(Error::VeryShortWatch),
                Some(Err(source)) => {
                    return Err(Error::Api {
                        action: "streaming a list",
                        source,
                    });
                }
                Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                    let o = self.wrap_listed(o);
                    temp.insert(meta_namespace_key(o.as_ref()), o);
                }
                Some(Ok(WatchEvent::Deleted(o))) => {
                    temp.remove(&meta_namespace_key(&o));
                }
                Some(Ok(WatchEvent::Bookmark(b))) => {
                    let done = b
                        .metadata
                        .annotations
                        .get(INITIAL_EVENTS_END)
                        .is_some_and(|v| v == "true");
                    if done {
                        let rv = b.metadata.resource_version;
                        let items: Vec<Arc<K>> = temp.into_values().collect();
                        self.state.lock().rv_unavailable = false;
                        self.queue.replace(items, rv.clone());
                        self.last_sync.set(rv);
                        return Ok(Some(stream));
                    }
                }
                Some(Ok(WatchEvent::Error(status))) => {
                    let err = status_error(&status);
                    if err.resource_version_unavailable() {
                        self.state.lock().rv_unavailable = true;
                    }
                    return Err(err);
                }
            }
        }
    }

    /// Watches from the last synced version until a relist is needed (`Ok`) or an error ends
    /// the cycle (`Err`). Normal closes re-watch at once; 429s, refused connections and (within
    /// their window) 500s re-watch after a backoff step; 410 relists.
    async fn watch(
        &self,
        mut existing: Option<WatchStream<K>>,
        stop: &CancellationToken,
    ) -> Result<(), Error> {
        let mut backoff = Backoff::new(self.options.backoff.clone());
        let mut internal = InternalErrorRetry::new(self.options.max_internal_error_retry_duration);
        let mut resync = (!self.options.resync_period.is_zero()).then(|| {
            tokio::time::interval_at(
                Instant::now() + self.options.resync_period,
                self.options.resync_period,
            )
        });
        loop {
            let opened = match existing.take() {
                Some(s) => Ok(Some(s)),
                None => self.open_watch(stop).await,
            };
            // Whether the error ended a stream that was open (else: opening it failed).
            let (err, ended_stream) = match opened {
                Ok(None) => return Ok(()),
                Ok(Some(mut stream)) => {
                    backoff.attempt_started();
                    match self.consume(&mut stream, resync.as_mut(), stop).await {
                        Ok(WatchEnd::Stopped) => return Ok(()),
                        Ok(WatchEnd::Closed) => continue,
                        Err(err) => (err, true),
                    }
                }
                Err(err) => (err, false),
            };
            match watch_error_action(&err, &mut internal) {
                WatchErrorAction::Relist => {
                    tracing::debug!(reflector = %self.options.name, error = %err,
                        "watch expired; relisting");
                    return Ok(());
                }
                // client-go: a watch that ended with an error (an ERROR event, a very short
                // watch) is logged and ends the cycle without an error; the next relists.
                WatchErrorAction::GiveUp if ended_stream => {
                    self.status.error(&err);
                    tracing::warn!(reflector = %self.options.name, error = %err,
                        "watch ended with an error; relisting");
                    return Ok(());
                }
                WatchErrorAction::GiveUp => return Err(err),
                WatchErrorAction::Rewatch => {
                    self.status.error(&err);
                    self.status.set(ReflectorPhase::BackingOff);
                    let delay = backoff.next_delay().max(self.capped_retry_after(&err));
                    tracing::debug!(reflector = %self.options.name, error = %err, ?delay,
                        "watch failed; watching again from the last resource version");
                    tokio::select! {
                        _ = stop.cancelled() => return Ok(()),
                        _ = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
    }

    /// Opens a watch from the last synced version; `Ok(None)` if stopped.
    async fn open_watch(&self, stop: &CancellationToken) -> Result<Option<WatchStream<K>>, Error> {
        let params = WatchParams {
            bookmarks: true,
            timeout: Some(self.watch_timeout()),
            ..Default::default()
        };
        let rv = self.last_sync.get().unwrap_or_default();
        self.status.set(ReflectorPhase::OpeningWatch);
        self.status.watch_started();
        tokio::select! {
            _ = stop.cancelled() => Ok(None),
            r = self.lister_watcher.watch(&params, &rv) => r.map(Some).map_err(|source| Error::Api {
                action: "starting a watch",
                source,
            }),
        }
    }

    /// Applies events from one stream until it ends, it errors or `stop` is cancelled.
    async fn consume(
        &self,
        stream: &mut WatchStream<K>,
        mut resync: Option<&mut tokio::time::Interval>,
        stop: &CancellationToken,
    ) -> Result<WatchEnd, Error> {
        let started = Instant::now();
        let mut events = 0usize;
        self.status.set(ReflectorPhase::Watching);
        loop {
            // Read the next event only once the queue has room: a backlog stays on the
            // connection (bytes) rather than in the queue (decoded objects). The phase is
            // written only when the wait does not complete at once (off the hot path).
            let room = self.queue.wait_for_room();
            tokio::pin!(room);
            if futures::poll!(&mut room).is_pending() {
                self.status.set(ReflectorPhase::WaitingForQueueRoom);
                tokio::select! {
                    _ = stop.cancelled() => return Ok(WatchEnd::Stopped),
                    () = &mut room => {}
                }
                self.status.set(ReflectorPhase::Watching);
            }
            let ev = tokio::select! {
                _ = stop.cancelled() => return Ok(WatchEnd::Stopped),
                _ = tick(resync.as_deref_mut()) => {
                    if self.should_resync.as_ref().is_none_or(|f| f()) {
                        self.queue.resync();
                    }
                    continue;
                }
                ev = stream.next() => ev,
            };
            let Some(ev) = ev else {
                if events == 0 && started.elapsed() < Duration::from_secs(1) {
                    return Err(Error::VeryShortWatch);
                }
                return Ok(WatchEnd::Closed);
            };
            events += 1;
            self.status.event();
            let ev = ev.map_err(|source| Error::Api {
                action: "reading a watch stream",
                source,
            })?;
            match ev {
                WatchEvent::Added(o) => {
                    let rv = o.meta().resource_version.clone();
                    self.queue.add(self.wrap(o));
                    self.record(rv);
                }
                WatchEvent::Modified(o) => {
                    let rv = o.meta().resource_version.clone();
                    self.queue.update(self.wrap(o));
                    self.record(rv);
                }
                WatchEvent::Deleted(o) => {
                    let rv = o.meta().resource_version.clone();
                    self.queue.delete(self.wrap(o));
                    self.record(rv);
                }
                WatchEvent::Bookmark(b) => {
                    let rv = b.metadata.resource_version;
                    self.queue.bookmark(rv.clone());
                    self.record(Some(rv));
                }
                WatchEvent::Error(status) => return Err(status_error(&status)),
            }
        }
    }

    fn record(&self, rv: Option<String>) {
        if let Some(rv) = rv.filter(|r| !r.is_empty()) {
            self.last_sync.set(rv);
        }
    }
}

async fn tick(interval: Option<&mut tokio::time::Interval>) {
    match interval {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// An ERROR event's status as an [`Error`].
fn status_error(status: &kube_client::core::Status) -> Error {
    Error::WatchStatus {
        code: status.code,
        reason: status.reason.clone(),
        message: status.message.clone(),
        retry_after_seconds: status.details.as_ref().map_or(0, |d| d.retry_after_seconds),
        causes: status
            .details
            .as_ref()
            .map(|d| d.causes.clone())
            .unwrap_or_default(),
    }
}

fn default_watch_error_handler(name: &str, err: &Error) {
    if err.is_expired() {
        tracing::debug!(reflector = %name, error = %err, "watch expired; relisting");
    } else {
        tracing::warn!(reflector = %name, error = %err, "list and watch failed; retrying");
    }
}

#[cfg(test)]
mod tests;
