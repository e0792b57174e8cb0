//! The request log (every request the server answered, for tests that assert on traffic) and
//! the requests in flight (every request received and not answered yet, with where it waits).

/// One request the server saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// HTTP method, e.g. `GET`.
    pub method: String,
    /// Request path, e.g. `/api/v1/namespaces/default/pods`.
    pub path: String,
    /// Raw query string, if any (e.g. `watch=true&resourceVersion=12`).
    pub query: Option<String>,
    /// The HTTP status code answered (for watches, the status the stream started with).
    pub status: u16,
}

impl RequestRecord {
    /// Whether the query string has `key=value`.
    pub fn has_query(&self, key: &str, value: &str) -> bool {
        self.query.as_deref().is_some_and(|q| {
            form_urlencoded::parse(q.as_bytes()).any(|(k, v)| k == key && v == value)
        })
    }

    /// Whether this is a watch request.
    pub fn is_watch(&self) -> bool {
        self.has_query("watch", "true")
            || self.has_query("watch", "1")
            || self.path.contains("/watch/")
    }
}

/// The request log: the latest requests answered, at most `capacity` of them and at most
/// [`MAX_LOGGED_BYTES`] of their paths and queries, each path and query cut to
/// [`MAX_LOGGED_TEXT`] bytes, so a flood of requests (refused or not, with huge query strings
/// or not) holds a bounded amount of memory.
#[derive(Debug)]
pub(crate) struct RequestLog {
    records: std::collections::VecDeque<RequestRecord>,
    capacity: usize,
    /// The bytes of the kept records' paths and queries.
    bytes: usize,
}

/// The most bytes of paths and queries the log keeps in all (16 MiB): 50,000 ordinary
/// requests fit, 4,000 with the longest path and query do.
pub(crate) const MAX_LOGGED_BYTES: usize = 16 << 20;

fn text_bytes(record: &RequestRecord) -> usize {
    record.method.len() + record.path.len() + record.query.as_ref().map_or(0, String::len)
}

/// The most bytes of a request's path, and of its query, the log keeps.
pub(crate) const MAX_LOGGED_TEXT: usize = 2048;

/// How many requests the log keeps by default.
pub(crate) const DEFAULT_REQUEST_LOG_CAPACITY: usize = 50_000;

impl RequestLog {
    pub(crate) fn new(capacity: usize) -> RequestLog {
        RequestLog {
            records: std::collections::VecDeque::new(),
            capacity,
            bytes: 0,
        }
    }

    /// Records one answered request, forgetting the oldest beyond the capacity.
    pub(crate) fn push(&mut self, mut record: RequestRecord) {
        if self.capacity == 0 {
            return;
        }
        cut(&mut record.path);
        if let Some(query) = &mut record.query {
            cut(query);
        }
        let bytes = text_bytes(&record);
        while self.records.len() >= self.capacity || self.bytes + bytes > MAX_LOGGED_BYTES {
            let Some(oldest) = self.records.pop_front() else {
                break;
            };
            self.bytes -= text_bytes(&oldest);
        }
        self.bytes += bytes;
        self.records.push_back(record);
    }

    pub(crate) fn snapshot(&self) -> Vec<RequestRecord> {
        self.records.iter().cloned().collect()
    }

    pub(crate) fn clear(&mut self) {
        self.bytes = 0;
        self.records.clear();
    }
}

/// Cuts `text` to [`MAX_LOGGED_TEXT`] bytes (at a character boundary), giving back the
/// memory beyond.
fn cut(text: &mut String) {
    if text.len() <= MAX_LOGGED_TEXT {
        return;
    }
    let mut end = MAX_LOGGED_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.shrink_to_fit();
}

/// Where a request the server has not answered yet is waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestStage {
    /// Held while the server is paused ([`crate::Faults::pause`]).
    Paused,
    /// Delayed by injected latency ([`crate::Faults::set_latency`]).
    Delayed,
    /// Held by a [`crate::Fault::hang`]: it is never answered.
    Hung,
    /// In a handler (reading the body, waiting for a resourceVersion, writing).
    Handling,
}

