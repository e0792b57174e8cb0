//! The type check of a write, as kube-apiserver's JSON decoder does it into the Go struct:
//! the first value of the wrong JSON type answers Go's `json: cannot unmarshal <what> into Go
//! struct field <Struct>.<path> of type <type>`; unknown fields are collected (with the paths
//! a strict decode reports) and dropped, as decoding into a struct drops them. Times and
//! quantities are rewritten as the Go types marshal them again: `metav1.Time` in UTC to the
//! second, `MicroTime` to the microsecond, quantities in canonical form (`1024Mi` as `1Gi`).

use serde_json::{Map, Value};

/// What decoding `obj` found: the unknown fields (already removed), or the decoder's error.
pub(crate) fn check(
    root: &str,
    definitions: &Map<String, Value>,
    obj: &mut Value,
) -> Result<Vec<String>, String> {
    let Some(schema) = definitions.get(root) else {
        return Ok(Vec::new());
    };
    let mut walker = Walker {
        definitions,
        unknown: Vec::new(),
        fields: Vec::new(),
    };
    walker.walk(schema, Some(root), obj, "", struct_name(root))?;
    Ok(walker.unknown)
}

const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const QUANTITY_ERROR: &str = "quantities must match the regular expression \
                              '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

#[derive(Debug)]
struct Walker<'a> {
    definitions: &'a Map<String, Value>,
    unknown: Vec<String>,
    /// Go's `errorContext.FieldStack`: the JSON names of the struct fields entered.
    fields: Vec<String>,
}

/// Follows `$ref` (and a single-element `allOf` wrapping one): the schema and its name.
fn resolve<'s>(
    definitions: &'s Map<String, Value>,
    mut schema: &'s Value,
    mut name: Option<&'s str>,
) -> (&'s Value, Option<&'s str>) {
    for _ in 0..8 {
        let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
            match schema
                .get("allOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
            {
                Some([only]) => only.get("$ref").and_then(Value::as_str),
                _ => None,
            }
        });
        let Some(target) = reference.and_then(|r| r.rsplit('/').next()) else {
            break;
        };
        match definitions.get_key_value(target) {
            Some((key, found)) => {
                schema = found;
                name = Some(key.as_str());
            }
            None => break,
        }
    }
    (schema, name)
}

/// `DeploymentSpec` for `io.k8s.api.apps.v1.DeploymentSpec` (Go's `Type.Name()`).
fn struct_name(definition: &str) -> &str {
    definition.rsplit('.').next().unwrap_or(definition)
}

/// `v1.DeploymentSpec` (Go's `Type.String()`: package name and type name).
fn qualified(definition: &str) -> String {
    let mut parts = definition.rsplit('.');
    let name = parts.next().unwrap_or(definition);
    match parts.next() {
        Some(package) => format!("{package}.{name}"),
        None => name.to_string(),
    }
}

/// The JSON kind Go names in a type error.
fn json_kind(value: &Value) -> String {
    match value {
        Value::String(_) => "string".into(),
        Value::Number(_) => "number".into(),
        Value::Bool(_) => "bool".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        Value::Null => "null".into(),
    }
}

