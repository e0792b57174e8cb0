//! The canonical form of built-in objects: JSON as kube-apiserver's Go structs marshal it.
//!
//! `encoding/json` writes a struct's fields in declaration order (`kind`, `apiVersion`,
//! `metadata`, then the type's own fields), always writes a struct-valued field (`spec: {}`,
//! `status: {}`, a container's `resources: {}`), writes a zero `metav1.Time` as `null`
//! (`creationTimestamp: null` in templates, an Event's `firstTimestamp: null`), writes fields
//! without `omitempty` even when zero (an Event's `reportingComponent: ""`), and drops
//! `omitempty` fields holding their zero value (`finalizers: []`, `labels: {}`,
//! `paused: false`). A JSON `null` decodes to the zero value, so it is written as an absent
//! field would be.
//!
//! What each struct holds comes from `table.txt`, generated from the Go types of the
//! Kubernetes version rein serves (`generate.rs`). Objects of kinds the table does not know
//! (custom resources) are written as `serde_json` writes them, keys sorted, as kube-apiserver
//! writes unstructured objects. List items of built-in kinds carry no `kind`/`apiVersion`
//! (the server's typed lists do not set them); [`untype_list_item`] strips them.

#[cfg(test)]
mod generate;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

const TABLE: &str = include_str!("table.txt");

/// One JSON field of a Go struct.
#[derive(Debug)]
struct Field {
    name: &'static str,
    /// `omitempty` (or `omitzero`).
    omit: bool,
    /// How `encoding/json` treats it (see `generate.rs`): `s` string, `i` number, `b` bool,
    /// `p` pointer, `P` pointer to a struct, `S` struct, `a` slice, `m` map, `x` bytes, `t`
    /// `metav1.Time`/`MicroTime`, `q` Quantity, `n` IntOrString, `d` Duration, `r` raw JSON.
    shape: u8,
    /// The struct held (by value, pointer, slice element or map value), when it is one.
    def: Option<&'static str>,
}

fn table() -> &'static HashMap<&'static str, Vec<Field>> {
    static TYPES: OnceLock<HashMap<&'static str, Vec<Field>>> = OnceLock::new();
    TYPES.get_or_init(|| {
        let mut types = HashMap::new();
        let mut current: Option<(&'static str, Vec<Field>)> = None;
        for line in TABLE.lines() {
            if let Some(name) = line.strip_prefix("T ") {
                if let Some((n, fields)) = current.take() {
                    types.insert(n, fields);
                }
                current = Some((name, Vec::new()));
                continue;
            }
            let mut parts = line.split(' ');
            let (Some(name), Some(omit), Some(shape)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if let Some((_, fields)) = current.as_mut() {
                fields.push(Field {
                    name,
                    omit: omit == "o",
                    shape: shape.as_bytes().first().copied().unwrap_or(b'r'),
                    def: parts.next(),
                });
            }
        }
        if let Some((n, fields)) = current {
            types.insert(n, fields);
        }
        types
    })
}

/// The Go package holding a built-in group's types (`apps` for `apps`, `rbac` for
/// `rbac.authorization.k8s.io`); `None` for groups kube-apiserver does not build in.
fn package(group: &str) -> Option<&str> {
    match group {
        "" => Some("core"),
        "rbac.authorization.k8s.io" => Some("rbac"),
        "flowcontrol.apiserver.k8s.io" => Some("flowcontrol"),
        "internal.apiserver.k8s.io" => Some("apiserverinternal"),
        "meta.k8s.io" => Some("meta"),
        _ => {
            let first = group.split('.').next()?;
            (group == first || group.strip_prefix(first) == Some(".k8s.io")).then_some(first)
        }
    }
}

/// The table's name for the built-in type of (`api_version`, `kind`), if it has one.
fn definition(api_version: &str, kind: &str) -> Option<&'static str> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let types = table();
    let find = |pkg: &str| {
        types
            .get_key_value(format!("{pkg}/{version}.{kind}").as_str())
            .map(|(k, _)| *k)
    };
    find(package(group)?).or_else(|| {
        // `Status`, `Table`, discovery documents: meta/v1 kinds served as `v1`.
        matches!(api_version, "v1" | "meta.k8s.io/v1")
            .then(|| find("meta"))
            .flatten()
    })
}

/// `obj` serialised in canonical form (see the module docs).
pub(crate) fn to_vec(obj: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, obj);
    out
}

/// Rewrites a built-in object into what its canonical form decodes to (empty structs and
/// zero fields filled in, empty `omitempty` fields dropped), so a write compares, records
/// managedFields and validates against what will be stored; other objects stay as they are.
pub(crate) fn normalize(obj: &mut Value) {
    let text = |f: &str| obj.get(f).and_then(Value::as_str).unwrap_or_default();
    if definition(text("apiVersion"), text("kind")).is_none() {
        return;
    }
    // Canonical bytes of a `Value` always decode.
    if let Ok(v) = serde_json::from_slice(&to_vec(obj)) {
        *obj = v;
    }
}

