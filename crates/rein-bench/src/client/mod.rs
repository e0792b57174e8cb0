//! The client process: one side of one case against a running server, printing BENCH lines.

mod arrival;
mod controller;
mod informer;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use kube_client::config::{KubeConfigOptions, Kubeconfig};

use crate::cli::{ClientArgs, Scenario, Side};

/// How long any single wait in a client may take before the case fails.
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(600);

pub(crate) async fn run(args: ClientArgs) -> anyhow::Result<()> {
    let client = connect(&args.kubeconfig).await?;
    let sizes = args.sizes.effective();
    let case = args.scenario.name(&sizes);
    let report = Report {
        case,
        side: args.side,
    };
    match args.scenario {
        Scenario::Sync | Scenario::Watch | Scenario::Metadata | Scenario::Namespaces => {
            informer::run(client, &report, &sizes, args.scenario).await
        }
        Scenario::Controller => {
            anyhow::ensure!(
                args.side != Side::KubeRuntimeStreaming,
                "the controller case compares default configurations only"
            );
            controller::run(client, &args.kubeconfig, &report, &sizes).await
        }
    }
}

/// A kube-client `Client` for the server's kubeconfig.
async fn connect(path: &Path) -> anyhow::Result<kube_client::Client> {
    let kubeconfig = Kubeconfig::read_from(path).context("reading the kubeconfig")?;
    let config =
        kube_client::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .context("loading the kubeconfig")?;
    kube_client::Client::try_from(config).context("building a client")
}

/// Prints BENCH lines for one case and side.
#[derive(Debug)]
pub(crate) struct Report {
    case: String,
    side: Side,
}

impl Report {
    /// Prints `BENCH|side-by-side|<case>/<metric>/<side>|<value>|<unit>|<note>`.
    pub(crate) fn figure(&self, metric: &str, value: f64, unit: &str, note: &str) {
        println!(
            "BENCH|side-by-side|{}/{metric}/{}|{value:.3}|{unit}|{note}",
            self.case,
            self.side.name()
        );
    }

    /// The side under test.
    pub(crate) fn side(&self) -> Side {
        self.side
    }
}

/// Counts events and remembers when the first and the `target`th arrived.
#[derive(Debug)]
pub(crate) struct EventClock {
    base: Instant,
    target: usize,
    count: AtomicUsize,
    first_nanos: AtomicU64,
    last_nanos: AtomicU64,
}

impl EventClock {
    pub(crate) fn new(target: usize) -> Arc<Self> {
        Arc::new(EventClock {
            base: Instant::now(),
            target,
            count: AtomicUsize::new(0),
            first_nanos: AtomicU64::new(0),
            last_nanos: AtomicU64::new(0),
        })
    }

    /// Records one event.
    pub(crate) fn tick(&self) {
        let n = self.count.fetch_add(1, Ordering::AcqRel) + 1;
        if n == 1 || n == self.target {
            let nanos = self.base.elapsed().as_nanos() as u64;
            if n == 1 {
                self.first_nanos.store(nanos, Ordering::Release);
            }
            if n == self.target {
                self.last_nanos.store(nanos, Ordering::Release);
            }
        }
    }

    /// Events seen so far.
    pub(crate) fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Seconds from the first event to the `target`th (0 before the target is reached).
    pub(crate) fn span_secs(&self) -> f64 {
        let first = self.first_nanos.load(Ordering::Acquire);
        let last = self.last_nanos.load(Ordering::Acquire);
        last.saturating_sub(first) as f64 / 1e9
    }
}

/// Polls `done` every millisecond until it holds, failing after [`WAIT_LIMIT`].
pub(crate) async fn wait_until(what: &str, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + WAIT_LIMIT;
    while !done() {
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}
