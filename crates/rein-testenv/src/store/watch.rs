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
    pub(crate) rx: mpsc::Receiver<Arc<Event>>,
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
        let (tx, rx) = mpsc::channel(self.inner.history_cap.max(1));
        let watchers = self.inner.watchers.entry(res.clone()).or_default();
        // Subscriptions of watches that ended without being let go of (see `unsubscribe_ended`)
        // go now: otherwise they stay until the resource's next write.
        watchers.retain(|tx| !tx.is_closed());
        watchers.push(tx);
        Ok(Subscription {
            initial,
            rx,
            start_rv: self.rv(),
        })
    }

    /// Lets go of the subscriptions to `res` whose watch has ended (its receiver closed or
    /// dropped); a watch calls it as it ends, so the resource's next write (which prunes too)
    /// need not come.
    pub(crate) fn unsubscribe_ended(&mut self, res: &ResKey) {
        if let Some(watchers) = self.inner.watchers.get_mut(res) {
            watchers.retain(|tx| !tx.is_closed());
            if watchers.is_empty() {
                self.inner.watchers.remove(res);
            }
        }
    }

    /// How many watch subscriptions the store holds, over every resource: those of open
    /// watches and those of ended ones not let go of yet.
    pub(crate) fn watch_count(&self) -> usize {
        self.inner.watchers.values().map(Vec::len).sum()
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

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::*;

    fn res(plural: &str) -> ResKey {
        ResKey {
            group: String::new(),
            plural: plural.to_string(),
        }
    }

    #[test]
    fn ended_watches_are_let_go_of_without_a_write() {
        let store = Store::new(100);
        let mut txn = store.lock();
        let subs: Vec<Subscription> = (0..500)
            .map(|_| {
                txn.subscribe(&res("podtemplates"), WatchStart::Now, None)
                    .expect("subscribes")
            })
            .collect();
        let other = txn
            .subscribe(&res("secrets"), WatchStart::Now, None)
            .expect("subscribes");
        assert_eq!(txn.watch_count(), 501);
        let (mut ended, open): (Vec<_>, Vec<_>) =
            subs.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
        // Closed (the watch's guard does this) or dropped: both count as ended.
        for (_, sub) in &mut ended {
            sub.rx.close();
        }
        txn.unsubscribe_ended(&res("podtemplates"));
        assert_eq!(txn.watch_count(), 251);
        drop(open);
        txn.unsubscribe_ended(&res("podtemplates"));
        assert_eq!(
            txn.watch_count(),
            1,
            "only the other resource's watch is left"
        );
        drop(other);
        txn.unsubscribe_ended(&res("secrets"));
        assert_eq!(txn.watch_count(), 0);
    }

    #[test]
    fn a_new_watch_lets_go_of_the_ended_ones_of_its_resource() {
        let store = Store::new(100);
        let mut txn = store.lock();
        for _ in 0..100 {
            drop(txn.subscribe(&res("podtemplates"), WatchStart::Now, None));
        }
        let _open = txn.subscribe(&res("podtemplates"), WatchStart::Now, None);
        assert_eq!(txn.watch_count(), 1);
    }
}
