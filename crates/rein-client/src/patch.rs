//! Patch builders: JSON merge patches computed from a base object (controller-runtime's
//! `MergeFrom`), optionally carrying the base's resourceVersion for optimistic locking.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::Error;
use crate::options::Patch;

/// A JSON merge patch (RFC 7386) turning `base` into `modified`.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use rein_client::patch::merge_from;
///
/// let base = ConfigMap::default();
/// let mut changed = base.clone();
/// changed.data = Some([("a".to_string(), "1".to_string())].into());
/// let patch = merge_from(&base, &changed).unwrap();
/// assert!(matches!(patch, kube_client::core::params::Patch::Merge(v) if v["data"]["a"] == "1"));
/// ```
pub fn merge_from<T: Serialize>(base: &T, modified: &T) -> Result<Patch<Value>, Error> {
    let (base, modified) = to_values(base, modified)?;
    Ok(Patch::Merge(merge_diff(&base, &modified)))
}

/// As [`merge_from`], with `metadata.resourceVersion` of `base` in the patch so the server
/// rejects it with a conflict if the object changed since (`MergeFromWithOptimisticLock`).
pub fn merge_from_with_optimistic_lock<T: Serialize>(
    base: &T,
    modified: &T,
) -> Result<Patch<Value>, Error> {
    let (base_value, modified_value) = to_values(base, modified)?;
    let Some(rv) = base_value
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Err(Error::InvalidInput {
            action: "building an optimistic-lock merge patch".into(),
            problem: "the base object has no metadata.resourceVersion".into(),
        });
    };
    let mut diff = merge_diff(&base_value, &modified_value);
    if let Value::Object(map) = &mut diff {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert("resourceVersion".into(), Value::String(rv));
        }
    }
    Ok(Patch::Merge(diff))
}

fn to_values<T: Serialize>(base: &T, modified: &T) -> Result<(Value, Value), Error> {
    let json = |source| Error::Json {
        action: "building a merge patch".into(),
        source,
    };
    Ok((
        serde_json::to_value(base).map_err(json)?,
        serde_json::to_value(modified).map_err(json)?,
    ))
}

/// The RFC 7386 merge patch from `base` to `modified`: changed keys, `null` for removed ones,
/// whole replacement for non-objects (arrays included).
pub fn merge_diff(base: &Value, modified: &Value) -> Value {
    match (base, modified) {
        (Value::Object(b), Value::Object(m)) => {
            let mut out = Map::new();
            for (k, bv) in b {
                match m.get(k) {
                    None => {
                        out.insert(k.clone(), Value::Null);
                    }
                    Some(mv) if mv != bv => {
                        out.insert(k.clone(), merge_diff(bv, mv));
                    }
                    Some(_) => {}
                }
            }
            for (k, mv) in m {
                if !b.contains_key(k) {
                    out.insert(k.clone(), mv.clone());
                }
            }
            Value::Object(out)
        }
        (_, m) => m.clone(),
    }
}

/// Whether a merge patch changes nothing.
pub fn is_empty_merge_patch(patch: &Value) -> bool {
    matches!(patch, Value::Object(m) if m.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn diff_covers_change_add_remove() {
        let base = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2]});
        let modified = json!({"a": 1, "b": {"c": 5}, "e": [1], "f": "x"});
        assert_eq!(
            merge_diff(&base, &modified),
            json!({"b": {"c": 5, "d": null}, "e": [1], "f": "x"})
        );
        assert!(is_empty_merge_patch(&merge_diff(&base, &base)));
    }

    #[test]
    fn optimistic_lock_needs_a_resource_version() {
        let base = json!({"metadata": {"name": "x"}});
        assert!(merge_from_with_optimistic_lock(&base, &base).is_err());
        let base = json!({"metadata": {"name": "x", "resourceVersion": "7"}});
        let Patch::Merge(p) = merge_from_with_optimistic_lock(&base, &base).unwrap() else {
            unreachable!("merge_from builds merge patches")
        };
        assert_eq!(p, json!({"metadata": {"resourceVersion": "7"}}));
    }
}
