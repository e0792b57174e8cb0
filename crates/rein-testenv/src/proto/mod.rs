//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), decoded to JSON.
//!
//! kubectl's typed clients (`kubectl create configmap|secret|deployment|namespace…`) send
//! protobuf. A body is the magic `k8s\0` and a `runtime.Unknown` whose `raw` field holds the
//! object's message. Decoding is generic: a wire-format reader (`wire.rs`) walks the message
//! with a field table (`table.txt`, generated once from k8s-pb's sources by `generate.rs`)
//! that gives each field's tag, JSON name, cardinality and type; the well-known types
//! (`Time`, `IntOrString`, `Quantity`, `RawExtension`, …) have their JSON forms in
//! `special.rs`. The result is the JSON object a JSON client would have sent.

mod error;
#[cfg(test)]
mod generate;
mod special;
mod table;
#[cfg(test)]
mod tests;
mod wire;

use serde_json::{Map, Value, json};

pub(crate) use error::ProtoError;
use table::{Card, Field, FieldKind, Message, Table};
use wire::{Reader, WireType};

/// The four bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8; 4] = b"k8s\0";

/// Whether `content_type` names the Kubernetes protobuf encoding.
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type
        .to_ascii_lowercase()
        .starts_with("application/vnd.kubernetes.protobuf")
}

/// Decodes a protobuf request body into the equivalent JSON object.
pub(crate) fn decode_body(body: &[u8]) -> Result<Value, ProtoError> {
    let Some(rest) = body.strip_prefix(MAGIC.as_slice()) else {
        return Err(ProtoError::Magic);
    };
    let unknown = decode_unknown(rest)?;
    let table = Table::get();
    let message = table
        .for_kind(&unknown.api_version, &unknown.kind)
        .ok_or_else(|| ProtoError::UnknownKind {
            api_version: unknown.api_version.clone(),
            kind: unknown.kind.clone(),
        })?;
    let mut obj = decode_message(table, message, &unknown.raw, 0)?;
    if let Value::Object(map) = &mut obj {
        map.insert("apiVersion".into(), json!(unknown.api_version));
        map.insert("kind".into(), json!(unknown.kind));
    }
    Ok(obj)
}

/// The envelope: `runtime.Unknown{typeMeta{apiVersion, kind}, raw, contentEncoding, contentType}`.
struct Unknown {
    api_version: String,
    kind: String,
    raw: Vec<u8>,
}

fn decode_unknown(bytes: &[u8]) -> Result<Unknown, ProtoError> {
    let mut out = Unknown {
        api_version: String::new(),
        kind: String::new(),
        raw: Vec::new(),
    };
    let mut reader = Reader::new(bytes);
    while let Some((tag, wire)) = reader.key()? {
        match (tag, wire) {
            (1, WireType::Len) => {
                let mut meta = Reader::new(reader.bytes()?);
                while let Some((tag, wire)) = meta.key()? {
                    match (tag, wire) {
                        (1, WireType::Len) => out.api_version = meta.string()?,
                        (2, WireType::Len) => out.kind = meta.string()?,
                        (_, wire) => meta.skip(wire)?,
                    }
                }
            }
            (2, WireType::Len) => out.raw = reader.bytes()?.to_vec(),
            (3, WireType::Len) => {
                let encoding = reader.string()?;
                if !encoding.is_empty() {
                    return Err(ProtoError::ContentEncoding(encoding));
                }
            }
            (_, wire) => reader.skip(wire)?,
        }
    }
    Ok(out)
}

/// The JSON name the table gives a Go struct embedded with `json:",inline"`: its fields
/// belong to the enclosing object.
const INLINE: &str = "-";

/// Messages nest at most this deep (a guard against hostile bodies, far beyond real objects).
const MAX_DEPTH: usize = 64;

