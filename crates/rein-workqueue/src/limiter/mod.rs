//! A token-bucket limiter with the exact semantics of Go's `golang.org/x/time/rate`.
//!
//! The bucket holds up to `burst` tokens and refills at `limit` tokens per second; it starts
//! full. Taking tokens may drive the count negative: the taker is then told to wait until the
//! debt is repaid (a reservation), and later takers queue behind it. Fractional tokens are kept
//! exactly as Go does, and the clock is tokio's, so tests run on a paused clock.

mod error;
mod reservation;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

pub use error::ExceedsBurstError;
pub use reservation::Reservation;

use crate::sync::lock;

/// A token bucket: `limit` tokens per second, at most `burst` at once (like Go's `rate.Limiter`).
///
/// Cheap to clone: clones share one bucket. A limit of [`Limiter::INF`] lets everything through,
/// even with a burst of 0. A limit of 0 refills nothing: the tokens the bucket holds are all it
/// hands out until [`set_limit`](Limiter::set_limit) raises the limit (the burst stays as it is,
/// as in Go).
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use rein_workqueue::Limiter;
///
/// let limiter = Limiter::new(1.0, 3); // three at once, then one per second
/// let start = tokio::time::Instant::now();
/// for _ in 0..4 {
///     limiter.wait().await;
/// }
/// assert_eq!(start.elapsed(), Duration::from_secs(1));
/// # }
/// ```
#[derive(Clone)]
pub struct Limiter {
    shared: Arc<Mutex<Bucket>>,
}

/// The bucket's state, guarded by one mutex.
#[derive(Debug)]
pub(crate) struct Bucket {
    pub(crate) limit: f64,
    pub(crate) burst: usize,
    pub(crate) tokens: f64,
    /// When `tokens` was last brought up to date.
    pub(crate) last: Instant,
    /// The latest time to act of any reservation (rate-limited event).
    pub(crate) last_event: Instant,
}

impl Limiter {
    /// The infinite limit: every request is allowed at once.
    pub const INF: f64 = f64::INFINITY;

    /// A limiter refilling at `rate` tokens per second with room for `burst` tokens; it starts
    /// full. `rate` may be [`Limiter::INF`]; a negative or NaN rate is treated as 0.
    pub fn new(rate: f64, burst: usize) -> Self {
        let now = Instant::now();
        Self {
            shared: Arc::new(Mutex::new(Bucket {
                limit: sanitize(rate),
                burst,
                tokens: burst as f64,
                last: now,
                last_event: now,
            })),
        }
    }

    /// The current limit in tokens per second.
    pub fn limit(&self) -> f64 {
        lock(&self.shared).limit
    }

    /// The current burst.
    pub fn burst(&self) -> usize {
        lock(&self.shared).burst
    }

    /// Tokens available now (negative while reservations are outstanding).
    pub fn tokens(&self) -> f64 {
        let now = Instant::now();
        let bucket = lock(&self.shared);
        bucket.advance(now).1
    }

    /// Changes the limit; tokens accumulated so far are kept. Reservations already made keep
    /// their times.
    pub fn set_limit(&self, rate: f64) {
        let now = Instant::now();
        let mut bucket = lock(&self.shared);
        let (now, tokens) = bucket.advance(now);
        bucket.last = now;
        bucket.tokens = tokens;
        bucket.limit = sanitize(rate);
    }

    /// Changes the burst; tokens above the new burst are dropped on the next refill.
    pub fn set_burst(&self, burst: usize) {
        let now = Instant::now();
        let mut bucket = lock(&self.shared);
        let (now, tokens) = bucket.advance(now);
        bucket.last = now;
        bucket.tokens = tokens;
        bucket.burst = burst;
    }

    /// Takes one token if one is available now; never waits.
    pub fn allow(&self) -> bool {
        self.allow_n(1)
    }

    /// Takes `n` tokens if they are available now; never waits.
    pub fn allow_n(&self, n: usize) -> bool {
        self.reserve_at(Instant::now(), n, Duration::ZERO).ok()
    }

    /// Reserves one token: the reservation says how long to wait before acting
    /// ([`Reservation::delay`]) and can be cancelled to give the token back.
    pub fn reserve(&self) -> Reservation {
        self.reserve_n(1)
    }

    /// Reserves `n` tokens; the reservation is not [`ok`](Reservation::ok) when `n` exceeds the
    /// burst (and the limit is finite).
    pub fn reserve_n(&self, n: usize) -> Reservation {
        self.reserve_at(Instant::now(), n, Duration::MAX)
    }

