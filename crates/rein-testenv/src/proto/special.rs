//! The well-known messages whose JSON form is not an object of their fields: times,
//! durations, quantities, int-or-strings and embedded raw JSON.

use serde_json::{Value, json};

use super::ProtoError;
use super::wire::{Reader, WireType};

/// The JSON form of a well-known message, or `None` for an ordinary one.
pub(crate) fn decode(name: &str, bytes: &[u8]) -> Result<Option<Value>, ProtoError> {
    let short = name.rsplit('.').next().unwrap_or(name);
    let value = match (name, short) {
        (_, "Time") if name.starts_with("apimachinery.") => time(bytes, false)?,
        (_, "MicroTime") if name.starts_with("apimachinery.") => time(bytes, true)?,
        ("apimachinery.pkg.apis.meta.v1.Duration", _) => {
            let fields = read_fields(bytes)?;
            json!(go_duration(fields.int(1)))
        }
        ("apimachinery.pkg.api.resource.Quantity", _) => json!(read_fields(bytes)?.text(1)?),
        ("apimachinery.pkg.util.intstr.IntOrString", _) => {
            let fields = read_fields(bytes)?;
            if fields.int(1) == 1 {
                json!(fields.text(3)?)
            } else {
                json!(fields.int(2) as i32)
            }
        }
        ("apimachinery.pkg.runtime.RawExtension" | "apimachinery.pkg.apis.meta.v1.FieldsV1", _)
        | (_, "JSON") => {
            let fields = read_fields(bytes)?;
            match fields.raw(1) {
                Some(raw) if !raw.is_empty() => {
                    serde_json::from_slice(raw).map_err(ProtoError::EmbeddedJson)?
                }
                _ => Value::Null,
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(value))
}

/// Standard base64, as Go's JSON encoder writes `[]byte`.
pub(crate) fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The scalar fields of a small message, by tag (last one wins, as in protobuf).
#[derive(Debug, Default)]
struct Fields<'a> {
    ints: Vec<(u32, u64)>,
    raws: Vec<(u32, &'a [u8])>,
}

impl<'a> Fields<'a> {
    fn int(&self, tag: u32) -> i64 {
        self.ints
            .iter()
            .rev()
            .find(|(t, _)| *t == tag)
            .map_or(0, |(_, v)| *v as i64)
    }

    fn raw(&self, tag: u32) -> Option<&'a [u8]> {
        self.raws
            .iter()
            .rev()
            .find(|(t, _)| *t == tag)
            .map(|(_, v)| *v)
    }

    fn text(&self, tag: u32) -> Result<String, ProtoError> {
        String::from_utf8(self.raw(tag).unwrap_or_default().to_vec()).map_err(ProtoError::Utf8)
    }
}

fn read_fields(bytes: &[u8]) -> Result<Fields<'_>, ProtoError> {
    let mut fields = Fields::default();
    let mut reader = Reader::new(bytes);
    while let Some((tag, wire)) = reader.key()? {
        match wire {
            WireType::Varint => fields.ints.push((tag, reader.varint()?)),
            WireType::Len => fields.raws.push((tag, reader.bytes()?)),
            other => reader.skip(other)?,
        }
    }
    Ok(fields)
}

/// `metav1.Time` (RFC 3339, seconds) or `metav1.MicroTime` (microseconds); zero is `null`.
fn time(bytes: &[u8], micro: bool) -> Result<Value, ProtoError> {
    let fields = read_fields(bytes)?;
    let seconds = fields.int(1);
    let nanos = fields.int(2) as i32;
    if seconds == 0 && nanos == 0 {
        return Ok(Value::Null);
    }
    let Ok(ts) = jiff::Timestamp::new(seconds, if micro { nanos } else { 0 }) else {
        return Ok(Value::Null);
    };
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S.%6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(json!(ts.strftime(format).to_string()))
}

/// A nanosecond count the way Go's `time.Duration.String` prints it (`1h2m3.5s`, `250ms`).
pub(crate) fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_string();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (unit, scale) = match n {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", fraction(n, scale));
    }
    let hours = n / 3_600_000_000_000;
    let minutes = (n / 60_000_000_000) % 60;
    let seconds = fraction(n % 60_000_000_000, 1_000_000_000);
    let mut out = sign.to_string();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{seconds}s"));
    out
}

/// `value / scale` with the fraction's trailing zeros trimmed.
fn fraction(value: u64, scale: u64) -> String {
    let whole = value / scale;
    let rest = value % scale;
    if rest == 0 {
        return whole.to_string();
    }
    let digits = scale.ilog10() as usize;
    let frac = format!("{rest:0digits$}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}
