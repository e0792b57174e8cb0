//! `rein-apiserver`: the in-process test API server as a standalone process for kubectl.

use clap::Parser;
use rein_testenv::cli::ServerFlags;

/// An embedded Kubernetes API server for tests and for trying kubectl against.
#[derive(Debug, Parser)]
#[command(name = "rein-apiserver", version)]
struct Args {
    #[command(flatten)]
    server: ServerFlags,
    /// What finishes graceful deletions of Pods bound to a node: `absent` (the default: they
    /// wait for a grace-0 delete), `at-once` (finished in the delete itself) or `after-grace`
    /// (finished once their grace period has run out).
    #[arg(long, value_name = "MODE", value_parser = parse_kubelet)]
    kubelet: Option<rein_testenv::Kubelet>,
}

/// A `--kubelet` mode.
fn parse_kubelet(s: &str) -> Result<rein_testenv::Kubelet, String> {
    match s {
        "absent" => Ok(rein_testenv::Kubelet::Absent),
        "at-once" => Ok(rein_testenv::Kubelet::StopsAtOnce),
        "after-grace" => Ok(rein_testenv::Kubelet::StopsAfterGrace),
        other => Err(format!(
            "unknown kubelet mode {other:?} (absent, at-once, after-grace)"
        )),
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (mut builder, note) = args.server.builder();
    if let Some(note) = note {
        eprintln!("{note}");
    }
    if let Some(kubelet) = args.kubelet {
        builder = builder.kubelet(kubelet);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let env = builder.start().await?;
        if let Some(path) = &args.server.kubeconfig_out {
            env.write_kubeconfig(path)?;
        }
        println!("listening on {}", env.base_url());
        rein_testenv::run_until_signal(env).await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Args, parse_kubelet};

    #[test]
    fn kubelet_modes_parse_and_server_flags_flatten() {
        assert_eq!(
            parse_kubelet("at-once"),
            Ok(rein_testenv::Kubelet::StopsAtOnce)
        );
        assert!(parse_kubelet("sometimes").is_err());
        let args = Args::parse_from(["rein-apiserver", "--token", "t", "--kubelet", "absent"]);
        assert!(args.server.serves_tls());
        assert_eq!(args.kubelet, Some(rein_testenv::Kubelet::Absent));
    }
}
