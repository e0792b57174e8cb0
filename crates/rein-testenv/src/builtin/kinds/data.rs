//! ConfigMaps and Secrets: keys, the 1 MiB limit on their data, `immutable` objects, a Secret's
//! `type` that never changes and the keys its type requires.

use serde_json::Value;

use crate::builtin::field::{FieldError, Path};
use crate::builtin::names;

/// The most bytes of data a ConfigMap or Secret may hold (`core.MaxSecretSize`, 1 MiB).
pub(crate) const MAX_DATA_SIZE: usize = 1024 * 1024;

/// `ValidateConfigMap` / `ValidateConfigMapUpdate`.
pub(crate) fn config_map(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let mut total = 0;
    total += keys(obj.get("data"), &Path::new("data"), false, errs);
    total += keys(obj.get("binaryData"), &Path::new("binaryData"), true, errs);
    if let (Some(Value::Object(data)), Some(Value::Object(binary))) =
        (obj.get("data"), obj.get("binaryData"))
    {
        for key in binary.keys().filter(|k| data.contains_key(*k)) {
            errs.push(FieldError::invalid_str(
                Path::new("binaryData").key(key),
                key,
                "duplicate key in both data and binaryData",
            ));
        }
    }
    if total > MAX_DATA_SIZE {
        errs.push(FieldError::too_long("[]", MAX_DATA_SIZE));
    }
    if let Some(old) = old {
        immutable_data(obj, old, &["data", "binaryData"], errs);
    }
}

/// `ValidateSecret` / `ValidateSecretUpdate`.
pub(crate) fn secret(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let total = keys(obj.get("data"), &Path::new("data"), true, errs);
    if total > MAX_DATA_SIZE {
        errs.push(FieldError::too_long("data", MAX_DATA_SIZE));
    }
    let has = |key: &str| {
        obj.pointer(&format!("/data/{}", key.replace('/', "~1")))
            .is_some()
    };
    let kind = super::text(obj, "/type");
    let required: &[&str] = match kind {
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/basic-auth" | "kubernetes.io/ssh-auth" => &[],
        _ => &[],
    };
    for key in required {
        if !has(key) {
            errs.push(FieldError::required(Path::new("data").key(key), ""));
        }
    }
    if kind == "kubernetes.io/ssh-auth" && !has("ssh-privatekey") {
        errs.push(FieldError::required(
            Path::new("data").key("ssh-privatekey"),
            "",
        ));
    }
    if kind == "kubernetes.io/service-account-token"
        && super::text(
            obj,
            "/metadata/annotations/kubernetes.io~1service-account.name",
        )
        .is_empty()
    {
        errs.push(FieldError::required(
            "metadata.annotations[kubernetes.io/service-account.name]",
            "",
        ));
    }
    if let Some(old) = old {
        let old_kind = super::text(old, "/type");
        if kind != old_kind {
            errs.push(FieldError::immutable("type", &Value::from(kind)));
        }
        immutable_data(obj, old, &["data"], errs);
    }
}

/// Validates the keys of a data map; answers the total size of its values (decoded, for
/// base64 maps).
fn keys(map: Option<&Value>, path: &Path, base64: bool, errs: &mut Vec<FieldError>) -> usize {
    let Some(Value::Object(map)) = map else {
        return 0;
    };
    let mut total = 0;
    for (key, value) in map {
        for msg in names::config_map_key(key) {
            errs.push(FieldError::invalid_str(path.key(key), key, msg));
        }
        let text = value.as_str().unwrap_or_default();
        total += if base64 {
            let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
            (text.len() / 4 * 3).saturating_sub(padding)
        } else {
            text.len()
        };
    }
    total
}

/// An `immutable: true` object keeps its data, and stays immutable.
fn immutable_data(obj: &Value, old: &Value, fields: &[&str], errs: &mut Vec<FieldError>) {
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    if obj.get("immutable").and_then(Value::as_bool) != Some(true) {
        errs.push(FieldError::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
    for field in fields {
        let empty = |v: Option<&Value>| {
            v.is_none_or(|v| v.is_null() || v.as_object().is_some_and(|m| m.is_empty()))
        };
        let (new, before) = (obj.get(*field), old.get(*field));
        if new != before && !(empty(new) && empty(before)) {
            errs.push(FieldError::forbidden(
                *field,
                "field is immutable when `immutable` is set",
            ));
        }
    }
}
