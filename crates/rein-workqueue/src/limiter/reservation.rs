//! A reservation of tokens: when the holder may act, and how to give the tokens back.

use std::time::Duration;

use tokio::time::Instant;

use super::{Limiter, duration_from_tokens, tokens_from_duration};
use crate::sync::lock;

/// Tokens taken from a [`Limiter`], usable from [`time_to_act`](Self::time_to_act) on
/// (Go's `rate.Reservation`).
#[derive(Debug)]
pub struct Reservation {
    limiter: Limiter,
    ok: bool,
    tokens: usize,
    time_to_act: Instant,
    /// The limit when the reservation was made.
    limit: f64,
}

impl Reservation {
    pub(crate) fn new(
        limiter: Limiter,
        ok: bool,
        tokens: usize,
        time_to_act: Instant,
        limit: f64,
    ) -> Self {
        Self {
            limiter,
            ok,
            tokens,
            time_to_act,
            limit,
        }
    }

    /// Whether the tokens could be reserved at all (false when more were asked for than the
    /// burst, or for `allow` when they were not available at once).
    pub fn ok(&self) -> bool {
        self.ok
    }

    /// When the holder may act.
    pub fn time_to_act(&self) -> Instant {
        self.time_to_act
    }

    /// How long to wait from now before acting; [`Duration::MAX`] if the reservation is not ok.
    pub fn delay(&self) -> Duration {
        self.delay_from(Instant::now())
    }

    /// How long to wait from `now` before acting; [`Duration::MAX`] if not ok.
    pub fn delay_from(&self, now: Instant) -> Duration {
        if !self.ok {
            return Duration::MAX;
        }
        self.time_to_act.saturating_duration_since(now)
    }

    /// Gives the tokens back as far as possible: later reservations may act sooner. Has no
    /// effect once the time to act has passed.
    pub fn cancel(&self) {
        self.cancel_at(Instant::now());
    }

    /// Go's `CancelAt`.
    pub(crate) fn cancel_at(&self, now: Instant) {
        if !self.ok {
            return;
        }
        let mut bucket = lock(self.limiter.bucket());
        if bucket.limit == f64::INFINITY || self.tokens == 0 || self.time_to_act < now {
            return;
        }
        // Tokens reserved after this one cannot be given back: they were counted from the
        // moment of the latest event.
        let later = bucket
            .last_event
            .saturating_duration_since(self.time_to_act);
        let restore = self.tokens as f64 - tokens_from_duration(self.limit, later);
        if restore <= 0.0 {
            return;
        }
        let (now, tokens) = bucket.advance(now);
        bucket.last = now;
        bucket.tokens = (tokens + restore).min(bucket.burst as f64);
        if self.time_to_act == bucket.last_event {
            let previous = duration_from_tokens(self.limit, self.tokens as f64);
            if let Some(previous_event) = self.time_to_act.checked_sub(previous)
                && previous_event >= now
            {
                bucket.last_event = previous_event;
            }
        }
    }
}