/// Appends `obj` in canonical form.
pub(crate) fn write(out: &mut Vec<u8>, obj: &Value) {
    let text = |f: &str| obj.get(f).and_then(Value::as_str).unwrap_or_default();
    match definition(text("apiVersion"), text("kind")) {
        Some(def) => write_typed(out, def, obj),
        None => plain(out, obj),
    }
}

/// Drops the leading `kind` and `apiVersion` of the object written into `out` from `start`
/// when it is in canonical form, as kube-apiserver lists built-in kinds; a custom resource
/// (keys sorted, `apiVersion` first) keeps them.
pub(crate) fn untype_list_item(out: &mut Vec<u8>, start: usize) {
    if let Some(rest) = strip_type(&out[start..]) {
        let cut = out.len() - start - rest.len();
        out.drain(start + 1..start + cut);
    }
}

/// Appends `value` as the table's type `def` (e.g. `meta/v1.ListMeta`) marshals it.
pub(crate) fn write_as(out: &mut Vec<u8>, def: &str, value: &Value) {
    write_typed(out, def, value);
}

/// What follows `{"kind":"…","apiVersion":"…",` in `json` (the canonical form's start).
fn strip_type(json: &[u8]) -> Option<&[u8]> {
    let rest = json.strip_prefix(b"{\"kind\":\"")?;
    let rest = &rest[rest.iter().position(|b| *b == b'"')? + 1..];
    let rest = rest.strip_prefix(b",\"apiVersion\":\"")?;
    let rest = &rest[rest.iter().position(|b| *b == b'"')? + 1..];
    match rest.first()? {
        b',' => Some(&rest[1..]),
        b'}' => Some(rest),
        _ => None,
    }
}

fn plain(out: &mut Vec<u8>, value: &Value) {
    // Writing a `Value` into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

fn key(out: &mut Vec<u8>, first: &mut bool, name: &str) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    plain(out, &Value::String(name.to_string()));
    out.push(b':');
}

/// Appends `value` as the struct `def` marshals it.
fn write_typed(out: &mut Vec<u8>, def: &str, value: &Value) {
    let (Some(fields), Some(map)) = (table().get(def), value.as_object()) else {
        return plain(out, value);
    };
    out.push(b'{');
    let mut first = true;
    for field in fields {
        match map.get(field.name).filter(|v| !v.is_null()) {
            Some(v) if field.omit && is_zero(field.shape, v) => {}
            Some(v) => {
                key(out, &mut first, field.name);
                write_field(out, field, v);
            }
            None => {
                if let Some(zero) = absent(field) {
                    key(out, &mut first, field.name);
                    match zero {
                        Zero::Struct(def) => {
                            write_typed(out, def, &Value::Object(Default::default()))
                        }
                        Zero::Json(text) => out.extend_from_slice(text.as_bytes()),
                    }
                }
            }
        }
    }
    // Fields the table does not know (none for a decoded built-in), after the known ones.
    for (name, v) in map {
        if !fields.iter().any(|f| f.name == name) {
            key(out, &mut first, name);
            plain(out, v);
        }
    }
    out.push(b'}');
}

fn write_field(out: &mut Vec<u8>, field: &Field, value: &Value) {
    let Some(def) = field.def else {
        return plain(out, value);
    };
    match (field.shape, value) {
        (b'S' | b'P', _) => write_typed(out, def, value),
        (b'a', Value::Array(items)) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_typed(out, def, item);
            }
            out.push(b']');
        }
        (b'm', Value::Object(entries)) => {
            out.push(b'{');
            let mut first = true;
            for (name, v) in entries {
                key(out, &mut first, name);
                write_typed(out, def, v);
            }
            out.push(b'}');
        }
        _ => plain(out, value),
    }
}

/// Whether `value` is the Go zero value an `omitempty` field of this shape drops.
fn is_zero(shape: u8, value: &Value) -> bool {
    match (shape, value) {
        (b's' | b'x', Value::String(s)) => s.is_empty(),
        (b'i', Value::Number(n)) => n.as_f64() == Some(0.0),
        (b'b', Value::Bool(b)) => !b,
        (b'a', Value::Array(a)) => a.is_empty(),
        (b'm', Value::Object(m)) => m.is_empty(),
        _ => false,
    }
}

/// What an absent field is written as.
enum Zero {
    Struct(&'static str),
    Json(&'static str),
}

fn absent(field: &Field) -> Option<Zero> {
    Some(match field.shape {
        b'S' => Zero::Struct(field.def?),
        b't' => Zero::Json("null"),
        b'q' => Zero::Json("\"0\""),
        b'n' => Zero::Json("0"),
        b'd' => Zero::Json("\"0s\""),
        _ if field.omit => return None,
        b's' => Zero::Json("\"\""),
        b'i' => Zero::Json("0"),
        b'b' => Zero::Json("false"),
        _ => Zero::Json("null"),
    })
}
