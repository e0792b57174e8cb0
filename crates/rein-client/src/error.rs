//! The client's error type: API failures keep the server's `Status`, with `is_*` helpers.

use std::time::Duration;

use kube_client::core::Status;
use rein_scheme::GroupVersionKind;

/// The reason class of a failed API call, from the `Status` the server returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusReason {
    /// 404: the object (or collection) does not exist.
    NotFound,
    /// 409 `AlreadyExists`: a create found an object of that name.
    AlreadyExists,
    /// 409 `Conflict`: optimistic concurrency failed (stale resourceVersion).
    Conflict,
    /// 422: the object failed validation.
    Invalid,
    /// 400: the request was malformed.
    BadRequest,
    /// 401: no valid credentials.
    Unauthorized,
    /// 403: the credentials may not do this.
    Forbidden,
    /// 405: the verb is not supported for this resource.
    MethodNotAllowed,
    /// 410: the resourceVersion is too old (`Expired` / `Gone`).
    Gone,
    /// 504 or `Timeout`/`ServerTimeout`: the server gave up waiting.
    Timeout,
    /// 429: throttled; see [`Error::retry_after`].
    TooManyRequests,
    /// 500 and other 5xx.
    ServerError,
    /// 503: the server is unavailable.
    ServiceUnavailable,
    /// Any other failure.
    Other,
}

impl StatusReason {
    /// Classifies a server `Status` by its reason, then its code.
    pub fn of(status: &Status) -> Self {
        match status.reason.as_str() {
            "NotFound" => return Self::NotFound,
            "AlreadyExists" => return Self::AlreadyExists,
            "Conflict" => return Self::Conflict,
            "Invalid" => return Self::Invalid,
            "BadRequest" => return Self::BadRequest,
            "Unauthorized" => return Self::Unauthorized,
            "Forbidden" => return Self::Forbidden,
            "MethodNotAllowed" => return Self::MethodNotAllowed,
            "Gone" | "Expired" => return Self::Gone,
            "Timeout" | "ServerTimeout" => return Self::Timeout,
            "TooManyRequests" => return Self::TooManyRequests,
            "InternalError" => return Self::ServerError,
            "ServiceUnavailable" => return Self::ServiceUnavailable,
            _ => {}
        }
        match status.code {
            404 => Self::NotFound,
            409 => Self::Conflict,
            422 => Self::Invalid,
            400 => Self::BadRequest,
            401 => Self::Unauthorized,
            403 => Self::Forbidden,
            405 => Self::MethodNotAllowed,
            410 => Self::Gone,
            429 => Self::TooManyRequests,
            504 => Self::Timeout,
            503 => Self::ServiceUnavailable,
            500..=599 => Self::ServerError,
            _ => Self::Other,
        }
    }
}

