//! The crate's error type.

/// Errors returned by rein-informer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An index name was used that the indexer does not know.
    #[error("looking up index {name:?}: no index with that name exists")]
    UnknownIndex {
        /// The requested index name.
        name: String,
    },
    /// `add_indexers` was given a name that is already in use.
    #[error("adding indexers: an index named {name:?} already exists")]
    IndexerConflict {
        /// The conflicting index name.
        name: String,
    },
    /// A key did not have the `namespace/name` or `name` shape.
    #[error("splitting object key {key:?}: expected \"namespace/name\" or \"name\"")]
    InvalidKey {
        /// The offending key.
        key: String,
    },
    /// The informer has already started, so the requested change is no longer possible.
    #[error("{action}: the informer has already started")]
    AlreadyStarted {
        /// What was being attempted.
        action: &'static str,
    },
    /// The informer has stopped, so the requested change is no longer possible.
    #[error("{action}: the informer has stopped")]
    Stopped {
        /// What was being attempted.
        action: &'static str,
    },
    /// A list or watch call to the API server failed.
    #[error("{action} against the API server")]
    Api {
        /// What was being attempted ("listing", "watching").
        action: &'static str,
        /// The client error.
        #[source]
        source: kube_client::Error,
    },
    /// The watch stream delivered an error status.
    #[error("watching: the server sent an error event (code {code}, reason {reason:?}): {message}")]
    WatchStatus {
        /// HTTP-like status code, e.g. 410.
        code: u16,
        /// Machine-readable reason, e.g. "Expired".
        reason: String,
        /// Human-readable message.
        message: String,
        /// The server's `details.retryAfterSeconds` (0 when absent).
        retry_after_seconds: u32,
        /// The server's `details.causes` (empty when absent).
        causes: Vec<kube_client::core::response::StatusCause>,
    },
    /// A watch closed almost immediately without delivering any event.
    #[error("watching: the stream closed within a second without any event")]
    VeryShortWatch,
}

impl Error {
    /// True if the error means the requested resourceVersion is too old (HTTP 410 Gone / Expired).
    pub fn is_expired(&self) -> bool {
        match self {
            Error::Api { source, .. } => client_error_is_expired(source),
            Error::WatchStatus {
                code,
                reason,
                message,
                ..
            } => status_is_expired(*code, reason, message),
            _ => false,
        }
    }

    /// True if the requested resourceVersion is newer than any the server has (client-go's
    /// `isTooLargeResourceVersionError`): a `ResourceVersionTooLarge` cause, or, from servers
    /// before 1.18.6, a timeout whose cause message or own message says "Too large resource
    /// version". The reflector then lists again from the newest version (`""`).
    pub fn is_too_large_resource_version(&self) -> bool {
        match self {
            Error::Api {
                source: kube_client::Error::Api(s),
                ..
            } => status_is_too_large(
                s.code,
                &s.reason,
                &s.message,
                s.details.as_ref().map_or(&[][..], |d| &d.causes[..]),
            ),
            Error::WatchStatus {
                code,
                reason,
                message,
                causes,
                ..
            } => status_is_too_large(*code, reason, message, causes),
            _ => false,
        }
    }

    /// True if the error means the last synced resourceVersion cannot be used again: it
    /// [expired](Self::is_expired) or is [too large](Self::is_too_large_resource_version).
    pub fn resource_version_unavailable(&self) -> bool {
        self.is_expired() || self.is_too_large_resource_version()
    }

    /// True if the server rejected the request itself (a 4xx other than 409, 410 and 429),
    /// e.g. an API server that does not know `sendInitialEvents`.
    pub fn rejected_request(&self) -> bool {
        let code = match self {
            Error::Api {
                source: kube_client::Error::Api(s),
                ..
            } => s.code,
            Error::WatchStatus { code, .. } => *code,
            _ => return false,
        };
        (400..500).contains(&code) && !matches!(code, 409 | 410 | 429)
    }

    /// True if the server asked us to slow down (HTTP 429).
    pub fn is_too_many_requests(&self) -> bool {
        match self {
            Error::Api {
                source: kube_client::Error::Api(s),
                ..
            } => s.code == 429,
            Error::WatchStatus { code, .. } => *code == 429,
            _ => false,
        }
    }

    /// True if the server reported an internal error (HTTP 500) that is not an expiry.
    pub fn is_internal_error(&self) -> bool {
        let code = match self {
            Error::Api {
                source: kube_client::Error::Api(s),
                ..
            } => s.code,
            Error::WatchStatus { code, .. } => *code,
            _ => return false,
        };
        code == 500 && !self.is_expired()
    }

    /// How long the server asked us to wait before retrying (`details.retryAfterSeconds`, which
    /// the API server sets alongside the `Retry-After` header), if it said.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        let secs = match self {
            Error::Api {
                source: kube_client::Error::Api(s),
                ..
            } => s.details.as_ref().map_or(0, |d| d.retry_after_seconds),
            Error::WatchStatus {
                retry_after_seconds,
                ..
            } => *retry_after_seconds,
            _ => 0,
        };
        (secs > 0).then(|| std::time::Duration::from_secs(u64::from(secs)))
    }
}

