//! `cargo xtask`: the project's automation (test suite, benchmarks), needing only cargo and rustc.

mod bench;
mod smoke;
mod soak;
mod test;
#[cfg(test)]
mod tidy;

use std::path::{Path, PathBuf};

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  test            fmt, clippy, unit/integration/doc tests, docs, example smoke runs
  bench [--quick] [--only crates|sidebyside] [--reps N] [FILTER]
                  run the per-crate benches and the rein vs kube-runtime harness;
                  write docs/benchmarks.md and docs/benchmarks.svg
  bench build-weight [--pairs N] [--release-pairs N]
                  cold build time and binary size: a scaffolded operator against the same
                  operator on kube-rs (not part of `test`; minutes a build)
  soak [--minutes N] [--seed S] [--seeds N]
                  the chaos soak of a manager with several controllers over N seeds (release build)
";

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next();
    let rest: Vec<String> = args.collect();
    match command.as_deref() {
        Some("test") => test::run(&rest),
        Some("bench") => bench::run(&rest),
        Some("soak") => soak::run(&rest),
        Some("-h" | "--help" | "help") | None => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => anyhow::bail!("unknown command `{other}`\n\n{USAGE}"),
    }
}

/// The workspace root (the parent of `xtask/`).
pub(crate) fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// The cargo binary that invoked us (falls back to `cargo` on the PATH).
pub(crate) fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}