impl Walker<'_> {
    /// The Go type a schema decodes into, as `reflect.Type.String()` prints it.
    fn go_type(&self, schema: &Value, name: Option<&str>) -> String {
        let (schema, name) = resolve(self.definitions, schema, name);
        if name == Some(INT_OR_STRING) {
            return "intstr.IntOrString".into();
        }
        let format = schema.get("format").and_then(Value::as_str);
        match schema.get("type").and_then(Value::as_str) {
            Some("integer") => format.unwrap_or("int").into(),
            Some("number") => "float64".into(),
            Some("boolean") => "bool".into(),
            Some("string") if format == Some("byte") => "[]uint8".into(),
            Some("string") => match name {
                Some(n) if n != QUANTITY && !n.ends_with("Time") => qualified(n),
                _ => "string".into(),
            },
            Some("array") => match schema.get("items") {
                Some(items) => format!("[]{}", self.go_type(items, None)),
                None => "[]interface {}".into(),
            },
            _ => match (name, schema.get("additionalProperties")) {
                (Some(n), _) => qualified(n),
                (None, Some(additional @ Value::Object(_))) => {
                    format!("map[string]{}", self.go_type(additional, None))
                }
                _ => "map[string]interface {}".into(),
            },
        }
    }

    /// Go's `UnmarshalTypeError` text for `what` (`string`, `number 1.5`) into `schema`.
    fn type_error(&self, what: String, schema: &Value, name: Option<&str>, strukt: &str) -> String {
        let ty = self.go_type(schema, name);
        if self.fields.is_empty() {
            format!("json: cannot unmarshal {what} into Go value of type {ty}")
        } else {
            format!(
                "json: cannot unmarshal {what} into Go struct field {strukt}.{} of type {ty}",
                self.fields.join(".")
            )
        }
    }

    /// Checks `value` against `schema`; `path` is the strict-decoding path, `strukt` the Go
    /// struct the innermost field belongs to.
    fn walk(
        &mut self,
        schema: &Value,
        name: Option<&str>,
        value: &mut Value,
        path: &str,
        strukt: &str,
    ) -> Result<(), String> {
        let (schema, name) = resolve(self.definitions, schema, name);
        if value.is_null() {
            return Ok(());
        }
        if name == Some(INT_OR_STRING) {
            return match value {
                Value::String(_) => Ok(()),
                Value::Number(n) if n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()) => Ok(()),
                Value::Number(n) => {
                    Err(self.type_error(format!("number {n}"), &int32(), None, strukt))
                }
                other => Err(self.type_error(json_kind(other), &int32(), None, strukt)),
            };
        }
        if name == Some(QUANTITY) {
            // `Quantity.UnmarshalJSON` takes a string or a bare number, and it marshals back in
            // canonical form: `1024Mi` is stored as `1Gi`, `0.5` as `500m`.
            let text = match value {
                Value::Number(n) => n.to_string(),
                Value::String(s) if is_quantity(s.trim()) => s.trim().to_string(),
                _ => return Err(QUANTITY_ERROR.to_string()),
            };
            if let Ok(quantity) = crate::quantity::Quantity::parse(&text) {
                *value = Value::String(quantity.canonical());
            }
            return Ok(());
        }
        let kind = schema.get("type").and_then(Value::as_str);
        let format = schema.get("format").and_then(Value::as_str);
        if kind == Some("object")
            && schema.get("properties").is_none()
            && schema.get("additionalProperties").is_none()
        {
            // Free-form JSON (`apiextensions/v1.JSON`, `RawExtension`, `FieldsV1`): their
            // unmarshallers take any value.
            return Ok(());
        }
        match (kind, &mut *value) {
            (Some("string"), Value::String(s)) => match format {
                Some("byte") => base64_problem(s).map_or(Ok(()), Err),
                Some("date-time") => {
                    let micro = name.is_some_and(|n| n.ends_with("MicroTime"));
                    let problem = time_problem(s)
                        .or_else(|| if micro { micro_time_problem(s) } else { None });
                    match problem {
                        Some(problem) => Err(problem),
                        None => {
                            if let Some(canonical) = canonical_time(s, micro) {
                                *s = canonical;
                            }
                            Ok(())
                        }
                    }
                }
                _ => Ok(()),
            },
            (Some("boolean"), Value::Bool(_)) | (Some("number"), Value::Number(_)) => Ok(()),
            (Some("integer"), Value::Number(n)) => {
                let fits = match format {
                    Some("int32") => n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
                    _ => n.as_i64().is_some(),
                };
                if fits {
                    Ok(())
                } else {
                    Err(self.type_error(format!("number {n}"), schema, name, strukt))
                }
            }
            (Some("array"), Value::Array(items)) => {
                let Some(item_schema) = schema.get("items") else {
                    return Ok(());
                };
                for (i, item) in items.iter_mut().enumerate() {
                    self.walk(item_schema, None, item, &format!("{path}[{i}]"), strukt)?;
                }
                Ok(())
            }
            (Some("object") | None, Value::Object(fields)) => {
                self.object(schema, name, fields, path, strukt)
            }
            (None, _) if schema.get("properties").is_none() => Ok(()),
            (_, other) => Err(self.type_error(json_kind(other), schema, name, strukt)),
        }
    }

    fn object(
        &mut self,
        schema: &Value,
        name: Option<&str>,
        fields: &mut Map<String, Value>,
        path: &str,
        strukt: &str,
    ) -> Result<(), String> {
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        if properties.is_none() {
            if let Some(additional @ Value::Object(_)) = additional {
                for (key, child) in fields.iter_mut() {
                    self.walk(additional, None, child, &join(path, key), strukt)?;
                }
            }
            return Ok(());
        }
        let inner = name.map_or(strukt, struct_name);
        let mut unknown = Vec::new();
        for (key, child) in fields.iter_mut() {
            let Some(child_schema) = properties.and_then(|p| p.get(key)) else {
                // Reported in document order, as the strict decoder finds them.
                self.unknown.push(join(path, key));
                unknown.push(key.clone());
                continue;
            };
            self.fields.push(key.clone());
            let result = self.walk(child_schema, None, child, &join(path, key), inner);
            self.fields.pop();
            result?;
        }
        for key in unknown {
            fields.remove(&key);
        }
        Ok(())
    }
}

