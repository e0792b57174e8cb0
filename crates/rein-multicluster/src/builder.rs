//! `FleetControllerBuilder`: a controller run in every engaged cluster, its sources engaged
//! per source in the members, the hub, or both (multicluster-runtime's `mcbuilder`).

use std::fmt;
use std::sync::Arc;

use rein_client::ListOptions;
use rein_controller::event::GenericEvent;
use rein_controller::handler::{EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler};
use rein_controller::predicate::{BoxPredicate, Predicate};
use rein_controller::source::Kind;
use rein_controller::{ControllerOptions, LOW_PRIORITY, Request};
use rein_scheme::Object;

use crate::error::Error;
use crate::fleet::Fleet;
use crate::fleet::spec::{ControllerSpec, RateLimiterFactory, WatchSpec};
use crate::handler::{Across, FleetQueue, MapToClusters};
use crate::name::ClusterName;
use crate::request::{ClusterReconciler, box_cluster_reconciler};

/// Which clusters a source is engaged in (multicluster-runtime's `WithEngageWithLocalCluster`
/// / `WithEngageWithProviderClusters`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engage {
    /// Every member cluster (the default).
    #[default]
    Members,
    /// The hub only.
    Hub,
    /// The hub and every member.
    Everywhere,
}

impl Engage {
    /// Whether a source engaged so runs in `cluster`.
    pub fn includes(&self, cluster: &ClusterName) -> bool {
        match self {
            Engage::Members => !cluster.is_hub(),
            Engage::Hub => cluster.is_hub(),
            Engage::Everywhere => true,
        }
    }
}

/// Where a source is engaged and the predicates its events must pass.
pub struct On<K> {
    engage: Engage,
    predicates: Vec<BoxPredicate<K>>,
}

impl<K> fmt::Debug for On<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("On")
            .field("engage", &self.engage)
            .field("predicates", &self.predicates.len())
            .finish()
    }
}

impl<K: Send + Sync + 'static> On<K> {
    /// Engaged as `engage` says, no predicates.
    pub fn new(engage: Engage) -> Self {
        On {
            engage,
            predicates: Vec::new(),
        }
    }

    /// In every member.
    pub fn members() -> Self {
        On::new(Engage::Members)
    }

    /// In the hub only.
    pub fn hub() -> Self {
        On::new(Engage::Hub)
    }

    /// In the hub and every member.
    pub fn everywhere() -> Self {
        On::new(Engage::Everywhere)
    }

    /// Adds a predicate (they run in order; the first `false` drops the event).
    pub fn with_predicate(mut self, predicate: impl Predicate<K>) -> Self {
        self.predicates.push(Arc::new(predicate));
        self
    }
}

/// Builds a fleet controller: `FleetControllerBuilder::new(&fleet).for_::<K>(On::members())
/// .watches_across::<H>(On::hub(), map).complete(reconciler)`.
///
/// The controller runs one rein controller per engaged cluster (the hub's named `<name>`, a
/// member's `<name>.<cluster>`), each with its own queue, rate limiter and workers, so a slow
/// or unreachable cluster holds back only its own requests.
pub struct FleetControllerBuilder<'a> {
    fleet: &'a Fleet,
    name: Option<String>,
    kind_name: Option<String>,
    owner: Option<fn() -> EnqueueRequestForOwner>,
    watches: Vec<WatchSpec>,
    options: ControllerOptions,
    rate_limiter: Option<Arc<RateLimiterFactory>>,
    error: Option<Error>,
}

impl fmt::Debug for FleetControllerBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetControllerBuilder")
            .field("name", &self.name)
            .field("kind", &self.kind_name)
            .field("watches", &self.watches.len())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn owner_of<O: Object>() -> EnqueueRequestForOwner {
    EnqueueRequestForOwner::new::<O>()
}

impl<'a> FleetControllerBuilder<'a> {
    /// A builder for a controller of `fleet`.
    pub fn new(fleet: &'a Fleet) -> Self {
        FleetControllerBuilder {
            fleet,
            name: None,
            kind_name: None,
            owner: None,
            watches: Vec::new(),
            options: ControllerOptions::default(),
            rate_limiter: None,
            error: None,
        }
    }

    /// The kind the controller reconciles: each object's events enqueue its own key in the
    /// cluster they happened in. The controller is named after the kind (lowercase) unless
    /// [`named`](Self::named).
    pub fn for_<K: Object>(mut self, on: On<K>) -> Self {
        if self.kind_name.is_some() {
            self.error.get_or_insert(Error::Build {
                problem: "for_ was called twice",
            });
            return self;
        }
        self.kind_name = Some(K::kind(&()).to_lowercase());
        self.owner = Some(owner_of::<K>);
        self.push_local(on, EnqueueRequestForObject);
        self
    }

    /// Objects owned (controller reference) by the `for_` kind: their events enqueue the
    /// owner, in the same cluster. Call after `for_`.
    pub fn owns<K: Object>(mut self, on: On<K>) -> Self {
        match self.owner {
            Some(owner) => self.push_local(on, owner()),
            None => {
                self.error.get_or_insert(Error::Build {
                    problem: "owns must come after for_",
                });
            }
        }
        self
    }

