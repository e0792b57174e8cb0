//! `rein-cluster`: a simulated cluster of N nodes (rein-sim) on an embedded API server
//! (rein-testenv), served to kubectl and any client; with `--kubeconfig`, simulated nodes
//! beside the real ones of an existing cluster, as kwok runs them.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use rein_manager::config::ConfigSources;
use rein_sim::cluster::{SimCluster, SimConfig};
use rein_sim::scheduler::DEFAULT_SCHEDULER_NAME;
use rein_testenv::cli::ServerFlags;

/// A simulated Kubernetes cluster: an embedded API server with simulated nodes, a scheduler,
/// a kubelet and the workload controllers, for kubectl and any client.
#[derive(Debug, Parser)]
#[command(name = "rein-cluster", version)]
struct Args {
    /// How many simulated nodes to run (`sim-node-0`, `sim-node-1`, …).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Each node's CPU capacity (a quantity: `4`, `500m`).
    #[arg(long, value_name = "QUANTITY", default_value = "4")]
    node_cpu: String,
    /// Each node's memory capacity (a quantity: `16Gi`).
    #[arg(long, value_name = "QUANTITY", default_value = "16Gi")]
    node_memory: String,
    /// How many Pods fit on each node (the kubelet's `--max-pods`).
    #[arg(long, value_name = "COUNT", default_value_t = 110)]
    node_pods: u32,
    /// The `spec.schedulerName` the simulated scheduler serves. Beside a real kube-scheduler,
    /// pick another name and set it on the Pods meant for the simulated nodes.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_SCHEDULER_NAME)]
    scheduler_name: String,
    /// Do not run the workload controllers (ReplicaSet, Deployment, Job, EndpointSlice, …):
    /// beside a real kube-controller-manager, which runs its own.
    #[arg(long)]
    no_workload_controllers: bool,
    /// Simulate the nodes on the existing cluster of this kubeconfig instead of an embedded
    /// API server (the server flags do not apply then).
    #[arg(long, value_name = "PATH", conflicts_with_all = ServerFlags::IDS)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use with `--kubeconfig` (default: its current context).
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    context: Option<String>,
    /// The embedded API server's flags, as rein-apiserver takes them.
    #[command(flatten)]
    server: ServerFlags,
}

impl Args {
    /// The simulated cluster the flags describe.
    fn sim_config(&self) -> SimConfig {
        let mut config = SimConfig::with_nodes(self.nodes);
        for node in &mut config.nodes {
            node.capacity.cpu = Quantity(self.node_cpu.clone());
            node.capacity.memory = Quantity(self.node_memory.clone());
            node.capacity.pods = self.node_pods;
        }
        config.scheduler.scheduler_name = self.scheduler_name.clone();
        config.workload_controllers = !self.no_workload_controllers;
        config
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // Registered before anything starts, so an early signal is not lost.
        let stop = rein_manager::signals::shutdown_signal();
        match &args.kubeconfig {
            Some(path) => beside_existing(&args, path.clone(), stop).await,
            None => embedded(&args, stop).await,
        }
    })
}

/// The embedded API server with the simulated cluster on it, until a signal.
async fn embedded(args: &Args, stop: rein_manager::CancellationToken) -> anyhow::Result<()> {
    let (builder, note) = args.server.builder();
    if let Some(note) = note {
        eprintln!("{note}");
    }
    let env = builder.start().await?;
    if let Some(path) = &args.server.kubeconfig_out {
        env.write_kubeconfig(path)?;
    }
    let sim = SimCluster::start(env.config(), args.sim_config())
        .await
        .context("starting the simulated cluster")?;
    // Printed once the nodes are registered and the controllers run: a client that waits for
    // this line finds a working cluster.
    println!("listening on {}", env.base_url());
    stop.cancelled().await;
    let stopped = sim.shutdown().await;
    env.shutdown().await;
    stopped.context("stopping the simulated cluster")
}

/// The simulated cluster on the API server of a kubeconfig, until a signal.
async fn beside_existing(
    args: &Args,
    path: PathBuf,
    stop: rein_manager::CancellationToken,
) -> anyhow::Result<()> {
    let mut sources = ConfigSources::empty().kubeconfig(path);
    if let Some(context) = &args.context {
        sources = sources.context(context.clone());
    }
    let kube = rein_manager::config::load(&sources).await?;
    let url = kube.cluster_url.clone();
    let sim = SimCluster::start(kube, args.sim_config())
        .await
        .context("starting the simulated cluster")?;
    println!(
        "simulating {} nodes on {url}: {}",
        args.nodes,
        sim.node_names().join(", ")
    );
    stop.cancelled().await;
    sim.shutdown()
        .await
        .context("stopping the simulated cluster")
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Args;

    fn parse(argv: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("rein-cluster").chain(argv.iter().copied()))
    }

    #[test]
    fn flags_shape_the_simulated_cluster() {
        let args =
            parse(&["--nodes", "5", "--node-cpu", "2", "--node-pods", "10"]).expect("parses");
        let config = args.sim_config();
        assert_eq!(config.nodes.len(), 5);
        assert_eq!(config.nodes[4].capacity.cpu.0, "2");
        assert_eq!(config.nodes[4].capacity.memory.0, "16Gi");
        assert_eq!(config.nodes[4].capacity.pods, 10);
        assert!(config.workload_controllers);
        let args = parse(&["--no-workload-controllers"]).expect("parses");
        assert!(!args.sim_config().workload_controllers);
        assert_eq!(parse(&[]).expect("parses").sim_config().nodes.len(), 3);
    }

    #[test]
    fn server_flags_do_not_go_with_an_existing_cluster() {
        assert!(parse(&["--kubeconfig", "k", "--nodes", "2", "--context", "c"]).is_ok());
        for flag in [
            &["--tls"][..],
            &["--listen", "127.0.0.1:1"],
            &["--token", "t"],
        ] {
            let argv: Vec<&str> = ["--kubeconfig", "k"].iter().chain(flag).copied().collect();
            assert!(parse(&argv).is_err(), "{flag:?}");
        }
        assert!(parse(&["--context", "c"]).is_err());
    }
}
