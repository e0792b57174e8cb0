//! Command-line arguments of the three process roles: `serve`, `client` and `case`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Side-by-side benchmark harness: rein against kube-runtime.
#[derive(Debug, Parser)]
#[command(name = "rein-bench")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The process roles.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Start rein-testenv with preloaded Pods; print `READY`, then obey `update N` lines on stdin.
    Serve(ServeArgs),
    /// Run one side of one case against a running server.
    Client(ClientArgs),
    /// Run one case end to end: a serve process plus a client process; print BENCH lines.
    Case(CaseArgs),
    /// Load realistic Pods with managedFields into an in-process rein-testenv and list them;
    /// print rein-testenv's peak RSS and the load, list and watch times.
    TestenvMemory(TestenvMemoryArgs),
}

/// The measured scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Scenario {
    /// Initial sync of `--pods` Pods into a cache.
    Sync,
    /// Sync `--watch-pods` Pods, then apply `--updates` streamed updates.
    Watch,
    /// `--objects` ConfigMaps created after a no-op controller started.
    Controller,
    /// Initial sync of `--pods` Pods into a metadata-only cache: rein's cache of
    /// `PartialObjectMeta<Pod>`, kube-runtime's `metadata_watcher` + reflector.
    Metadata,
    /// Initial sync of the Pods in `--watched-namespaces` of the `--namespaces` namespaces the
    /// `--pods` Pods are spread over: rein's multi-namespace cache, kube-runtime's one watcher
    /// and reflector per namespace.
    Namespaces,
}

impl Scenario {
    /// The name used in BENCH lines: `watch-backlog` for a watch whose client was stopped
    /// while the updates were written, `controller-paced-c<n>` for a paced writer, a `-plain`
    /// suffix with `--no-managed-fields` and `-alike` with `--strip-managed-fields`.
    pub(crate) fn name(self, sizes: &Sizes) -> String {
        let mut name = self.base_name(sizes);
        if self != Scenario::Controller {
            if !sizes.managed_fields {
                name.push_str("-plain");
            }
            if sizes.strip_managed_fields {
                name.push_str("-alike");
            }
        }
        name
    }

    fn base_name(self, sizes: &Sizes) -> String {
        match self {
            Scenario::Sync => "initial-sync".to_owned(),
            Scenario::Watch if sizes.backlog => "watch-backlog".to_owned(),
            Scenario::Watch => "watch".to_owned(),
            Scenario::Controller if sizes.paced > 0.0 => {
                format!("controller-paced-c{}", sizes.concurrency)
            }
            Scenario::Controller => format!("controller-c{}", sizes.concurrency),
            Scenario::Metadata => "metadata-only".to_owned(),
            Scenario::Namespaces => "multi-namespace".to_owned(),
        }
    }
}

/// The implementation under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Side {
    /// rein-informer / rein-controller with default options.
    Rein,
    /// kube-runtime's watcher + reflector / Controller with default options (paged list).
    KubeRuntime,
    /// kube-runtime with `watcher::Config::streaming_lists()` (sync and watch only).
    KubeRuntimeStreaming,
}

impl Side {
    /// The name used in BENCH lines.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Side::Rein => "rein",
            Side::KubeRuntime => "kube-runtime",
            Side::KubeRuntimeStreaming => "kube-runtime-streaming",
        }
    }
}