/// Why a client, cache or controllerutil call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server (or the cache, for a missing object) answered with a failure `Status`.
    #[error("{action}: {reason:?} ({code})", code = status.code)]
    Api {
        /// What was being attempted, e.g. `getting v1, Kind=Pod default/gateway`.
        action: String,
        /// The classified reason.
        reason: StatusReason,
        /// The server's Status, kept whole.
        #[source]
        status: Box<Status>,
    },
    /// The request could not be sent or its answer not read.
    #[error("{action}: the request failed")]
    Request {
        /// What was being attempted.
        action: String,
        /// The transport error.
        #[source]
        source: kube_client::Error,
    },
    /// A request or response body could not be (de)serialized.
    #[error("{action}: encoding or decoding JSON failed")]
    Json {
        /// What was being attempted.
        action: String,
        /// What serde reported.
        #[source]
        source: serde_json::Error,
    },
    /// The scheme or REST mapper does not know the kind, or an object could not be decoded.
    #[error("{action}: the kind could not be resolved")]
    Scheme {
        /// What was being attempted.
        action: String,
        /// The scheme's error.
        #[source]
        source: rein_scheme::Error,
    },
    /// The call's arguments are unusable (no name, no namespace for a namespaced kind, …).
    #[error("{action}: {problem}")]
    InvalidInput {
        /// What was being attempted.
        action: String,
        /// What is wrong with the input.
        problem: String,
    },
    /// The cache cannot answer this read (e.g. `continue`, or a field selector with no index).
    #[error("{action}: {problem}")]
    CacheUnsupported {
        /// What was being attempted.
        action: String,
        /// Which option the cache cannot serve.
        problem: String,
    },
    /// A read named a namespace the cache does not hold for this kind (controller-runtime's
    /// "unknown namespace for the cache"): the cache is restricted to `cached` namespaces.
    /// Read such objects with [`Client::api_reader`](crate::Client::api_reader).
    #[error("{action}: namespace {namespace:?} is not cached (the cache holds {cached:?})")]
    NamespaceNotCached {
        /// What was being attempted.
        action: String,
        /// The namespace asked for.
        namespace: String,
        /// The namespaces the cache holds for the kind.
        cached: Vec<String>,
    },
    /// The cache was stopped, or has not been started, before an informer could sync.
    #[error("{action}: the cache is not running")]
    CacheNotRunning {
        /// What was being attempted.
        action: String,
    },
    /// A read through the cache-backed client waited for the cache to reach this client's
    /// own earlier write of the kind and gave up (with
    /// [`OnTimeout::Fail`](crate::OnTimeout::Fail); see
    /// [`ReadYourWrites`](crate::ReadYourWrites)).
    #[error("{action}: the cache did not reach this client's own write within {after:?}")]
    ReadYourWritesTimeout {
        /// What was being attempted.
        action: String,
        /// How long the read waited.
        after: std::time::Duration,
    },
    /// A newly started informer did not sync within
    /// [`CacheOptions::informer_sync_timeout`](crate::cache::CacheOptions::informer_sync_timeout)
    /// (its list keeps failing, or the server does not answer).
    #[error("failed waiting for the {kind} informer to sync: not synced after {after:?}")]
    CacheSyncTimeout {
        /// The kind.
        kind: String,
        /// How long the read waited.
        after: std::time::Duration,
    },
    /// `set_controller_reference`: another controller already owns the object.
    #[error(
        "setting the controller reference on {object}: it is already owned by {owner_kind} {owner_name}"
    )]
    AlreadyOwned {
        /// The object being adopted.
        object: String,
        /// The kind of the existing controller.
        owner_kind: String,
        /// The name of the existing controller.
        owner_name: String,
    },
    /// An informer refused an operation (e.g. an index name already in use).
    #[error("{action}: the informer refused")]
    Informer {
        /// What was being attempted.
        action: String,
        /// The informer's error.
        #[source]
        source: rein_informer::Error,
    },
    /// A kind could not be found by discovery.
    #[error("{action}: the server does not serve kind {gvk}")]
    NotServed {
        /// What was being attempted.
        action: String,
        /// The kind.
        gvk: GroupVersionKind,
    },
}

impl Error {
    /// Wraps a kube-client error, keeping an API `Status` as [`Error::Api`].
    pub fn from_kube(action: impl Into<String>, err: kube_client::Error) -> Self {
        let action = action.into();
        match err {
            kube_client::Error::Api(status) => Self::Api {
                action,
                reason: StatusReason::of(&status),
                status,
            },
            kube_client::Error::SerdeError(source) => Self::Json { action, source },
            source => Self::Request { action, source },
        }
    }

    /// A `NotFound` failure as the server would send it (used by the cache).
    pub fn not_found(action: impl Into<String>, kind: &str, name: &str) -> Self {
        let mut status =
            Status::failure(&format!("{kind} \"{name}\" not found"), "NotFound").with_code(404);
        status.details = Some(kube_client::core::response::StatusDetails {
            name: name.to_owned(),
            group: String::new(),
            kind: kind.to_owned(),
            uid: String::new(),
            causes: Vec::new(),
            retry_after_seconds: 0,
        });
        Self::Api {
            action: action.into(),
            reason: StatusReason::NotFound,
            status: Box::new(status),
        }
    }

