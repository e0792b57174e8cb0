//! Where the CronJob controller reads the time (kube's `ControllerV2.now`): the
//! [`SystemClock`] in a running cluster, a [`ManualClock`] a test sets and advances, so
//! schedules minutes apart run in milliseconds; and the source that looks at every CronJob
//! again when a clock is set.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rein_client::{Client, ListOptions};
use rein_controller::event::GenericEvent;
use rein_controller::source::{EventSink, Source};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// A source of the current time for the CronJob controller.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Now.
    fn now(&self) -> Timestamp;

    /// For a clock that can be set (rather than only tick on): a receiver told every time it
    /// is, so the controller looks at every CronJob again at once instead of sleeping until
    /// the next schedule as it last computed it. `None` (the default): it never is.
    fn jumps(&self) -> Option<watch::Receiver<Timestamp>> {
        None
    }
}

/// The system's wall clock, as kube-controller-manager reads it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that stands still until it is set or advanced (client-go's `FakeClock`): tests
/// drive CronJob schedules with it.
///
/// ```
/// use std::time::Duration;
///
/// use rein_sim::workloads::cronjob::{Clock, ManualClock};
///
/// let clock = ManualClock::new("2024-05-01T10:00:30Z".parse().unwrap());
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(clock.now().to_string(), "2024-05-01T10:01:30Z");
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    time: Arc<watch::Sender<Timestamp>>,
}

impl ManualClock {
    /// A clock showing `at`.
    pub fn new(at: Timestamp) -> ManualClock {
        ManualClock {
            time: Arc::new(watch::Sender::new(at)),
        }
    }

    /// Sets the time (backwards too).
    pub fn set(&self, at: Timestamp) {
        self.time.send_replace(at);
    }

    /// Moves the time forward by `by` (saturating at the largest time there is).
    pub fn advance(&self, by: Duration) {
        let by = SignedDuration::try_from(by).unwrap_or(SignedDuration::MAX);
        self.time.send_modify(|t| {
            *t = t.checked_add(by).unwrap_or(Timestamp::MAX);
        });
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.time.borrow()
    }

    fn jumps(&self) -> Option<watch::Receiver<Timestamp>> {
        Some(self.time.subscribe())
    }
}

/// Sends a generic event for every CronJob each time the clock is set.
pub(super) struct ClockJumps {
    pub(super) clock: Arc<dyn Clock>,
    pub(super) client: Client,
}

#[async_trait]
impl Source<CronJob> for ClockJumps {
    async fn start(
        &self,
        sink: EventSink<CronJob>,
        stop: CancellationToken,
    ) -> Result<(), rein_controller::BoxError> {
        let Some(mut jumps) = self.clock.jumps() else {
            return Ok(());
        };
        let client = self.client.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = jumps.changed() => if changed.is_err() {
                        return;
                    },
                }
                jumps.mark_unchanged();
                match client.list::<CronJob>(&ListOptions::default()).await {
                    Ok(list) => {
                        for cron_job in list.items {
                            sink.generic(&GenericEvent::new(cron_job));
                        }
                    }
                    Err(err) => tracing::warn!(%err, "listing CronJobs after the clock was set"),
                }
            }
        });
        Ok(())
    }

    fn describe(&self) -> String {
        "clock jumps".to_owned()
    }
}
