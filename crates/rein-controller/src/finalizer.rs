//! The finalizer helper: run cleanup before an object is deleted.
//!
//! While the object lives, the helper makes sure it carries the finalizer (so the API server
//! waits for us before deleting it) and calls the reconcile branch. Once `deletionTimestamp` is
//! set, it calls the cleanup branch and, after it succeeds, removes the finalizer so the
//! deletion completes. Updates use optimistic concurrency: a conflict is an error that the
//! controller retries with backoff.

use std::future::Future;
use std::sync::Arc;

use rein_client::controllerutil::{add_finalizer, contains_finalizer, remove_finalizer};
use rein_client::{Client, PostParams};
use rein_scheme::Object;

use crate::reconcile::{Action, BoxError};

/// What the finalizer helper asks the caller to do.
#[derive(Debug)]
pub enum FinalizerEvent<K> {
    /// The object lives (and carries the finalizer): reconcile it.
    Apply(Arc<K>),
    /// The object is being deleted: clean up what it owns outside the cluster.
    Cleanup(Arc<K>),
}

/// Why the finalizer helper failed.
#[derive(Debug, thiserror::Error)]
pub enum FinalizerError {
    /// Adding the finalizer to the object failed.
    #[error("adding finalizer {finalizer:?}")]
    Add {
        /// The finalizer.
        finalizer: String,
        /// The client error.
        #[source]
        source: rein_client::Error,
    },
    /// Removing the finalizer after cleanup failed.
    #[error("removing finalizer {finalizer:?}")]
    Remove {
        /// The finalizer.
        finalizer: String,
        /// The client error.
        #[source]
        source: rein_client::Error,
    },
    /// The apply branch failed.
    #[error("reconciling the object")]
    Apply(#[source] BoxError),
    /// The cleanup branch failed; the finalizer stays.
    #[error("cleaning up before deletion")]
    Cleanup(#[source] BoxError),
}

/// Runs `f` with [`FinalizerEvent::Apply`] or [`FinalizerEvent::Cleanup`] for `obj`, adding
/// `finalizer` first and removing it after a successful cleanup.
///
/// A terminal error from `f` stays terminal (it is the error's source). `obj` is what a
/// cached [`Client::get`] returns; it is copied only to add or remove the finalizer.
pub async fn finalizer<K, F, Fut, E>(
    client: &Client,
    finalizer: &str,
    obj: Arc<K>,
    f: F,
) -> Result<Action, FinalizerError>
where
    K: Object,
    F: FnOnce(FinalizerEvent<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: Into<BoxError>,
{
    let deleting = obj.meta().deletion_timestamp.is_some();
    if !deleting {
        let obj = if contains_finalizer(&*obj, finalizer) {
            obj
        } else {
            let mut updated = Arc::unwrap_or_clone(obj);
            add_finalizer(&mut updated, finalizer);
            let stored = client
                .update(&updated, &PostParams::default())
                .await
                .map_err(|source| FinalizerError::Add {
                    finalizer: finalizer.to_owned(),
                    source,
                })?;
            Arc::new(stored)
        };
        return f(FinalizerEvent::Apply(obj))
            .await
            .map_err(|e| FinalizerError::Apply(e.into()));
    }
    if !contains_finalizer(&*obj, finalizer) {
        // Being deleted and our cleanup already ran (or never applied): nothing to do.
        return Ok(Action::done());
    }
    let action = f(FinalizerEvent::Cleanup(obj.clone()))
        .await
        .map_err(|e| FinalizerError::Cleanup(e.into()))?;
    let mut updated = Arc::unwrap_or_clone(obj);
    remove_finalizer(&mut updated, finalizer);
    client
        .update(&updated, &PostParams::default())
        .await
        .map_err(|source| FinalizerError::Remove {
            finalizer: finalizer.to_owned(),
            source,
        })?;
    Ok(action)
}
