//! Shutdown on SIGINT/SIGTERM: controller-runtime's `SetupSignalHandler`.

use tokio_util::sync::CancellationToken;

/// Returns a token cancelled on the first SIGINT or SIGTERM; a second signal exits the
/// process at once with status 1.
///
/// Call once per process, from within a tokio runtime; pass the token to
/// [`Manager::start`](crate::Manager::start).
pub fn shutdown_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    let mut signals = Signals::new();
    tokio::spawn(async move {
        signals.recv().await;
        tracing::info!("received a shutdown signal, stopping gracefully (again to force exit)");
        trigger.cancel();
        signals.recv().await;
        tracing::warn!("received a second shutdown signal, exiting");
        std::process::exit(1);
    });
    token
}

/// The registered signal streams (registered once, before the first signal can arrive).
struct Signals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    #[cfg(unix)]
    fn new() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let streams = match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(int), Ok(term)) => Some((int, term)),
            _ => {
                tracing::warn!("cannot install signal handlers; stop through the token instead");
                None
            }
        };
        Signals { streams }
    }

    #[cfg(unix)]
    async fn recv(&mut self) {
        match &mut self.streams {
            Some((int, term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            None => std::future::pending().await,
        }
    }

    #[cfg(not(unix))]
    fn new() -> Self {
        Signals {}
    }

    #[cfg(not(unix))]
    async fn recv(&mut self) {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
