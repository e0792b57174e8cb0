//! Field errors as apimachinery's `field.Error` prints them, and the 422 `Invalid` answer a
//! list of them becomes (`apierrors.NewInvalid`).

use serde_json::{Value, json};

use crate::resources::ResourceDef;
use crate::status::ApiError;

/// `field.ErrorType`: what kind of failure.
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
    /// `Duplicate value`.
    Duplicate,
    /// `Too long`.
    TooLong,
}

/// One validation failure: a field path, what is wrong, and the bad value as Go prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    kind: Kind,
    field: String,
    /// The bad value, already rendered as `ErrorBody` renders it (`"x"`, `-1`, JSON).
    value: String,
    detail: String,
}

impl FieldError {
    /// `field.Required(path, detail)`.
    pub(crate) fn required(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError::new(Kind::Required, field, String::new(), detail)
    }

    /// `field.Invalid(path, value, detail)`; the value is rendered as Go renders it.
    pub(crate) fn invalid(
        field: impl Into<String>,
        value: &Value,
        detail: impl Into<String>,
    ) -> FieldError {
        FieldError::new(Kind::Invalid, field, render(value), detail)
    }

    /// `field.Invalid` for a string value.
    pub(crate) fn invalid_str(
        field: impl Into<String>,
        value: &str,
        detail: impl Into<String>,
    ) -> FieldError {
        FieldError::new(Kind::Invalid, field, quote(value), detail)
    }

    /// `field.NotSupported(path, value, supported)`.
    pub(crate) fn not_supported(
        field: impl Into<String>,
        value: &str,
        supported: &[&str],
    ) -> FieldError {
        let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        let detail = if list.is_empty() {
            String::new()
        } else {
            format!("supported values: {}", list.join(", "))
        };
        FieldError::new(Kind::NotSupported, field, quote(value), detail)
    }

    /// `field.Forbidden(path, detail)`.
    pub(crate) fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError::new(Kind::Forbidden, field, String::new(), detail)
    }

    /// `field.Duplicate(path, value)`.
    pub(crate) fn duplicate(field: impl Into<String>, value: &Value) -> FieldError {
        FieldError::new(Kind::Duplicate, field, render(value), String::new())
    }

    /// `field.TooLong(path, _, max)`: `may not be more than <max> bytes`.
    pub(crate) fn too_long(field: impl Into<String>, max: usize) -> FieldError {
        FieldError::new(
            Kind::TooLong,
            field,
            String::new(),
            format!("may not be more than {max} bytes"),
        )
    }

    /// `ValidateImmutableField`: `Invalid value: <new>: field is immutable`.
    pub(crate) fn immutable(field: impl Into<String>, value: &Value) -> FieldError {
        FieldError::invalid(field, value, "field is immutable")
    }

    fn new(
        kind: Kind,
        field: impl Into<String>,
        value: String,
        detail: impl Into<String>,
    ) -> FieldError {
        FieldError {
            kind,
            field: field.into(),
            value,
            detail: detail.into(),
        }
    }

    /// The field path, as `spec.containers[0].image`.
    pub(crate) fn field(&self) -> &str {
        &self.field
    }

    /// The `StatusCause.reason`.
    pub(crate) fn reason(&self) -> &'static str {
        match self.kind {
            Kind::Required => "FieldValueRequired",
            Kind::Invalid => "FieldValueInvalid",
            Kind::NotSupported => "FieldValueNotSupported",
            Kind::Forbidden => "FieldValueForbidden",
            Kind::Duplicate => "FieldValueDuplicate",
            Kind::TooLong => "FieldValueTooLong",
        }
    }

    /// `ErrorBody()`: the message without the field path.
    pub(crate) fn body(&self) -> String {
        let mut s = match self.kind {
            Kind::Required => "Required value".to_string(),
            Kind::Forbidden => "Forbidden".to_string(),
            Kind::TooLong => "Too long".to_string(),
            Kind::Invalid => format!("Invalid value: {}", self.value),
            Kind::NotSupported => format!("Unsupported value: {}", self.value),
            Kind::Duplicate => format!("Duplicate value: {}", self.value),
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

/// A value as `field.Error` renders it: strings quoted, numbers and booleans bare, anything
/// else as JSON.
pub(crate) fn render(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        other => other.to_string(),
    }
}

/// A string quoted as Go's `%q` quotes it (close enough: JSON escapes).
pub(crate) fn quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// `apierrors.NewInvalid(<Kind>.<group>, name, errs)`, or `Ok` when there are none. The
/// aggregate message drops duplicate messages, as `utilerrors.NewAggregate` prints them.
pub(crate) fn invalid(
    def: &ResourceDef,
    name: &str,
    errors: &[FieldError],
) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    let mut messages: Vec<String> = Vec::new();
    for e in errors {
        let m = e.message();
        if !messages.contains(&m) {
            messages.push(m);
        }
    }
    let aggregate = match messages.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| json!({"reason": e.reason(), "message": e.body(), "field": e.field}))
        .collect();
    let qualified = if def.group.is_empty() {
        def.kind.clone()
    } else {
        format!("{}.{}", def.kind, def.group)
    };
    let mut details = json!({"name": name, "kind": def.kind, "causes": causes});
    if !def.group.is_empty() {
        details["group"] = json!(def.group);
    }
    Err(ApiError::new(
        422,
        "Invalid",
        format!("{qualified} {} is invalid: {aggregate}", quote(name)),
    )
    .with_details(details))
}

/// A field path under construction: `base.child`, `base[3]`, `base[key]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Path(String);

impl Path {
    /// A root path (`metadata`, `spec`).
    pub(crate) fn new(root: &str) -> Path {
        Path(root.to_string())
    }

    /// `path.child`.
    pub(crate) fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }

    /// `path[i]`.
    pub(crate) fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }

    /// `path[key]`.
    pub(crate) fn key(&self, key: &str) -> Path {
        Path(format!("{}[{key}]", self.0))
    }
}

impl From<&Path> for String {
    fn from(p: &Path) -> String {
        p.0.clone()
    }
}

impl From<Path> for String {
    fn from(p: Path) -> String {
        p.0
    }
}
