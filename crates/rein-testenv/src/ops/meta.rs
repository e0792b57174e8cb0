//! Object metadata helpers: timestamps, uids, generated names and name validation.

use rand::Rng;
use serde_json::{Map, Value};

use crate::resources::ResourceDef;
use crate::status::ApiError;

/// The current time as kube-apiserver writes it (`2024-01-02T03:04:05Z`).
pub(crate) fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A random (version 4) UUID.
pub(crate) fn new_uid() -> String {
    let mut b: [u8; 16] = rand::rng().random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// `generateName` plus five random characters, as kube-apiserver generates them.
pub(crate) fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    let mut prefix = prefix.to_string();
    if prefix.len() > 58 {
        prefix.truncate(58);
    }
    for _ in 0..5 {
        prefix.push(ALPHABET[rng.random_range(0..ALPHABET.len())] as char);
    }
    prefix
}

/// The `metadata` map of an object, created when missing.
pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = Value::Object(Map::new());
    }
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .expect("metadata was just made an object")
}

/// A string field of `metadata`.
pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// `metadata.finalizers`.
pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets `metadata.finalizers` (removing the field when empty).
pub(crate) fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    let meta = meta_mut(obj);
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), Value::from(finalizers.to_vec()));
    }
}

/// Whether the object has a `deletionTimestamp`.
pub(crate) fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// Validates an object name the way kube-apiserver does for this resource.
pub(crate) fn validate_name(def: &ResourceDef, name: &str) -> Result<(), ApiError> {
    let problem = if def.group == "rbac.authorization.k8s.io" {
        path_segment_problem(name)
    } else if def.group.is_empty() && def.plural == "namespaces" {
        dns_label_problem(name)
    } else {
        dns_subdomain_problem(name)
    };
    match problem {
        None => Ok(()),
        Some(why) => Err(ApiError::invalid(
            def,
            name,
            "metadata.name",
            &format!("Invalid value: \"{name}\": {why}"),
        )),
    }
}

fn path_segment_problem(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("may not be '{name}'"));
    }
    if name.contains('/') || name.contains('%') {
        return Some("may not contain '/' or '%'".to_string());
    }
    None
}

fn dns_label_problem(name: &str) -> Option<String> {
    if name.len() > 63 {
        return Some("must be no more than 63 characters".to_string());
    }
    if !is_dns_label(name) {
        return Some(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
             '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .to_string(),
        );
    }
    None
}

fn dns_subdomain_problem(name: &str) -> Option<String> {
    if name.len() > 253 {
        return Some("must be no more than 253 characters".to_string());
    }
    // The regex alone: kube's `IsDNS1123Subdomain` caps the whole name, not each label.
    if name.is_empty() || !name.split('.').all(has_label_shape) {
        return Some(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .to_string(),
        );
    }
    None
}

fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && has_label_shape(s)
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, of any length.
fn has_label_shape(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !bytes.is_empty()
        && alnum(&bytes[0])
        && alnum(&bytes[bytes.len() - 1])
        && bytes.iter().all(|c| alnum(c) || *c == b'-')
}

/// Whether kube-apiserver's strategy for the resource tracks `metadata.generation` (sets 1 on
/// create and bumps it when the spec changes): custom resources, CRDs and the built-ins
/// whose strategies do. The others keep whatever the client sent on create and the stored
/// value on update.
pub(crate) fn tracks_generation(def: &ResourceDef) -> bool {
    def.custom
        || matches!(
            (def.group.as_str(), def.plural.as_str()),
            ("", "pods" | "podtemplates" | "replicationcontrollers")
                | (
                    "apps",
                    "deployments" | "replicasets" | "statefulsets" | "daemonsets"
                )
                | ("batch", "jobs" | "cronjobs")
                | ("autoscaling", "horizontalpodautoscalers")
                | ("policy", "poddisruptionbudgets")
                | (
                    "networking.k8s.io",
                    "ingresses" | "ingressclasses" | "networkpolicies"
                )
                | ("discovery.k8s.io", "endpointslices")
                | ("apiextensions.k8s.io", "customresourcedefinitions")
                | ("admissionregistration.k8s.io", _)
                | ("flowcontrol.apiserver.k8s.io", _)
                | ("resource.k8s.io", _)
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_look_like_uuids() {
        let uid = new_uid();
        assert_eq!(uid.len(), 36);
        assert_eq!(&uid[14..15], "4");
        assert_ne!(uid, new_uid());
    }

    #[test]
    fn names_are_validated() {
        assert!(dns_subdomain_problem("my-app.v1").is_none());
        assert!(dns_subdomain_problem("My_App").is_some());
        assert!(dns_subdomain_problem("-x").is_some());
        assert!(dns_label_problem("a.b").is_some());
        assert!(path_segment_problem("system:controller:x").is_none());
        assert!(generate_name("web-").starts_with("web-"));
        assert_eq!(generate_name("web-").len(), 9);
    }
}
