//! The signal helper: the first SIGTERM cancels the shutdown token (alone in its own test binary,
//! since the handler stays installed for the whole process).

use std::time::Duration;

#[cfg(unix)]
#[tokio::test]
async fn first_sigterm_cancels_the_token() {
    let token = rein_manager::signals::shutdown_signal();
    // Let the handler task register its signal streams before the signal is sent.
    tokio::task::yield_now().await;
    assert!(!token.is_cancelled());
    let status = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(std::process::id().to_string())
        .status()
        .expect("kill runs");
    assert!(status.success());
    tokio::time::timeout(Duration::from_secs(20), token.cancelled())
        .await
        .expect("the token is cancelled after SIGTERM");
}
