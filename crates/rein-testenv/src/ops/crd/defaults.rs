//! Defaulting of a CustomResourceDefinition as `apiextensions/v1/defaults.go` does it
//! (`names.singular`, `names.listKind`, `conversion`, a conversion webhook service's port;
//! printer columns have no defaults in v1), and the strategy's `status.storedVersions`.

use serde_json::{Map, Value, json};

/// Applies the v1 defaults to `crd` in place; anything of the wrong shape is left for
/// validation to report.
pub(crate) fn apply(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        default_names(names);
    }
    match spec.get_mut("conversion") {
        None | Some(Value::Null) => {
            spec.insert("conversion".into(), json!({"strategy": "None"}));
        }
        Some(conversion) => {
            if let Some(service) = conversion
                .pointer_mut("/webhook/clientConfig/service")
                .and_then(Value::as_object_mut)
                && service.get("port").is_none_or(Value::is_null)
            {
                service.insert("port".into(), json!(443));
            }
        }
    }
}

/// `singular` defaults to the lower-cased kind, `listKind` to `<kind>List`.
fn default_names(names: &mut Map<String, Value>) {
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let empty = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
    if empty(names.get("singular")) {
        names.insert("singular".into(), json!(kind.to_lowercase()));
    }
    if empty(names.get("listKind")) && !kind.is_empty() {
        names.insert("listKind".into(), json!(format!("{kind}List")));
    }
}

/// The storage version named in `spec.versions` (the first one marked), if any.
pub(crate) fn storage_version(crd: &Value) -> Option<String> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_string)
}

/// `status.storedVersions` as a list of strings.
pub(crate) fn stored_versions(crd: &Value) -> Vec<String> {
    crd.pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What the strategy's `PrepareForCreate`/`PrepareForUpdate` do to `status.storedVersions`:
/// the storage version is appended unless already listed.
pub(crate) fn record_storage_version(crd: &mut Value) {
    let Some(storage) = storage_version(crd) else {
        return;
    };
    let mut stored = stored_versions(crd);
    if stored.contains(&storage) {
        return;
    }
    stored.push(storage);
    if !crd.get("status").is_some_and(Value::is_object) {
        crd["status"] = json!({});
    }
    crd["status"]["storedVersions"] = json!(stored);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_conversion_are_defaulted() {
        let mut crd = json!({"spec": {"names": {"kind": "CronTab", "plural": "crontabs"}}});
        apply(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "crontab");
        assert_eq!(crd["spec"]["names"]["listKind"], "CronTabList");
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        let mut webhook = json!({"spec": {"conversion": {"strategy": "Webhook",
            "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}}});
        apply(&mut webhook);
        assert_eq!(
            webhook.pointer("/spec/conversion/webhook/clientConfig/service/port"),
            Some(&json!(443))
        );
    }
}
