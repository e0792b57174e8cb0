//! Fault injection for testing clients' recovery: close watches, answer with errors, add
//! latency, compact the watch history, pause and resume the server, and make a request
//! handler panic (to test the server's own panic containment).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::store::Store;

/// A canned error answer, or a handler panic, for the next few requests (optionally only
/// those whose path contains a given string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub(crate) code: u16,
    pub(crate) remaining: usize,
    pub(crate) retry_after_secs: Option<u64>,
    pub(crate) path: Option<String>,
    /// Panic inside the handler (holding the store lock) instead of answering `code`.
    pub(crate) panic: bool,
    /// Hold the request forever instead of answering `code`.
    pub(crate) hang: bool,
}

impl Fault {
    /// Answer the next `n` requests with 500 InternalError.
    pub fn server_error(n: usize) -> Fault {
        Fault {
            code: 500,
            remaining: n,
            retry_after_secs: None,
            path: None,
            panic: false,
            hang: false,
        }
    }

    /// Never answer the next `n` requests: the server holds them until the client gives up
    /// or the server stops, as a server whose storage stopped answering would. Tests use it to
    /// show that a client's wait is bounded (a request timeout, a deadline) rather than
    /// forever. [`Faults::clear`] removes hangs not yet consumed; a request already held
    /// stays held.
    pub fn hang(n: usize) -> Fault {
        Fault {
            hang: true,
            ..Fault::server_error(n)
        }
    }

    /// Make the handler of the next `n` requests panic while it holds the store's lock, as a
    /// bug in a library the server calls would. The server contains the panic like
    /// kube-apiserver's `WithPanicRecovery`: the request is answered with 500 InternalError,
    /// the panic is logged, nothing is written, and the connection and the server keep serving.
    pub fn panic(n: usize) -> Fault {
        Fault {
            panic: true,
            ..Fault::server_error(n)
        }
    }

    /// Answer the next `n` requests with 429 TooManyRequests and `Retry-After: secs`.
    pub fn too_many_requests(n: usize, retry_after_secs: u64) -> Fault {
        Fault {
            code: 429,
            remaining: n,
            retry_after_secs: Some(retry_after_secs),
            path: None,
            panic: false,
            hang: false,
        }
    }

    /// Only requests whose path contains `path` (e.g. `/api/v1/pods` or `/pods`) count.
    pub fn matching(mut self, path: impl Into<String>) -> Fault {
        self.path = Some(path.into());
        self
    }
}

/// The fault-injection handle of a running server; clones share the server.
#[derive(Clone)]
pub struct Faults {
    pub(crate) inner: Arc<FaultState>,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("injected", &*self.inner.injected.lock())
            .field("latency", &*self.inner.latency.lock())
            .field("paused", &*self.inner.paused.borrow())
            .finish()
    }
}

/// What the server consults on every request.
#[derive(Debug)]
pub(crate) struct FaultState {
    pub(crate) injected: Mutex<Vec<Fault>>,
    pub(crate) latency: Mutex<Duration>,
    pub(crate) paused: watch::Sender<bool>,
    pub(crate) store: Arc<Store>,
    /// [`Faults::fail_watches`]: how many times it ran, and the code of the last.
    pub(crate) watch_failures: Mutex<(u64, u16)>,
}

impl Faults {
    pub(crate) fn new(store: Arc<Store>) -> Faults {
        Faults {
            inner: Arc::new(FaultState {
                injected: Mutex::new(Vec::new()),
                latency: Mutex::new(Duration::ZERO),
                paused: watch::Sender::new(false),
                store,
                watch_failures: Mutex::new((0, 0)),
            }),
        }
    }

    /// Ends every open watch stream now (clients see the response end, as on a server restart).
    pub fn close_watches(&self) {
        self.inner.store.lock().close_watches();
    }

