//! Terminal errors: reconcile failures that retrying cannot fix.

use std::error::Error as StdError;
use std::fmt;

/// A boxed, thread-safe error: what reconcilers' errors are converted to.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// An error that is recorded but not retried (controller-runtime's `reconcile.TerminalError`).
///
/// The controller finds it anywhere in an error's `source()` chain, so a reconciler may wrap it
/// in its own error type (as `#[source]`) and it still counts as terminal.
#[derive(Debug)]
pub struct TerminalError {
    inner: BoxError,
}

impl TerminalError {
    /// Marks `err` as terminal.
    pub fn new(err: impl Into<BoxError>) -> Self {
        TerminalError { inner: err.into() }
    }

    /// The wrapped error.
    pub fn inner(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.inner
    }
}

impl fmt::Display for TerminalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("terminal error")
    }
}

impl StdError for TerminalError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.inner)
    }
}

/// Whether `err` is, or wraps somewhere in its `source()` chain, a [`TerminalError`].
pub fn is_terminal(err: &(dyn StdError + 'static)) -> bool {
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if e.is::<TerminalError>() {
            return true;
        }
        current = e.source();
    }
    false
}
