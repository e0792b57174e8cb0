//! The text helpers kube's printers share: human durations, label and selector strings,
//! container and image lists, access modes.

use serde_json::Value;

/// A string at JSON pointer `at` in `obj`, or `""`.
pub(super) fn text<'a>(obj: &'a Value, at: &str) -> &'a str {
    obj.pointer(at).and_then(Value::as_str).unwrap_or("")
}

/// An integer at JSON pointer `at` in `obj`, or 0.
pub(super) fn int(obj: &Value, at: &str) -> i64 {
    obj.pointer(at).and_then(Value::as_i64).unwrap_or(0)
}

/// The array at JSON pointer `at` in `obj`, or an empty slice.
pub(super) fn list<'a>(obj: &'a Value, at: &str) -> &'a [Value] {
    obj.pointer(at)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `text`, or `fallback` when empty.
pub(super) fn or<'a>(value: &'a str, fallback: &'a str) -> &'a str {
    if value.is_empty() { fallback } else { value }
}

/// A timestamp at `at`, if set and readable.
pub(super) fn time(obj: &Value, at: &str) -> Option<jiff::Timestamp> {
    obj.pointer(at)
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
}

/// kube's `translateTimestampSince`: the human duration since the timestamp at `at`, or
/// `<unknown>` when unset.
pub(super) fn since(obj: &Value, at: &str, now: jiff::Timestamp) -> String {
    match time(obj, at) {
        Some(t) => human_duration(now.as_second() - t.as_second()),
        None => "<unknown>".to_string(),
    }
}

/// apimachinery's `duration.HumanDuration` of `secs` seconds (`5s`, `3m20s`, `4h`, `2d3h`).
pub(super) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".to_string();
    }
    if secs < 0 {
        return "0s".to_string();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return units(minutes, 'm', secs % 60, 's');
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        return units(hours, 'h', minutes % 60, 'm');
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return units(hours / 24, 'd', hours % 24, 'h');
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return units(hours / 24 / 365, 'y', (hours / 24) % 365, 'd');
    }
    format!("{}y", hours / 24 / 365)
}

/// `{big}{big_unit}`, followed by `{small}{small_unit}` unless `small` is 0 (`3m`, `3m20s`).
fn units(big: i64, big_unit: char, small: i64, small_unit: char) -> String {
    if small == 0 {
        format!("{big}{big_unit}")
    } else {
        format!("{big}{big_unit}{small}{small_unit}")
    }
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key, or `<none>`.
pub(super) fn labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    if pairs.is_empty() {
        "<none>".to_string()
    } else {
        pairs.join(",")
    }
}

/// `LabelSelectorAsSelector(...).String()`: requirements sorted by key (`k=v`,
/// `k in (a,b)`, `k notin (a,b)`, `k`, `!k`); `""` for no selector.
pub(super) fn selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|s| s.is_object()) else {
        return String::new();
    };
    let mut requirements: Vec<(String, String)> = Vec::new();
    for (k, v) in sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        requirements.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
    }
    for e in list(sel, "/matchExpressions") {
        let key = text(e, "/key");
        let mut values: Vec<&str> = list(e, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        values.dedup();
        let req = match text(e, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return "<invalid>".to_string(),
        };
        requirements.push((key.to_string(), req));
    }
    requirements.sort();
    requirements
        .into_iter()
        .map(|(_, r)| r)
        .collect::<Vec<_>>()
        .join(",")
}

/// `metav1.FormatLabelSelector`: the selector string, or `<none>` when empty.
pub(super) fn label_selector(sel: Option<&Value>) -> String {
    let s = selector(sel);
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    }
}

/// `layoutContainerCells`: container names and images, comma-separated.
pub(super) fn containers(spec: &Value) -> (String, String) {
    let cs = list(spec, "/containers");
    let names: Vec<&str> = cs.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = cs.iter().map(|c| text(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// `GetAccessModesAsString`: `RWO,ROX,RWX,RWOP` for the modes present.
pub(super) fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// A storage class from the beta annotation, else `spec.storageClassName`.
pub(super) fn storage_class(obj: &Value) -> String {
    obj.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
        .unwrap_or_else(|| text(obj, "/spec/storageClassName"))
        .to_string()
}

/// `a,b,c + N more...` for at most `max` of `items` (`<unset>` when there are none).
pub(super) fn with_more(items: &[String], max: usize) -> String {
    if items.is_empty() {
        return "<unset>".to_string();
    }
    let shown = items[..items.len().min(max)].join(",");
    if items.len() > max {
        format!("{shown} + {} more...", items.len() - max)
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn durations_read_like_kubectl() {
        assert_eq!(human_duration(-5), "<invalid>");
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(200), "3m20s");
        assert_eq!(human_duration(3 * 3600), "3h");
        assert_eq!(human_duration(3 * 86_400 + 7200), "3d2h");
        assert_eq!(human_duration(3 * 365 * 86_400 + 86_400), "3y1d");
    }

    #[test]
    fn selectors_sort_requirements_by_key() {
        let sel = json!({
            "matchLabels": {"tier": "web", "app": "x"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "zone", "operator": "DoesNotExist"},
            ],
        });
        assert_eq!(
            selector(Some(&sel)),
            "app=x,env in (dev,prod),tier=web,!zone"
        );
        assert_eq!(label_selector(Some(&json!({}))), "<none>");
        assert_eq!(labels(Some(&json!({"b": "2", "a": "1"}))), "a=1,b=2");
    }
}