    /// Ends every open watch stream with one ERROR event, then closes it: how kube-apiserver
    /// reports a watch that failed after it started (500 InternalError when etcd loses its
    /// leader, 410 Expired, 429 TooManyRequests). The event carries the `Status` the same
    /// code gets from [`Fault`]s.
    pub fn fail_watches(&self, code: u16) {
        let mut store = self.inner.store.lock();
        {
            let mut failures = self.inner.watch_failures.lock();
            failures.0 += 1;
            failures.1 = code;
        }
        store.close_watches();
    }

    /// Queues a canned error answer; faults are consumed in the order they were injected.
    pub fn inject(&self, fault: Fault) {
        if fault.remaining == 0 {
            return;
        }
        self.inner.injected.lock().push(fault);
    }

    /// How many error answers (and panics) the injected faults not yet consumed still hold: a
    /// fault of `n` answers counts `n` until requests use them up. Hangs do not count.
    pub fn pending(&self) -> usize {
        self.inner
            .injected
            .lock()
            .iter()
            .filter(|f| !f.hang)
            .map(|f| f.remaining)
            .fold(0, usize::saturating_add)
    }

    /// Removes every injected fault not yet consumed.
    pub fn clear(&self) {
        self.inner.injected.lock().clear();
    }

    /// Delays every request by `latency` (zero turns it off).
    pub fn set_latency(&self, latency: Duration) {
        *self.inner.latency.lock() = latency;
    }

    /// Drops the watch history: watches and consistent lists from an older resourceVersion
    /// get 410 Expired.
    pub fn compact(&self) {
        self.inner.store.lock().compact();
    }

    /// Holds every new request until [`Faults::resume`].
    pub fn pause(&self) {
        self.inner.paused.send_replace(true);
    }

    /// Lets held and new requests proceed.
    pub fn resume(&self) {
        self.inner.paused.send_replace(false);
    }
}

impl FaultState {
    /// How many times [`Faults::fail_watches`] has run.
    pub(crate) fn watch_failure_count(&self) -> u64 {
        self.watch_failures.lock().0
    }

    /// The error to end a watch with that started when [`Self::watch_failure_count`] was
    /// `seen` and whose events just stopped, if `fail_watches` stopped them.
    pub(crate) fn watch_failure_since(&self, seen: u64) -> Option<crate::status::ApiError> {
        let (count, code) = *self.watch_failures.lock();
        (count > seen).then(|| fault_error(code, None))
    }

    /// Whether new requests are held now.
    pub(crate) fn is_paused(&self) -> bool {
        *self.paused.borrow()
    }

    /// Whether a request for `path` is to hang, consuming one use of a [`Fault::hang`].
    pub(crate) fn take_hang(&self, path: &str) -> bool {
        self.take_where(path, true).is_some()
    }

    /// The fault to answer a request for `path` with, consuming one use of it.
    pub(crate) fn take(&self, path: &str) -> Option<Fault> {
        self.take_where(path, false)
    }

    fn take_where(&self, path: &str, hang: bool) -> Option<Fault> {
        let mut injected = self.injected.lock();
        let pos = injected
            .iter()
            .position(|f| f.hang == hang && f.path.as_deref().is_none_or(|p| path.contains(p)))?;
        let fault = injected[pos].clone();
        injected[pos].remaining -= 1;
        if injected[pos].remaining == 0 {
            injected.remove(pos);
        }
        Some(fault)
    }

    /// Waits while the server is paused.
    pub(crate) async fn wait_unpaused(&self) {
        let mut rx = self.paused.subscribe();
        let _ = rx.wait_for(|paused| !paused).await;
    }
}

/// The `Status` an injected fault answers with.
pub(crate) fn fault_error(code: u16, retry_after_secs: Option<u64>) -> crate::status::ApiError {
    use crate::status::ApiError;
    let mut err = match code {
        429 => ApiError::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        ),
        410 => ApiError::expired("too old resource version: injected fault"),
        code => ApiError::new(
            code,
            "InternalError",
            "an error on the server (\"injected fault\") has prevented the request from succeeding",
        ),
    };
    err.retry_after = retry_after_secs;
    err
}
