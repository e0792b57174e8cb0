//! `Sharding`: one replica's part in a ring — its shard Lease, the coordinator election, the
//! hand-over of drained objects, and the cache options and reconcilers that go with them.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kube_client::core::DynamicObject;
use parking_lot::Mutex;
use rein_client::cache::{Cache, CacheOptions};
use rein_controller::Reconciler;
use rein_leaderelection::{LeaderCallbacks, LeaderElector, LeaseLock};
use rein_scheme::GroupVersionKind;
use rein_scheme::Object;
use rein_scheme::labels::Selector;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::coordinator::{self, Term};
use crate::kind::{Change, ObjMeta};
use crate::metrics::ShardMetrics;
use crate::options::{LEASE_RING_LABEL, LEASE_SHARD_LABEL};
use crate::shard::KindShard;
use crate::{Error, ShardedReconciler, ShardingOptions};

/// What the replica's tasks share.
pub(crate) struct Shared {
    pub(crate) options: ShardingOptions,
    pub(crate) kube: kube_client::Client,
    /// The coordinator's own cache while this replica coordinates (synced).
    pub(crate) coordinator_cache: Mutex<Option<Cache>>,
}

impl Shared {
    pub(crate) fn new(options: ShardingOptions, kube: kube_client::Client) -> Self {
        Shared {
            options,
            kube,
            coordinator_cache: Mutex::new(None),
        }
    }
}

/// One replica's membership in a ring. A cheap `Clone` handle.
///
/// [`Sharding::cache_options`] restricts the cache to this shard's objects of every sharded
/// kind; [`Sharding::reconciler`] wraps a reconciler so it reconciles only those;
/// [`Sharding::run`] holds the shard Lease, competes for the coordinator Lease (the
/// coordinator assigns objects) and hands drained objects over. A manager does all three when
/// its options turn sharding on.
#[derive(Clone)]
pub struct Sharding {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    kinds: HashMap<GroupVersionKind, Arc<KindShard>>,
    member: watch::Sender<bool>,
    running: AtomicBool,
    metrics: ShardMetrics,
}

impl fmt::Debug for Sharding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sharding")
            .field("ring", &self.options().ring)
            .field("shard", &self.shard_id())
            .field("member", &self.is_member())
            .finish_non_exhaustive()
    }
}

impl Sharding {
    /// Checks the options (names, timing, kinds), fills in the default shard id, and builds
    /// the handle. Nothing runs until [`Sharding::run`].
    pub fn new(kube: kube_client::Client, options: ShardingOptions) -> Result<Self, Error> {
        let options = options.resolve()?;
        let kinds = options
            .kinds
            .iter()
            .filter(|k| !k.follows_owner)
            .map(|k| {
                let gvk = k.gvk();
                let shard = KindShard::new(gvk.kind.clone(), k.ops.api_resource(), k.ops.clone());
                (gvk, Arc::new(shard))
            })
            .collect();
        let metrics = ShardMetrics::new(&options.ring, options.id());
        metrics.set_member(false);
        Ok(Sharding {
            inner: Arc::new(Inner {
                shared: Arc::new(Shared::new(options, kube)),
                kinds,
                member: watch::Sender::new(false),
                running: AtomicBool::new(false),
                metrics,
            }),
        })
    }

    /// The checked options (with the shard id filled in).
    pub fn options(&self) -> &ShardingOptions {
        &self.inner.shared.options
    }

    /// This replica's shard id.
    pub fn shard_id(&self) -> &str {
        self.inner.shared.options.id()
    }

    /// Whether this replica holds its shard Lease (is a member of the ring) now.
    pub fn is_member(&self) -> bool {
        *self.inner.member.borrow()
    }

