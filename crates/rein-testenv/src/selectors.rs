//! Label selectors (equality- and set-based) and field selectors, parsed from list and watch
//! query parameters and matched against stored JSON objects.

use serde_json::Value;

use crate::status::ApiError;

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelReq {
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Gt(String, i64),
    Lt(String, i64),
}

/// A parsed `labelSelector`; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    reqs: Vec<LabelReq>,
}

impl LabelSelector {
    /// Parses kube's label selector syntax.
    pub(crate) fn parse(s: &str) -> Result<LabelSelector, ApiError> {
        let mut reqs = Vec::new();
        for term in split_terms(s) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            reqs.push(parse_label_term(term).ok_or_else(|| {
                ApiError::bad_request(format!("unable to parse requirement: {term:?}"))
            })?);
        }
        Ok(LabelSelector { reqs })
    }

    /// Whether the object's labels satisfy every requirement.
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        if self.reqs.is_empty() {
            return true;
        }
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.reqs.iter().all(|r| match r {
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
            LabelReq::In(k, vs) => get(k).is_some_and(|v| vs.iter().any(|x| x == v)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|v| !vs.iter().any(|x| x == v)),
            LabelReq::Gt(k, n) => get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            LabelReq::Lt(k, n) => get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        })
    }
}

/// Splits on commas outside parentheses.
fn split_terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_label_term(term: &str) -> Option<LabelReq> {
    if let Some(key) = term.strip_prefix('!') {
        return valid_key(key.trim()).then(|| LabelReq::NotExists(key.trim().to_string()));
    }
    for (op, negate) in [(" notin ", true), (" in ", false)] {
        if let Some(pos) = term.find(op) {
            let key = term[..pos].trim();
            let set = term[pos + op.len()..].trim();
            let inner = set.strip_prefix('(')?.strip_suffix(')')?;
            // An empty slot is the empty value, and `()` the set of only that, as apimachinery
            // parses them.
            let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
            if !valid_key(key) {
                return None;
            }
            return Some(if negate {
                LabelReq::NotIn(key.to_string(), values)
            } else {
                LabelReq::In(key.to_string(), values)
            });
        }
    }
    for (op, kind) in [("!=", 0), ("==", 1), ("=", 1), (">", 2), ("<", 3)] {
        if let Some(pos) = term.find(op) {
            let key = term[..pos].trim();
            let value = term[pos + op.len()..].trim().to_string();
            if !valid_key(key) {
                return None;
            }
            let key = key.to_string();
            return match kind {
                0 => Some(LabelReq::NotIn(key, vec![value])),
                1 => Some(LabelReq::In(key, vec![value])),
                2 => value.parse().ok().map(|n| LabelReq::Gt(key, n)),
                _ => value.parse().ok().map(|n| LabelReq::Lt(key, n)),
            };
        }
    }
    valid_key(term).then(|| LabelReq::Exists(term.to_string()))
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

/// A parsed `fieldSelector`: `path=value`, `path==value`, `path!=value` terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    reqs: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses kube's field selector syntax.
    pub(crate) fn parse(s: &str) -> Result<FieldSelector, ApiError> {
        let mut reqs = Vec::new();
        for term in s.split(',') {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let parsed = if let Some((k, v)) = term.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = term.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = term.split_once('=') {
                (k, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                )));
            };
            reqs.push((
                parsed.0.trim().to_string(),
                parsed.1,
                parsed.2.trim().to_string(),
            ));
        }
        Ok(FieldSelector { reqs })
    }

    /// Whether the object's fields satisfy every term.
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|(path, eq, want)| {
            let have = field_value(obj, path);
            (have.as_deref().unwrap_or("") == want) == *eq
        })
    }
}

/// A dotted field path's value as a string (numbers and booleans printed).
fn field_value(obj: &Value, path: &str) -> Option<String> {
    let mut cur = obj;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj() -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web", "tier": "fe", "n": "3"}},
               "spec": {"nodeName": "node-1"}, "status": {"phase": "Running"}})
    }

    #[test]
    fn label_selectors() {
        let o = obj();
        let m = |s: &str| LabelSelector::parse(s).expect("parses").matches(&o);
        assert!(m(""));
        assert!(m("app=web"));
        assert!(m("app==web,tier"));
        assert!(!m("app!=web"));
        assert!(m("app in (web, db),!missing"));
        assert!(!m("tier notin (fe)"));
        assert!(m("n>2"));
        assert!(!m("n<2"));
        assert!(LabelSelector::parse("app in web").is_err());
    }

    #[test]
    fn field_selectors() {
        let o = obj();
        let m = |s: &str| FieldSelector::parse(s).expect("parses").matches(&o);
        assert!(m("metadata.name=a"));
        assert!(m("spec.nodeName==node-1,status.phase!=Pending"));
        assert!(!m("metadata.namespace=other"));
        assert!(m("spec.missing="));
        assert!(FieldSelector::parse("nonsense").is_err());
    }
}
