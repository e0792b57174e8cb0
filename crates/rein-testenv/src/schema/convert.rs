//! JSON values as CEL sees them: typed by the schema (`number` fields are doubles,
//! `date-time`/`date` strings timestamps, `duration` strings durations, `byte` strings bytes).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::node::Node;

/// JSON → CEL, typed by the schema where it says more than JSON does (`number` fields hold
/// doubles even when written as integers).
pub(crate) fn to_cel(value: &Value, node: Option<&Node>) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => {
            if node.is_some_and(|n| n.ty == "number") {
                cel::Value::Float(n.as_f64().unwrap_or_default())
            } else if let Some(i) = n.as_i64() {
                cel::Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                cel::Value::UInt(u)
            } else {
                cel::Value::Float(n.as_f64().unwrap_or_default())
            }
        }
        Value::String(s) => typed_string(s, node),
        Value::Array(items) => {
            let item = node.and_then(|n| n.items.as_deref());
            cel::Value::List(Arc::new(items.iter().map(|v| to_cel(v, item)).collect()))
        }
        Value::Object(map) => {
            let entries: HashMap<String, cel::Value> = map
                .iter()
                .map(|(k, v)| {
                    let sub = node.and_then(|n| n.properties.get(k).or(n.additional.as_deref()));
                    (k.clone(), to_cel(v, sub))
                })
                .collect();
            cel::Value::from(entries)
        }
    }
}

/// A string as Kubernetes' CEL types it by its `format`: `date-time` and `date` are
/// timestamps, `duration` a duration, `byte` bytes (a value that does not parse stays a
/// string; schema validation reports it).
fn typed_string(s: &str, node: Option<&Node>) -> cel::Value {
    let format = node
        .and_then(|n| n.raw.get("format"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let typed = match format {
        "date-time" | "datetime" => chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .map(cel::Value::Timestamp),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| cel::Value::Timestamp(t.and_utc().fixed_offset())),
        "duration" => go_duration(s).map(cel::Value::Duration),
        "byte" => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .ok()
                .map(|b| cel::Value::Bytes(Arc::new(b)))
        }
        _ => None,
    };
    typed.unwrap_or_else(|| cel::Value::String(Arc::new(s.to_string())))
}

/// A Go duration (`1h30m`, `-1.5s`, `250ms`).
fn go_duration(s: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    let mut nanos: f64 = 0.0;
    let mut any = false;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..number_end].parse().ok()?;
        let unit_rest = &rest[number_end..];
        let unit_end = unit_rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(unit_rest.len());
        let scale = match &unit_rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        nanos += number * scale;
        any = true;
        rest = &unit_rest[unit_end..];
    }
    if !any || !nanos.is_finite() || nanos.abs() > i64::MAX as f64 {
        return None;
    }
    let nanos = nanos as i64;
    Some(chrono::Duration::nanoseconds(if negative {
        -nanos
    } else {
        nanos
    }))
}
