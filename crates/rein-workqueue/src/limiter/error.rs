//! The limiter's error: asking for more tokens than the bucket can ever hold.

use std::fmt;

/// [`Limiter::wait_n`](crate::Limiter::wait_n) was asked for more tokens at once than the
/// bucket holds, so the wait could never end.
///
/// A leaf error with a hand-written `Display` (the crate's only runtime dependency is tokio).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExceedsBurstError {
    /// Tokens asked for.
    pub n: usize,
    /// The limiter's burst when they were asked for.
    pub burst: usize,
}

impl fmt::Display for ExceedsBurstError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "waiting for {} tokens from a limiter whose burst is {}",
            self.n, self.burst
        )
    }
}

impl std::error::Error for ExceedsBurstError {}
