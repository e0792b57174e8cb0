//! Shared support for rein's examples: quick mode detection and logging set-up.

/// True when the example runs as a smoke test (`cargo xtask test` sets `REIN_EXAMPLE_SMOKE=1`)
/// or was given `--quick`.
pub fn quick_mode() -> bool {
    std::env::var_os("REIN_EXAMPLE_SMOKE").is_some() || std::env::args().any(|a| a == "--quick")
}

/// Installs a `tracing` subscriber that honours `RUST_LOG` (default `info`); colours only when
/// standard output is a terminal.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .try_init();
}

/// Where an example runs: a real cluster when `--kubeconfig` or `KUBECONFIG` is given (and the
/// example is not in quick mode), found as controller-runtime's `GetConfigOrDie` would;
/// otherwise a fresh embedded API server. Keep the returned `TestEnv` alive while it is used.
pub async fn cluster_config(
    quick: bool,
) -> anyhow::Result<(Option<rein_testenv::TestEnv>, kube_client::Config)> {
    let has_kubeconfig = std::env::args().any(|a| a.starts_with("--kubeconfig"))
        || std::env::var_os("KUBECONFIG").is_some();
    if has_kubeconfig && !quick {
        Ok((None, rein::manager::config::get_config().await?))
    } else {
        let env = rein_testenv::TestEnv::start().await?;
        let config = env.config();
        Ok((Some(env), config))
    }
}