    /// The server's Status, for API failures.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Self::Api { status, .. } => Some(status),
            _ => None,
        }
    }

    /// The reason class, for API failures.
    pub fn reason(&self) -> Option<StatusReason> {
        match self {
            Self::Api { reason, .. } => Some(*reason),
            _ => None,
        }
    }

    /// The object does not exist.
    pub fn is_not_found(&self) -> bool {
        self.reason() == Some(StatusReason::NotFound)
    }

    /// A create found an object of the same name.
    pub fn is_already_exists(&self) -> bool {
        self.reason() == Some(StatusReason::AlreadyExists)
    }

    /// An optimistic-concurrency conflict: re-read and retry.
    pub fn is_conflict(&self) -> bool {
        self.reason() == Some(StatusReason::Conflict)
    }

    /// The object failed validation.
    pub fn is_invalid(&self) -> bool {
        self.reason() == Some(StatusReason::Invalid)
    }

    /// The request was malformed.
    pub fn is_bad_request(&self) -> bool {
        self.reason() == Some(StatusReason::BadRequest)
    }

    /// Authorization refused the request.
    pub fn is_forbidden(&self) -> bool {
        self.reason() == Some(StatusReason::Forbidden)
    }

    /// Authentication failed.
    pub fn is_unauthorized(&self) -> bool {
        self.reason() == Some(StatusReason::Unauthorized)
    }

    /// The server timed out.
    pub fn is_timeout(&self) -> bool {
        self.reason() == Some(StatusReason::Timeout)
    }

    /// The server throttled the request.
    pub fn is_too_many_requests(&self) -> bool {
        self.reason() == Some(StatusReason::TooManyRequests)
    }

    /// The resourceVersion is too old (410).
    pub fn is_gone(&self) -> bool {
        self.reason() == Some(StatusReason::Gone)
    }

    /// A 5xx answer (including unavailable and timeouts reported as 504).
    pub fn is_server_error(&self) -> bool {
        matches!(
            self.reason(),
            Some(StatusReason::ServerError | StatusReason::ServiceUnavailable)
        ) || self.status().is_some_and(|s| s.code >= 500)
    }

    /// How long the server asked the client to wait, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        let seconds = self.status()?.details.as_ref()?.retry_after_seconds;
        (seconds > 0).then(|| Duration::from_secs(u64::from(seconds)))
    }
}

/// Turns `NotFound` into `Ok(None)` (controller-runtime's `IgnoreNotFound`).
pub fn ignore_not_found<T>(result: Result<T, Error>) -> Result<Option<T>, Error> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Turns `AlreadyExists` into `Ok(None)` (controller-runtime's `IgnoreAlreadyExists`).
pub fn ignore_already_exists<T>(result: Result<T, Error>) -> Result<Option<T>, Error> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_already_exists() => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str) -> Error {
        Error::from_kube(
            "testing",
            kube_client::Error::Api(Box::new(Status::failure("x", reason).with_code(code))),
        )
    }

    #[test]
    fn every_reason_is_classified() {
        let cases = [
            (404, "NotFound", StatusReason::NotFound),
            (409, "AlreadyExists", StatusReason::AlreadyExists),
            (409, "Conflict", StatusReason::Conflict),
            (422, "Invalid", StatusReason::Invalid),
            (400, "BadRequest", StatusReason::BadRequest),
            (401, "Unauthorized", StatusReason::Unauthorized),
            (403, "Forbidden", StatusReason::Forbidden),
            (405, "MethodNotAllowed", StatusReason::MethodNotAllowed),
            (410, "Expired", StatusReason::Gone),
            (504, "Timeout", StatusReason::Timeout),
            (500, "ServerTimeout", StatusReason::Timeout),
            (429, "TooManyRequests", StatusReason::TooManyRequests),
            (500, "InternalError", StatusReason::ServerError),
            (503, "ServiceUnavailable", StatusReason::ServiceUnavailable),
            (418, "Teapot", StatusReason::Other),
            // Unknown reasons fall back to the code.
            (403, "", StatusReason::Forbidden),
            (502, "", StatusReason::ServerError),
        ];
        for (code, reason, want) in cases {
            assert_eq!(api(code, reason).reason(), Some(want), "{code} {reason}");
        }
        assert!(api(403, "Forbidden").is_forbidden());
        assert!(api(504, "Timeout").is_timeout());
        assert!(api(410, "Gone").is_gone());
        assert!(api(400, "BadRequest").is_bad_request());
        assert!(api(503, "ServiceUnavailable").is_server_error());
        assert!(!api(404, "NotFound").is_server_error());
    }

    #[test]
    fn status_is_kept_and_message_names_the_action() {
        let err = api(404, "NotFound");
        assert_eq!(err.status().unwrap().message, "x");
        assert!(err.to_string().starts_with("testing"), "{err}");
        let cached = Error::not_found("getting Pod a/b from the cache", "Pod", "b");
        assert!(cached.is_not_found());
        assert_eq!(cached.status().unwrap().code, 404);
        assert_eq!(ignore_not_found::<()>(Err(cached)).unwrap(), None);
        assert!(ignore_already_exists::<()>(Err(api(409, "AlreadyExists"))).is_ok());
        assert!(ignore_already_exists::<()>(Err(api(409, "Conflict"))).is_err());
    }
}