pub(crate) fn status_is_expired(code: u16, reason: &str, message: &str) -> bool {
    code == 410
        || reason == "Expired"
        || reason == "Gone"
        || message.contains("too old resource version")
}

/// client-go's `isTooLargeResourceVersionError` over a status's parts.
pub(crate) fn status_is_too_large(
    code: u16,
    reason: &str,
    message: &str,
    causes: &[kube_client::core::response::StatusCause],
) -> bool {
    const CAUSE: &str = "ResourceVersionTooLarge";
    const MESSAGE: &str = "Too large resource version";
    if causes.iter().any(|c| c.reason == CAUSE) {
        return true;
    }
    // Servers 1.17.0-1.18.5 answer a timeout with the message in a cause; older ones in the
    // status's own message.
    let timeout = reason == "Timeout" || (reason.is_empty() && code == 504);
    timeout && (causes.iter().any(|c| c.message == MESSAGE) || message.contains(MESSAGE))
}

pub(crate) fn client_error_is_expired(err: &kube_client::Error) -> bool {
    match err {
        kube_client::Error::Api(s) => status_is_expired(s.code, &s.reason, &s.message),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> Error {
        Error::WatchStatus {
            code,
            reason: reason.into(),
            message: message.into(),
            retry_after_seconds: 0,
            causes: Vec::new(),
        }
    }

    #[test]
    fn classifies_statuses() {
        assert!(status(410, "Expired", "").is_expired());
        assert!(status(500, "", "too old resource version: 1 (5)").is_expired());
        assert!(!status(500, "InternalError", "boom").is_expired());
        assert!(status(429, "TooManyRequests", "").is_too_many_requests());
        assert!(status(400, "BadRequest", "sendInitialEvents is forbidden").rejected_request());
        assert!(!status(410, "Expired", "").rejected_request());
        assert!(!status(429, "", "").rejected_request());
        assert!(!status(503, "", "").rejected_request());
        assert!(!Error::VeryShortWatch.is_expired());
        assert!(status(500, "InternalError", "boom").is_internal_error());
        assert!(!status(500, "", "too old resource version: 1 (5)").is_internal_error());
        assert!(!status(429, "", "").is_internal_error());
    }

    /// The three shapes client-go's `TestReflectorFullListIfTooLarge` answers with.
    #[test]
    fn recognises_too_large_resource_versions() {
        let cause = |reason: &str, message: &str| kube_client::core::response::StatusCause {
            reason: reason.into(),
            message: message.into(),
            field: String::new(),
        };
        let timeout = |message: &str, causes| {
            let mut st = kube_client::core::Status::failure(message, "Timeout").with_code(504);
            st.details = Some(kube_client::core::response::StatusDetails {
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                causes,
                retry_after_seconds: 1,
            });
            Error::Api {
                action: "listing",
                source: kube_client::Error::Api(st.boxed()),
            }
        };
        let by_cause_type = timeout(
            "too large resource version",
            vec![cause("ResourceVersionTooLarge", "")],
        );
        let by_cause_message = timeout(
            "too large resource version",
            vec![cause("", "Too large resource version")],
        );
        let by_message = timeout("Too large resource version", vec![]);
        for err in [&by_cause_type, &by_cause_message, &by_message] {
            assert!(err.is_too_large_resource_version(), "{err:?}");
            assert!(err.resource_version_unavailable());
            assert!(!err.is_expired());
        }
        assert!(!timeout("too large resource version", vec![]).is_too_large_resource_version());
        let watch = Error::WatchStatus {
            code: 504,
            reason: "Timeout".into(),
            message: "Too large resource version: 40, current: 30".into(),
            retry_after_seconds: 1,
            causes: vec![cause(
                "ResourceVersionTooLarge",
                "Too large resource version",
            )],
        };
        assert!(watch.is_too_large_resource_version());
        assert!(
            !status(500, "InternalError", "Too large resource version")
                .is_too_large_resource_version()
        );
    }

    #[test]
    fn reads_retry_after() {
        assert_eq!(status(429, "TooManyRequests", "").retry_after(), None);
        let with = Error::WatchStatus {
            code: 429,
            reason: "TooManyRequests".into(),
            message: String::new(),
            retry_after_seconds: 3,
            causes: Vec::new(),
        };
        assert_eq!(with.retry_after(), Some(std::time::Duration::from_secs(3)));
        let mut st =
            kube_client::core::Status::failure("slow down", "TooManyRequests").with_code(429);
        st.details = Some(kube_client::core::response::StatusDetails {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            uid: String::new(),
            causes: Vec::new(),
            retry_after_seconds: 2,
        });
        let api = Error::Api {
            action: "starting a watch",
            source: kube_client::Error::Api(st.boxed()),
        };
        assert!(api.is_too_many_requests());
        assert_eq!(api.retry_after(), Some(std::time::Duration::from_secs(2)));
    }
}
