//! Shared support for rein's examples: quick mode detection and logging set-up.

/// True when the example runs as a smoke test (`cargo xtask test` sets `REIN_EXAMPLE_SMOKE=1`)
/// or was given `--quick`.
pub fn quick_mode() -> bool {
    std::env::var_os("REIN_EXAMPLE_SMOKE").is_some() || std::env::args().any(|a| a == "--quick")
}

/// Installs a `tracing` subscriber that honours `RUST_LOG` (default `info`).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .try_init();
}