fn int32() -> Value {
    serde_json::json!({"type": "integer", "format": "int32"})
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Go's `base64.StdEncoding` decode error (`illegal base64 data at input byte N`), which
/// skips `\r` and `\n` and requires padding.
fn base64_problem(s: &str) -> Option<String> {
    let bytes: Vec<(usize, u8)> = s
        .bytes()
        .enumerate()
        .filter(|(_, b)| *b != b'\r' && *b != b'\n')
        .collect();
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let bad = |at: usize| Some(format!("illegal base64 data at input byte {at}"));
    let mut padding = 0;
    for (n, (at, b)) in bytes.iter().enumerate() {
        if *b == b'=' {
            // Padding may only end the last quantum, one or two characters of it.
            if n % 4 < 2 {
                return bad(*at);
            }
            padding += 1;
            continue;
        }
        if padding > 0 || !alphabet(*b) {
            return bad(*at);
        }
    }
    let rest = bytes.len() % 4;
    if rest != 0 {
        let start = bytes.len() - rest;
        return bad(bytes.get(start).map_or(s.len(), |(at, _)| *at));
    }
    None
}

/// `metav1.Time`'s RFC 3339 parse error, as Go's `time.Parse` words it for a value that does
/// not start like a date.
fn time_problem(s: &str) -> Option<String> {
    if s.is_empty() || s.parse::<jiff::Timestamp>().is_ok() {
        return None;
    }
    let quoted = super::field::quote(s);
    Some(format!(
        "parsing time {quoted} as \"2006-01-02T15:04:05Z07:00\": cannot parse {quoted} as \"2006\""
    ))
}

/// `metav1.MicroTime`'s parse error for an RFC 3339 time without exactly six fractional
/// digits: it parses with the layout `2006-01-02T15:04:05.000000Z07:00`, whose `.000000` takes
/// a period and six digits, no fewer (`…:05Z` and `…:05.5Z` are refused) and no more.
fn micro_time_problem(s: &str) -> Option<String> {
    const LAYOUT: &str = "\"2006-01-02T15:04:05.000000Z07:00\"";
    let rest = s.get(19..)?;
    let fraction = rest
        .strip_prefix('.')
        .map(|f| f.bytes().take_while(u8::is_ascii_digit).count());
    let quoted = super::field::quote(s);
    match fraction {
        Some(6) => None,
        Some(digits) if digits > 6 => {
            let extra = super::field::quote(&rest[7..]);
            Some(format!(
                "parsing time {quoted} as {LAYOUT}: cannot parse {extra} as \"Z07:00\""
            ))
        }
        _ => Some(format!(
            "parsing time {quoted} as {LAYOUT}: cannot parse {} as \".000000\"",
            super::field::quote(rest)
        )),
    }
}

/// A valid time as Go marshals it back: `metav1.Time` as RFC 3339 in UTC, fractions cut
/// (`2006-01-02T15:04:05Z`); `MicroTime` with six fractional digits. `None` for the empty
/// string.
fn canonical_time(s: &str, micro: bool) -> Option<String> {
    let at = s.parse::<jiff::Timestamp>().ok()?;
    let layout = if micro {
        "%Y-%m-%dT%H:%M:%S.%6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Some(at.strftime(layout).to_string())
}

/// `^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$`.
fn is_quantity(s: &str) -> bool {
    let rest = s.strip_prefix(['+', '-']).unwrap_or(s);
    let number_len = rest
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b'.')
        .count();
    if number_len == 0 {
        return false;
    }
    let suffix = &rest[number_len..];
    let letters = suffix
        .bytes()
        .take_while(|b| b"eEinumkKMGTP".contains(b))
        .count();
    let exponent = &suffix[letters..];
    let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    exponent.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_errors_name_the_byte_go_names() {
        assert_eq!(base64_problem("aGVsbG8="), None);
        assert_eq!(base64_problem("aGVs\nbG8="), None);
        assert_eq!(
            base64_problem("not base64!").as_deref(),
            Some("illegal base64 data at input byte 3")
        );
        assert_eq!(
            base64_problem("abc").as_deref(),
            Some("illegal base64 data at input byte 0")
        );
    }

    #[test]
    fn times_are_written_as_go_marshals_them() {
        assert_eq!(
            canonical_time("2024-05-01T10:11:12.987+02:00", false).as_deref(),
            Some("2024-05-01T08:11:12Z")
        );
        assert_eq!(
            canonical_time("2024-05-01T10:11:12.5Z", true).as_deref(),
            Some("2024-05-01T10:11:12.500000Z")
        );
        assert_eq!(canonical_time("", false), None);
    }

    #[test]
    fn quantities_follow_the_regular_expression() {
        for ok in ["1", "100m", "1Gi", "1.5", "+2e3", "1E"] {
            assert!(is_quantity(ok), "{ok}");
        }
        for bad in ["", "one", "1 Gi", "Gi", "1Gi-x"] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }

    #[test]
    fn go_type_names() {
        assert_eq!(
            qualified("io.k8s.api.apps.v1.DeploymentSpec"),
            "v1.DeploymentSpec"
        );
        assert_eq!(
            struct_name("io.k8s.api.apps.v1.DeploymentSpec"),
            "DeploymentSpec"
        );
    }
}
