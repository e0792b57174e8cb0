//! Active-active sharding of controllers across replicas, built on Kubernetes itself: Leases
//! for membership, labels and selectors for assignment, watches for hand-over (the design of
//! kubernetes-controller-sharding, with the sharder elected among the replicas).
//!
//! `rein-sharding` sits between `rein-controller` (it wraps a [`Reconciler`]) and
//! `rein-manager` (which turns it on through `Options::sharding`); it uses `rein-client`'s
//! cache and `rein-leaderelection`'s elector, and knows nothing of the manager.
//!
//! - **Membership**: every replica holds its own Lease `<ring>-shard-<id>` (labelled
//!   `ring.shard.rein.dev/name=<ring>`), renewed with leader election's renew-deadline and
//!   clock-skew rules and released on a graceful stop. [`Sharding::run`] returns
//!   [`Error::MembershipLost`] when a renewal misses the renew deadline — before anyone may
//!   judge the Lease expired.
//! - **Coordinator**: one replica, elected on Lease `<ring>-coordinator`, watches the shard
//!   Leases and the metadata (`PartialObjectMeta<K>`, no spec or status:
//!   [`Sharding::coordinator_cache`]) of every object of the sharded kinds and assigns each
//!   object to a live shard by rendezvous hashing, written as the label
//!   `shard.rein.dev/<ring>: <shard id>`. Kinds added with
//!   [`ShardingOptions::following_owner`] go to their controller owner's shard.
//! - **Caches that shrink with N**: [`Sharding::cache_options`] makes each replica's cache
//!   watch only its own label value.
//! - **Hand-over without overlap**: to move an object between live shards the coordinator
//!   sets `drain.shard.rein.dev/<ring>`; the old shard lets the in-flight reconcile finish,
//!   starts no new one, and removes both labels; only then does the coordinator assign the
//!   new shard. Objects of a dead shard (Lease released, or unrenewed for its whole duration
//!   on a fresh read) are reassigned without a handshake.
//! - [`Sharding::reconciler`] (or [`Sharding::reconciler_for_kind`]) wraps a reconciler so it
//!   only reconciles this shard's objects. With a manager, the controller builder's
//!   `sharded()` does it per controller, and controllers that say `leader_elected()` stay
//!   singletons on the same manager ([`ShardingOptions::shard_controllers_by_default`] turns
//!   the default around).
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use rein_client::cache::{Cache, CacheOptions};
//! use rein_controller::{Action, Context, Request, reconciler_fn};
//! use rein_leaderelection::LeaderElectionConfig;
//! use rein_sharding::{Sharding, ShardingOptions};
//! use std::time::Duration;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let env = rein_testenv::TestEnv::start().await?;
//! # let kube = env.client();
//! let options = ShardingOptions::new("configmaps")
//!     .namespace("default")
//!     .shard_id("replica-0")
//!     .lease(LeaderElectionConfig {
//!         lease_duration: Duration::from_secs(2),
//!         renew_deadline: Duration::from_secs(1),
//!         retry_period: Duration::from_millis(200),
//!         ..LeaderElectionConfig::default()
//!     })
//!     .kind::<ConfigMap>();
//! let sharding = Sharding::new(kube.clone(), options)?;
//! // This replica's cache holds only the ConfigMaps assigned to it.
//! let cache = Cache::new(kube.clone(), sharding.cache_options(CacheOptions::default()));
//! let reconciler = sharding.reconciler::<ConfigMap, _>(
//!     cache.clone(),
//!     reconciler_fn(|_ctx: Context, req: Request| async move {
//!         println!("reconciling {req}");
//!         Ok::<_, std::convert::Infallible>(Action::done())
//!     }),
//! )?;
//! # drop(reconciler);
//!
//! let stop = CancellationToken::new();
//! let (c, s) = (cache.clone(), stop.clone());
//! tokio::spawn(async move { c.start(s).await });
//! cache.informer_for::<ConfigMap>().await?;
//! let running = tokio::spawn({
//!     let (sharding, cache, stop) = (sharding.clone(), cache.clone(), stop.clone());
//!     async move { sharding.run(cache, stop).await }
//! });
//! sharding.wait_member().await;
//! // ... run controllers with `reconciler` (a manager does all of this) ...
//! stop.cancel();
//! running.await??;
//! # Ok(()) }
//! ```
//!
//! [`Reconciler`]: rein_controller::Reconciler

mod coordinator;
mod error;
mod kind;
mod metrics;
mod options;
mod ring;
mod shard;
mod sharding;

pub use error::Error;
pub use kind::ShardedKind;
pub use options::{LABEL_DOMAIN, LEASE_RING_LABEL, LEASE_SHARD_LABEL, ShardingOptions};
pub use ring::{assign, hash_key};
pub use shard::ShardedReconciler;
pub use sharding::Sharding;
