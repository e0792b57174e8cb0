//! Resources that are views of another resource's storage, as kube-apiserver serves
//! `events.k8s.io/v1` Events from the core Events' storage: one store, one resourceVersion
//! sequence, one watch history, each view converting field by field at its edges
//! (kube's `pkg/apis/events/v1/conversion.go`).

use serde_json::{Map, Value};

use super::ResKey;

/// The core Event's field names and their events.k8s.io spellings (kube's conversion renames
/// these; every other field keeps its name).
const EVENT_RENAMES: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// One view: the resource served, the resource whose storage it reads and writes, and the
/// `apiVersion` and field names on each side.
#[derive(Debug)]
struct View {
    group: &'static str,
    plural: &'static str,
    stored_group: &'static str,
    stored_plural: &'static str,
    stored_api_version: &'static str,
    view_api_version: &'static str,
    /// (stored name, view name) of each renamed top-level field.
    renames: &'static [(&'static str, &'static str)],
}

/// The one table of views.
const VIEWS: &[View] = &[View {
    group: "events.k8s.io",
    plural: "events",
    stored_group: "",
    stored_plural: "events",
    stored_api_version: "v1",
    view_api_version: "events.k8s.io/v1",
    renames: EVENT_RENAMES,
}];

fn view(group: &str, plural: &str) -> Option<&'static View> {
    VIEWS
        .iter()
        .find(|v| v.group == group && v.plural == plural)
}

/// Where objects of (`group`, `plural`) are stored: another resource's key for a view.
pub(crate) fn storage_of(group: &str, plural: &str) -> Option<ResKey> {
    view(group, plural).map(|v| ResKey {
        group: v.stored_group.to_string(),
        plural: v.stored_plural.to_string(),
    })
}

/// A stored object as the view (`group`, `plural`) serves it; `None` when (`group`,
/// `plural`) is no view or `obj` is not in the stored form (already converted).
pub(crate) fn to_view(group: &str, plural: &str, obj: &Value) -> Option<Value> {
    let v = view(group, plural)?;
    convert(
        obj,
        v.stored_api_version,
        v.view_api_version,
        v.renames.iter().map(|(s, w)| (*s, *w)),
    )
}

/// An object written through the view (`group`, `plural`) in the stored form; `obj` as is
/// for any other resource.
pub(crate) fn to_storage(group: &str, plural: &str, obj: Value) -> Value {
    let Some(v) = view(group, plural) else {
        return obj;
    };
    convert(
        &obj,
        v.view_api_version,
        v.stored_api_version,
        v.renames.iter().map(|(s, w)| (*w, *s)),
    )
    .unwrap_or(obj)
}

/// `obj` with `apiVersion` `from` relabelled `to` and its top-level fields renamed by
/// `renames` (from → to); `None` when `obj` is not labelled `from`.
fn convert<'a>(
    obj: &Value,
    from: &str,
    to: &str,
    renames: impl Iterator<Item = (&'a str, &'a str)> + Clone,
) -> Option<Value> {
    let map = obj.as_object()?;
    if map.get("apiVersion").and_then(Value::as_str) != Some(from) {
        return None;
    }
    let mut out = Map::new();
    for (key, value) in map {
        let key = renames
            .clone()
            .find(|(f, _)| f == key)
            .map_or(key.as_str(), |(_, t)| t);
        out.insert(key.to_string(), value.clone());
    }
    out.insert("apiVersion".into(), Value::String(to.to_string()));
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_convert_both_ways_field_by_field() {
        let core = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "Started", "message": "hi", "type": "Normal",
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:01Z",
            "count": 3, "reportingComponent": "kubelet", "reportingInstance": "n1",
            "action": "Start", "related": {"kind": "Node", "name": "n1"},
            "series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:01.000000Z"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
        });
        let view = to_view("events.k8s.io", "events", &core).expect("converted");
        assert_eq!(
            view,
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "e", "namespace": "default"},
                "regarding": {"kind": "Pod", "name": "p"},
                "reason": "Started", "note": "hi", "type": "Normal",
                "deprecatedSource": {"component": "kubelet", "host": "n1"},
                "deprecatedFirstTimestamp": "2024-01-01T00:00:00Z",
                "deprecatedLastTimestamp": "2024-01-01T00:00:01Z",
                "deprecatedCount": 3, "reportingController": "kubelet",
                "reportingInstance": "n1", "action": "Start",
                "related": {"kind": "Node", "name": "n1"},
                "series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:01.000000Z"},
                "eventTime": "2024-01-01T00:00:00.000000Z",
            })
        );
        assert_eq!(to_view("events.k8s.io", "events", &view), None);
        assert_eq!(to_storage("events.k8s.io", "events", view), core);
        assert_eq!(to_view("", "events", &core), None);
        assert_eq!(
            storage_of("events.k8s.io", "events"),
            Some(ResKey {
                group: String::new(),
                plural: "events".into()
            })
        );
    }
}
