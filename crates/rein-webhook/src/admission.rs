//! The admission handler trait, the error a handler denies with, and response helpers.

use async_trait::async_trait;
use kube_core::DynamicObject;
use kube_core::admission::AdmissionResponse;
use kube_core::response::StatusSummary;

/// An admission request as it arrives, objects untyped.
pub type AdmissionRequest = kube_core::admission::AdmissionRequest<DynamicObject>;

/// Warnings returned to the API client alongside an admission decision.
pub type Warnings = Vec<String>;

/// Answers admission requests at one path (controller-runtime's `admission.Handler`).
///
/// Implement it directly for full control, or use the typed
/// [`CustomDefaulter`](super::CustomDefaulter) / [`CustomValidator`](super::CustomValidator).
/// The server copies the request's UID into the response and recovers from panics.
#[async_trait]
pub trait AdmissionHandler: Send + Sync + 'static {
    /// Decides on one request.
    async fn handle(&self, req: &AdmissionRequest) -> AdmissionResponse;
}

/// Why a request is refused: an HTTP-style code, a reason and a message for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AdmissionError {
    /// The status code reported in the response's `status.code` (403 for a denial).
    pub code: u16,
    /// The machine-readable reason (`Forbidden`, `Invalid`, `BadRequest`, …).
    pub reason: String,
    /// The message shown to the user.
    pub message: String,
    /// Warnings returned along with the refusal.
    pub warnings: Warnings,
}

impl AdmissionError {
    /// A denial (`403 Forbidden`), like controller-runtime's `admission.Denied`.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::with_code(403, "Forbidden", message)
    }

    /// An invalid object (`422 Invalid`).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::with_code(422, "Invalid", message)
    }

    /// A request the handler cannot make sense of (`400 BadRequest`).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::with_code(400, "BadRequest", message)
    }

    /// A failure inside the handler (`500 InternalError`).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::with_code(500, "InternalError", message)
    }

    /// Any code and reason.
    pub fn with_code(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
            warnings: Vec::new(),
        }
    }

    /// Adds warnings to the refusal.
    pub fn warnings(mut self, warnings: Warnings) -> Self {
        self.warnings = warnings;
        self
    }

    /// The response refusing `req` for this reason.
    pub fn into_response(self, req: &AdmissionRequest) -> AdmissionResponse {
        let mut resp = AdmissionResponse::from(req).deny(&self.message);
        resp.result.status = Some(StatusSummary::Failure);
        resp.result.code = self.code;
        resp.result.reason = self.reason;
        if !self.warnings.is_empty() {
            resp.warnings = Some(self.warnings);
        }
        resp
    }
}

/// The response allowing `req` (`status.code` 200), with `warnings` if any.
pub fn allowed(req: &AdmissionRequest, warnings: Warnings) -> AdmissionResponse {
    let mut resp = AdmissionResponse::from(req);
    resp.result.code = 200;
    if !warnings.is_empty() {
        resp.warnings = Some(warnings);
    }
    resp
}

/// A response for a review that could not be read at all (no UID to answer to).
pub(crate) fn unreadable(code: u16, reason: &str, message: String) -> AdmissionResponse {
    let mut resp = AdmissionResponse::invalid(&message);
    resp.result.code = code;
    resp.result.reason = reason.to_owned();
    resp
}
