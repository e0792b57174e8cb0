//! The kube-operator-peer binary: runs the operator (the default), or prints its manifests.
//!
//! ```text
//! kube-operator-peer [--kubeconfig PATH] [--leader-elect] [--leader-election-namespace NS]
//!                    [--health-probe-bind-address ADDR] [--metrics-bind-address ADDR]
//! kube-operator-peer manifests [--namespace NS] [--image IMAGE]
//! ```
//!
//! The first SIGINT or SIGTERM stops it gracefully (the controller finishes its reconciles,
//! the Lease is released); a second exits at once. The flags are read by hand, as the
//! scaffolded rein operator reads them, so neither build carries a CLI parser.

use anyhow::{Context as _, bail};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use kube_operator_peer::RunOptions;
use kube_operator_peer::manifests::{self, Settings};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("manifests") {
        let settings = manifest_settings(&args[1..])?;
        println!(
            "{}",
            serde_json::to_string_pretty(&manifests::list(&settings)?)?
        );
        return Ok(());
    }
    let run = run_options(&args)?;

    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).init();

    let client = match kube_operator_peer::client(&run).await {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(%error, "no Kubernetes client configuration");
            std::process::exit(1);
        }
    };
    let shutdown = shutdown_signal()?;
    kube_operator_peer::run(client, &run, shutdown).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Turns true at the first SIGINT or SIGTERM; the second ends the process.
fn shutdown_signal() -> anyhow::Result<watch::Receiver<bool>> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(async move {
        for count in 0.. {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            if count > 0 {
                eprintln!("second signal: exiting now");
                std::process::exit(1);
            }
            let _ = stop.send(true);
        }
    });
    Ok(stopped)
}

/// Reads the run flags (`--flag VALUE` or `--flag=VALUE`).
fn run_options(args: &[String]) -> anyhow::Result<RunOptions> {
    let mut run = RunOptions {
        leader_election_namespace: std::env::var("POD_NAMESPACE").ok(),
        ..RunOptions::default()
    };
    let mut flags = Flags::new(args);
    while let Some((flag, value)) = flags.next_flag()? {
        match flag.as_str() {
            "--leader-elect" => run.leader_elect = true,
            "--leader-election-namespace" => run.leader_election_namespace = Some(value()?),
            "--health-probe-bind-address" => {
                run.health_probe_bind_address = value()?.parse().context(flag)?;
            }
            "--metrics-bind-address" => {
                run.metrics_bind_address = value()?.parse().context(flag)?
            }
            "--kubeconfig" => run.kubeconfig = Some(value()?.into()),
            other => bail!("unknown flag {other}; see the doc comment of src/main.rs"),
        }
    }
    Ok(run)
}

/// Reads the `manifests` flags.
fn manifest_settings(args: &[String]) -> anyhow::Result<Settings> {
    let mut settings = Settings::default();
    let mut flags = Flags::new(args);
    while let Some((flag, value)) = flags.next_flag()? {
        match flag.as_str() {
            "--namespace" => settings.namespace = value()?,
            "--image" => settings.image = value()?,
            other => bail!("unknown manifests flag {other}"),
        }
    }
    Ok(settings)
}

/// A minimal flag reader: `--flag`, `--flag VALUE`, `--flag=VALUE`.
struct Flags<'a> {
    args: std::iter::Peekable<std::slice::Iter<'a, String>>,
}

type Value<'v> = Box<dyn FnOnce() -> anyhow::Result<String> + 'v>;

impl<'a> Flags<'a> {
    fn new(args: &'a [String]) -> Self {
        Flags {
            args: args.iter().peekable(),
        }
    }

    /// The next flag and a function giving its value (inline or the next argument).
    fn next_flag(&mut self) -> anyhow::Result<Option<(String, Value<'_>)>> {
        let Some(arg) = self.args.next() else {
            return Ok(None);
        };
        if !arg.starts_with("--") {
            bail!("unexpected argument {arg:?}");
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
            None => (arg.clone(), None),
        };
        let name = flag.clone();
        let args = &mut self.args;
        let value: Value<'_> = Box::new(move || match inline {
            Some(value) => Ok(value),
            None => args
                .next()
                .cloned()
                .with_context(|| format!("{name} needs a value")),
        });
        Ok(Some((flag, value)))
    }
}
