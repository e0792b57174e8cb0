//! Routing requests across clusters: [`FleetQueue`] (one fleet controller's queues, one per
//! engaged cluster) and [`MapToClusters`], the handler that maps an event in one cluster to
//! requests in others (hub → members).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::RwLock;
use rein_controller::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use rein_controller::handler::EventHandler;
use rein_controller::{LOW_PRIORITY, Request, RequestQueue};

use crate::name::ClusterName;
use crate::request::ClusterRequest;

/// One fleet controller's queues, by cluster: adding a [`ClusterRequest`] puts it in the
/// queue of its cluster's controller; a request for a cluster that is not engaged (or was
/// disengaged) is dropped. Cheap to clone.
#[derive(Clone, Default)]
pub struct FleetQueue {
    queues: Arc<RwLock<HashMap<ClusterName, RequestQueue>>>,
}

impl fmt::Debug for FleetQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetQueue")
            .field("clusters", &self.clusters())
            .finish()
    }
}

impl FleetQueue {
    /// Adds `req` to its cluster's queue, ready now; `false` if the cluster is not engaged.
    pub fn add(&self, req: ClusterRequest) -> bool {
        self.add_with_priority(req, 0)
    }

    /// Adds `req` at `priority`; `false` if its cluster is not engaged.
    pub fn add_with_priority(&self, req: ClusterRequest, priority: i32) -> bool {
        let queues = self.queues.read();
        match queues.get(&req.cluster) {
            Some(queue) => {
                queue.add_with_priority(Request::from(req.key), priority);
                true
            }
            None => false,
        }
    }

    /// The member clusters this controller runs in now (not the hub), sorted.
    pub fn members(&self) -> Vec<ClusterName> {
        let mut names: Vec<ClusterName> = self
            .queues
            .read()
            .keys()
            .filter(|n| !n.is_hub())
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// Every cluster this controller runs in now (the hub first, if it does).
    pub fn clusters(&self) -> Vec<ClusterName> {
        let mut names: Vec<ClusterName> = self.queues.read().keys().cloned().collect();
        names.sort();
        names
    }

    /// The queue of `cluster`'s controller, if it runs there.
    pub fn queue(&self, cluster: &ClusterName) -> Option<RequestQueue> {
        self.queues.read().get(cluster).cloned()
    }

    pub(crate) fn register(&self, cluster: ClusterName, queue: RequestQueue) {
        self.queues.write().insert(cluster, queue);
    }

    pub(crate) fn unregister(&self, cluster: &ClusterName) {
        if let Some(queue) = self.queues.write().remove(cluster) {
            queue.shut_down();
        }
    }
}

type MapFn<K> = dyn Fn(&ClusterName, &K, &[ClusterName]) -> Vec<ClusterRequest> + Send + Sync;

/// Maps an object seen in one cluster to requests in any clusters (multicluster-runtime's
/// cross-cluster `EnqueueRequestsFromMapFunc`): `f(source, object, members)` gets the
/// cluster the event came from, the object and the members engaged now. Give it to
/// [`FleetControllerBuilder::watches_across`](crate::FleetControllerBuilder::watches_across).
///
/// When a member engages, objects already in the hub's cache are mapped again (for a watch
/// engaged in the hub) and the requests for the new member are queued, so a member added at
/// run time gets what the hub holds without waiting for the next hub event.
pub struct MapToClusters<K> {
    pub(crate) f: Arc<MapFn<K>>,
}

impl<K> Clone for MapToClusters<K> {
    fn clone(&self) -> Self {
        MapToClusters { f: self.f.clone() }
    }
}

impl<K> fmt::Debug for MapToClusters<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapToClusters").finish_non_exhaustive()
    }
}

impl<K: Send + Sync + 'static> MapToClusters<K> {
    /// Maps with `f(source, object, members)`.
    pub fn new(
        f: impl Fn(&ClusterName, &K, &[ClusterName]) -> Vec<ClusterRequest> + Send + Sync + 'static,
    ) -> Self {
        MapToClusters { f: Arc::new(f) }
    }

    /// Every request `f(object)` returns, in every member engaged (the hub → members fan-out
    /// of a propagation controller).
    pub fn to_every_member(f: impl Fn(&K) -> Vec<Request> + Send + Sync + 'static) -> Self {
        MapToClusters::new(move |_source, obj, members| {
            let reqs = f(obj);
            members
                .iter()
                .flat_map(|m| {
                    reqs.iter()
                        .map(|r| ClusterRequest::in_cluster(m.clone(), r.clone()))
                })
                .collect()
        })
    }

    pub(crate) fn map(
        &self,
        source: &ClusterName,
        obj: &K,
        members: &[ClusterName],
    ) -> Vec<ClusterRequest> {
        (self.f)(source, obj, members)
    }
}

/// A [`MapToClusters`] attached to one cluster's source: rein's `EventHandler`, routing what
/// it maps through the fleet's queues (the cluster's own queue, which the trait hands in, is
/// not used).
pub(crate) struct Across<K> {
    pub(crate) map: MapToClusters<K>,
    pub(crate) source: ClusterName,
    pub(crate) queue: FleetQueue,
}

impl<K: Send + Sync + 'static> Across<K> {
    fn route(&self, objects: &[&K], priority: i32) {
        let members = self.queue.members();
        let mut seen: Vec<ClusterRequest> = Vec::new();
        for obj in objects {
            for req in self.map.map(&self.source, obj, &members) {
                if !seen.contains(&req) {
                    self.queue.add_with_priority(req.clone(), priority);
                    seen.push(req);
                }
            }
        }
    }
}

impl<K: kube_client::Resource + Send + Sync + 'static> EventHandler<K> for Across<K> {
    fn create(&self, e: &CreateEvent<K>, _q: &RequestQueue) {
        let priority = if e.is_in_initial_list {
            LOW_PRIORITY
        } else {
            0
        };
        self.route(&[&e.object], priority);
    }
    fn update(&self, e: &UpdateEvent<K>, _q: &RequestQueue) {
        let old = &e.object_old.meta().resource_version;
        let resync = old.is_some() && *old == e.object_new.meta().resource_version;
        let priority = if resync { LOW_PRIORITY } else { 0 };
        self.route(&[&e.object_old, &e.object_new], priority);
    }
    fn delete(&self, e: &DeleteEvent<K>, _q: &RequestQueue) {
        self.route(&[&e.object], 0);
    }
    fn generic(&self, e: &GenericEvent<K>, _q: &RequestQueue) {
        self.route(&[&e.object], 0);
    }
}
