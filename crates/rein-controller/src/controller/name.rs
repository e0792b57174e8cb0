//! Controller names: validated, and unique within a scope — a manager's
//! ([`ControllerNames`], which each manager has), or else the process's — while their
//! controller lives.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::Error;

/// A set of controller names unique within it: a manager keeps one, so the controllers of
/// one manager need distinct names (their metrics and logs are told apart by name) while
/// one manager per test, several tests at once, builds the same controllers in each. A name
/// is given back when its controller is dropped.
/// It also keeps what each controller's builder declared (`for_`, `owns`, `watches`:
/// [`declared_kinds`](ControllerNames::declared_kinds)), from which the manager derives the
/// API permissions its controllers need.
#[derive(Clone, Default)]
pub struct ControllerNames {
    names: Arc<Mutex<HashSet<String>>>,
    pub(crate) declared: Arc<Mutex<Vec<crate::builder::DeclaredKind>>>,
}

impl fmt::Debug for ControllerNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names.lock().iter()).finish()
    }
}

impl ControllerNames {
    /// An empty scope.
    pub fn new() -> ControllerNames {
        ControllerNames::default()
    }

    /// Whether a live controller in this scope has `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.names.lock().contains(name)
    }

    /// The scope of controllers built outside any manager ([`super::Controller::new`]).
    pub(crate) fn process() -> &'static ControllerNames {
        static PROCESS: OnceLock<ControllerNames> = OnceLock::new();
        PROCESS.get_or_init(ControllerNames::new)
    }
}

/// A claimed name, given back to its scope when dropped (with its controller).
pub(crate) struct NameClaim {
    scope: Option<ControllerNames>,
    name: String,
}

impl Drop for NameClaim {
    fn drop(&mut self) {
        if let Some(scope) = &self.scope {
            scope.names.lock().remove(&self.name);
        }
    }
}

/// Checks `name` and, unless `skip_unique`, claims it in `scope`.
pub(crate) fn claim(
    name: &str,
    skip_unique: bool,
    scope: &ControllerNames,
) -> Result<NameClaim, Error> {
    if name.is_empty() {
        return Err(Error::EmptyName);
    }
    let valid_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.len() > 253 || !name.chars().all(valid_char) {
        return Err(Error::InvalidName {
            name: name.to_owned(),
        });
    }
    if skip_unique {
        return Ok(NameClaim {
            scope: None,
            name: name.to_owned(),
        });
    }
    if !scope.names.lock().insert(name.to_owned()) {
        return Err(Error::DuplicateName {
            name: name.to_owned(),
        });
    }
    Ok(NameClaim {
        scope: Some(scope.clone()),
        name: name.to_owned(),
    })
}
