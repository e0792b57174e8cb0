//! Field errors as kube-apiserver words them (`field.Error`): the cause type, the field path
//! and the `ErrorBody` message (`Invalid value: "x": detail`, `Required value`, ...).

use serde_json::Value;

/// One failing field: becomes one `metav1.StatusCause`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cause {
    /// `metav1.CauseType`, e.g. `FieldValueInvalid`.
    pub(crate) reason: &'static str,
    /// The field path, e.g. `spec.items[0].name`.
    pub(crate) field: String,
    /// The error body, e.g. `Required value`.
    pub(crate) message: String,
    /// The bad value as printed in the body, when the body shows one.
    pub(crate) value: Option<String>,
    /// The detail after the value.
    pub(crate) detail: String,
}

impl Cause {
    /// `field.Invalid`: the bad value (rendered) and a detail.
    pub(crate) fn invalid(field: &str, value: &Value, detail: &str) -> Cause {
        Cause::with_value(
            "FieldValueInvalid",
            "Invalid value",
            field,
            Some(value),
            detail,
        )
    }

    /// `field.Invalid` with a value already printed (Go structs, `%#v`).
    pub(crate) fn invalid_printed(field: &str, printed: &str, detail: &str) -> Cause {
        let mut cause = Cause::invalid_omitted(field, detail);
        cause.message = format!("Invalid value: {printed}: {detail}");
        cause.value = Some(printed.to_string());
        cause
    }

    /// `field.Invalid` whose value is omitted (objects and arrays in CEL rule failures).
    pub(crate) fn invalid_omitted(field: &str, detail: &str) -> Cause {
        Cause::with_value("FieldValueInvalid", "Invalid value", field, None, detail)
    }

    /// `field.TypeInvalid`.
    pub(crate) fn type_invalid(field: &str, value: &Value, detail: &str) -> Cause {
        Cause::with_value(
            "FieldValueTypeInvalid",
            "Invalid value",
            field,
            Some(value),
            detail,
        )
    }

    /// `field.Required`.
    pub(crate) fn required(field: &str, detail: &str) -> Cause {
        Cause::without_value("FieldValueRequired", "Required value", field, detail)
    }

    /// `field.Forbidden`.
    pub(crate) fn forbidden(field: &str, detail: &str) -> Cause {
        Cause::without_value("FieldValueForbidden", "Forbidden", field, detail)
    }

    /// `field.Duplicate`.
    pub(crate) fn duplicate(field: &str, value: &Value) -> Cause {
        Cause::with_value(
            "FieldValueDuplicate",
            "Duplicate value",
            field,
            Some(value),
            "",
        )
    }

    /// `field.Duplicate` with the value omitted (objects and lists in CEL rule failures).
    pub(crate) fn duplicate_omitted(field: &str) -> Cause {
        Cause::with_value("FieldValueDuplicate", "Duplicate value", field, None, "")
    }

    /// `field.NotSupported`: `Unsupported value: "x": supported values: "a", "b"`.
    pub(crate) fn not_supported(field: &str, value: &Value, supported: &[String]) -> Cause {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Cause::with_value(
            "FieldValueNotSupported",
            "Unsupported value",
            field,
            Some(value),
            &detail,
        )
    }

    /// `field.TooLong` (the value is omitted; the limit is worded in bytes, as
    /// apiextensions-apiserver words `maxLength`).
    pub(crate) fn too_long(field: &str, max: i64) -> Cause {
        Cause::without_value(
            "FieldValueTooLong",
            "Too long",
            field,
            &format!("may not be more than {max} bytes"),
        )
    }

    /// `field.TooMany`: `Too many: 4: must have at most 3 items`.
    pub(crate) fn too_many(field: &str, actual: i64, max: i64) -> Cause {
        Cause::with_value(
            "FieldValueTooMany",
            "Too many",
            field,
            Some(&Value::from(actual)),
            &format!("must have at most {max} items"),
        )
    }

    /// `field.InternalError`.
    pub(crate) fn internal(field: &str, detail: &str) -> Cause {
        Cause::without_value("InternalError", "Internal error", field, detail)
    }

    /// `field: message`, as `field.Error.Error()` prints it.
    pub(crate) fn to_error_string(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }

    fn with_value(
        reason: &'static str,
        kind: &str,
        field: &str,
        value: Option<&Value>,
        detail: &str,
    ) -> Cause {
        let value = value.map(render_value);
        let mut message = match &value {
            Some(v) => format!("{kind}: {v}"),
            None => kind.to_string(),
        };
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        Cause {
            reason,
            field: field.to_string(),
            message,
            value,
            detail: detail.to_string(),
        }
    }

    fn without_value(reason: &'static str, kind: &str, field: &str, detail: &str) -> Cause {
        Cause::with_value(reason, kind, field, None, detail)
    }
}

/// A bad value as `field.Error` prints it: strings quoted, numbers and booleans bare, a nil
/// value as `"null"`, lists and maps in Go syntax (`%#v` of the decoded JSON).
pub(crate) fn render_value(value: &Value) -> String {
    match value {
        Value::Null => go_quote("null"),
        Value::String(s) => go_quote(s),
        Value::Number(n) => go_number(n),
        Value::Bool(b) => b.to_string(),
        complex => go_syntax(complex),
    }
}

/// Go's `%#v` of a decoded JSON value.
fn go_syntax(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_string(),
        Value::String(s) => go_quote(s),
        Value::Number(n) => go_number(n),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(go_syntax).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_syntax(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

/// Go's `%q` for the strings kube-apiserver prints (JSON escaping is the same for them).
pub(crate) fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Go's `%v` of a JSON number: integers bare, integral floats without a fraction.
pub(crate) fn go_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    go_float(n.as_f64().unwrap_or_default())
}

/// Go's `%v` of a float64.
pub(crate) fn go_float(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

/// The path of property `name` under `parent` (`spec` + `name` → `spec.name`).
pub(crate) fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// The path of item `index` under `parent` (`spec.items[0]`).
pub(crate) fn index(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// The path of map key `key` under `parent` as `field.Path.Key` prints it (`spec.labels[a]`).
pub(crate) fn key(parent: &str, key: &str) -> String {
    format!("{parent}[{key}]")
}
