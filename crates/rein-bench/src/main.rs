//! `rein-bench`: side-by-side performance harness comparing rein with kube-runtime, one OS process per case.
//!
//! `rein-bench case <sync|watch|controller> --side <rein|kube-runtime|kube-runtime-streaming>`
//! starts a `serve` process (rein-testenv with preloaded Pods) and a `client` process (the side
//! under test) of this same binary, wires them together and forwards the client's
//! `BENCH|side-by-side|<case>/<metric>/<side>|value|unit|note` lines. `cargo xtask bench`
//! runs every case several times and writes docs/benchmarks.md. `rein-bench testenv-memory`
//! measures rein-testenv itself: 100,000 Pods with managedFields loaded and listed.

mod cli;
mod client;
mod orchestrate;
mod pods;
mod procstat;
mod serve;
mod testenv_memory;

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = cli::Cli::parse();
    match cli.command {
        cli::Command::Serve(args) => runtime()?.block_on(serve::run(args)),
        cli::Command::Client(args) => runtime()?.block_on(client::run(args)),
        cli::Command::Case(args) => orchestrate::run(&args),
        cli::Command::TestenvMemory(args) => runtime()?.block_on(testenv_memory::run(args)),
    }
}

/// The runtime every process uses: tokio's default multi-thread runtime (one worker per core).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
