//! Errors from parsing or building a label selector.

/// Why a label selector could not be parsed or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A token was not what the grammar allows at this point.
    #[error("parsing label selector: expected {expected} at byte {position}, found {found:?}")]
    UnexpectedToken {
        /// What the parser wanted.
        expected: &'static str,
        /// What it found.
        found: String,
        /// Byte offset in the input.
        position: usize,
    },
    /// The input ended in the middle of a requirement.
    #[error("parsing label selector: expected {expected} but the input ended")]
    UnexpectedEnd {
        /// What the parser wanted.
        expected: &'static str,
    },
    /// A key is not a valid qualified name (`[prefix/]name`).
    #[error("parsing label selector: invalid label key {key:?}: {reason}")]
    InvalidKey {
        /// The rejected key.
        key: String,
        /// What rule it broke.
        reason: &'static str,
    },
    /// A value is not a valid label value.
    #[error("parsing label selector: invalid value {value:?} for key {key:?}: {reason}")]
    InvalidValue {
        /// The key the value belongs to.
        key: String,
        /// The rejected value.
        value: String,
        /// What rule it broke.
        reason: &'static str,
    },
    /// `in`/`notin` with an empty set, or a `matchExpressions` entry without values.
    #[error("parsing label selector: operator {operator} on key {key:?} needs at least one value")]
    EmptyValues {
        /// The key.
        key: String,
        /// The operator.
        operator: &'static str,
    },
    /// `Exists`/`DoesNotExist` in `matchExpressions` given values.
    #[error("parsing label selector: operator {operator} on key {key:?} takes no values")]
    UnexpectedValues {
        /// The key.
        key: String,
        /// The operator.
        operator: &'static str,
    },
    /// `>`/`<` with a value that is not an integer.
    #[error("parsing label selector: value {value:?} for key {key:?} must be an integer")]
    NotAnInteger {
        /// The key.
        key: String,
        /// The rejected value.
        value: String,
    },
    /// A `matchExpressions` operator other than In, NotIn, Exists, DoesNotExist.
    #[error("parsing label selector: unknown operator {operator:?} for key {key:?}")]
    UnknownOperator {
        /// The key.
        key: String,
        /// The rejected operator.
        operator: String,
    },
}
