//! `EnqueueRequestsFromMapFunc`: enqueue whatever requests a function (plain or async) maps
//! the object to.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use kube_client::Resource;

use super::{EventHandler, add_all, create_priority, update_priority};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::queue::RequestQueue;
use crate::reconcile::Request;

type MapFn<K> = Box<dyn Fn(&K) -> Vec<Request> + Send + Sync>;

/// Enqueues the requests `f(object)` returns; for updates, those of the old and the new object,
/// de-duplicated.
pub struct EnqueueRequestsFromMapFunc<K> {
    f: MapFn<K>,
}

impl<K> fmt::Debug for EnqueueRequestsFromMapFunc<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnqueueRequestsFromMapFunc")
            .finish_non_exhaustive()
    }
}

impl<K> EnqueueRequestsFromMapFunc<K> {
    /// A handler mapping each object with `f`.
    pub fn new(f: impl Fn(&K) -> Vec<Request> + Send + Sync + 'static) -> Self {
        EnqueueRequestsFromMapFunc { f: Box::new(f) }
    }
}

impl<K: Resource + Send + Sync + 'static> EventHandler<K> for EnqueueRequestsFromMapFunc<K> {
    fn create(&self, e: &CreateEvent<K>, q: &RequestQueue) {
        add_all(q, (self.f)(&e.object), create_priority(e));
    }
    fn update(&self, e: &UpdateEvent<K>, q: &RequestQueue) {
        let mut reqs = (self.f)(&e.object_old);
        reqs.extend((self.f)(&e.object_new));
        add_all(q, reqs, update_priority(e));
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &RequestQueue) {
        add_all(q, (self.f)(&e.object), 0);
    }
    fn generic(&self, e: &GenericEvent<K>, q: &RequestQueue) {
        add_all(q, (self.f)(&e.object), 0);
    }
}

type AsyncMapFn<K> = Arc<dyn Fn(Arc<K>) -> BoxFuture<'static, Vec<Request>> + Send + Sync>;

/// [`EnqueueRequestsFromMapFunc`] with an async function, for mappings that read (the cache,
/// a client) to find the requests: the function runs in a task of its own for each event, so
/// the informer's handler never waits for it; its requests are added when it finishes (for an
/// update, those of the old and the new object, de-duplicated). Requests from a mapping that
/// finishes after the controller stopped are dropped with the queue.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use rein_controller::Request;
/// use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;
///
/// // Every Deployment the ConfigMap's `app` label names (a cache read would go here).
/// let handler = EnqueueRequestsFromAsyncMapFunc::new(|cm: Arc<ConfigMap>| async move {
///     let ns = cm.metadata.namespace.clone().unwrap_or_default();
///     cm.metadata
///         .labels
///         .as_ref()
///         .and_then(|l| l.get("app"))
///         .map(|app| vec![Request::new(ns, app.clone())])
///         .unwrap_or_default()
/// });
/// # let _ = handler;
/// ```
pub struct EnqueueRequestsFromAsyncMapFunc<K> {
    f: AsyncMapFn<K>,
}

impl<K> fmt::Debug for EnqueueRequestsFromAsyncMapFunc<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnqueueRequestsFromAsyncMapFunc")
            .finish_non_exhaustive()
    }
}

impl<K: Send + Sync + 'static> EnqueueRequestsFromAsyncMapFunc<K> {
    /// A handler mapping each object with the async function `f`.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(Arc<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Request>> + Send + 'static,
    {
        EnqueueRequestsFromAsyncMapFunc {
            f: Arc::new(move |obj| Box::pin(f(obj))),
        }
    }

    /// Maps `objects` in a task and adds what they map to at `priority`.
    fn spawn(&self, objects: Vec<Arc<K>>, q: &RequestQueue, priority: i32) {
        let f = self.f.clone();
        let q = q.clone();
        tokio::spawn(async move {
            let mut reqs = Vec::new();
            for obj in objects {
                reqs.extend(f(obj).await);
            }
            add_all(&q, reqs, priority);
        });
    }
}

impl<K: Resource + Send + Sync + 'static> EventHandler<K> for EnqueueRequestsFromAsyncMapFunc<K> {
    fn create(&self, e: &CreateEvent<K>, q: &RequestQueue) {
        self.spawn(vec![e.object.clone()], q, create_priority(e));
    }
    fn update(&self, e: &UpdateEvent<K>, q: &RequestQueue) {
        self.spawn(
            vec![e.object_old.clone(), e.object_new.clone()],
            q,
            update_priority(e),
        );
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &RequestQueue) {
        self.spawn(vec![e.object.clone()], q, 0);
    }
    fn generic(&self, e: &GenericEvent<K>, q: &RequestQueue) {
        self.spawn(vec![e.object.clone()], q, 0);
    }
}
