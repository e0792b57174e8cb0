//! The JSONPath subset kube-apiserver evaluates for custom resources' printer columns
//! (client-go's `util/jsonpath` with missing keys allowed): `.field`, `['field']`, `\.`
//! escapes, `[n]` and `[-n]`, `[*]` and `.*`, `..field`, and filters `[?(@.a.b == "x")]`
//! with `==`, `!=`, `<`, `<=`, `>`, `>=` or bare existence.

use serde_json::Value;

/// One step of a parsed path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// A named field.
    Field(String),
    /// Every field of an object or element of a list.
    Wildcard,
    /// A list element; negative counts from the end.
    Index(i64),
    /// Every field named so, at any depth below.
    Descend(String),
    /// List elements for which a sub-path compares true (or exists, without an operator).
    Filter {
        path: Vec<Step>,
        op: Option<(String, Value)>,
    },
}

/// A parsed printer-column JSONPath.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonPath {
    steps: Vec<Step>,
}

impl JsonPath {
    /// Parses a column's `jsonPath` (with or without the surrounding `{}`); `None` when it is
    /// not a path this subset understands.
    pub(crate) fn parse(text: &str) -> Option<JsonPath> {
        let text = text.trim();
        let text = text
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or(text);
        let chars: Vec<char> = text.chars().collect();
        let (steps, end) = parse_steps(&chars, 0)?;
        (end == chars.len()).then_some(JsonPath { steps })
    }

    /// Every value the path finds in `root`, in document order.
    pub(crate) fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        evaluate(&self.steps, root)
    }
}

fn evaluate<'a>(steps: &[Step], root: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            apply(step, value, &mut next);
        }
        current = next;
    }
    current
}

fn apply<'a>(step: &Step, value: &'a Value, out: &mut Vec<&'a Value>) {
    match step {
        Step::Field(name) => out.extend(value.get(name.as_str())),
        Step::Wildcard => match value {
            Value::Object(map) => out.extend(map.values()),
            Value::Array(items) => out.extend(items.iter()),
            _ => {}
        },
        Step::Index(index) => {
            if let Value::Array(items) = value {
                let len = items.len() as i64;
                let at = if *index < 0 { len + index } else { *index };
                if (0..len).contains(&at) {
                    out.extend(usize::try_from(at).ok().and_then(|i| items.get(i)));
                }
            }
        }
        Step::Descend(name) => descend(name, value, out, 0),
        Step::Filter { path, op } => {
            if let Value::Array(items) = value {
                out.extend(items.iter().filter(|item| matches(path, op.as_ref(), item)));
            }
        }
    }
}

fn descend<'a>(name: &str, value: &'a Value, out: &mut Vec<&'a Value>, depth: usize) {
    if depth > 128 {
        return;
    }
    match value {
        Value::Object(map) => {
            out.extend(map.get(name));
            for child in map.values() {
                descend(name, child, out, depth + 1);
            }
        }
        Value::Array(items) => {
            for child in items {
                descend(name, child, out, depth + 1);
            }
        }
        _ => {}
    }
}

fn matches(path: &[Step], op: Option<&(String, Value)>, item: &Value) -> bool {
    let found = evaluate(path, item);
    let Some((op, wanted)) = op else {
        return !found.is_empty();
    };
    let Some(left) = found.first() else {
        return false;
    };
    match op.as_str() {
        "==" => loosely_equal(left, wanted),
        "!=" => !loosely_equal(left, wanted),
        _ => {
            let (Some(l), Some(r)) = (left.as_f64(), wanted.as_f64()) else {
                return false;
            };
            match op.as_str() {
                "<" => l < r,
                "<=" => l <= r,
                ">" => l > r,
                ">=" => l >= r,
                _ => false,
            }
        }
    }
}

fn loosely_equal(left: &Value, right: &Value) -> bool {
    match (left.as_f64(), right.as_f64()) {
        (Some(l), Some(r)) => l == r,
        _ => left == right,
    }
}

/// Parses steps from `at` until the end or a `)`/`]`/operator/space ends a filter's sub-path.
fn parse_steps(chars: &[char], mut at: usize) -> Option<(Vec<Step>, usize)> {
    let mut steps = Vec::new();
    while let Some(&c) = chars.get(at) {
        match c {
            '.' if chars.get(at + 1) == Some(&'.') => {
                let (name, end) = parse_name(chars, at + 2);
                if name.is_empty() {
                    return None;
                }
                steps.push(Step::Descend(name));
                at = end;
            }
            '.' if chars.get(at + 1) == Some(&'*') => {
                steps.push(Step::Wildcard);
                at += 2;
            }
            '.' => {
                let (name, end) = parse_name(chars, at + 1);
                if !name.is_empty() {
                    steps.push(Step::Field(name));
                }
                at = end;
            }
            '[' => {
                let (step, end) = parse_bracket(chars, at + 1)?;
                steps.push(step);
                at = end;
            }
            '@' if steps.is_empty() => at += 1,
            _ => break,
        }
    }
    Some((steps, at))
}