    /// The coordinator's own cache while this replica coordinates the ring (`None`
    /// otherwise): the ring's shard Leases and, for every sharded kind `K`, an informer of
    /// `PartialObjectMeta<K>` — metadata only, so the coordinator's memory holds no object's
    /// spec or status. For inspection (`informer_statuses`, `existing_informer_for`).
    pub fn coordinator_cache(&self) -> Option<Cache> {
        self.inner.shared.coordinator_cache.lock().clone()
    }

    /// Resolves once this replica holds its shard Lease.
    pub async fn wait_member(&self) {
        let mut member = self.inner.member.subscribe();
        let _ = member.wait_for(|m| *m).await;
    }

    /// `base` with every sharded kind's cache restricted to this shard's objects (the label
    /// selector `shard.rein.dev/<ring>=<shard id>`, added to the kind's own selector).
    pub fn cache_options(&self, mut base: CacheOptions) -> CacheOptions {
        let options = self.options();
        let Ok(requirement) = options.selector_requirement() else {
            // `new` checked the requirement; unreachable.
            return base;
        };
        for kind in &options.kinds {
            let gvk = kind.gvk();
            let own = base
                .by_object
                .get(&gvk)
                .and_then(|b| b.label_selector.clone())
                .or_else(|| base.default_label_selector.clone());
            let selector = match own {
                Some(sel) => sel.with(requirement.clone()),
                None => Selector::from_requirements(vec![requirement.clone()]),
            };
            let by = base.by_object.entry(gvk).or_default();
            by.label_selector = Some(selector);
        }
        base
    }

    /// Wraps `reconciler` for the sharded kind `K`: it reconciles only objects assigned to
    /// this shard (read from `cache`, which must be built with
    /// [`Sharding::cache_options`]), only while this replica is a member, and never a key in
    /// hand-over. Fails for a kind the options do not shard by its own key.
    pub fn reconciler<K: Object, R: Reconciler>(
        &self,
        cache: Cache,
        reconciler: R,
    ) -> Result<ShardedReconciler<K, R>, Error> {
        let resource = kube_client::core::ApiResource::erase::<K>(&());
        let gvk = GroupVersionKind::new(resource.group, resource.version, resource.kind);
        self.wrap(&gvk, cache, reconciler)
    }

    /// [`Sharding::reconciler`] for a kind named at run time (what the controller builder's
    /// `sharded()` uses through the manager): `kind` must be sharded by its own key.
    pub fn reconciler_for_kind<R: Reconciler>(
        &self,
        kind: &GroupVersionKind,
        cache: Cache,
        reconciler: R,
    ) -> Result<ShardedReconciler<DynamicObject, R>, Error> {
        self.wrap(kind, cache, reconciler)
    }

    /// Whether the ring shards `kind` (by its own key or its owner's): this replica's cache
    /// built with [`Sharding::cache_options`] holds only its share of the kind.
    pub fn shards_kind(&self, kind: &GroupVersionKind) -> bool {
        self.options().kinds.iter().any(|k| &k.gvk() == kind)
    }

    fn wrap<K, R: Reconciler>(
        &self,
        gvk: &GroupVersionKind,
        cache: Cache,
        reconciler: R,
    ) -> Result<ShardedReconciler<K, R>, Error> {
        let Some(shard) = self.inner.kinds.get(gvk) else {
            return Err(Error::KindNotSharded {
                ring: self.options().ring.clone(),
                kind: gvk.to_string(),
            });
        };
        Ok(ShardedReconciler::new(
            reconciler,
            self.clone(),
            shard.clone(),
            cache,
        ))
    }

