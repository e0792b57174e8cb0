//! Liveness and readiness probes: controller-runtime's `pkg/healthz` and the manager's
//! health-probe server.
//!
//! [`HealthProbes`] holds named [`Checker`]s for `/healthz` (liveness) and `/readyz`
//! (readiness); [`HealthProbeServer`] serves them over plain HTTP (loopback by default) the
//! way Kubernetes components do:
//!
//! - `GET /readyz` runs every readiness check: `200 ok`, or `500` listing each check as
//!   `[+]name ok` / `[-]name failed: reason withheld` followed by `healthz check failed`;
//!   `?verbose` lists the checks on success too (ending `healthz check passed`) and
//!   `?exclude=name` (repeatable) skips a check.
//! - `GET /readyz/<name>` runs one check: `200 ok` or `500 internal server error: <reason>`;
//!   an unknown name is a `404`.
//! - With no check of a kind registered, that endpoint answers with the built-in [`ping`].
//!
//! [`synced_check`] turns a "have the caches synced?" closure into a readiness check that
//! fails until it returns true. The server is also a rein-controller `Runnable` that does not
//! need leader election.

mod checker;
mod error;
mod handler;
mod server;
#[cfg(test)]
mod tests;

pub use checker::{CheckError, CheckFn, Checker, Ping, SyncedCheck, check_fn, ping, synced_check};
pub use error::Error;
pub use server::{HealthProbeOptions, HealthProbeServer, HealthProbes};
