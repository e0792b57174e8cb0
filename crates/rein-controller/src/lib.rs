//! controller-runtime's controller, reconcile, source, handler, predicate and builder packages.
//!
//! `rein-controller` sits above `rein-workqueue` (queues and rate limiters), `rein-informer`
//! (shared informers) and `rein-client` (the cache-backed client and the shared cache), and
//! below `rein-manager`, which runs controllers as [`Runnable`]s. Data flows one way:
//! a [`source`] turns informer notifications (or channel messages) into [`event`]s, the
//! [`predicate`]s filter them, an [`handler`] maps each to [`Request`]s on the controller's
//! [`RequestQueue`], and the controller's workers hand each request to the [`Reconciler`],
//! never two reconciles of one key at once.
//!
//! ```
//! use std::time::Duration;
//! use rein_controller::{Action, Context, Request, reconciler_fn};
//!
//! // A reconciler that comes back to every object every minute.
//! let reconciler = reconciler_fn(|_ctx: Context, req: Request| async move {
//!     println!("reconciling {req}");
//!     Ok::<_, std::convert::Infallible>(Action::requeue_after(Duration::from_secs(60)))
//! });
//! # let _ = reconciler;
//! ```

mod builder;
mod controller;
pub mod event;
pub mod finalizer;
pub mod handler;
mod metrics;
pub mod predicate;
mod queue;
mod reconcile;
pub mod recorder;
mod runnable;
pub mod source;

pub use builder::{BuildError, ControllerManagedBy, Declaration, DeclaredKind, OwnsOptions};
pub use controller::{
    Controller, ControllerNames, ControllerOptions, Error, QueueSnapshot, queue_snapshots,
};
pub use metrics::WorkqueueMetrics;
pub use queue::{LOW_PRIORITY, RequestQueue};
pub use reconcile::{
    Action, BoxError, BoxReconciler, Context, CurrentReconcile, Reconciler, ReconcilerFn, Request,
    TerminalError, box_reconciler, current_reconcile, is_terminal, reconciler_fn,
};
#[doc(inline)]
pub use rein_workqueue::{ItemSnapshot, ItemState};
pub use runnable::{ControllerHost, Runnable};
