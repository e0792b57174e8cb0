//! Validation of request options (`CreateOptions`, `UpdateOptions`, `PatchOptions`,
//! `DeleteOptions`, watch `ListOptions`) as apimachinery's `ValidateXxxOptions` does it,
//! answered as kube-apiserver answers: 422 Invalid naming `<Kind>.meta.k8s.io ""` with one
//! cause per field error.

use serde_json::{Value, json};

use super::query::Query;
use crate::patch::PatchType;
use crate::status::ApiError;

/// One `field.Error`: the field path, its type and its detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    field: &'static str,
    kind: ErrorKind,
    detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ErrorKind {
    /// `Unsupported value: <value>` (the value already rendered as Go renders it).
    NotSupported(String),
    Forbidden,
    Required,
    TooLong,
    /// `Invalid value: <value>` (the value already rendered as Go renders it).
    Invalid(String),
}

impl FieldError {
    fn not_supported(field: &'static str, value: String, supported: &[&str]) -> FieldError {
        let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        FieldError {
            field,
            kind: ErrorKind::NotSupported(value),
            detail: format!("supported values: {}", quoted.join(", ")),
        }
    }

    fn forbidden(field: &'static str, detail: impl Into<String>) -> FieldError {
        FieldError {
            field,
            kind: ErrorKind::Forbidden,
            detail: detail.into(),
        }
    }

    fn required(field: &'static str, detail: impl Into<String>) -> FieldError {
        FieldError {
            field,
            kind: ErrorKind::Required,
            detail: detail.into(),
        }
    }

    fn too_long(field: &'static str, max: usize) -> FieldError {
        FieldError {
            field,
            kind: ErrorKind::TooLong,
            detail: format!("may not be more than {max} bytes"),
        }
    }

    fn invalid(field: &'static str, value: &str, detail: String) -> FieldError {
        FieldError {
            field,
            kind: ErrorKind::Invalid(go_quote(value)),
            detail,
        }
    }

    /// `ErrorBody()`: the message without the field.
    fn body(&self) -> String {
        match &self.kind {
            ErrorKind::TooLong => format!("Too long: {}", self.detail),
            ErrorKind::Invalid(value) => format!("Invalid value: {value}: {}", self.detail),
            ErrorKind::NotSupported(value) => {
                format!("Unsupported value: {value}: {}", self.detail)
            }
            ErrorKind::Forbidden => format!("Forbidden: {}", self.detail),
            ErrorKind::Required => format!("Required value: {}", self.detail),
        }
    }

    fn reason(&self) -> &'static str {
        match self.kind {
            ErrorKind::NotSupported(_) => "FieldValueNotSupported",
            ErrorKind::Forbidden => "FieldValueForbidden",
            ErrorKind::Required => "FieldValueRequired",
            ErrorKind::TooLong => "FieldValueTooLong",
            ErrorKind::Invalid(_) => "FieldValueInvalid",
        }
    }
}

/// `errors.NewInvalid(meta.k8s.io/<kind>, "", errs)`, or `Ok` when there are none.
pub(crate) fn invalid(kind: &str, errors: &[FieldError]) -> Result<(), ApiError> {
    let rendered: Vec<String> = errors
        .iter()
        .map(|e| format!("{}: {}", e.field, e.body()))
        .collect();
    let aggregate = match rendered.as_slice() {
        [] => return Ok(()),
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| json!({"reason": e.reason(), "message": e.body(), "field": e.field}))
        .collect();
    Err(ApiError::new(
        422,
        "Invalid",
        format!("{kind}.meta.k8s.io \"\" is invalid: {aggregate}"),
    )
    .with_details(json!({"group": "meta.k8s.io", "kind": kind, "causes": causes})))
}

/// `ValidateDryRun`: only `All`.
fn dry_run(q: &Query, errors: &mut Vec<FieldError>) {
    if q.dry_run_values.iter().any(|v| v != "All") {
        let value = serde_json::to_string(&q.dry_run_values).unwrap_or_default();
        errors.push(FieldError::not_supported("dryRun", value, &["All"]));
    }
}

/// `ValidateFieldValidation`: empty, `Ignore`, `Warn` or `Strict`.
fn field_validation(q: &Query, errors: &mut Vec<FieldError>) {
    const ALLOWED: [&str; 4] = ["", "Ignore", "Strict", "Warn"];
    if let Some(mode) = q.field_validation.as_deref()
        && !ALLOWED.contains(&mode)
    {
        errors.push(FieldError::not_supported(
            "fieldValidation",
            format!("{mode:?}"),
            &ALLOWED,
        ));
    }
}

/// The longest `fieldManager` kube-apiserver takes (`FieldManagerMaxLength`).
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// `ValidateFieldManager`: at most 128 bytes, printable characters only (an empty one is
/// "not set").
fn field_manager(q: &Query, errors: &mut Vec<FieldError>) {
    let manager = q.field_manager.as_deref().unwrap_or("");
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errors.push(FieldError::too_long(
            "fieldManager",
            FIELD_MANAGER_MAX_LENGTH,
        ));
    }
    for (i, c) in manager.char_indices() {
        if !is_go_printable(c) {
            errors.push(FieldError::invalid(
                "fieldManager",
                manager,
                format!("invalid character U+{:04X} (at position {i})", u32::from(c)),
            ));
        }
    }
}

/// Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space;
/// not controls, other spaces, or format characters (the common ones: soft hyphen,
/// zero-width and direction marks, the byte-order mark).
fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let format = matches!(
        c,
        '\u{AD}' | '\u{600}'..='\u{605}' | '\u{61C}' | '\u{6DD}' | '\u{70F}'
            | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    );
    !(c.is_control() || c.is_whitespace() || format)
}

/// Go's `%q` of a string: `strconv.Quote`.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{B}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if u32::from(c) < 0x80 => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if u32::from(c) <= 0xFFFF => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// `ValidateCreateOptions` (`kind` = `CreateOptions`) or `ValidateUpdateOptions`
/// (`UpdateOptions`).
pub(crate) fn check_write(kind: &str, q: &Query) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    field_manager(q, &mut errors);
    dry_run(q, &mut errors);
    field_validation(q, &mut errors);
    invalid(kind, &errors)
}

/// The PATCH's type, named by `content_type`, when `accept` takes it (else kube-apiserver's
/// 415 naming the types `gvk` accepts), its options checked by [`check_patch`].
pub(crate) fn patch_type(
    content_type: &str,
    q: &Query,
    gvk: &crate::patch::Gvk,
    accept: impl Fn(PatchType) -> bool,
) -> Result<PatchType, ApiError> {
    let patch_type = PatchType::from_content_type(content_type)
        .filter(|t| accept(*t))
        .ok_or_else(|| {
            ApiError::new(
                415,
                "UnsupportedMediaType",
                crate::patch::unsupported_patch_message(gvk),
            )
        })?;
    check_patch(q, patch_type)?;
    Ok(patch_type)
}

/// `ValidatePatchOptions`.
pub(crate) fn check_patch(q: &Query, patch_type: PatchType) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    if patch_type == PatchType::Apply {
        if q.field_manager.as_deref().unwrap_or("").is_empty() {
            errors.push(FieldError::required(
                "fieldManager",
                "is required for apply patch",
            ));
        }
    } else if q.force.is_some() {
        errors.push(FieldError::forbidden(
            "force",
            "may not be specified for non-apply patch",
        ));
    }
    field_manager(q, &mut errors);
    dry_run(q, &mut errors);
    field_validation(q, &mut errors);
    invalid("PatchOptions", &errors)
}

/// `ValidateDeleteOptions`' check of the query's `dryRun`.
pub(crate) fn check_delete(q: &Query) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    dry_run(q, &mut errors);
    invalid("DeleteOptions", &errors)
}

/// `ValidateListOptions` for a list (not a watch).
pub(crate) fn check_list(q: &Query) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    let rv = q.resource_version.as_deref().unwrap_or("");
    if let Some(matching) = q.resource_version_match.as_deref() {
        if rv.is_empty() {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if q.continue_token.is_some() {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if matching != "Exact" && matching != "NotOlderThan" {
            errors.push(FieldError::not_supported(
                "resourceVersionMatch",
                format!("{matching:?}"),
                &["Exact", "NotOlderThan", ""],
            ));
        }
        if matching == "Exact" && rv == "0" {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if q.send_initial_events.is_some() {
        errors.push(FieldError::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    invalid("ListOptions", &errors)
}

/// `validateWatchOptions` with the WatchList feature on (as in Kubernetes 1.33).
/// `allowWatchBookmarks` is deliberately not required with `sendInitialEvents`: without it
/// the stream simply has no initial-events-end bookmark.
pub(crate) fn check_watch(q: &Query) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    let matching = q.resource_version_match.as_deref().unwrap_or("");
    if q.send_initial_events.is_some() && matching != "NotOlderThan" {
        errors.push(FieldError::forbidden(
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if !matching.is_empty() {
        if q.send_initial_events.is_none() {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if matching != "NotOlderThan" {
            errors.push(FieldError::not_supported(
                "resourceVersionMatch",
                format!("{matching:?}"),
                &["NotOlderThan"],
            ));
        }
        if q.continue_token.is_some() {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    invalid("ListOptions", &errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(raw: &str) -> Query {
        Query::parse(Some(raw)).expect("parses")
    }

    #[test]
    fn messages_match_apimachinery() {
        let err = check_write("CreateOptions", &query("dryRun=Some")).expect_err("refused");
        assert_eq!(
            err.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Some\"]: \
             supported values: \"All\""
        );
        let err = check_write("UpdateOptions", &query("fieldValidation=Loose&dryRun=All"))
            .expect_err("refused");
        assert_eq!(
            err.message,
            "UpdateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \
             \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
        );
        let err = check_patch(&query("force=false"), PatchType::Merge).expect_err("refused");
        assert_eq!(
            err.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified \
             for non-apply patch"
        );
        assert!(check_patch(&query("force=true&fieldManager=m"), PatchType::Apply).is_ok());
        assert_eq!(
            go_quote("a\u{1}b\"\n\u{200B}é"),
            "\"a\\x01b\\\"\\n\\u200bé\""
        );
        let err = check_watch(&query("sendInitialEvents=true&resourceVersionMatch=Exact"))
            .expect_err("refused");
        assert_eq!(
            err.message,
            "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: \
             sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, \
             resourceVersionMatch: Unsupported value: \"Exact\": supported values: \
             \"NotOlderThan\"]"
        );
        assert!(
            check_watch(&query(
                "sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            ))
            .is_ok()
        );
    }
}
