//! Label selectors: apimachinery's `labels.Parse` (its lexer, recursive-descent parser and
//! requirement validation, with its error messages) and matching against stored objects.

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
    /// Parses kube's label selector syntax; a bad selector is 400 BadRequest with
    /// apimachinery's message, as kube-apiserver answers it.
    pub(crate) fn parse(s: &str) -> Result<LabelSelector, ApiError> {
        let tokens = lex(s);
        let mut parser = Parser { tokens, pos: 0 };
        let reqs = parser.selector().map_err(ApiError::bad_request)?;
        Ok(LabelSelector { reqs })
    }

    /// Whether the object's labels satisfy every requirement.
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        if self.reqs.is_empty() {
            return true;
        }
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        self.matches_labels(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
    }

    /// Whether labels read through `get` (a label's value, `None` when it is absent) satisfy
    /// every requirement.
    pub(crate) fn matches_labels<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
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

/// The lexer's tokens (apimachinery's `Token`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Error,
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Tok> {
    Some(match s {
        ")" => Tok::ClosedPar,
        "," => Tok::Comma,
        "!" => Tok::DoesNotExist,
        "==" => Tok::DoubleEquals,
        "=" => Tok::Equals,
        ">" => Tok::GreaterThan,
        "in" => Tok::In,
        "<" => Tok::LessThan,
        "!=" => Tok::NotEquals,
        "notin" => Tok::NotIn,
        "(" => Tok::OpenPar,
        _ => return None,
    })
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Splits a selector into tokens, ending with `End` (apimachinery's `Lexer`, byte-wise).
fn lex(s: &str) -> Vec<(Tok, String)> {
    let bytes = s.as_bytes();
    let mut pos = 0;
    let mut out = Vec::new();
    loop {
        while pos < bytes.len() && is_space(bytes[pos]) {
            pos += 1;
        }
        if pos >= bytes.len() {
            out.push((Tok::End, String::new()));
            return out;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            // The longest run of special symbols that is still a keyword.
            let mut last: Option<(Tok, usize)> = None;
            while pos < bytes.len() && is_special(bytes[pos]) {
                let candidate = &s[start..=pos];
                if let Some(tok) = keyword(candidate) {
                    last = Some((tok, pos + 1));
                } else if last.is_some() {
                    break;
                }
                pos += 1;
            }
            match last {
                Some((tok, end)) => {
                    pos = end;
                    out.push((tok, s[start..end].to_string()));
                }
                None => out.push((
                    Tok::Error,
                    format!("error expected: keyword found '{}'", &s[start..pos]),
                )),
            }
        } else {
            while pos < bytes.len() && !is_special(bytes[pos]) && !is_space(bytes[pos]) {
                pos += 1;
            }
            let word = String::from_utf8_lossy(&bytes[start..pos]).into_owned();
            out.push((keyword(&word).unwrap_or(Tok::Identifier), word));
        }
    }
}

/// Where the parser is: `in`/`notin` are identifiers when a value is expected.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// apimachinery's recursive-descent `Parser` over the scanned tokens.
struct Parser {
    tokens: Vec<(Tok, String)>,
    pos: usize,
}

impl Parser {
    fn token(&self, index: usize, context: Context) -> (Tok, String) {
        let (tok, lit) = self
            .tokens
            .get(index)
            .cloned()
            .unwrap_or((Tok::End, String::new()));
        match tok {
            Tok::In | Tok::NotIn if context == Context::Values => (Tok::Identifier, lit),
            _ => (tok, lit),
        }
    }

    fn lookahead(&self, context: Context) -> (Tok, String) {
        self.token(self.pos, context)
    }

    fn consume(&mut self, context: Context) -> (Tok, String) {
        self.pos += 1;
        self.token(self.pos - 1, context)
    }

    fn selector(&mut self) -> Result<Vec<LabelReq>, String> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Tok::Identifier | Tok::DoesNotExist => {
                    let req = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(req);
                    let (tok, lit) = self.consume(Context::Values);
                    match tok {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => {
                            let (next, lit) = self.lookahead(Context::Values);
                            if next != Tok::Identifier && next != Tok::DoesNotExist {
                                return Err(format!(
                                    "found '{lit}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!("found '{lit}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                Tok::End => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<LabelReq, String> {
        let (mut tok, mut key) = self.consume(Context::Values);
        let negated = tok == Tok::DoesNotExist;
        if negated {
            (tok, key) = self.consume(Context::Values);
        }
        if tok != Tok::Identifier {
            return Err(format!("found '{key}', expected: identifier"));
        }
        // apimachinery validates the key here without a field path.
        check_key(&key, "<nil>")?;
        let (next, _) = self.lookahead(Context::Values);
        if negated || next == Tok::End || next == Tok::Comma {
            return Ok(if negated {
                LabelReq::NotExists(key)
            } else {
                LabelReq::Exists(key)
            });
        }
        let (op, lit) = self.consume(Context::KeyAndOperator);
        let values = match op {
            Tok::In | Tok::NotIn => self.values()?,
            Tok::Equals | Tok::DoubleEquals | Tok::NotEquals | Tok::GreaterThan | Tok::LessThan => {
                vec![self.exact_value()?]
            }
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        };
        new_requirement(key, op, values)
    }

    /// `( v1, v2 )`: the sorted set of values; empty slots are the empty value.
    fn values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Tok::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        let mut set = match tok {
            Tok::Identifier | Tok::Comma => {
                let set = self.identifiers()?;
                if self.consume(Context::Values).0 != Tok::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                set
            }
            Tok::ClosedPar => {
                self.consume(Context::Values);
                vec![String::new()]
            }
            _ => return Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        };
        set.sort();
        set.dedup();
        Ok(set)
    }

    fn identifiers(&mut self) -> Result<Vec<String>, String> {
        let mut set: Vec<String> = Vec::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Tok::Identifier => {
                    set.push(lit);
                    let (next, lit) = self.lookahead(Context::Values);
                    match next {
                        Tok::Comma => continue,
                        Tok::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{lit}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if set.is_empty() {
                        set.push(String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Tok::ClosedPar {
                        set.push(String::new());
                        return Ok(set);
                    }
                    if next == Tok::Comma {
                        set.push(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<String, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Tok::End || tok == Tok::Comma {
            return Ok(String::new());
        }
        match self.consume(Context::Values) {
            (Tok::Identifier, lit) => Ok(lit),
            (_, lit) => Err(format!("found '{lit}', expected: identifier")),
        }
    }
}

/// apimachinery's `NewRequirement` for a parsed key, operator and values.
fn new_requirement(key: String, op: Tok, values: Vec<String>) -> Result<LabelReq, String> {
    let mut errors = Vec::new();
    if let Err(e) = check_key(&key, "key") {
        errors.push(e);
    }
    if matches!(op, Tok::GreaterThan | Tok::LessThan) {
        for (i, v) in values.iter().enumerate() {
            if v.parse::<i64>().is_err() {
                errors.push(format!(
                    "values[{i}]: Invalid value: {v:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                ));
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let problems = label_value_errors(v);
        if !problems.is_empty() {
            errors.push(format!(
                "values[{i}][{key}]: Invalid value: {v:?}: {}",
                problems.join("; ")
            ));
        }
    }
    match errors.len() {
        0 => {}
        1 => return Err(errors.remove(0)),
        _ => return Err(format!("[{}]", errors.join(", "))),
    }
    let first = || values.first().cloned().unwrap_or_default();
    let number = || first().parse::<i64>().unwrap_or_default();
    Ok(match op {
        Tok::In | Tok::Equals | Tok::DoubleEquals => LabelReq::In(key, values),
        Tok::NotIn | Tok::NotEquals => LabelReq::NotIn(key, values),
        Tok::GreaterThan => LabelReq::Gt(key, number()),
        _ => LabelReq::Lt(key, number()),
    })
}

const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must \
                             start and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

fn check_key(key: &str, field: &str) -> Result<(), String> {
    let problems = label_key_errors(key);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{field}: Invalid value: {key:?}: {}",
            problems.join("; ")
        ))
    }
}

/// apimachinery's `IsLabelKey` (a qualified name).
fn label_key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    subdomain_errors(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {LABEL_KEY_MSG} (e.g. 'MyName',  or 'my.name',  or '123-abc', \
                 regex used for validation is '{LABEL_KEY_FMT}') with an optional DNS subdomain \
                 prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 characters".to_string());
    }
    if !is_label_name(name) {
        errors.push(format!(
            "name part {LABEL_KEY_MSG} (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used \
             for validation is '{LABEL_KEY_FMT}')"
        ));
    }
    errors
}

/// apimachinery's `IsValidLabelValue`.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_label_name(value) {
        errors.push(format!(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', \
             '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  \
             or 'my_value',  or '12345', regex used for validation is '({LABEL_KEY_FMT})?')"
        ));
    }
    errors
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// apimachinery's `IsDNS1123Subdomain`.
fn subdomain_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push("must be no more than 253 characters".to_string());
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    };
    if !s.split('.').all(label_ok) {
        errors.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .to_string(),
        );
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(s: &str) -> String {
        LabelSelector::parse(s).expect_err(s).message
    }

    #[test]
    fn parses_and_matches_like_apimachinery() {
        let o = json!({"metadata": {"labels": {"app": "web", "tier": "fe", "n": "3", "e": ""}}});
        let m = |s: &str| LabelSelector::parse(s).expect(s).matches(&o);
        assert!(m(""));
        assert!(m("app=web"));
        assert!(m("app==web,tier"));
        assert!(!m("app!=web"));
        assert!(m("app in (web, db),!missing"));
        assert!(!m("tier notin (fe)"));
        assert!(m("n>2") && !m("n<2"));
        assert!(m("e in ()") && m("e=") && m("e in (,x)"));
        assert!(m("app in (in, notin, web)"));
        assert!(m("example.com/x notin (a)"));
    }

    #[test]
    fn errors_carry_apimachinerys_messages() {
        assert_eq!(
            message("a=b=c"),
            "found '=', expected: ',' or 'end of string'"
        );
        assert_eq!(
            message("env=pr od"),
            "found 'od', expected: ',' or 'end of string'"
        );
        assert_eq!(
            message("app in web"),
            "unable to parse requirement: found 'web' expected: '('"
        );
        assert_eq!(message("a,"), "found '', expected: identifier after ','");
        assert_eq!(
            message(",a"),
            "found ',', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            message("a=>b"),
            "unable to parse requirement: found '>', expected: identifier"
        );
        assert_eq!(
            message("a ~ b"),
            "unable to parse requirement: found '~', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            message("a in (b c)"),
            "unable to parse requirement: found 'c', expected: ',' or ')'"
        );
        assert_eq!(
            message("a>x"),
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' \
             operators, the value must be an integer"
        );
        let long = "v".repeat(64);
        assert_eq!(
            message(&format!("env={long}")),
            format!(
                "unable to parse requirement: values[0][env]: Invalid value: \"{long}\": must be \
                 no more than 63 characters"
            )
        );
        assert!(message("-a=b").starts_with(
            "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of"
        ));
        assert!(message("n>-1").starts_with(
            "unable to parse requirement: values[0][n]: Invalid value: \"-1\": a valid label"
        ));
        assert!(message("a/b/c").contains("a valid label key must consist of"));
        assert!(message("Foo.com/a").contains("prefix part a lowercase RFC 1123 subdomain"));
    }
}
