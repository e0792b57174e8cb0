//! Controller names: validated and unique within the process.

use std::collections::HashSet;
use std::sync::OnceLock;

use parking_lot::Mutex;

use super::Error;

fn used() -> &'static Mutex<HashSet<String>> {
    static USED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    USED.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Checks `name` and, unless `skip_unique`, claims it for this process.
pub(crate) fn claim(name: &str, skip_unique: bool) -> Result<(), Error> {
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
        return Ok(());
    }
    if !used().lock().insert(name.to_owned()) {
        return Err(Error::DuplicateName {
            name: name.to_owned(),
        });
    }
    Ok(())
}
