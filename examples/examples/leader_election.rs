//! client-go's leader-election example: candidates compete for a Lease, one leads, it steps down and releases, another takes over (Go original: client-go examples/leader-election/main.go).
// smoke-args: --quick
// smoke-expect: a: started leading
// smoke-expect: b: new leader is a
// smoke-expect: a: stopped leading
// smoke-expect: b: started leading
// smoke-expect: leader_election finished

use std::time::Duration;

use clap::Parser;
use rein::manager::config::{self, ConfigSources};
use rein::manager::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock, default_identity,
};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
struct Args {
    /// Path to a kubeconfig; without one (and without KUBECONFIG) an embedded API server is used.
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// The Lease name.
    #[arg(long, default_value = "rein-example-lock")]
    lease_lock_name: String,
    /// The Lease namespace.
    #[arg(long, default_value = "default")]
    lease_lock_namespace: String,
    /// This candidate's identity (default: hostname_uuid).
    #[arg(long)]
    id: Option<String>,
    /// Run two in-process candidates for a few seconds and exit.
    #[arg(long)]
    quick: bool,
}

/// One candidate: it "works" (prints) while it leads, until `stop` fires.
fn candidate(
    client: kube_client::Client,
    args: &Args,
    id: &str,
    timing: LeaderElectionConfig,
) -> anyhow::Result<LeaderElector> {
    let lock = LeaseLock::new(
        client,
        &args.lease_lock_namespace,
        &args.lease_lock_name,
        id,
    );
    let (started_id, stopped_id, me) = (id.to_owned(), id.to_owned(), id.to_owned());
    let callbacks = LeaderCallbacks::new(
        move |leading: CancellationToken| {
            println!("{started_id}: started leading");
            let id = started_id.clone();
            tokio::spawn(async move {
                // Leader-only work runs until the token fires: lost lease or stepping down.
                let mut tick = tokio::time::interval(Duration::from_millis(500));
                loop {
                    tokio::select! {
                        _ = leading.cancelled() => break,
                        _ = tick.tick() => tracing::info!("{id}: controller loop..."),
                    }
                }
            });
        },
        move || println!("{stopped_id}: stopped leading"),
    )
    .on_new_leader(move |leader| {
        if leader != me {
            println!("{me}: new leader is {leader}");
        }
    });
    Ok(LeaderElector::new(timing, lock, callbacks)?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let quick = args.quick || rein_examples::quick_mode();
    let has_kubeconfig = args.kubeconfig.is_some() || std::env::var_os("KUBECONFIG").is_some();

    // Out of cluster with --kubeconfig or KUBECONFIG, in cluster otherwise — or an embedded server.
    let (_env, client) = if has_kubeconfig && !quick {
        let mut sources = ConfigSources::from_env();
        if let Some(path) = &args.kubeconfig {
            sources = sources.kubeconfig(path);
        }
        let config = config::load(&sources).await?;
        (None, kube_client::Client::try_from(config)?)
    } else {
        let env = TestEnv::start().await?;
        let client = env.client();
        (Some(env), client)
    };

    // Release on cancel: stepping down hands the lease over at once.
    let timing = LeaderElectionConfig {
        release_on_cancel: true,
        ..if quick {
            LeaderElectionConfig {
                lease_duration: Duration::from_secs(4),
                renew_deadline: Duration::from_secs(2),
                retry_period: Duration::from_millis(300),
                ..LeaderElectionConfig::default()
            }
        } else {
            LeaderElectionConfig::default()
        }
    };

    if !quick {
        let id = args.id.clone().unwrap_or_else(default_identity);
        let elector = candidate(client, &args, &id, timing)?;
        let stop = CancellationToken::new();
        let on_signal = stop.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            on_signal.cancel();
        });
        elector.run(stop).await;
        println!("leader_election finished");
        return Ok(());
    }

    // Quick mode: a leads, b waits; a steps down and releases; b takes over.
    let a = candidate(client.clone(), &args, "a", timing.clone())?;
    let b = candidate(client, &args, "b", timing)?;
    let (stop_a, stop_b) = (CancellationToken::new(), CancellationToken::new());
    let task_a = tokio::spawn({
        let (a, stop) = (a.clone(), stop_a.clone());
        async move { a.run(stop).await }
    });
    wait_until(|| a.is_leader()).await?;
    let task_b = tokio::spawn({
        let (b, stop) = (b.clone(), stop_b.clone());
        async move { b.run(stop).await }
    });
    wait_until(|| b.leader().as_deref() == Some("a")).await?;
    stop_a.cancel();
    task_a.await?;
    wait_until(|| b.is_leader()).await?;
    stop_b.cancel();
    task_b.await?;
    println!("leader_election finished");
    Ok(())
}

async fn wait_until(mut condition: impl FnMut() -> bool) -> anyhow::Result<()> {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("timed out waiting for the election"))
}
