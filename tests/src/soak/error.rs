//! Why a soak could not run (setup, writer) and which end-of-run check failed.

use std::time::Duration;

/// The soak could not run to its checks.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    /// Building one of the soak's tokio runtimes failed.
    #[error("building a tokio runtime")]
    Runtime(#[source] std::io::Error),
    /// rein-testenv did not start.
    #[error("starting rein-testenv")]
    TestEnv(#[source] rein_testenv::Error),
    /// The soak's own client could not be built.
    #[error("building the soak's client")]
    Client(#[source] kube_client::Error),
    /// The API server's child process did not start or answer.
    #[error("the API server's child process: {0}")]
    ChildServer(String),
    /// The manager could not be built.
    #[error("building the manager")]
    Manager(#[source] rein::manager::Error),
    /// A controller could not be built.
    #[error("building controller {name}")]
    Controller {
        /// The controller.
        name: &'static str,
        /// The builder's error.
        #[source]
        source: rein::controller::BuildError,
    },
    /// The manager's caches did not sync in time.
    #[error("waiting {0:?} for the manager to start and sync its caches")]
    StartTimeout(Duration),
    /// A write kept failing (or failed with a non-transient error).
    #[error("writing {op} (gave up after {attempts} attempt(s))")]
    Write {
        /// The write.
        op: String,
        /// Attempts made.
        attempts: usize,
        /// The last error.
        #[source]
        source: kube_client::Error,
    },
    /// The run passed its deadline, or stopped progressing; the report says what everything
    /// was waiting on.
    #[error("the soak stalled: {why}\n{report}")]
    Stalled {
        /// Which limit passed, and in which phase.
        why: String,
        /// The writer's writes in flight, the requests the server holds, each informer's
        /// step, each controller's queue.
        report: String,
    },
    /// A soak task panicked or was cancelled.
    #[error("running a soak task")]
    Task(#[source] tokio::task::JoinError),
}

/// An end-of-run check that failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SoakFailure {
    /// Some objects never reached their desired state after the chaos stopped.
    #[error("objects did not reach their desired state within {timeout:?}: {problems}")]
    NotConverged {
        /// How long the soak waited.
        timeout: Duration,
        /// What still differed.
        problems: String,
    },
    /// A cache still differed from the server after the objects converged.
    #[error("the manager's cache differs from the server: {problems}")]
    CacheDiverged {
        /// What differed.
        problems: String,
    },
    /// A key was reconciled by two workers at once.
    #[error("{count} concurrent reconcile(s) of one key, first: {first}")]
    ConcurrentReconcile {
        /// How many times it happened.
        count: u64,
        /// The first case.
        first: String,
    },
    /// Per-key state (queue entries, retry counts, finalizer bookkeeping) outlived its work.
    #[error("per-key state leaked: {detail}")]
    KeyStateLeaked {
        /// What was left.
        detail: String,
    },
    /// The manager's run ended with an error.
    #[error("the manager stopped with an error: {message}")]
    ManagerFailed {
        /// The error, rendered with its sources.
        message: String,
    },
    /// Tasks stayed alive on the manager's runtime after it stopped.
    #[error(
        "{alive} task(s) alive on the manager's runtime after it stopped (baseline {baseline})"
    )]
    TasksLeaked {
        /// Tasks alive after the bounded wait.
        alive: usize,
        /// Tasks alive before the manager was built.
        baseline: usize,
    },
    /// Memory kept growing across the later rounds.
    #[error(
        "{what} grew from {from_kib} KiB to {to_kib} KiB across the later rounds (bound {bound_kib} KiB)"
    )]
    MemoryGrew {
        /// Which measure grew: the resident set or the live heap.
        what: &'static str,
        /// Mean RSS over the second quarter of the rounds.
        from_kib: u64,
        /// Mean RSS over the last quarter of the rounds.
        to_kib: u64,
        /// The growth allowed.
        bound_kib: u64,
    },
}
