//! The chaos driver: on a seeded RNG, every few hundred milliseconds, one fault against the API
//! server (drop watches, compact history, 500s, 429s with Retry-After, latency, a pause).

use std::fmt;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_util::sync::CancellationToken;

use super::server::FaultSink;

/// How many faults of each kind the driver injected.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FaultCounts {
    /// Every open watch stream closed.
    pub close_watches: u64,
    /// The watch history compacted (watches from older versions get 410 Gone).
    pub compactions: u64,
    /// Bursts of 500 answers injected.
    pub server_error_bursts: u64,
    /// 500 answers in those bursts.
    pub server_errors: u64,
    /// Bursts of 429 answers (with `Retry-After`) injected.
    pub throttle_bursts: u64,
    /// 429 answers in those bursts.
    pub throttles: u64,
    /// Periods of added latency on every request.
    pub latency_periods: u64,
    /// Times the server was paused (then resumed).
    pub pauses: u64,
    /// Error bursts not injected because the previous one was not used up yet.
    pub skipped_bursts: u64,
}

impl FaultCounts {
    /// Fault injections of every kind together.
    pub fn total(&self) -> u64 {
        self.close_watches
            + self.compactions
            + self.server_error_bursts
            + self.throttle_bursts
            + self.latency_periods
            + self.pauses
    }
}

impl fmt::Display for FaultCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in all: {} watch drops, {} compactions, {} bursts of 500 ({} answers), \
             {} bursts of 429 ({} answers), {} latency periods, {} pauses; {} bursts skipped \
             while one was pending",
            self.total(),
            self.close_watches,
            self.compactions,
            self.server_error_bursts,
            self.server_errors,
            self.throttle_bursts,
            self.throttles,
            self.latency_periods,
            self.pauses,
            self.skipped_bursts
        )
    }
}

/// Injects one random fault every `interval` (a random time within the range) until `stop`,
/// then clears every fault and returns the counts.
pub(crate) async fn run(
    faults: FaultSink,
    seed: u64,
    interval: (Duration, Duration),
    stop: CancellationToken,
) -> FaultCounts {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xc4a0_5eed);
    let mut counts = FaultCounts::default();
    loop {
        let wait = rng.random_range(interval.0..=interval.1);
        if stop
            .run_until_cancelled(tokio::time::sleep(wait))
            .await
            .is_none()
        {
            break;
        }
        // A burst of error answers waits for requests to use it up. Bursts injected faster
        // than the traffic consumes them would pile up until every request met an error and
        // every client backed off further (the soak's hang, docs/reliability.md): an error
        // burst is injected only once the previous one is used up, so errors stay bounded by
        // the traffic, as a real server's throttling is.
        let choice = rng.random_range(0..6);
        let busy = matches!(choice, 2 | 3) && faults.pending() > 0;
        if busy {
            counts.skipped_bursts += 1;
            continue;
        }
        match choice {
            0 => {
                faults.close_watches();
                counts.close_watches += 1;
            }
            1 => {
                faults.compact();
                counts.compactions += 1;
            }
            2 => {
                let n = rng.random_range(1..=6);
                faults.server_errors(n);
                counts.server_error_bursts += 1;
                counts.server_errors += n as u64;
            }
            3 => {
                let n = rng.random_range(1..=6);
                faults.throttle(n, rng.random_range(0..=1));
                counts.throttle_bursts += 1;
                counts.throttles += n as u64;
            }
            4 => {
                faults.set_latency(Duration::from_millis(rng.random_range(5..=60)));
                let hold = Duration::from_millis(rng.random_range(100..=400));
                stop.run_until_cancelled(tokio::time::sleep(hold)).await;
                faults.set_latency(Duration::ZERO);
                counts.latency_periods += 1;
            }
            _ => {
                faults.pause();
                let hold = Duration::from_millis(rng.random_range(50..=400));
                stop.run_until_cancelled(tokio::time::sleep(hold)).await;
                faults.resume();
                counts.pauses += 1;
            }
        }
    }
    faults.clear();
    faults.set_latency(Duration::ZERO);
    faults.resume();
    counts
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rein_testenv::TestEnv;
    use tokio_util::sync::CancellationToken;

    use super::*;

    /// With no traffic to use them up, error bursts must not pile up: a chaos driver that
    /// kept injecting them left hundreds of error answers waiting, so every request of the
    /// soak met one and every client backed off further, until nothing moved (the soak's
    /// hang). Ten simulated minutes on tokio's paused clock.
    #[tokio::test(start_paused = true)]
    async fn error_bursts_do_not_pile_up_without_traffic() {
        let env = TestEnv::start().await.expect("testenv");
        let stop = CancellationToken::new();
        let chaos = tokio::spawn(run(
            FaultSink::InProcess(env.faults()),
            11,
            (Duration::from_millis(100), Duration::from_millis(400)),
            stop.clone(),
        ));
        let mut most = 0;
        for _ in 0..600 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            most = most.max(env.faults().pending());
        }
        stop.cancel();
        let counts = chaos.await.unwrap();
        assert!(most <= 6, "{most} error answers waited at once");
        assert!(counts.server_error_bursts + counts.throttle_bursts >= 1);
        assert!(counts.skipped_bursts > 100, "{counts}");
        assert_eq!(env.faults().pending(), 0, "cleared at the end");
    }
}
