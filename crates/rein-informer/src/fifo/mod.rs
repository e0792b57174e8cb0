//! The queues between the reflector and the consumer: the `Fifo` trait, `RealFifo` and `DeltaFifo`.

use std::sync::Arc;

use async_trait::async_trait;

use crate::Delta;

mod delta_fifo;
mod real_fifo;
#[cfg(test)]
mod tests;

pub use delta_fifo::{DeltaFifo, DeltaFifoOptions};
pub use real_fifo::{DEFAULT_REAL_FIFO_CAPACITY, RealFifo, RealFifoOptions};

/// Returned by a pop's process function to ask for the popped deltas to be queued again
/// (honoured by [`DeltaFifo`] when the key has no newer deltas; ignored by [`RealFifo`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requeue;

/// The queue was closed and is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("popping from the queue: it is closed and empty")]
pub struct QueueClosed;

/// The function a pop runs on the popped deltas: `(deltas, is_in_initial_list)`.
pub type ProcessFn<'a, K> = dyn FnMut(Vec<Delta<K>>, bool) -> Result<(), Requeue> + Send + 'a;

/// What the reflector writes into and the informer's process loop pops from
/// (client-go's `Queue` = `ReflectorStore` + `Pop` + `HasSynced` + `Close`).
#[async_trait]
pub trait Fifo<K>: Send + Sync + std::fmt::Debug {
    /// A watch `ADDED` event.
    fn add(&self, obj: Arc<K>);
    /// A watch `MODIFIED` event.
    fn update(&self, obj: Arc<K>);
    /// A watch `DELETED` event.
    fn delete(&self, obj: Arc<K>);
    /// A complete list at `resource_version`.
    fn replace(&self, objects: Vec<Arc<K>>, resource_version: String);
    /// A periodic resync.
    fn resync(&self);
    /// A watch bookmark.
    fn bookmark(&self, resource_version: String) {
        let _ = resource_version;
    }
    /// True once the first replace (or any add/update/delete) has been popped and processed.
    fn has_synced(&self) -> bool;
    /// Resolves once [`Fifo::has_synced`] is true. [`RealFifo`] and [`DeltaFifo`] resolve
    /// from a signal the moment the last initial entry has been processed; the default polls
    /// every [`crate::SYNC_POLL_INTERVAL`].
    async fn wait_synced(&self) {
        while !self.has_synced() {
            tokio::time::sleep(crate::SYNC_POLL_INTERVAL).await;
        }
    }
    /// Resolves when the queue can take more watch events; the reflector awaits it before it
    /// reads the next one, so a backlog waits on the connection instead of in memory. It
    /// never refuses a write: adds, updates, deletes and replaces are always queued. The
    /// default resolves at once (an unbounded queue); [`RealFifo`] waits while it holds
    /// [`RealFifoOptions::capacity`] entries or more, until a pop makes room or it closes.
    async fn wait_for_room(&self) {}
    /// Closes the queue: pops drain what is left, then return [`QueueClosed`].
    fn close(&self);
    /// True once closed.
    fn is_closed(&self) -> bool;
    /// Number of queued entries.
    fn len(&self) -> usize;
    /// True if nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Waits for the next entry (or batch) and runs `process` on it.
    async fn pop(&self, process: &mut ProcessFn<'_, K>) -> Result<(), QueueClosed>;
}

/// Wakes blocked pops, skipping the work when nobody waits.
pub(crate) fn wake(notify: &tokio::sync::Notify, waiters: usize) {
    if waiters > 0 {
        notify.notify_waiters();
    }
}

/// Initial-population tracking shared by both FIFOs, with the signal that wakes
/// [`Fifo::wait_synced`].
#[derive(Debug, Default)]
pub(crate) struct SyncTracker {
    populated: bool,
    initial_count: usize,
    signal: crate::SyncedSignal,
    published: bool,
}

impl SyncTracker {
    pub(crate) fn mark_populated(&mut self) {
        self.populated = true;
        self.publish();
    }
    pub(crate) fn first_replace(&mut self, count: usize) {
        if !self.populated {
            self.populated = true;
            self.initial_count = count;
            self.publish();
        }
    }
    /// Sets the signal if synced; called once the popped entries have been processed.
    pub(crate) fn publish(&mut self) {
        if !self.published && self.has_synced() {
            self.published = true;
            self.signal.set();
        }
    }
    pub(crate) fn signal(&self) -> crate::SyncedSignal {
        self.signal.clone()
    }
    pub(crate) fn has_synced(&self) -> bool {
        self.populated && self.initial_count == 0
    }
    pub(crate) fn popped(&mut self, n: usize) {
        self.initial_count = self.initial_count.saturating_sub(n);
    }
    pub(crate) fn in_initial(&self) -> usize {
        self.initial_count
    }
}
