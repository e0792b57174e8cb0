//! Sources of events (controller-runtime's `pkg/source`): `Kind` (a shared informer),
//! `Informer` (any informer), `Channel` (events from a tokio channel), and the [`Source`] trait
//! for custom sources.

mod channel;
mod kind;
mod sink;
#[cfg(test)]
mod tests;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::reconcile::BoxError;

pub use channel::{Channel, DEFAULT_BUFFER_SIZE};
pub use kind::{INFORMER_RETRY_INTERVAL, Informer, Kind};
pub use sink::EventSink;

/// Produces events of `K` into a sink (which applies the watch's predicates and handler).
///
/// `start` must not block: it spawns whatever tasks it needs and returns; they stop when
/// `stop` is cancelled. A source whose initial events take time (an informer's initial list)
/// reports readiness through `wait_for_sync`.
#[async_trait]
pub trait Source<K>: Send + Sync + 'static {
    /// Starts delivering events into `sink` until `stop` is cancelled.
    async fn start(&self, sink: EventSink<K>, stop: CancellationToken) -> Result<(), BoxError>;

    /// Waits until the initial events have been delivered (default: at once).
    async fn wait_for_sync(&self, stop: CancellationToken) -> Result<(), BoxError> {
        let _ = stop;
        Ok(())
    }

    /// A short description for logs and errors, e.g. `kind source: v1/Pod`.
    fn describe(&self) -> String;
}