    /// Waits until one token is available and takes it.
    ///
    /// A limiter with a finite limit and a burst of 0 admits nothing, so this then never
    /// returns; [`wait_n`](Self::wait_n) reports that case as an error instead. Dropping the
    /// future while it waits gives the token back.
    pub async fn wait(&self) {
        if self.wait_n(1).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Waits until `n` tokens are available and takes them. Dropping the future while it
    /// waits cancels the reservation, giving the tokens back to later callers.
    pub async fn wait_n(&self, n: usize) -> Result<(), ExceedsBurstError> {
        let now = Instant::now();
        let reservation = self.reserve_at(now, n, Duration::MAX);
        if !reservation.ok() {
            return Err(ExceedsBurstError {
                n,
                burst: self.burst(),
            });
        }
        let delay = reservation.delay_from(now);
        if delay.is_zero() {
            return Ok(());
        }
        let mut guard = CancelOnDrop {
            reservation: Some(reservation),
        };
        tokio::time::sleep(delay).await;
        guard.reservation = None;
        Ok(())
    }

    /// Go's `reserveN`: takes `n` tokens at `now` if the resulting wait is at most
    /// `max_future_reserve`.
    pub(crate) fn reserve_at(
        &self,
        now: Instant,
        n: usize,
        max_future_reserve: Duration,
    ) -> Reservation {
        let mut bucket = lock(&self.shared);
        if bucket.limit == f64::INFINITY {
            return Reservation::new(self.clone(), true, n, now, bucket.limit);
        }
        let (now, mut tokens) = bucket.advance(now);
        tokens -= n as f64;
        let wait = if tokens < 0.0 {
            duration_from_tokens(bucket.limit, -tokens)
        } else {
            Duration::ZERO
        };
        let ok = n <= bucket.burst && wait <= max_future_reserve;
        if !ok {
            return Reservation::new(self.clone(), false, 0, now, bucket.limit);
        }
        let time_to_act = add_saturating(now, wait);
        bucket.last = now;
        bucket.tokens = tokens;
        bucket.last_event = time_to_act;
        Reservation::new(self.clone(), true, n, time_to_act, bucket.limit)
    }

    pub(crate) fn bucket(&self) -> &Mutex<Bucket> {
        &self.shared
    }
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bucket = lock(&self.shared);
        f.debug_struct("Limiter")
            .field("limit", &bucket.limit)
            .field("burst", &bucket.burst)
            .field("tokens", &bucket.tokens)
            .finish()
    }
}

impl Bucket {
    /// Go's `advance`: the token count at `now` (refilled since `last`, capped at the burst).
    /// A `now` before `last` (never with tokio's monotonic clock) counts as no time passing.
    pub(crate) fn advance(&self, now: Instant) -> (Instant, f64) {
        let last = self.last.min(now);
        let elapsed = now - last;
        let tokens = self.tokens + tokens_from_duration(self.limit, elapsed);
        (now, tokens.min(self.burst as f64))
    }
}

/// Cancels a reservation if the waiting future is dropped before its time.
struct CancelOnDrop {
    reservation: Option<Reservation>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(reservation) = self.reservation.take() {
            reservation.cancel();
        }
    }
}

fn sanitize(rate: f64) -> f64 {
    if rate.is_nan() || rate < 0.0 {
        0.0
    } else if rate >= f64::MAX {
        f64::INFINITY
    } else {
        rate
    }
}

/// Go's `Limit.durationFromTokens`: truncated to whole nanoseconds, saturating.
pub(crate) fn duration_from_tokens(limit: f64, tokens: f64) -> Duration {
    if limit <= 0.0 {
        return Duration::MAX;
    }
    let nanos = 1e9 * (tokens / limit);
    if nanos >= u64::MAX as f64 {
        Duration::MAX
    } else {
        // `as` truncates toward zero like Go's conversion; negatives become 0.
        Duration::from_nanos(nanos as u64)
    }
}

/// Go's `Limit.tokensFromDuration`.
pub(crate) fn tokens_from_duration(limit: f64, elapsed: Duration) -> f64 {
    if limit <= 0.0 {
        return 0.0;
    }
    if limit == f64::INFINITY {
        return if elapsed.is_zero() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    elapsed.as_secs_f64() * limit
}

/// `instant + d`, or a time about a century ahead when that does not fit.
pub(crate) fn add_saturating(instant: Instant, d: Duration) -> Instant {
    instant.checked_add(d).unwrap_or_else(|| {
        instant
            .checked_add(Duration::from_secs(100 * 365 * 24 * 3600))
            .unwrap_or(instant)
    })
}
