//! The soak's figures and outcome, printed at the end of a run.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use super::chaos::FaultCounts;
use super::error::SoakFailure;

/// What a soak run did and measured.
#[derive(Debug, Clone)]
pub struct SoakReport {
    /// The seed of the run.
    pub seed: u64,
    /// Writer rounds run.
    pub rounds: usize,
    /// Faults injected, by kind.
    pub faults: FaultCounts,
    /// Objects the writer created (the controllers created more: mirrors, Pods).
    pub objects_created: usize,
    /// Objects in the manager's cache at the end.
    pub live_objects: usize,
    /// Writes the writer made.
    pub writes: u64,
    /// Reconciles per controller.
    pub reconciles: BTreeMap<String, u64>,
    /// Failed reconciles (retried) per controller.
    pub reconcile_errors: BTreeMap<String, u64>,
    /// Finalizer cleanups run.
    pub cleanups: u64,
    /// From the start to the moment the writer and the chaos stopped.
    pub chaos_time: Duration,
    /// From the moment the chaos stopped until every object was in its desired state.
    pub convergence: Option<Duration>,
    /// The soak's resident memory (the client side: manager, writer, checks; and the API
    /// server when it runs in process) at the end of each round, KiB.
    pub rss_kib: Vec<u64>,
    /// The API server's resident memory at the end of each round, KiB (empty when it runs
    /// in the soak's process).
    pub server_rss_kib: Vec<u64>,
    /// The soak's live heap (bytes allocated and not freed) at the end of each round, KiB
    /// (empty unless its allocator counts them).
    pub heap_kib: Vec<u64>,
    /// Tasks alive on the manager's runtime before it was built.
    pub tasks_baseline: usize,
    /// The most tasks seen alive on the manager's runtime at the end of a round.
    pub tasks_peak: usize,
    /// Tasks alive on the manager's runtime after it stopped.
    pub tasks_after: usize,
}

/// A report and the checks that failed (none: the soak passed).
#[derive(Debug, Clone)]
pub struct SoakOutcome {
    /// The figures.
    pub report: SoakReport,
    /// Every failed check.
    pub failures: Vec<SoakFailure>,
}

impl SoakOutcome {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// One line of `key=value` fields, `|`-separated: what `cargo xtask soak` tabulates per
    /// seed.
    pub fn summary(&self) -> String {
        let r = &self.report;
        let peak = |s: &[u64]| s.iter().max().map_or(0, |k| k / 1024);
        let last = |s: &[u64]| s.last().map_or(0, |k| k / 1024);
        let mut fields = vec![
            format!("seed={}", r.seed),
            format!("checks={}", if self.passed() { "passed" } else { "FAILED" }),
            format!(
                "convergence={}",
                r.convergence
                    .map_or("never".into(), |d| format!("{:.1}s", d.as_secs_f64()))
            ),
            format!("faults={}", r.faults.total()),
            format!("writes={}", r.writes),
            format!("rss_peak={}MiB", peak(&r.rss_kib)),
            format!("rss_final={}MiB", last(&r.rss_kib)),
        ];
        if !r.heap_kib.is_empty() {
            fields.push(format!("heap_peak={}MiB", peak(&r.heap_kib)));
            fields.push(format!("heap_final={}MiB", last(&r.heap_kib)));
        }
        if !r.server_rss_kib.is_empty() {
            fields.push(format!("server_rss_peak={}MiB", peak(&r.server_rss_kib)));
        }
        fields.join("|")
    }
}

impl fmt::Display for SoakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "soak report (seed {})", self.seed)?;
        writeln!(
            f,
            "  rounds            {} in {:.1} s",
            self.rounds,
            self.chaos_time.as_secs_f64()
        )?;
        writeln!(f, "  faults injected   {}", self.faults)?;
        writeln!(
            f,
            "  objects           {} created by the writer, {} in the cache at the end",
            self.objects_created, self.live_objects
        )?;
        writeln!(f, "  writes            {}", self.writes)?;
        let total: u64 = self.reconciles.values().sum();
        let errors: u64 = self.reconcile_errors.values().sum();
        write!(
            f,
            "  reconciles        {total} ({errors} failed and retried):"
        )?;
        for (name, n) in &self.reconciles {
            let e = self.reconcile_errors.get(name).copied().unwrap_or(0);
            write!(f, " {name} {n}/{e}")?;
        }
        writeln!(f)?;
        writeln!(f, "  finalizer cleanups {}", self.cleanups)?;
        match self.convergence {
            Some(d) => writeln!(
                f,
                "  convergence       {:.2} s after the chaos stopped",
                d.as_secs_f64()
            )?,
            None => writeln!(f, "  convergence       never")?,
        }
        writeln!(f, "  rss MiB, {}", series(&self.rss_kib))?;
        if !self.heap_kib.is_empty() {
            writeln!(f, "  live heap MiB, {}", series(&self.heap_kib))?;
        }
        if !self.server_rss_kib.is_empty() {
            writeln!(
                f,
                "  server rss MiB (its own process), {}",
                series(&self.server_rss_kib)
            )?;
        }
        write!(
            f,
            "  manager tasks     {} before, {} at peak, {} after stop",
            self.tasks_baseline, self.tasks_peak, self.tasks_after
        )
    }
}

/// At most ~30 figures of a per-round series, in MiB: every `step`-th round, and always the
/// last, after a note of the step.
fn series(kib: &[u64]) -> String {
    let step = kib.len().div_ceil(30).max(1);
    let mut figures: Vec<String> = kib
        .iter()
        .step_by(step)
        .map(|k| (k / 1024).to_string())
        .collect();
    if !kib.len().saturating_sub(1).is_multiple_of(step)
        && let Some(last) = kib.last()
    {
        figures.push((last / 1024).to_string());
    }
    let every = if step == 1 {
        "per round".to_owned()
    } else {
        format!("every {step} rounds")
    };
    format!("{every}: {}", figures.join(" "))
}

impl fmt::Display for SoakOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.report)?;
        if self.failures.is_empty() {
            return write!(f, "soak passed: every check held");
        }
        write!(f, "soak FAILED: {} check(s)", self.failures.len())?;
        for failure in &self.failures {
            write!(f, "\n  - {failure}")?;
        }
        Ok(())
    }
}
