//! Cluster-aware reconciling: `ClusterRequest` (cluster, namespace, name), `ClusterContext`
//! (that cluster's client, the hub's) and the `ClusterReconciler` trait.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use rein_client::Client;
use rein_controller::{Action, BoxError, Context, Request};
use rein_scheme::ObjectKey;

use crate::name::ClusterName;

/// What to reconcile: one object's key in one cluster (multicluster-runtime's
/// `mcreconcile.Request`). Like rein's [`Request`] it carries no event and no object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterRequest {
    /// The cluster the object lives in ([`ClusterName::hub`] for the hub).
    pub cluster: ClusterName,
    /// The object's key in that cluster.
    pub key: ObjectKey,
}

impl ClusterRequest {
    /// A request for a namespaced object in `cluster`.
    pub fn new(
        cluster: ClusterName,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        ClusterRequest {
            cluster,
            key: ObjectKey::new(namespace, name),
        }
    }

    /// The request for `request`'s key in `cluster`.
    pub fn in_cluster(cluster: ClusterName, request: Request) -> Self {
        ClusterRequest {
            cluster,
            key: request.key,
        }
    }

    /// The namespace, or `None` for a cluster-scoped object.
    pub fn namespace(&self) -> Option<&str> {
        self.key.namespace.as_deref()
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.key.name
    }

    /// The request without its cluster.
    pub fn request(&self) -> Request {
        Request::from(self.key.clone())
    }
}

impl fmt::Display for ClusterRequest {
    /// `cluster:namespace/name` (the hub shows as `(hub)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.cluster, self.key)
    }
}

/// Per-reconcile context: rein's [`Context`] (controller name, reconcile id, stop token) plus
/// the request's cluster, its cache-backed client and the hub's.
#[derive(Debug, Clone)]
pub struct ClusterContext {
    inner: Context,
    cluster: ClusterName,
    client: Client,
    hub: Client,
}

impl ClusterContext {
    /// A context for a reconcile outside a fleet (tests, manual calls).
    pub fn new(inner: Context, cluster: ClusterName, client: Client, hub: Client) -> Self {
        ClusterContext {
            inner,
            cluster,
            client,
            hub,
        }
    }

    /// The cluster the request is for.
    pub fn cluster(&self) -> &ClusterName {
        &self.cluster
    }

    /// That cluster's cache-backed client (its reads come from that cluster's cache, and
    /// read its own writes).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The hub's cache-backed client (the manager's).
    pub fn hub_client(&self) -> &Client {
        &self.hub
    }

    /// rein's context: controller name, reconcile id, stop token.
    pub fn context(&self) -> &Context {
        &self.inner
    }

    /// The per-cluster controller's name (`<controller>.<cluster>`, or `<controller>` in the hub).
    pub fn controller(&self) -> &str {
        self.inner.controller()
    }
}

/// Drives one object in one cluster towards its desired state (multicluster-runtime's
/// `mcreconcile.Reconciler`). Errors are retried with backoff in that cluster's queue; a
/// [`TerminalError`](rein_controller::TerminalError) is not retried.
#[async_trait]
pub trait ClusterReconciler: Send + Sync + 'static {
    /// The reconciler's error; anything convertible to a boxed error.
    type Error: Into<BoxError> + Send + 'static;

    /// Reconciles the object `req` names, in `req.cluster`.
    async fn reconcile(
        &self,
        ctx: ClusterContext,
        req: ClusterRequest,
    ) -> Result<Action, Self::Error>;
}

#[async_trait]
impl<R: ClusterReconciler + ?Sized> ClusterReconciler for Arc<R> {
    type Error = R::Error;

    async fn reconcile(
        &self,
        ctx: ClusterContext,
        req: ClusterRequest,
    ) -> Result<Action, Self::Error> {
        (**self).reconcile(ctx, req).await
    }
}

/// A [`ClusterReconciler`] from an async closure; see [`cluster_reconciler_fn`].
pub struct ClusterReconcilerFn<F> {
    f: F,
}

impl<F> fmt::Debug for ClusterReconcilerFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterReconcilerFn")
            .finish_non_exhaustive()
    }
}

/// Wraps `f(ctx, req)` as a [`ClusterReconciler`] (multicluster-runtime's `mcreconcile.Func`).
pub fn cluster_reconciler_fn<F, Fut, E>(f: F) -> ClusterReconcilerFn<F>
where
    F: Fn(ClusterContext, ClusterRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    ClusterReconcilerFn { f }
}

#[async_trait]
impl<F, Fut, E> ClusterReconciler for ClusterReconcilerFn<F>
where
    F: Fn(ClusterContext, ClusterRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    type Error = E;

    async fn reconcile(&self, ctx: ClusterContext, req: ClusterRequest) -> Result<Action, E> {
        (self.f)(ctx, req).await
    }
}

/// A reconciler with its type erased and its error boxed.
pub(crate) type BoxClusterReconciler = Arc<dyn ClusterReconciler<Error = BoxError>>;

pub(crate) fn box_cluster_reconciler<R: ClusterReconciler>(r: R) -> BoxClusterReconciler {
    Arc::new(Boxed(r))
}

struct Boxed<R>(R);

#[async_trait]
impl<R: ClusterReconciler> ClusterReconciler for Boxed<R> {
    type Error = BoxError;

    async fn reconcile(
        &self,
        ctx: ClusterContext,
        req: ClusterRequest,
    ) -> Result<Action, BoxError> {
        self.0.reconcile(ctx, req).await.map_err(Into::into)
    }
}
