//! How the reflector answers a failed or ended watch: re-watch, relist, or give up the cycle.

use std::time::Duration;

use tokio::time::Instant;

use crate::Error;

/// After this long without an internal error, the next one opens a fresh retry window
/// (client-go's `minResetPeriod` in `retry_with_deadline.go`).
const INTERNAL_ERROR_QUIET_RESET: Duration = Duration::from_secs(60);

/// What to do after a watch failed to open or ended with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchErrorAction {
    /// The resource version is gone (410 / "too old resource version"): relist.
    Relist,
    /// Wait one backoff step (at least the server's Retry-After, up to `max_retry_after`),
    /// then watch again from the last resource version, without relisting.
    Rewatch,
    /// End this list-and-watch cycle with the error (the error handler sees it, then a relist).
    GiveUp,
}

/// Retries internal errors (HTTP 500) on the watch until a deadline (client-go's
/// `RetryWithDeadline` with `MaxInternalErrorRetryDuration`). The window opens at the first
/// 500 and closes `max` later; a minute without 500s opens a new window.
#[derive(Debug)]
pub(crate) struct InternalErrorRetry {
    max: Duration,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl InternalErrorRetry {
    pub(crate) fn new(max: Duration) -> Self {
        InternalErrorRetry {
            max,
            first: None,
            last: None,
        }
    }

    /// Records an internal error now; true while it is still within the retry window.
    pub(crate) fn record_and_check(&mut self) -> bool {
        let now = Instant::now();
        let quiet = self
            .last
            .is_none_or(|last| now.duration_since(last) > INTERNAL_ERROR_QUIET_RESET);
        if quiet {
            self.first = Some(now);
        }
        self.last = Some(now);
        let first = self.first.unwrap_or(now);
        !self.max.is_zero() && now.duration_since(first) <= self.max
    }
}

/// client-go's watch-error table: expired → relist; 429 or connection refused → re-watch after
/// a backoff step; 500 → re-watch while the internal-error window allows; else give up.
pub(crate) fn watch_error_action(
    err: &Error,
    internal: &mut InternalErrorRetry,
) -> WatchErrorAction {
    if err.is_expired() {
        return WatchErrorAction::Relist;
    }
    if err.is_too_many_requests() || is_connection_refused(err) {
        return WatchErrorAction::Rewatch;
    }
    if err.is_internal_error() && internal.record_and_check() {
        return WatchErrorAction::Rewatch;
    }
    WatchErrorAction::GiveUp
}

fn is_connection_refused(err: &Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = e.source();
    }
    false
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

    #[tokio::test(start_paused = true)]
    async fn classifies_watch_errors() {
        let mut internal = InternalErrorRetry::new(Duration::ZERO);
        let action = |e: &Error, i: &mut InternalErrorRetry| watch_error_action(e, i);
        assert_eq!(
            action(&status(410, "Expired", ""), &mut internal),
            WatchErrorAction::Relist
        );
        assert_eq!(
            action(
                &status(500, "", "too old resource version: 1 (2)"),
                &mut internal
            ),
            WatchErrorAction::Relist
        );
        // A 429 arriving as an ERROR event in the stream re-watches, like one from the call.
        assert_eq!(
            action(&status(429, "TooManyRequests", ""), &mut internal),
            WatchErrorAction::Rewatch
        );
        // Internal errors are not retried when the window is zero (client-go's default).
        assert_eq!(
            action(&status(500, "InternalError", "boom"), &mut internal),
            WatchErrorAction::GiveUp
        );
        assert_eq!(
            action(&status(403, "Forbidden", ""), &mut internal),
            WatchErrorAction::GiveUp
        );
        assert_eq!(
            action(&Error::VeryShortWatch, &mut internal),
            WatchErrorAction::GiveUp
        );
    }

    #[tokio::test(start_paused = true)]
    async fn internal_errors_retry_until_the_deadline_then_reset_after_quiet() {
        let mut retry = InternalErrorRetry::new(Duration::from_secs(10));
        assert!(retry.record_and_check());
        tokio::time::advance(Duration::from_secs(6)).await;
        assert!(retry.record_and_check());
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(
            !retry.record_and_check(),
            "11 s after the first 500: past the window"
        );
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(!retry.record_and_check(), "still failing: no new window");
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(
            retry.record_and_check(),
            "a quiet minute opens a new window"
        );
    }
}
