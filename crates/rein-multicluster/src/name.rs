//! `ClusterName`: the validated name of a cluster in a fleet, and the hub's reserved name.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// The name of a cluster in a fleet: the hub (the manager's own cluster, the empty name as in
/// multicluster-runtime) or a member a [`Provider`](crate::Provider) reported.
///
/// A member's name is 1 to 253 characters of ASCII letters, digits, `-`, `_`, `.` and `/`
/// (so Cluster API clusters can be named `namespace/name`). Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterName(Arc<str>);

impl ClusterName {
    /// The hub: the cluster the fleet's manager runs against.
    pub fn hub() -> ClusterName {
        ClusterName(Arc::from(""))
    }

    /// A member's name, checked.
    pub fn new(name: impl AsRef<str>) -> Result<ClusterName, InvalidClusterName> {
        let name = name.as_ref();
        let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/');
        if name.is_empty() || name.len() > 253 || !name.chars().all(valid) {
            return Err(InvalidClusterName {
                name: name.chars().take(300).collect(),
            });
        }
        Ok(ClusterName(Arc::from(name)))
    }

    /// Whether this is the hub.
    pub fn is_hub(&self) -> bool {
        self.0.is_empty()
    }

    /// The name as a string (empty for the hub).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as a metrics label value: the empty string for the hub, which no member
    /// can be named.
    pub(crate) fn label(&self) -> String {
        self.0.to_string()
    }

    /// A suffix for a per-cluster controller name (`/` is not allowed there).
    pub(crate) fn controller_suffix(&self) -> String {
        self.0.replace('/', "_")
    }
}

impl fmt::Debug for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_hub() {
            f.write_str("ClusterName(hub)")
        } else {
            write!(f, "ClusterName({:?})", &*self.0)
        }
    }
}

impl fmt::Display for ClusterName {
    /// The member's name, or `(hub)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_hub() {
            f.write_str("(hub)")
        } else {
            f.write_str(&self.0)
        }
    }
}

impl FromStr for ClusterName {
    type Err = InvalidClusterName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ClusterName::new(s)
    }
}

impl Borrow<str> for ClusterName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for ClusterName {
    type Error = InvalidClusterName;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        ClusterName::new(s)
    }
}

/// A cluster name that breaks the rules of [`ClusterName::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidClusterName {
    /// The rejected name (cut to 300 characters).
    pub name: String,
}

impl fmt::Display for InvalidClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid cluster name {:?}: want 1 to 253 of ASCII letters, digits, '-', '_', '.', '/'",
            self.name
        )
    }
}

impl std::error::Error for InvalidClusterName {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(ClusterName::new("member-a").is_ok());
        assert!(ClusterName::new("capi-ns/prod.eu_1").is_ok());
        assert!(ClusterName::new("").is_err());
        assert!(ClusterName::new("a b").is_err());
        assert!(ClusterName::new("x".repeat(254)).is_err());
        assert!("ü".parse::<ClusterName>().is_err());
        assert!(ClusterName::hub().is_hub());
        assert_eq!(ClusterName::hub().to_string(), "(hub)");
        assert_eq!(
            ClusterName::new("ns/c").unwrap().controller_suffix(),
            "ns_c"
        );
    }
}
