//! Exponential backoff with jitter and a reset after a quiet period (client-go's reflector backoff).

use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

/// Backoff settings. Defaults are client-go's: 800 ms doubling to 30 s, jitter 1.0, reset after 2 min.
#[derive(Debug, Clone)]
pub struct BackoffOptions {
    /// First delay.
    pub initial: Duration,
    /// Growth factor per step.
    pub factor: f64,
    /// Upper bound before jitter.
    pub max: Duration,
    /// Each delay `d` becomes `d + rand(0..1) * jitter * d`.
    pub jitter: f64,
    /// The sequence restarts when the previous attempt ran at least this long.
    pub reset_after: Duration,
}

impl Default for BackoffOptions {
    fn default() -> Self {
        BackoffOptions {
            initial: Duration::from_millis(800),
            factor: 2.0,
            max: Duration::from_secs(30),
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Backoff {
    options: BackoffOptions,
    current: Duration,
    last_start: Option<Instant>,
}

impl Backoff {
    pub(crate) fn new(options: BackoffOptions) -> Self {
        Backoff {
            current: options.initial,
            options,
            last_start: None,
        }
    }

    /// Marks the start of an attempt.
    pub(crate) fn attempt_started(&mut self) {
        self.last_start = Some(Instant::now());
    }

    /// The delay before the next attempt.
    pub(crate) fn next_delay(&mut self) -> Duration {
        if let Some(start) = self.last_start
            && start.elapsed() >= self.options.reset_after
        {
            self.current = self.options.initial;
        }
        let base = self.current;
        let grown = base.mul_f64(self.options.factor.max(1.0));
        self.current = grown.min(self.options.max);
        let jitter = if self.options.jitter > 0.0 {
            base.mul_f64(rand::rng().random::<f64>() * self.options.jitter)
        } else {
            Duration::ZERO
        };
        base + jitter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn grows_caps_and_resets() {
        let mut b = Backoff::new(BackoffOptions {
            initial: Duration::from_secs(1),
            factor: 2.0,
            max: Duration::from_secs(4),
            jitter: 0.0,
            reset_after: Duration::from_secs(60),
        });
        b.attempt_started();
        let seq: Vec<u64> = (0..4).map(|_| b.next_delay().as_secs()).collect();
        assert_eq!(seq, vec![1, 2, 4, 4]);
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(b.next_delay().as_secs(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn jitter_stays_in_range() {
        let mut b = Backoff::new(BackoffOptions::default());
        for _ in 0..20 {
            let before = b.current;
            let d = b.next_delay();
            assert!(d >= before && d <= before * 2, "{d:?} vs {before:?}");
        }
    }
}
