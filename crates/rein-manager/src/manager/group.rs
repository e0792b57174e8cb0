//! A group of runnables started and stopped together (controller-runtime's `runnableGroup`).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;

use rein_controller::BoxError;
use rein_controller::Runnable;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Where a failed runnable reports its error; the manager stops with the first one.
pub(crate) type ErrorSender = mpsc::UnboundedSender<BoxError>;

/// The state of one group: queued until started, then running until stopped.
pub(crate) struct Group {
    name: &'static str,
    pending: Vec<Arc<dyn Runnable>>,
    running: Option<Running>,
    stopping: bool,
}

struct Running {
    token: CancellationToken,
    errors: ErrorSender,
    tasks: Vec<JoinHandle<()>>,
}

/// Whether a group stopped within its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    InTime,
    TimedOut,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("name", &self.name)
            .field("pending", &self.pending.len())
            .field("running", &self.running.as_ref().map(|r| r.tasks.len()))
            .field("stopping", &self.stopping)
            .finish()
    }
}

impl Group {
    pub(crate) fn new(name: &'static str) -> Self {
        Group {
            name,
            pending: Vec::new(),
            running: None,
            stopping: false,
        }
    }

    /// Queues a runnable, or starts it at once if the group runs. `false` once stopping.
    pub(crate) fn add(&mut self, runnable: Arc<dyn Runnable>) -> bool {
        if self.stopping {
            return false;
        }
        match &mut self.running {
            Some(running) => {
                let task = spawn(self.name, runnable, &running.token, &running.errors);
                running.tasks.push(task);
            }
            None => self.pending.push(runnable),
        }
        true
    }

    /// Starts every queued runnable with `token`; later additions start at once.
    pub(crate) fn start(&mut self, token: CancellationToken, errors: ErrorSender) {
        if self.stopping || self.running.is_some() {
            return;
        }
        let tasks = self
            .pending
            .drain(..)
            .map(|r| spawn(self.name, r, &token, &errors))
            .collect();
        self.running = Some(Running {
            token,
            errors,
            tasks,
        });
    }

    /// Refuses further additions, cancels the group and hands back its tasks to wait for.
    pub(crate) fn begin_stop(&mut self) -> Vec<JoinHandle<()>> {
        self.stopping = true;
        self.pending.clear();
        match self.running.take() {
            Some(running) => {
                running.token.cancel();
                running.tasks
            }
            None => Vec::new(),
        }
    }
}

/// Waits for `tasks` until `deadline` (`None`: forever); aborts the stragglers after it.
pub(crate) async fn wait_for(tasks: Vec<JoinHandle<()>>, deadline: Option<Instant>) -> Stopped {
    let mut outcome = Stopped::InTime;
    for mut task in tasks {
        match deadline {
            None => {
                let _ = task.await;
            }
            Some(deadline) => {
                if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                    task.abort();
                    outcome = Stopped::TimedOut;
                }
            }
        }
    }
    outcome
}

fn spawn(
    group: &'static str,
    runnable: Arc<dyn Runnable>,
    token: &CancellationToken,
    errors: &ErrorSender,
) -> JoinHandle<()> {
    let token = token.clone();
    let errors = errors.clone();
    tokio::spawn(async move {
        let outcome = AssertUnwindSafe(runnable.start(token)).catch_unwind().await;
        let err: BoxError = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(err)) => err,
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned());
                format!("runnable panicked: {message}").into()
            }
        };
        tracing::error!(group, error = %err, "runnable failed");
        let _ = errors.send(err);
    })
}