fn decode_message(
    table: &Table,
    message: &Message,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, ProtoError> {
    if depth > MAX_DEPTH {
        return Err(ProtoError::TooDeep);
    }
    if let Some(value) = special::decode(&message.name, bytes)? {
        return Ok(value);
    }
    let mut out = Map::new();
    let mut reader = Reader::new(bytes);
    while let Some((tag, wire)) = reader.key()? {
        let Some(field) = message.field(tag) else {
            reader.skip(wire)?;
            continue;
        };
        match field.card {
            Card::Optional => {
                let value = decode_value(table, field, &mut reader, wire, depth)?;
                if field.json == INLINE {
                    if let Value::Object(embedded) = value {
                        out.extend(embedded);
                    }
                } else if !is_default(&value, field) {
                    out.insert(field.json.clone(), value);
                }
            }
            Card::Repeated => {
                let list = out
                    .entry(field.json.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(list) = list else {
                    continue;
                };
                if wire == WireType::Len && field.kind.is_packable() {
                    let mut packed = Reader::new(reader.bytes()?);
                    while !packed.is_empty() {
                        list.push(scalar(field, &mut packed, field.kind.wire_type())?);
                    }
                } else {
                    list.push(decode_value(table, field, &mut reader, wire, depth)?);
                }
            }
            Card::Map => {
                let (key, value) = decode_entry(table, field, reader.bytes()?, depth)?;
                let map = out
                    .entry(field.json.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(map) = map {
                    map.insert(key, value);
                }
            }
        }
    }
    Ok(Value::Object(out))
}

/// Go's JSON encoder leaves out zero scalars (`omitempty`) and a zero `Time` is `null`; the
/// protobuf encoder writes every non-pointer field, so the zeros are dropped here. The wire
/// cannot tell a pointer set to zero from a zero non-pointer, so the integer fields that are
/// pointers where zero means something (`replicas: 0` is not "unset") keep their zeros.
fn is_default(value: &Value, field: &Field) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => {
            n.as_f64() == Some(0.0) && !ZERO_MEANS_SOMETHING.contains(&field.json.as_str())
        }
        _ => false,
    }
}

/// Pointer integer fields of the common kinds whose explicit zero differs from unset.
const ZERO_MEANS_SOMETHING: &[&str] = &[
    "replicas",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "backoffLimit",
    "backoffLimitPerIndex",
    "completions",
    "parallelism",
    "ttlSecondsAfterFinished",
    "revisionHistoryLimit",
    "startingDeadlineSeconds",
    "successfulJobsHistoryLimit",
    "failedJobsHistoryLimit",
    "minReplicas",
    "priority",
    "partition",
];

fn decode_value(
    table: &Table,
    field: &Field,
    reader: &mut Reader<'_>,
    wire: WireType,
    depth: usize,
) -> Result<Value, ProtoError> {
    if field.kind != FieldKind::Message {
        return scalar(field, reader, wire);
    }
    if wire != WireType::Len {
        return Err(ProtoError::WireType {
            field: field.json.clone(),
        });
    }
    let bytes = reader.bytes()?;
    let name = field.message.as_deref().unwrap_or_default();
    let message = table
        .message(name)
        .ok_or_else(|| ProtoError::UnknownMessage(name.to_string()))?;
    decode_message(table, message, bytes, depth + 1)
}

fn scalar(field: &Field, reader: &mut Reader<'_>, wire: WireType) -> Result<Value, ProtoError> {
    if wire != field.kind.wire_type() {
        return Err(ProtoError::WireType {
            field: field.json.clone(),
        });
    }
    Ok(match field.kind {
        FieldKind::String => json!(reader.string()?),
        FieldKind::Bytes => json!(special::base64(reader.bytes()?)),
        FieldKind::Bool => json!(reader.varint()? != 0),
        // int32 values are sign-extended to 64 bits on the wire.
        FieldKind::Int32 => json!(reader.varint()? as i64 as i32),
        FieldKind::Int64 => json!(reader.varint()? as i64),
        FieldKind::Double => json!(f64::from_bits(reader.fixed64()?)),
        FieldKind::Message => Value::Null,
    })
}

/// One map entry: `key = 1` (a string), `value = 2`.
fn decode_entry(
    table: &Table,
    field: &Field,
    bytes: &[u8],
    depth: usize,
) -> Result<(String, Value), ProtoError> {
    let mut key = String::new();
    let mut value = None;
    let mut reader = Reader::new(bytes);
    while let Some((tag, wire)) = reader.key()? {
        match tag {
            1 => key = reader.string()?,
            2 => value = Some(decode_value(table, field, &mut reader, wire, depth)?),
            _ => reader.skip(wire)?,
        }
    }
    let value = match value {
        Some(v) => v,
        None => match field.kind {
            FieldKind::String | FieldKind::Bytes => json!(""),
            FieldKind::Message => json!({}),
            FieldKind::Bool => json!(false),
            _ => json!(0),
        },
    };
    Ok((key, value))
}
