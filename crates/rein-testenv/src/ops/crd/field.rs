//! Field errors as apimachinery's `field.Error` prints them, and the 422 `Invalid` answer
//! built from a list of them (`apierrors.NewInvalid`).

use serde_json::{Value, json};

use crate::status::ApiError;

/// The kinds of `field.ErrorType` the CRD validation uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `Required value`.
    Required,
    /// `Invalid value`.
    Invalid,
    /// `Unsupported value`.
    NotSupported,
    /// `Forbidden`.
    Forbidden,
}

/// One validation failure: a field path, what is wrong, and the bad value as Go prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    /// What kind of failure.
    pub(crate) kind: Kind,
    /// The field path, as `spec.versions[0].name`.
    pub(crate) field: String,
    /// The bad value, already rendered (`"x"`, `[]string{"v1"}`); unused for Required and
    /// Forbidden.
    pub(crate) value: String,
    /// The detail text.
    pub(crate) detail: String,
}

impl FieldError {
    /// `field.Required(path, detail)`.
    pub(crate) fn required(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError {
            kind: Kind::Required,
            field: field.into(),
            value: String::new(),
            detail: detail.into(),
        }
    }

    /// `field.Invalid(path, value, detail)` with an already rendered value.
    pub(crate) fn invalid(
        field: impl Into<String>,
        value: impl Into<String>,
        detail: impl Into<String>,
    ) -> FieldError {
        FieldError {
            kind: Kind::Invalid,
            field: field.into(),
            value: value.into(),
            detail: detail.into(),
        }
    }

    /// `field.Invalid` for a string value.
    pub(crate) fn invalid_str(
        field: impl Into<String>,
        value: &str,
        detail: impl Into<String>,
    ) -> FieldError {
        FieldError::invalid(field, quote(value), detail)
    }

    /// `field.NotSupported(path, value, supported)`.
    pub(crate) fn not_supported(
        field: impl Into<String>,
        value: &str,
        supported: &[&str],
    ) -> FieldError {
        let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        FieldError {
            kind: Kind::NotSupported,
            field: field.into(),
            value: quote(value),
            detail: format!("supported values: {}", list.join(", ")),
        }
    }

    /// `field.Forbidden(path, detail)`.
    pub(crate) fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError {
            kind: Kind::Forbidden,
            field: field.into(),
            value: String::new(),
            detail: detail.into(),
        }
    }

    /// The `StatusCause.reason`.
    pub(crate) fn reason(&self) -> &'static str {
        match self.kind {
            Kind::Required => "FieldValueRequired",
            Kind::Invalid => "FieldValueInvalid",
            Kind::NotSupported => "FieldValueNotSupported",
            Kind::Forbidden => "FieldValueForbidden",
        }
    }

    /// `ErrorBody()`: the message without the field path.
    pub(crate) fn body(&self) -> String {
        let mut s = match self.kind {
            Kind::Required => "Required value".to_string(),
            Kind::Forbidden => "Forbidden".to_string(),
            Kind::Invalid => format!("Invalid value: {}", self.value),
            Kind::NotSupported => format!("Unsupported value: {}", self.value),
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// `Error()`: `field: body`.
    pub(crate) fn message(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }
}

/// Go's `%q` of a string (JSON escaping is close enough for the names validated here).
pub(crate) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Go's `%#v` of a `[]string` (`[]string(nil)` when empty).
pub(crate) fn string_slice(items: &[String]) -> String {
    if items.is_empty() {
        return "[]string(nil)".to_string();
    }
    let quoted: Vec<String> = items.iter().map(|s| quote(s)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// The 422 answer for `errors` on the object `name` of kind `kind` in `group`, worded as
/// `apierrors.NewInvalid`: one error is printed as it is, several as `[a, b]` (duplicate
/// messages once), and every error is a cause.
pub(crate) fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> ApiError {
    let mut messages: Vec<String> = Vec::new();
    for e in errors {
        let m = e.message();
        if !messages.contains(&m) {
            messages.push(m);
        }
    }
    let aggregate = if messages.len() == 1 {
        messages.concat()
    } else {
        format!("[{}]", messages.join(", "))
    };
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| json!({"reason": e.reason(), "message": e.body(), "field": e.field}))
        .collect();
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    ApiError::new(
        422,
        "Invalid",
        format!("{qualified} \"{name}\" is invalid: {aggregate}"),
    )
    .with_details(json!({"name": name, "group": group, "kind": kind, "causes": causes}))
}

/// `IsDNS1035Label`: the problems of `s` as a DNS-1035 label.
pub(crate) fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !ok {
        errs.push(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start \
             with an alphabetic character, and end with an alphanumeric character (e.g. \
             'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                .to_string(),
        );
    }
    errs
}

/// `IsDNS1123Subdomain`: the problems of `s` as a DNS subdomain.
pub(crate) fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let label = |l: &str| {
        let b = l.as_bytes();
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty()
            && alnum(&b[0])
            && alnum(&b[b.len() - 1])
            && b.iter().all(|c| alnum(c) || *c == b'-')
    };
    if !s.split('.').all(label) {
        errs.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .to_string(),
        );
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_read_like_apimachinery() {
        assert_eq!(
            FieldError::required("spec.group", "").message(),
            "spec.group: Required value"
        );
        assert_eq!(
            FieldError::not_supported("spec.scope", "Global", &["Cluster", "Namespaced"]).body(),
            "Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""
        );
        assert_eq!(string_slice(&[]), "[]string(nil)");
        assert_eq!(string_slice(&["v1".into()]), "[]string{\"v1\"}");
        assert!(dns1035_label("v1").is_empty());
        assert!(!dns1035_label("1v").is_empty());
        assert!(dns1123_subdomain("stable.example.com").is_empty());
        assert!(!dns1123_subdomain("Stable.example.com").is_empty());
    }
}
