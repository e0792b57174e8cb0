//! Label selectors: parse (`a=b,c in (d,e),!f`), build, match and display.
//!
//! The grammar and matching rules are apimachinery's `labels` package: `=`/`==`/`in` need the
//! label present with a listed value, `!=`/`notin` accept an absent label, `key` and `!key`
//! test presence, `>`/`<` compare integers.

mod error;
mod parse;
mod requirement;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

pub use error::ParseError;
pub use requirement::{Operator, Requirement};

/// A label selector: a conjunction of [`Requirement`]s, or the selector that matches nothing.
///
/// ```
/// use std::collections::BTreeMap;
/// use rein_scheme::labels::Selector;
///
/// let sel = Selector::parse("app=web, tier in (frontend, edge), !canary").unwrap();
/// let labels = BTreeMap::from([("app".to_string(), "web".to_string()), ("tier".to_string(), "edge".to_string())]);
/// assert!(sel.matches(&labels));
/// assert_eq!(sel.to_string(), "app=web,!canary,tier in (edge,frontend)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl Selector {
    /// Parses the string form used by `kubectl -l` and the `labelSelector` query parameter.
    pub fn parse(input: &str) -> Result<Self, ParseError> {
        Ok(Self {
            requirements: parse::parse(input)?,
            nothing: false,
        })
    }

    /// The selector that matches every label set (the empty selector).
    pub fn everything() -> Self {
        Self::default()
    }

    /// The selector that matches nothing (what a missing `LabelSelector` means).
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// A selector requiring every `key=value` of the map (apimachinery's `SelectorFromSet`).
    pub fn from_map(labels: &BTreeMap<String, String>) -> Result<Self, ParseError> {
        let mut requirements = Vec::with_capacity(labels.len());
        for (key, value) in labels {
            requirements.push(Requirement::new(key, Operator::Equals, [value])?);
        }
        Ok(Self::from_requirements(requirements))
    }

    /// A selector from already-validated requirements.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key().cmp(b.key()));
        Self {
            requirements,
            nothing: false,
        }
    }

    /// Converts a `metav1.LabelSelector` (`matchLabels` + `matchExpressions`).
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Self, ParseError> {
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::new(key, Operator::Equals, [value])?);
        }
        for expr in selector.match_expressions.iter().flatten() {
            let values = expr.values.clone().unwrap_or_default();
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(ParseError::UnknownOperator {
                        key: expr.key.clone(),
                        operator: other.to_owned(),
                    });
                }
            };
            requirements.push(Requirement::new(&expr.key, operator, values)?);
        }
        Ok(Self::from_requirements(requirements))
    }

    /// Adds a requirement.
    pub fn with(mut self, requirement: Requirement) -> Self {
        self.requirements.push(requirement);
        self.requirements.sort_by(|a, b| a.key().cmp(b.key()));
        self
    }

    /// Whether the label set satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether this selector matches everything (no requirements).
    pub fn is_everything(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is the selector that matches nothing.
    pub fn is_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
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
            write!(f, "{r}")?;
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
