//! API errors as `metav1.Status` objects with kube-apiserver's codes, reasons and messages.

use serde_json::{Value, json};

use crate::resources::ResourceDef;

/// An error answer: becomes a `metav1.Status` body with the given HTTP code.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    /// HTTP status code.
    pub(crate) code: u16,
    /// `metav1.StatusReason`.
    pub(crate) reason: &'static str,
    /// Human-readable message.
    pub(crate) message: String,
    /// `metav1.StatusDetails`, when there are any.
    pub(crate) details: Option<Value>,
    /// Seconds for a `Retry-After` header.
    pub(crate) retry_after: Option<u64>,
}

impl ApiError {
    /// An error without details.
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// 404 NotFound for an object.
    pub(crate) fn not_found(def: &ResourceDef, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", def.qualified()),
        )
        .with_details(details(def, name))
    }

    /// 403 Forbidden for an object, as `errors.NewForbidden(resource, name, err)` words it:
    /// `<resource> "<name>" is forbidden: <reason>`.
    pub(crate) fn forbidden_object(def: &ResourceDef, name: &str, reason: &str) -> ApiError {
        ApiError::new(
            403,
            "Forbidden",
            format!("{} \"{name}\" is forbidden: {reason}", def.qualified()),
        )
        .with_details(details(def, name))
    }

    /// 404 NotFound for a path nothing serves.
    pub(crate) fn no_route() -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    /// 409 AlreadyExists.
    pub(crate) fn already_exists(def: &ResourceDef, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", def.qualified()),
        )
        .with_details(details(def, name))
    }

    /// 409 Conflict because the object changed since the client read it.
    pub(crate) fn conflict_modified(def: &ResourceDef, name: &str) -> ApiError {
        ApiError::conflict(
            def,
            name,
            "the object has been modified; please apply your changes to the latest version and \
             try again",
        )
    }

    /// 409 Conflict with a reason text.
    pub(crate) fn conflict(def: &ResourceDef, name: &str, why: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                def.qualified()
            ),
        )
        .with_details(details(def, name))
    }

    /// 422 Invalid with one cause.
    pub(crate) fn invalid(def: &ResourceDef, name: &str, field: &str, why: &str) -> ApiError {
        let mut d = details(def, name);
        d["kind"] = Value::String(def.kind.clone());
        d["causes"] = json!([{"reason": "FieldValueInvalid", "message": why, "field": field}]);
        ApiError::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {field}: {why}", def.kind),
        )
        .with_details(d)
    }

    /// 422 Invalid with one cause per failing field, worded as kube-apiserver's
    /// `NewInvalid`: `Kind.group "name" is invalid: [cause, cause]`.
    pub(crate) fn invalid_causes(
        def: &ResourceDef,
        name: &str,
        causes: &[crate::schema::Cause],
    ) -> ApiError {
        let mut d = details(def, name);
        d["kind"] = Value::String(def.kind.clone());
        d["causes"] = causes
            .iter()
            .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
            .collect();
        let qualified_kind = if def.group.is_empty() {
            def.kind.clone()
        } else {
            format!("{}.{}", def.kind, def.group)
        };
        let listed: Vec<String> = causes.iter().map(|c| c.to_error_string()).collect();
        let aggregate = match listed.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        ApiError::new(
            422,
            "Invalid",
            format!("{qualified_kind} \"{name}\" is invalid: {aggregate}"),
        )
        .with_details(d)
    }

    /// 400 BadRequest.
    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    /// 403 Forbidden.
    pub(crate) fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(403, "Forbidden", message)
    }

    /// 405 MethodNotAllowed.
    pub(crate) fn method_not_allowed() -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// 410 Expired (resource version too old, or an expired continue token).
    pub(crate) fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }

    /// 504 Timeout for a resourceVersion the server did not reach in time, as kube-apiserver's
    /// storage layer words it (`NewTooLargeResourceVersionError`): client-go recognises it by
    /// the reason and the `ResourceVersionTooLarge` cause and relists from the latest version.
    pub(crate) fn too_large_resource_version(requested: u64, current: u64) -> ApiError {
        let mut err = ApiError::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        )
        .with_details(json!({
            "causes": [{
                "reason": "ResourceVersionTooLarge",
                "message": "Too large resource version",
            }],
        }));
        err.retry_after = Some(1);
        err
    }

    /// 401 Unauthorized.
    pub(crate) fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    /// Adds `details`.
    pub(crate) fn with_details(mut self, details: Value) -> ApiError {
        self.details = Some(details);
        self
    }

    /// The `metav1.Status` body.
    pub(crate) fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.reason.is_empty() {
            // `StatusReasonUnknown` is omitted, as Go's `omitempty` drops it.
            if let Some(s) = status.as_object_mut() {
                s.remove("reason");
            }
        }
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        if let Some(secs) = self.retry_after {
            let details = status.as_object_mut().and_then(|s| {
                s.entry("details")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
                    .map(|d| d.insert("retryAfterSeconds".into(), json!(secs)))
            });
            let _ = details;
        }
        status
    }
}

impl From<crate::patch::PatchError> for ApiError {
    fn from(err: crate::patch::PatchError) -> ApiError {
        let status = err.status();
        let reason = err.reason();
        let mut e = ApiError::new(err.code(), reason, err.message());
        e.details = status.get("details").cloned();
        e
    }
}

/// `metav1.StatusDetails` naming an object.
impl From<crate::proto::ProtoError> for ApiError {
    fn from(err: crate::proto::ProtoError) -> ApiError {
        use crate::proto::ProtoError;
        let message = match std::error::Error::source(&err) {
            Some(cause) => format!("{err}: {cause}"),
            None => err.to_string(),
        };
        match err {
            ProtoError::UnknownKind { .. }
            | ProtoError::UnknownMessage(_)
            | ProtoError::ContentEncoding(_) => ApiError::new(415, "UnsupportedMediaType", message),
            _ => ApiError::bad_request(message),
        }
    }
}

fn details(def: &ResourceDef, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": def.plural});
    if !def.group.is_empty() {
        d["group"] = Value::String(def.group.clone());
    }
    d
}

/// A `Success` status, as delete answers for resources that do not return the object.
pub(crate) fn success(def: &ResourceDef, name: &str, uid: Option<&str>) -> Value {
    let mut d = details(def, name);
    if let Some(uid) = uid {
        d["uid"] = Value::String(uid.to_string());
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": d,
    })
}
