//! What a reflector is doing right now, readable from outside: for diagnosing an informer
//! that stopped delivering (a soak's stall report, a debug endpoint, a test's failure message).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The step of the list-and-watch cycle a reflector is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReflectorPhase {
    /// `run` has not been called yet.
    NotStarted,
    /// Waiting for a (paged) list.
    Listing,
    /// Waiting for a streaming list's initial events.
    StreamingList,
    /// Waiting for the server to answer a watch request.
    OpeningWatch,
    /// Reading a watch stream.
    Watching,
    /// Not reading the watch stream because the queue is at capacity (its consumer is
    /// behind); resumes when the consumer pops.
    WaitingForQueueRoom,
    /// Waiting out a backoff step (or a server's `Retry-After`) after an error.
    BackingOff,
    /// `run` returned.
    Stopped,
}

/// A snapshot of a reflector's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflectorStatus {
    /// The step it is in.
    pub phase: ReflectorPhase,
    /// How long it has been in that step.
    pub for_: Duration,
    /// The resource version of the last list, event or bookmark applied.
    pub last_sync_resource_version: Option<String>,
    /// Watch events read since the reflector started.
    pub events: u64,
    /// Lists started (paged or streaming) since the reflector started; every one after the
    /// first is a relist.
    pub lists: u64,
    /// Watches opened (a streaming list's watch included) since the reflector started.
    pub watches: u64,
    /// The last error that ended a list or watch, if any.
    pub last_error: Option<String>,
}

impl fmt::Display for ReflectorStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} for {:.1?}, at resourceVersion {}, {} events",
            self.phase,
            self.for_,
            self.last_sync_resource_version.as_deref().unwrap_or("-"),
            self.events
        )?;
        if let Some(err) = &self.last_error {
            write!(f, ", last error: {err}")?;
        }
        Ok(())
    }
}

/// The shared cell a reflector writes its phase into; clones share it.
#[derive(Debug, Clone)]
pub(crate) struct StatusCell(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Counted on every event, so kept out of the lock.
    events: AtomicU64,
    lists: AtomicU64,
    watches: AtomicU64,
}

#[derive(Debug)]
struct State {
    phase: ReflectorPhase,
    since: Instant,
    last_error: Option<String>,
}

impl Default for StatusCell {
    fn default() -> Self {
        StatusCell(Arc::new(Shared {
            state: Mutex::new(State {
                phase: ReflectorPhase::NotStarted,
                since: Instant::now(),
                last_error: None,
            }),
            events: AtomicU64::new(0),
            lists: AtomicU64::new(0),
            watches: AtomicU64::new(0),
        }))
    }
}

impl StatusCell {
    pub(crate) fn set(&self, phase: ReflectorPhase) {
        let mut s = self.0.state.lock();
        if s.phase != phase {
            s.phase = phase;
            s.since = Instant::now();
        }
    }

    /// Counts one list started (paged, or a streaming list's request).
    pub(crate) fn list_started(&self) {
        self.0.lists.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one watch opened.
    pub(crate) fn watch_started(&self) {
        self.0.watches.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one watch event read.
    pub(crate) fn event(&self) {
        self.0.events.fetch_add(1, Ordering::Relaxed);
    }

    /// Records the error that ended a list or watch, with its chain of sources.
    pub(crate) fn error(&self, err: &(dyn std::error::Error + 'static)) {
        let mut text = err.to_string();
        let mut source = err.source();
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        self.0.state.lock().last_error = Some(text);
    }

    pub(crate) fn snapshot(&self, last_sync_resource_version: Option<String>) -> ReflectorStatus {
        let s = self.0.state.lock();
        ReflectorStatus {
            phase: s.phase,
            for_: s.since.elapsed(),
            last_sync_resource_version,
            events: self.0.events.load(Ordering::Relaxed),
            lists: self.0.lists.load(Ordering::Relaxed),
            watches: self.0.watches.load(Ordering::Relaxed),
            last_error: s.last_error.clone(),
        }
    }
}
