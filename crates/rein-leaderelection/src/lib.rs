//! Leader election on a `coordination.k8s.io/v1` Lease: client-go's `tools/leaderelection`.
//!
//! `rein-leaderelection` depends on no other rein crate: it needs kube-client (to read and write
//! the Lease), k8s-openapi and tokio. It is usable on its own (no manager needed);
//! `rein-manager` uses it to gate its leader-only runnables and re-exports it as
//! `rein_manager::leaderelection` (`rein::manager::leaderelection` in the facade).
//!
//! - [`LeaderElectionConfig`]: lease duration / renew deadline / retry period (15 s / 10 s /
//!   2 s by default), validated with client-go's rules; `release_on_cancel`.
//! - [`LeaseLock`]: reads and writes the [`LeaderElectionRecord`] in a Lease, with optimistic
//!   concurrency.
//! - [`LeaderElector`]: acquire with jittered retries, renew until the renew deadline, release.
//! - [`LeaderCallbacks`]: started leading (with a token cancelled when leadership ends),
//!   stopped leading, new leader.
//!
//! Expiry is judged only by the *local* time at which a change of the record was observed,
//! never by timestamps written in the record, so clock skew between candidates does not matter.
//!
//! ```
//! use rein_leaderelection::{
//!     LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock, default_identity,
//! };
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let env = rein_testenv::TestEnv::start().await?;
//! # let client = env.client();
//! let stop = CancellationToken::new();
//! let stop_when_leading = stop.clone();
//! let callbacks = LeaderCallbacks::new(
//!     // Leader-only work runs until `leading` fires (here: step down at once).
//!     move |leading: CancellationToken| {
//!         println!("leading");
//!         stop_when_leading.cancel();
//!         drop(leading);
//!     },
//!     || println!("stopped leading"),
//! );
//! let lock = LeaseLock::new(client, "default", "my-operator", default_identity());
//! let config = LeaderElectionConfig {
//!     release_on_cancel: true,
//!     ..LeaderElectionConfig::default()
//! };
//! LeaderElector::new(config, lock, callbacks)?.run(stop).await;
//! # Ok(()) }
//! ```

mod callbacks;
mod config;
mod elector;
mod error;
mod lock;
#[cfg(test)]
mod tests;

pub use callbacks::LeaderCallbacks;
pub use config::{JITTER_FACTOR, LeaderElectionConfig};
pub use elector::LeaderElector;
pub use error::Error;
pub use lock::{LeaderElectionRecord, LeaseLock};

/// A unique identity for this process: `hostname_<random uuid>` (controller-runtime's
/// default lock identity).
pub fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_owned());
    let bytes: [u8; 16] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{host}_{}-{}-4{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[16..20],
        &hex[20..32]
    )
}
