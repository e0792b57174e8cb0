//! The request log: every request the server answered, for tests that assert on traffic.

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
