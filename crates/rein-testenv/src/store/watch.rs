//! Watch subscriptions: the initial events a new watch sends and the channel of later ones.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{Event, EventType, Txn};
use crate::resources::ResKey;

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchStart {
    /// `resourceVersion` unset or "0": the current state first, as ADDED events.
    Now,
    /// After this resourceVersion: every later change, replayed from the history.
    After(u64),
}

/// A registered watch.
#[derive(Debug)]
pub(crate) struct Subscription {
    /// Events to send before any from `rx`, in order.
    pub(crate) initial: Vec<Arc<Event>>,
    /// Later events of the resource (any namespace); closes when the watch is ended.
    pub(crate) rx: mpsc::UnboundedReceiver<Arc<Event>>,
    /// The resourceVersion the initial events bring the watcher to.
    pub(crate) start_rv: u64,
}

/// The requested resourceVersion is older than the retained history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expired {
    /// The requested version.
    pub(crate) requested: u64,
    /// The oldest version still available.
    pub(crate) oldest: u64,
}

impl Txn<'_> {
    /// Registers a watch on `res`; events are filtered by namespace later, by the watch itself.
    pub(crate) fn subscribe(
        &mut self,
        res: &ResKey,
        start: WatchStart,
        namespace: Option<&str>,
    ) -> Result<Subscription, Expired> {
        let initial = match start {
            WatchStart::Now => {
                let rv = self.rv();
                self.list_stored(res, namespace)
                    .into_iter()
                    .map(|object| {
                        Arc::new(Event::new(rv, EventType::Added, res.clone(), object, None))
                    })
                    .collect()
            }
            WatchStart::After(from) => {
                self.check_not_compacted(from)?;
                self.inner
                    .history
                    .iter()
                    .filter(|e| e.rv > from && &e.res == res)
                    .cloned()
                    .collect()
            }
        };
        let (tx, rx) = mpsc::unbounded_channel();
        self.inner.watchers.entry(res.clone()).or_default().push(tx);
        Ok(Subscription {
            initial,
            rx,
            start_rv: self.rv(),
        })
    }

    /// Fails when changes after `rv` are no longer all in the history.
    pub(crate) fn check_not_compacted(&self, rv: u64) -> Result<(), Expired> {
        if rv < self.inner.compacted {
            return Err(Expired {
                requested: rv,
                oldest: self.inner.compacted,
            });
        }
        Ok(())
    }
}