    /// Objects of `K` whose events `handler` (any rein handler) maps to requests in the
    /// cluster they happened in.
    pub fn watches<K: Object>(mut self, on: On<K>, handler: impl EventHandler<K>) -> Self {
        self.push_local(on, handler);
        self
    }

    /// Objects of `K` whose events `map` turns into requests in any cluster (hub →
    /// members: [`MapToClusters::to_every_member`]). For a source engaged in the hub, a member
    /// that engages later gets the requests the hub's objects map to there.
    pub fn watches_across<K: Object>(mut self, on: On<K>, map: MapToClusters<K>) -> Self {
        let predicates = on.predicates;
        let attach_map = map.clone();
        let attach_predicates = predicates.clone();
        let replay = move |hub: crate::Cluster, target: ClusterName, queue: FleetQueue| {
            let (map, predicates) = (map.clone(), predicates.clone());
            let fut: futures::future::BoxFuture<'static, ()> = Box::pin(async move {
                let objects = match hub.cache().list::<K>(&ListOptions::default()).await {
                    Ok(list) => list.items,
                    Err(err) => {
                        tracing::warn!(cluster = %target, error = %err, "listing the hub's objects for a new member failed");
                        return;
                    }
                };
                let members = [target.clone()];
                for object in objects {
                    let event = GenericEvent {
                        object: object.clone(),
                    };
                    if !predicates.iter().all(|p| p.generic(&event)) {
                        continue;
                    }
                    for req in map.map(&ClusterName::hub(), &object, &members) {
                        if req.cluster == target {
                            queue.add_with_priority(req, LOW_PRIORITY);
                        }
                    }
                }
            });
            fut
        };
        self.watches.push(WatchSpec {
            engage: on.engage,
            attach: Box::new(move |controller, cluster, queue| {
                let handler = Across {
                    map: attach_map.clone(),
                    source: cluster.name().clone(),
                    queue: queue.clone(),
                };
                controller.watch(
                    Kind::<K>::new(&cluster.cache()),
                    handler,
                    attach_predicates.clone(),
                );
            }),
            replay: Some(Box::new(replay)),
        });
        self
    }

    /// Names the controller (letters, digits, `-`, `_`, `.`; unique in the fleet).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Options of every per-cluster controller (workers, timeouts). Leave
    /// `rate_limiter` unset: one limiter shared by every cluster would mix their backoffs;
    /// use [`rate_limiter_per_cluster`](Self::rate_limiter_per_cluster).
    pub fn options(mut self, options: ControllerOptions) -> Self {
        if options.rate_limiter.is_some() {
            self.error.get_or_insert(Error::Build {
                problem: "ControllerOptions::rate_limiter would be shared by every cluster; use rate_limiter_per_cluster",
            });
        }
        self.options = options;
        self
    }

    /// Each cluster's controller gets its own rate limiter from `make` (default: per-request
    /// exponential backoff, 5 ms doubling to 1000 s, in each cluster's queue).
    pub fn rate_limiter_per_cluster(
        mut self,
        make: impl Fn() -> Arc<dyn rein_workqueue::RateLimiter<Request>> + Send + Sync + 'static,
    ) -> Self {
        self.rate_limiter = Some(Arc::new(make));
        self
    }

    /// Builds the controller and adds it to the fleet: it runs in the hub and in every member
    /// engaged now or later, until the fleet stops.
    pub fn complete<R: ClusterReconciler>(self, reconciler: R) -> Result<(), Error> {
        if let Some(err) = self.error {
            return Err(err);
        }
        let name = match (self.name, self.kind_name) {
            (Some(name), _) => name,
            (None, Some(kind)) => kind,
            (None, None) => {
                return Err(Error::Build {
                    problem: "a controller without for_ needs a name (named)",
                });
            }
        };
        let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if name.is_empty()
            || name.len() > 200
            || !name.chars().all(valid)
            || self.fleet.has_controller(&name)
        {
            return Err(Error::InvalidControllerName { name });
        }
        if self.watches.is_empty() {
            return Err(Error::Build {
                problem: "a fleet controller needs at least one source (for_, owns, watches)",
            });
        }
        let mut options = self.options;
        options.rate_limiter = None;
        self.fleet.add_spec(ControllerSpec {
            name,
            options,
            rate_limiter: self.rate_limiter,
            watches: self.watches,
            reconciler: box_cluster_reconciler(reconciler),
            queue: FleetQueue::default(),
        });
        Ok(())
    }

    fn push_local<K: Object>(&mut self, on: On<K>, handler: impl EventHandler<K>) {
        let handler: Arc<dyn EventHandler<K>> = Arc::new(handler);
        let predicates = on.predicates;
        self.watches.push(WatchSpec {
            engage: on.engage,
            attach: Box::new(move |controller, cluster, _queue| {
                controller.watch(
                    Kind::<K>::new(&cluster.cache()),
                    handler.clone(),
                    predicates.clone(),
                );
            }),
            replay: None,
        });
    }
}
