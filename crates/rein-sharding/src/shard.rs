//! This replica's side of the hand-over: which keys are being reconciled, the drain
//! acknowledgement, and the reconciler wrapper that only reconciles this shard's objects.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use kube_client::api::{Patch, PatchParams};
use kube_client::core::ApiResource;
use parking_lot::Mutex;
use rein_client::cache::Cache;
use rein_controller::{Action, BoxError, Context, Reconciler, Request};
use rein_scheme::ObjectKey;
use tokio::sync::Notify;

use crate::Sharding;
use crate::kind::{Change, KindOps, ObjMeta, dynamic_api};

/// One sharded kind on this replica: the keys in flight and the keys being drained.
pub(crate) struct KindShard {
    pub(crate) kind: String,
    resource: ApiResource,
    /// Reads the kind's objects from the replica's cache.
    ops: Arc<dyn KindOps>,
    state: Mutex<KeyState>,
    idle: Notify,
}

#[derive(Default)]
struct KeyState {
    /// Reconciles running per key (one per controller of the kind at most).
    in_flight: HashMap<ObjectKey, usize>,
    /// Keys whose hand-over has begun: no new reconcile starts for them.
    draining: HashSet<ObjectKey>,
}

/// Marks a key in flight until dropped.
pub(crate) struct InFlight {
    shard: Arc<KindShard>,
    key: ObjectKey,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.shard.state.lock();
        if let Some(n) = state.in_flight.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                state.in_flight.remove(&self.key);
            }
        }
        drop(state);
        self.shard.idle.notify_waiters();
    }
}

impl KindShard {
    pub(crate) fn new(kind: String, resource: ApiResource, ops: Arc<dyn KindOps>) -> Self {
        KindShard {
            kind,
            resource,
            ops,
            state: Mutex::new(KeyState::default()),
            idle: Notify::new(),
        }
    }

    /// Marks `key` in flight, unless its hand-over has begun.
    pub(crate) fn begin(self: &Arc<Self>, key: &ObjectKey) -> Option<InFlight> {
        let mut state = self.state.lock();
        if state.draining.contains(key) {
            return None;
        }
        *state.in_flight.entry(key.clone()).or_default() += 1;
        Some(InFlight {
            shard: self.clone(),
            key: key.clone(),
        })
    }

    /// Reacts to what the filtered cache saw: keeps the owned-keys gauge and starts the
    /// hand-over of an object the coordinator asked this shard to drain.
    pub(crate) fn observe(self: &Arc<Self>, sharding: &Sharding, obj: &ObjMeta, change: Change) {
        let options = sharding.options();
        match change {
            Change::Added => sharding.metrics().keys_owned(&self.kind, 1),
            Change::Deleted => sharding.metrics().keys_owned(&self.kind, -1),
            Change::Updated => {}
        }
        let ours =
            obj.labels.get(&options.shard_label()).map(String::as_str) == Some(sharding.shard_id());
        if change == Change::Deleted || !ours || !obj.labels.contains_key(&options.drain_label()) {
            return;
        }
        if !self.state.lock().draining.insert(obj.key.clone()) {
            return;
        }
        let (shard, sharding, obj) = (self.clone(), sharding.clone(), obj.clone());
        tokio::spawn(async move { shard.drain(&sharding, obj).await });
    }

    /// The handshake: no new reconcile of the key starts; the one in flight finishes; then
    /// both labels are removed (guarded by the version that asked, so a newer assignment is
    /// never undone). The work queue's entry for the key is dropped when it comes up: the
    /// object is no longer this shard's.
    async fn drain(self: Arc<Self>, sharding: &Sharding, obj: ObjMeta) {
        loop {
            let idle = self.idle.notified();
            if !self.state.lock().in_flight.contains_key(&obj.key) {
                break;
            }
            idle.await;
        }
        let options = sharding.options();
        let patch = serde_json::json!({
            "metadata": {
                "resourceVersion": obj.resource_version,
                "labels": { options.shard_label(): null, options.drain_label(): null },
            }
        });
        let api = dynamic_api(sharding.kube(), &self.resource, &obj.key);
        match api
            .patch(&obj.key.name, &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            Ok(_) => {
                sharding.metrics().drained(&self.kind);
                tracing::debug!(object = %obj.key, shard = sharding.shard_id(), "handed over");
            }
            // Changed since: a newer version with the drain label starts a new hand-over.
            Err(err) => {
                tracing::debug!(object = %obj.key, error = %err, "hand-over write failed")
            }
        }
        self.state.lock().draining.remove(&obj.key);
    }
}

/// Wraps a reconciler so that it reconciles only objects assigned to this shard, only while
/// this replica holds its shard Lease, and never a key whose hand-over has begun. Made by
/// [`Sharding::reconciler`] (`K` the sharded kind) or [`Sharding::reconciler_for_kind`] (`K`
/// is `DynamicObject`: the kind is chosen at run time); give it to the controller builder's
/// `complete`.
///
/// A request is dropped (reconciled as done) when the object is not in this shard's cache —
/// assigned elsewhere, being handed over, or deleted — so a sharded reconciler does not see
/// deletions of objects without finalizers.
pub struct ShardedReconciler<K, R> {
    inner: R,
    sharding: Sharding,
    shard: Arc<KindShard>,
    cache: Cache,
    _kind: PhantomData<fn() -> K>,
}

impl<K, R> fmt::Debug for ShardedReconciler<K, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedReconciler")
            .field("kind", &self.shard.kind)
            .field("ring", &self.sharding.options().ring)
            .field("shard", &self.sharding.shard_id())
            .finish_non_exhaustive()
    }
}

impl<K, R> ShardedReconciler<K, R> {
    pub(crate) fn new(inner: R, sharding: Sharding, shard: Arc<KindShard>, cache: Cache) -> Self {
        ShardedReconciler {
            inner,
            sharding,
            shard,
            cache,
            _kind: PhantomData,
        }
    }
}

#[async_trait]
impl<K: 'static, R: Reconciler> Reconciler for ShardedReconciler<K, R> {
    type Error = BoxError;

    async fn reconcile(&self, ctx: Context, req: Request) -> Result<Action, BoxError> {
        if !self.sharding.is_member() {
            tokio::select! {
                () = self.sharding.wait_member() => {}
                _ = ctx.stop_token().cancelled() => return Ok(Action::done()),
            }
        }
        let Some(obj) = self.shard.ops.get(&self.cache, &req.key).await? else {
            return Ok(Action::done());
        };
        let options = self.sharding.options();
        let ours = obj.labels.get(&options.shard_label()).map(String::as_str)
            == Some(self.sharding.shard_id());
        let draining = obj.labels.contains_key(&options.drain_label());
        if !ours || draining {
            return Ok(Action::done());
        }
        let Some(_in_flight) = self.shard.begin(&req.key) else {
            return Ok(Action::done());
        };
        self.inner.reconcile(ctx, req).await.map_err(Into::into)
    }
}
