//! `EnqueueRequestForOwner`: enqueue the owner of the object the event is about.

use std::any::TypeId;

use k8s_openapi::ClusterResourceScope;
use kube_client::Resource;

use super::{EventHandler, add_all, create_priority, update_priority};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::queue::RequestQueue;
use crate::reconcile::Request;

/// Enqueues the owners of a given group and kind found in the object's owner references
/// (only the controller owner, or every matching owner). The version is ignored; a
/// cluster-scoped owner is enqueued without a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueRequestForOwner {
    group: String,
    kind: String,
    cluster_scoped: bool,
    only_controller: bool,
}

impl EnqueueRequestForOwner {
    /// Owners of type `O`; only the reference marked `controller: true` counts (what
    /// `owns::<U>()` uses). See [`EnqueueRequestForOwner::match_every_owner`].
    pub fn new<O>() -> Self
    where
        O: Resource<DynamicType = ()>,
        O::Scope: 'static,
    {
        EnqueueRequestForOwner {
            group: O::group(&()).into_owned(),
            kind: O::kind(&()).into_owned(),
            cluster_scoped: TypeId::of::<O::Scope>() == TypeId::of::<ClusterResourceScope>(),
            only_controller: true,
        }
    }

    /// Owners of the given API group and kind (for dynamic types).
    pub fn for_group_kind(
        group: impl Into<String>,
        kind: impl Into<String>,
        cluster_scoped: bool,
    ) -> Self {
        EnqueueRequestForOwner {
            group: group.into(),
            kind: kind.into(),
            cluster_scoped,
            only_controller: true,
        }
    }

    /// Enqueues every matching owner, not only the controller.
    pub fn match_every_owner(mut self) -> Self {
        self.only_controller = false;
        self
    }

    /// The requests for `obj`'s matching owners.
    pub fn owners_of<K: Resource>(&self, obj: &K) -> Vec<Request> {
        let meta = obj.meta();
        let namespace = if self.cluster_scoped {
            String::new()
        } else {
            meta.namespace.clone().unwrap_or_default()
        };
        let refs = meta.owner_references.iter().flatten();
        // Only the controller: the first reference marked `controller: true`, whatever its
        // kind (`metav1.GetControllerOf`), and then only if it is an `O`.
        let candidates: Vec<_> = if self.only_controller {
            refs.filter(|r| r.controller == Some(true))
                .take(1)
                .collect()
        } else {
            refs.collect()
        };
        candidates
            .into_iter()
            .filter(|owner| {
                let group = owner
                    .api_version
                    .rsplit_once('/')
                    .map_or("", |(group, _version)| group);
                owner.kind == self.kind && group == self.group
            })
            .map(|owner| Request::new(namespace.clone(), owner.name.clone()))
            .collect()
    }
}

impl<K: Resource + Send + Sync + 'static> EventHandler<K> for EnqueueRequestForOwner {
    fn create(&self, e: &CreateEvent<K>, q: &RequestQueue) {
        add_all(q, self.owners_of(&*e.object), create_priority(e));
    }
    fn update(&self, e: &UpdateEvent<K>, q: &RequestQueue) {
        let mut reqs = self.owners_of(&*e.object_old);
        reqs.extend(self.owners_of(&*e.object_new));
        add_all(q, reqs, update_priority(e));
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &RequestQueue) {
        add_all(q, self.owners_of(&*e.object), 0);
    }
    fn generic(&self, e: &GenericEvent<K>, q: &RequestQueue) {
        add_all(q, self.owners_of(&*e.object), 0);
    }
}
