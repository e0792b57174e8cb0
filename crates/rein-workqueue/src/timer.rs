//! The single background task behind delayed adds: sleeps until the earliest deadline of its
//! queue, releases what is due, and repeats; one task per queue, never one per item.

use std::sync::{Arc, Weak};

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::sync::Closed;

/// A queue with waiting items that the driver releases.
pub(crate) trait TimerTarget: Send + Sync + 'static {
    /// Releases every item due at `now`; returns the next deadline, if any item still waits.
    fn fire(&self, now: Instant) -> Option<Instant>;
}

/// How producers and the queue talk to the driver.
#[derive(Debug, Default)]
pub(crate) struct TimerSignal {
    /// A deadline earlier than the one the driver sleeps for was added.
    earlier: Notify,
    /// The queue shut down or was dropped: the driver exits.
    pub(crate) closed: Closed,
}

impl TimerSignal {
    /// Tells the driver to recompute its deadline (a permit is kept if it is busy).
    pub(crate) fn wake(&self) {
        self.earlier.notify_one();
    }
}

/// Spawns the driver for `target` on the current runtime; false outside a runtime.
pub(crate) fn spawn_driver<Q: TimerTarget>(target: Weak<Q>, signal: Arc<TimerSignal>) -> bool {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    handle.spawn(drive(target, signal));
    true
}

async fn drive<Q: TimerTarget>(target: Weak<Q>, signal: Arc<TimerSignal>) {
    loop {
        if signal.closed.is_closed() {
            return;
        }
        let next = {
            let Some(target) = target.upgrade() else {
                return;
            };
            target.fire(Instant::now())
        };
        match next {
            Some(deadline) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {}
                    _ = signal.earlier.notified() => {}
                    _ = signal.closed.closed() => return,
                }
            }
            None => {
                tokio::select! {
                    _ = signal.earlier.notified() => {}
                    _ = signal.closed.closed() => return,
                }
            }
        }
    }
}
