//! Field selectors: `metadata.name=x,status.phase!=Running`, parsed, matched and displayed.
//!
//! As apimachinery's `fields` package: terms are `field=value`, `field==value` or
//! `field!=value`, joined by commas; `\`, `,` and `=` in values are escaped with `\`. An absent
//! field reads as the empty string.

#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

/// Whether a field term requires equality or inequality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One `field op value` term.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// The field path, e.g. `spec.nodeName`.
    pub field: String,
    /// The operator.
    pub operator: Operator,
    /// The (unescaped) value.
    pub value: String,
}

/// Why a field selector could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A term has no `=`, `==` or `!=`.
    #[error("parsing field selector: term {term:?} has no operator (=, ==, !=)")]
    MissingOperator {
        /// The term.
        term: String,
    },
    /// A term has an empty field name.
    #[error("parsing field selector: term {term:?} has an empty field name")]
    EmptyField {
        /// The term.
        term: String,
    },
    /// A `\` escape other than `\\`, `\,` or `\=`.
    #[error("parsing field selector: invalid escape sequence in {term:?}")]
    InvalidEscape {
        /// The term.
        term: String,
    },
}

/// A field selector: a conjunction of field terms.
///
/// ```
/// use rein_scheme::fields::Selector;
///
/// let sel = Selector::parse("spec.nodeName=node-1,status.phase!=Failed").unwrap();
/// assert!(sel.matches(|f| match f {
///     "spec.nodeName" => Some("node-1".to_string()),
///     _ => None,
/// }));
/// assert_eq!(sel.exact_match("spec.nodeName"), Some("node-1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// Parses the string form used by the `fieldSelector` query parameter.
    pub fn parse(input: &str) -> Result<Self, ParseError> {
        let mut requirements = Vec::new();
        for term in split_unescaped(input, ',') {
            if term.trim().is_empty() {
                continue;
            }
            requirements.push(parse_term(term)?);
        }
        Ok(Self { requirements })
    }

    /// The selector that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// A selector of one `field=value` term.
    pub fn one_term_equal(field: impl Into<String>, value: impl Into<String>) -> Self {
        Self::everything().and(field, Operator::Equals, value)
    }

    /// Adds a term.
    pub fn and(
        mut self,
        field: impl Into<String>,
        operator: Operator,
        value: impl Into<String>,
    ) -> Self {
        self.requirements.push(Requirement {
            field: field.into(),
            operator,
            value: value.into(),
        });
        self
    }

    /// Whether every term holds; `get` returns a field's value (`None` reads as `""`).
    pub fn matches(&self, mut get: impl FnMut(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let have = get(&r.field).unwrap_or_default();
            match r.operator {
                Operator::Equals => have == r.value,
                Operator::NotEquals => have != r.value,
            }
        })
    }

    /// The value this selector requires `field` to equal, if it has such a term.
    pub fn exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == Operator::Equals)
            .map(|r| r.value.as_str())
    }

    /// Whether there are no terms.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The terms, in the order given.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = match r.operator {
                Operator::Equals => "=",
                Operator::NotEquals => "!=",
            };
            // A field ending in `!` or `\` (`a! =b`) needs the space, or `a!=b` would read as
            // `!=` (and `a\=b` as an escape); the parser trims it off again.
            let gap = if r.field.ends_with(['!', '\\']) {
                " "
            } else {
                ""
            };
            write!(f, "{}{gap}{op}{}", r.field, escape(&r.value))?;
        }
        Ok(())
    }
}

impl FromStr for Selector {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Escapes `\`, `,` and `=` in a field selector value.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn split_unescaped(input: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in input.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(&input[start..i]);
            start = i + 1;
        }
    }
    parts.push(&input[start..]);
    parts
}

fn parse_term(term: &str) -> Result<Requirement, ParseError> {
    // The first unescaped operator splits field from value; `!=` and `==` before `=`.
    let bytes = term.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'!' if bytes.get(i + 1) == Some(&b'=') => {
                return finish(term, &term[..i], Operator::NotEquals, &term[i + 2..]);
            }
            b'=' if bytes.get(i + 1) == Some(&b'=') => {
                return finish(term, &term[..i], Operator::Equals, &term[i + 2..]);
            }
            b'=' => return finish(term, &term[..i], Operator::Equals, &term[i + 1..]),
            _ => i += 1,
        }
    }
    Err(ParseError::MissingOperator {
        term: term.to_owned(),
    })
}

fn finish(
    term: &str,
    field: &str,
    operator: Operator,
    value: &str,
) -> Result<Requirement, ParseError> {
    let field = field.trim();
    if field.is_empty() {
        return Err(ParseError::EmptyField {
            term: term.to_owned(),
        });
    }
    let mut out = String::with_capacity(value.len());
    let mut chars = value.trim().chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                _ => {
                    return Err(ParseError::InvalidEscape {
                        term: term.to_owned(),
                    });
                }
            }
        } else {
            out.push(c);
        }
    }
    Ok(Requirement {
        field: field.to_owned(),
        operator,
        value: out,
    })
}