    /// Takes part in the ring until `stop` is cancelled: watches this shard's objects in
    /// `cache` (started and synced) for drain requests, holds the shard Lease, and competes
    /// for the coordinator Lease, coordinating while it holds it.
    ///
    /// Returns `Ok` after `stop` (both Leases released: stop the reconcilers first), or
    /// [`Error::MembershipLost`] as soon as the shard Lease could not be renewed before the
    /// renew deadline — before any other replica may take this shard's objects over. Stop
    /// reconciling then (a manager stops, as when leader election is lost).
    pub async fn run(&self, cache: Cache, stop: CancellationToken) -> Result<(), Error> {
        let options = self.options();
        if self.inner.running.swap(true, Ordering::SeqCst) {
            return Err(Error::AlreadyRunning {
                ring: options.ring.clone(),
            });
        }
        for kind in options.kinds.iter().filter(|k| !k.follows_owner) {
            let Some(shard) = self.inner.kinds.get(&kind.gvk()).cloned() else {
                continue;
            };
            self.inner.metrics.reset_keys_owned(&shard.kind);
            let sharding = self.clone();
            kind.ops
                .watch(
                    &cache,
                    Arc::new(move |obj: &ObjMeta, change: Change| {
                        shard.observe(&sharding, obj, change)
                    }),
                )
                .await?;
        }

        let coordinating = stop.child_token();
        let coordinator = tokio::spawn(self.clone().coordinate(coordinating.clone()));

        let elector = self.membership_elector()?;
        elector.run(stop.clone()).await;
        self.set_member(false);
        coordinating.cancel();
        let _ = coordinator.await;
        if stop.is_cancelled() {
            Ok(())
        } else {
            tracing::error!(ring = %options.ring, shard = self.shard_id(), "shard lease lost");
            Err(Error::MembershipLost {
                ring: options.ring.clone(),
                shard: self.shard_id().to_owned(),
            })
        }
    }

    pub(crate) fn kube(&self) -> kube_client::Client {
        self.inner.shared.kube.clone()
    }

    pub(crate) fn metrics(&self) -> &ShardMetrics {
        &self.inner.metrics
    }

    fn set_member(&self, member: bool) {
        self.inner.member.send_replace(member);
        self.inner.metrics.set_member(member);
    }

    /// The elector on this shard's own Lease: membership while it "leads".
    fn membership_elector(&self) -> Result<LeaderElector, Error> {
        let options = self.options();
        let labels = BTreeMap::from([
            (LEASE_RING_LABEL.to_owned(), options.ring.clone()),
            (LEASE_SHARD_LABEL.to_owned(), self.shard_id().to_owned()),
        ]);
        let lock = LeaseLock::new(
            self.kube(),
            options.lease_namespace(),
            coordinator::shard_lease_name(&options.ring, self.shard_id()),
            self.shard_id(),
        )
        .with_labels(labels);
        let sharding = self.clone();
        let callbacks = LeaderCallbacks::new(
            move |token: CancellationToken| {
                tracing::info!(ring = %sharding.options().ring, shard = sharding.shard_id(), "joined the ring");
                sharding.set_member(true);
                let sharding = sharding.clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    sharding.set_member(false);
                });
            },
            || {},
        );
        LeaderElector::new(options.lease.clone(), lock, callbacks).map_err(Error::LeaseConfig)
    }

    /// Competes for the coordinator Lease until `stop`, coordinating in every term won.
    async fn coordinate(self, stop: CancellationToken) {
        let options = self.options();
        while !stop.is_cancelled() {
            let lock = LeaseLock::new(
                self.kube(),
                options.lease_namespace(),
                coordinator::coordinator_lease_name(&options.ring),
                self.shard_id(),
            );
            let shared = self.inner.shared.clone();
            let callbacks = LeaderCallbacks::new(
                move |term: CancellationToken| {
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        tracing::info!(ring = %shared.options.ring, shard = shared.options.id(), "coordinating the ring");
                        if let Err(err) = Term::new(shared).run(term).await {
                            tracing::error!(error = %err, "coordinator term failed");
                        }
                    });
                },
                || {},
            );
            match LeaderElector::new(options.lease.clone(), lock, callbacks) {
                Ok(elector) => elector.run(stop.clone()).await,
                Err(err) => {
                    tracing::error!(error = %err, "cannot elect a coordinator");
                    return;
                }
            }
        }
    }
}
