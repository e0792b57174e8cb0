//! The `Checker` trait and the ready-made checks (`ping`, closures, cache sync).

use std::fmt;
use std::future::Future;

use async_trait::async_trait;

/// Why a check failed; any error type converts (`Err("not yet".into())`).
pub type CheckError = Box<dyn std::error::Error + Send + Sync>;

/// One named health or readiness check (controller-runtime's `healthz.Checker`).
#[async_trait]
pub trait Checker: Send + Sync + 'static {
    /// Runs the check: `Ok(())` when healthy.
    async fn check(&self) -> Result<(), CheckError>;
}

/// The check that always passes (`healthz.Ping`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ping;

#[async_trait]
impl Checker for Ping {
    async fn check(&self) -> Result<(), CheckError> {
        Ok(())
    }
}

/// The check that always passes: the process answers HTTP.
pub fn ping() -> Ping {
    Ping
}

/// A check backed by an async closure; see [`check_fn`].
pub struct CheckFn<F> {
    f: F,
}

impl<F> fmt::Debug for CheckFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckFn").finish_non_exhaustive()
    }
}

/// A check from an async closure returning `Result<(), CheckError>`.
pub fn check_fn<F, Fut>(f: F) -> CheckFn<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), CheckError>> + Send + 'static,
{
    CheckFn { f }
}

#[async_trait]
impl<F, Fut> Checker for CheckFn<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), CheckError>> + Send + 'static,
{
    async fn check(&self) -> Result<(), CheckError> {
        (self.f)().await
    }
}

/// A readiness check that fails until a "synced?" closure returns true; see [`synced_check`].
pub struct SyncedCheck<F> {
    what: String,
    synced: F,
}

impl<F> fmt::Debug for SyncedCheck<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncedCheck")
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

/// A check that fails with "`<what>` not synced yet" until `synced()` returns true, e.g.
/// `synced_check("informer caches", move || cache.has_synced())`: the manager gates
/// `/readyz` on its caches this way.
pub fn synced_check<F>(what: impl Into<String>, synced: F) -> SyncedCheck<F>
where
    F: Fn() -> bool + Send + Sync + 'static,
{
    SyncedCheck {
        what: what.into(),
        synced,
    }
}

#[async_trait]
impl<F> Checker for SyncedCheck<F>
where
    F: Fn() -> bool + Send + Sync + 'static,
{
    async fn check(&self) -> Result<(), CheckError> {
        if (self.synced)() {
            Ok(())
        } else {
            Err(format!("{} not synced yet", self.what).into())
        }
    }
}

/// The webhook server's `StartedChecker` as a readiness check: it fails while the server is not
/// accepting connections. The manager adds it as `webhook` to `/readyz` for the server of
/// [`Options::webhook`](crate::Options::webhook).
#[async_trait]
impl Checker for rein_webhook::StartedChecker {
    async fn check(&self) -> Result<(), CheckError> {
        if self.is_started() {
            Ok(())
        } else {
            Err("the webhook server is not serving".into())
        }
    }
}