/// Workload sizes shared by `case` and `client`.
#[derive(Debug, Clone, Args)]
pub(crate) struct Sizes {
    /// Pods preloaded for the initial-sync case (realistic ones: a kube-runtime cache of
    /// 100,000 with managedFields outgrows this machine beside the server).
    #[arg(long, default_value_t = 20_000)]
    pub(crate) pods: usize,
    /// Pods preloaded for the watch case (each is updated in turn).
    #[arg(long, default_value_t = 10_000)]
    pub(crate) watch_pods: usize,
    /// Updates streamed in the watch case.
    #[arg(long, default_value_t = 50_000)]
    pub(crate) updates: usize,
    /// ConfigMaps created in the controller case.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) objects: usize,
    /// Reconcile concurrency in the controller case.
    #[arg(long, default_value_t = 1)]
    pub(crate) concurrency: usize,
    /// Controller case: create this many objects per second on a fixed schedule (an open-loop
    /// writer, below the server's saturation); 0 writes them as fast as the server takes them
    /// (64 in flight).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) paced: f64,
    /// Watch case: stop the client process (SIGSTOP) while the updates are written and resume
    /// it afterwards, so the figure is the client draining a backlog at its own speed.
    #[arg(long)]
    pub(crate) backlog: bool,
    /// Preload Pods as a cluster writes them, each with managedFields entries (created by
    /// kube-controller-manager, status by kubelet): ~9.3 KB of JSON per Pod instead of
    /// ~5.0 KB. On by default; `--no-managed-fields` preloads Pods without them, and case
    /// names then gain `-plain`.
    #[arg(long = "no-managed-fields", action = clap::ArgAction::SetFalse)]
    pub(crate) managed_fields: bool,
    /// Sync and watch cases: configured alike. rein drops each object's managedFields before
    /// caching it in either configuration (as its cache does by default,
    /// `CacheOptions::default_transform`); with this, kube-runtime drops them too
    /// (`WatchStreamExt::modify`, its best configuration). The case is then named
    /// `<case>-alike`.
    #[arg(long)]
    pub(crate) strip_managed_fields: bool,
    /// Multi-namespace case: the namespaces the `--pods` Pods are spread over (Pod `i` in
    /// `bench-<i mod n>`).
    #[arg(long, default_value_t = 10)]
    pub(crate) namespaces: usize,
    /// Multi-namespace case: how many of those namespaces the cache watches (the first ones).
    #[arg(long, default_value_t = 3)]
    pub(crate) watched_namespaces: usize,
    /// Small sizes for a smoke run (overrides the sizes above).
    #[arg(long)]
    pub(crate) quick: bool,
}

impl Sizes {
    /// The sizes after applying `--quick`.
    pub(crate) fn effective(&self) -> Sizes {
        if !self.quick {
            return self.clone();
        }
        Sizes {
            pods: 2_000,
            watch_pods: 1_000,
            updates: 2_000,
            objects: 500,
            concurrency: self.concurrency,
            paced: self.paced,
            backlog: self.backlog,
            managed_fields: self.managed_fields,
            strip_managed_fields: self.strip_managed_fields,
            namespaces: self.namespaces,
            watched_namespaces: self.watched_namespaces,
            quick: true,
        }
    }
}

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Pods to preload.
    #[arg(long)]
    pub(crate) pods: usize,
    /// Write the Pods through field managers, so each carries managedFields entries.
    #[arg(long)]
    pub(crate) managed_fields: bool,
    /// Spread the Pods over this many namespaces (`bench-0` …); 1 keeps them all in
    /// `default`.
    #[arg(long, default_value_t = 1)]
    pub(crate) namespaces: usize,
    /// Where to write the kubeconfig.
    #[arg(long)]
    pub(crate) kubeconfig: PathBuf,
}

/// Arguments of `client`.
#[derive(Debug, Args)]
pub(crate) struct ClientArgs {
    /// The scenario to run.
    #[arg(value_enum)]
    pub(crate) scenario: Scenario,
    /// The implementation under test.
    #[arg(long, value_enum)]
    pub(crate) side: Side,
    /// The server's kubeconfig.
    #[arg(long)]
    pub(crate) kubeconfig: PathBuf,
    /// Workload sizes.
    #[command(flatten)]
    pub(crate) sizes: Sizes,
}

/// Arguments of `case`.
#[derive(Debug, Args)]
pub(crate) struct CaseArgs {
    /// The scenario to run.
    #[arg(value_enum)]
    pub(crate) scenario: Scenario,
    /// The implementations under test, run one after another (repeat the flag). The sync and
    /// watch cases share one preloaded server between them; the controller case starts a fresh
    /// server for each side, so every side starts from an empty namespace.
    #[arg(long, value_enum, required = true)]
    pub(crate) side: Vec<Side>,
    /// Workload sizes.
    #[command(flatten)]
    pub(crate) sizes: Sizes,
}

/// Arguments of `testenv-memory`.
#[derive(Debug, Args)]
pub(crate) struct TestenvMemoryArgs {
    /// Pods to load.
    #[arg(long, default_value_t = 100_000)]
    pub(crate) pods: usize,
}
