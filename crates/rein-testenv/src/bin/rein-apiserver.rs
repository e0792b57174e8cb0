//! `rein-apiserver`: the in-process test API server as a standalone process for kubectl.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

/// An embedded Kubernetes API server for tests and for trying kubectl against.
#[derive(Debug, Parser)]
#[command(name = "rein-apiserver", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Write a kubeconfig for this server to this file.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Serve HTTPS with a generated CA (written into the kubeconfig).
    #[arg(long)]
    tls: bool,
    /// Require this bearer token.
    #[arg(long)]
    token: Option<String>,
    /// Change events kept for watch resumption.
    #[arg(long, default_value_t = rein_testenv::DEFAULT_WATCH_HISTORY)]
    watch_history: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut builder = rein_testenv::TestEnv::builder()
            .listen(args.listen)
            .tls(args.tls)
            .watch_history(args.watch_history);
        if let Some(token) = &args.token {
            builder = builder.token(token.clone());
        }
        let env = builder.start().await?;
        if let Some(path) = &args.kubeconfig_out {
            env.write_kubeconfig(path)?;
        }
        println!("listening on {}", env.base_url());
        rein_testenv::run_until_signal(env).await;
        Ok(())
    })
}