/// A dot-notation name: up to the next unescaped `.`, `[`, or filter delimiter.
fn parse_name(chars: &[char], mut at: usize) -> (String, usize) {
    let mut name = String::new();
    while let Some(&c) = chars.get(at) {
        match c {
            '\\' if chars.get(at + 1).is_some() => {
                name.push(chars[at + 1]);
                at += 2;
            }
            '.' | '[' | ']' | ')' | ' ' | '=' | '!' | '<' | '>' => break,
            _ => {
                name.push(c);
                at += 1;
            }
        }
    }
    (name, at)
}

/// The inside of `[...]`, from just after the `[`; returns the step and the index after `]`.
fn parse_bracket(chars: &[char], at: usize) -> Option<(Step, usize)> {
    match chars.get(at)? {
        '\'' | '"' => {
            let quote = chars[at];
            let close = (at + 1..chars.len()).find(|&i| chars[i] == quote)?;
            let name: String = chars[at + 1..close].iter().collect();
            (chars.get(close + 1) == Some(&']')).then_some((Step::Field(name), close + 2))
        }
        '*' => (chars.get(at + 1) == Some(&']')).then_some((Step::Wildcard, at + 2)),
        '?' => parse_filter(chars, at + 1),
        _ => {
            let close = (at..chars.len()).find(|&i| chars[i] == ']')?;
            let text: String = chars[at..close].iter().collect();
            let index = text.trim().parse::<i64>().ok()?;
            Some((Step::Index(index), close + 1))
        }
    }
}

/// `(@.path op literal)]`, from just after the `?`.
fn parse_filter(chars: &[char], at: usize) -> Option<(Step, usize)> {
    if chars.get(at) != Some(&'(') || chars.get(at + 1) != Some(&'@') {
        return None;
    }
    let (path, mut end) = parse_steps(chars, at + 1)?;
    skip_spaces(chars, &mut end);
    let op = if chars.get(end) == Some(&')') {
        None
    } else {
        let start = end;
        while chars
            .get(end)
            .is_some_and(|c| matches!(c, '=' | '!' | '<' | '>'))
        {
            end += 1;
        }
        let op: String = chars[start..end].iter().collect();
        if !matches!(op.as_str(), "==" | "!=" | "<" | "<=" | ">" | ">=") {
            return None;
        }
        skip_spaces(chars, &mut end);
        let close = (end..chars.len()).find(|&i| chars[i] == ')')?;
        let literal: String = chars[end..close].iter().collect();
        end = close;
        Some((op, parse_literal(literal.trim())?))
    };
    (chars.get(end) == Some(&')') && chars.get(end + 1) == Some(&']'))
        .then_some((Step::Filter { path, op }, end + 2))
}

fn parse_literal(text: &str) -> Option<Value> {
    for quote in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            return Some(Value::String(inner.to_string()));
        }
    }
    serde_json::from_str(text).ok()
}

fn skip_spaces(chars: &[char], at: &mut usize) {
    while chars.get(*at) == Some(&' ') {
        *at += 1;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn find(path: &str, doc: &Value) -> Vec<Value> {
        JsonPath::parse(path)
            .unwrap_or_else(|| panic!("parses {path}"))
            .find(doc)
            .into_iter()
            .cloned()
            .collect()
    }

    #[test]
    fn printer_column_paths() {
        let doc = json!({
            "metadata": {"labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"replicas": 3, "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]},
            "status": {"conditions": [
                {"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}
            ]},
        });
        assert_eq!(find(".spec.replicas", &doc), [json!(3)]);
        assert_eq!(find("{.spec.replicas}", &doc), [json!(3)]);
        assert_eq!(find(".spec.ports[1].port", &doc), [json!(81)]);
        assert_eq!(find(".spec.ports[-1].name", &doc), [json!("b")]);
        assert_eq!(find(".spec.ports[*].name", &doc), [json!("a"), json!("b")]);
        assert_eq!(
            find(".status.conditions[?(@.type==\"Ready\")].status", &doc),
            [json!("True")]
        );
        assert_eq!(
            find(".status.conditions[?(@.type != 'Ready')].type", &doc),
            [json!("Synced")]
        );
        assert_eq!(find(".spec.ports[?(@.port > 80)].name", &doc), [json!("b")]);
        assert_eq!(
            find(".metadata.labels.app\\.kubernetes\\.io/name", &doc),
            [json!("web")]
        );
        assert_eq!(
            find(".metadata.labels['app.kubernetes.io/name']", &doc),
            [json!("web")]
        );
        assert_eq!(find("..port", &doc), [json!(80), json!(81)]);
        assert!(find(".spec.missing.deeper", &doc).is_empty());
        assert!(JsonPath::parse(".spec[?(@.a ~ 1)]").is_none());
        assert!(JsonPath::parse(".spec[").is_none());
    }
}
