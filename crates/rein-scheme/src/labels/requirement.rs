//! One requirement of a label selector (`key op values`), with validation and matching.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::ParseError;

/// The operator of a label requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `key=value`: the label is present with this value.
    Equals,
    /// `key==value`: the same as `Equals`, kept to display as written.
    DoubleEquals,
    /// `key!=value`: the label is absent or has another value.
    NotEquals,
    /// `key in (a,b)`: the label is present with one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or has none of the values.
    NotIn,
    /// `key`: the label is present.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>n`: the label is present and its integer value is greater than `n`.
    GreaterThan,
    /// `key<n`: the label is present and its integer value is less than `n`.
    LessThan,
}

impl Operator {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
            Self::In => "in",
            Self::NotIn => "notin",
            Self::Exists => "exists",
            Self::DoesNotExist => "!",
            Self::GreaterThan => ">",
            Self::LessThan => "<",
        }
    }
}

/// One `key op values` term of a selector. Built validated through [`Requirement::new`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: BTreeSet<String>,
}

impl Requirement {
    /// A validated requirement: the key must be a qualified name, the values valid label
    /// values, and their number fit the operator.
    pub fn new<I, S>(
        key: impl Into<String>,
        operator: Operator,
        values: I,
    ) -> Result<Self, ParseError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let key = key.into();
        validate_key(&key)?;
        let values: BTreeSet<String> = values.into_iter().map(Into::into).collect();
        match operator {
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                if values.len() != 1 {
                    return Err(ParseError::EmptyValues {
                        key,
                        operator: operator.name(),
                    });
                }
            }
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    return Err(ParseError::EmptyValues {
                        key,
                        operator: operator.name(),
                    });
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    return Err(ParseError::UnexpectedValues {
                        key,
                        operator: operator.name(),
                    });
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                let Some(value) = values.iter().next().filter(|_| values.len() == 1) else {
                    return Err(ParseError::EmptyValues {
                        key,
                        operator: operator.name(),
                    });
                };
                if value.parse::<i64>().is_err() {
                    return Err(ParseError::NotAnInteger {
                        value: value.clone(),
                        key,
                    });
                }
            }
        }
        if !matches!(operator, Operator::GreaterThan | Operator::LessThan) {
            for value in &values {
                validate_value(&key, value)?;
            }
        }
        Ok(Self {
            key,
            operator,
            values,
        })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted.
    pub fn values(&self) -> &BTreeSet<String> {
        &self.values
    }

    /// Whether a label set satisfies this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                value.is_some_and(|v| self.values.contains(v))
            }
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(have) = value.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let Some(want) = self
                    .values
                    .iter()
                    .next()
                    .and_then(|v| v.parse::<i64>().ok())
                else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.values.iter().next().map(String::as_str).unwrap_or("");
        match self.operator {
            Operator::Exists => f.write_str(&self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                write!(f, "{}{}{first}", self.key, self.operator.name())
            }
            Operator::GreaterThan | Operator::LessThan => {
                write!(f, "{}{}{first}", self.key, self.operator.name())
            }
            Operator::In | Operator::NotIn => {
                write!(f, "{} {} (", self.key, self.operator.name())?;
                for (i, v) in self.values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(v)?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Checks `[prefix/]name`: prefix a DNS subdomain of at most 253 characters, name at most 63
/// alphanumerics, `-`, `_` or `.`, starting and ending alphanumeric.
pub(crate) fn validate_key(key: &str) -> Result<(), ParseError> {
    let invalid = |reason| ParseError::InvalidKey {
        key: key.to_owned(),
        reason,
    };
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() || prefix.len() > 253 {
            return Err(invalid("the prefix must be 1 to 253 characters"));
        }
        let ok = prefix.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        });
        if !ok {
            return Err(invalid("the prefix must be a lowercase DNS subdomain"));
        }
    }
    if name.is_empty() {
        return Err(invalid("the name part must not be empty"));
    }
    if !is_label_name(name) {
        return Err(invalid(
            "the name part must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric",
        ));
    }
    Ok(())
}

fn validate_value(key: &str, value: &str) -> Result<(), ParseError> {
    if value.is_empty() || is_label_name(value) {
        Ok(())
    } else {
        Err(ParseError::InvalidValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason: "must be empty or at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric",
        })
    }
}

fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}