/// A request the server has received and not answered yet (a watch counts until its response
/// starts streaming).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlightRequest {
    /// HTTP method, e.g. `PUT`.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Raw query string, if any.
    pub query: Option<String>,
    /// Where it is waiting.
    pub stage: RequestStage,
    /// How long ago the server received it.
    pub age: std::time::Duration,
}

impl std::fmt::Display for InFlightRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)?;
        if let Some(q) = self.query.as_deref().filter(|q| !q.is_empty()) {
            write!(f, "?{q}")?;
        }
        write!(f, " ({:?}, {:.1?} old)", self.stage, self.age)
    }
}

/// The requests in flight, each removed by its [`Tracked`] guard when answered or dropped.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    next: std::sync::atomic::AtomicU64,
    entries: parking_lot::Mutex<std::collections::HashMap<u64, Entry>>,
}

#[derive(Debug)]
struct Entry {
    method: String,
    path: String,
    query: Option<String>,
    stage: RequestStage,
    since: std::time::Instant,
}

impl InFlight {
    /// Records a request until the returned guard drops.
    pub(crate) fn track(&self, method: &str, path: &str, query: Option<&str>) -> Tracked<'_> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.entries.lock().insert(
            id,
            Entry {
                method: method.to_string(),
                path: path.to_string(),
                query: query.map(str::to_string),
                stage: RequestStage::Handling,
                since: std::time::Instant::now(),
            },
        );
        Tracked { set: self, id }
    }

    /// The requests in flight now, oldest first.
    pub(crate) fn snapshot(&self) -> Vec<InFlightRequest> {
        let now = std::time::Instant::now();
        let mut all: Vec<InFlightRequest> = self
            .entries
            .lock()
            .values()
            .map(|e| InFlightRequest {
                method: e.method.clone(),
                path: e.path.clone(),
                query: e.query.clone(),
                stage: e.stage,
                age: now.saturating_duration_since(e.since),
            })
            .collect();
        all.sort_by_key(|r| std::cmp::Reverse(r.age));
        all
    }
}

/// One request in the [`InFlight`] set; dropping it (answered, or the client went away)
/// removes it.
#[derive(Debug)]
pub(crate) struct Tracked<'a> {
    set: &'a InFlight,
    id: u64,
}

impl Tracked<'_> {
    /// Records where the request is waiting now.
    pub(crate) fn stage(&self, stage: RequestStage) {
        if let Some(e) = self.set.entries.lock().get_mut(&self.id) {
            e.stage = stage;
        }
    }
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        self.set.entries.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: usize) -> RequestRecord {
        RequestRecord {
            method: "GET".to_owned(),
            path: format!("/api/v1/{}", "p".repeat(text)),
            query: Some("q".repeat(text)),
            status: 401,
        }
    }

    #[test]
    fn the_log_holds_at_most_its_count_and_its_bytes() {
        // At the default capacity, a flood of the longest requests is held by the byte budget.
        let mut log = RequestLog::new(DEFAULT_REQUEST_LOG_CAPACITY);
        for _ in 0..DEFAULT_REQUEST_LOG_CAPACITY {
            log.push(record(60_000));
        }
        let kept = log.snapshot();
        let bytes: usize = kept.iter().map(text_bytes).sum();
        assert!(bytes <= MAX_LOGGED_BYTES, "{bytes} bytes kept");
        assert_eq!(bytes, log.bytes);
        assert!(
            kept.len() > 3_000 && kept.len() < 5_000,
            "{} kept",
            kept.len()
        );
        // Ordinary requests are held by the count.
        let mut log = RequestLog::new(100);
        for _ in 0..300 {
            log.push(record(10));
        }
        assert_eq!(log.snapshot().len(), 100);
        log.clear();
        assert_eq!((log.snapshot().len(), log.bytes), (0, 0));
    }
}
