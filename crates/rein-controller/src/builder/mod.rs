//! The controller builder (controller-runtime's `pkg/builder`): `for_`, `owns`, `watches`,
//! global event filters, options and a name, then `complete` adds the controller to the host.

mod declared;
mod error;

use std::fmt;
use std::sync::Arc;

use rein_client::DynamicObject;
use rein_client::cache::Cache;
use rein_scheme::{GroupVersionKind, Object, RestMapping};

use crate::controller::{Controller, ControllerOptions};
use crate::handler::{EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler};
use crate::predicate::{BoxPredicate, ForAnyKind, MetaPredicate};
use crate::reconcile::{Reconciler, box_reconciler};
use crate::runnable::ControllerHost;
use crate::source::{Kind, Source};

pub use declared::{Declaration, DeclaredKind};
pub use error::BuildError;

type AddWatch = Box<dyn FnOnce(&WatchContext<'_>) + Send>;

/// What a pending watch needs when the controller is built.
struct WatchContext<'a> {
    controller: &'a Controller,
    cache: &'a Cache,
    filters: &'a [Arc<dyn MetaPredicate>],
    /// The owner handler for the `for_` type.
    for_owner: Option<&'a EnqueueRequestForOwner>,
}

/// Builds a controller for a host (a manager): `ControllerManagedBy::new(&mgr).for_::<T>()…`.
///
/// `with_event_filter` predicates apply to every `for_`/`owns`/`watches` watch (prepended to
/// the watch's own predicates); `watches_raw` skips them.
///
/// With a host that shards kinds across replicas (a manager with `Options::sharding`),
/// [`ControllerManagedBy::sharded`] runs the controller on every replica, each reconciling
/// its share, and [`ControllerManagedBy::leader_elected`] keeps it a singleton on the leader;
/// one manager can run both.
pub struct ControllerManagedBy<'a, H: ControllerHost + ?Sized> {
    host: &'a H,
    name: Option<String>,
    for_kind: Option<String>,
    for_gvk: Option<GroupVersionKind>,
    sharded: Option<bool>,
    for_owner: Option<EnqueueRequestForOwner>,
    has_owns: bool,
    error: Option<BuildError>,
    options: ControllerOptions,
    filters: Vec<Arc<dyn MetaPredicate>>,
    watches: Vec<AddWatch>,
    /// The kinds named by `for_`/`owns`/`watches`, for the host's permissions.
    declared: Vec<DeclaredKind>,
}

impl<H: ControllerHost + ?Sized> fmt::Debug for ControllerManagedBy<'_, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerManagedBy")
            .field("name", &self.name)
            .field("for_kind", &self.for_kind)
            .field("sharded", &self.sharded)
            .field("watches", &self.watches.len())
            .field("filters", &self.filters.len())
            .field("options", &self.options)
            .finish()
    }
}

/// Prepends the global filters to a watch's own predicates.
fn with_filters<K: kube_client::Resource + 'static>(
    filters: &[Arc<dyn MetaPredicate>],
    own: Vec<BoxPredicate<K>>,
) -> Vec<BoxPredicate<K>> {
    let mut all: Vec<BoxPredicate<K>> = filters
        .iter()
        .map(|f| Arc::new(ForAnyKind(f.clone())) as BoxPredicate<K>)
        .collect();
    all.extend(own);
    all
}

impl<'a, H: ControllerHost + ?Sized> ControllerManagedBy<'a, H> {
    /// Starts building a controller that `host` will run.
    pub fn new(host: &'a H) -> Self {
        ControllerManagedBy {
            host,
            name: None,
            for_kind: None,
            for_gvk: None,
            sharded: None,
            for_owner: None,
            has_owns: false,
            error: None,
            options: ControllerOptions::default(),
            filters: Vec::new(),
            watches: Vec::new(),
            declared: Vec::new(),
        }
    }

    /// The reconciled type: its events enqueue the object itself. Call once.
    pub fn for_<T: Object>(self) -> Self {
        self.for_with::<T>(Vec::new())
    }

    /// Like [`ControllerManagedBy::for_`] with predicates for this watch.
    pub fn for_with<T: Object>(mut self, predicates: Vec<BoxPredicate<T>>) -> Self {
        if self.for_kind.is_some() {
            self.error.get_or_insert(BuildError::ForCalledTwice);
            return self;
        }
        self.for_kind = Some(T::kind(&()).to_lowercase());
        let resource = kube_client::core::ApiResource::erase::<T>(&());
        self.for_gvk = Some(GroupVersionKind::new(
            resource.group,
            resource.version,
            resource.kind,
        ));
        self.for_owner = Some(EnqueueRequestForOwner::new::<T>());
        self.declared
            .push(DeclaredKind::of::<T>(Declaration::Reconciles));
        self.watches.push(Box::new(move |w| {
            w.controller.watch(
                Kind::<T>::new(w.cache),
                EnqueueRequestForObject,
                with_filters(w.filters, predicates),
            );
        }));
        self
    }

    /// The reconciled kind, known only at run time: its `DynamicObject` events enqueue the
    /// object itself. `mapping` comes from
    /// [`Client::rest_mapping`](rein_client::Client::rest_mapping) (scheme, then discovery).
    /// Call once, instead of [`ControllerManagedBy::for_`].
    ///
    /// Metadata-only kinds need no method of their own: `for_::<PartialObjectMeta<K>>()`,
    /// `owns::<PartialObjectMeta<U>>()` and `watches::<PartialObjectMeta<K>>(..)` watch and
    /// cache `K`'s metadata only (controller-runtime's `builder.OnlyMetadata`).
    pub fn for_dynamic(self, mapping: &RestMapping) -> Self {
        self.for_dynamic_with(mapping, Vec::new())
    }

    /// Like [`ControllerManagedBy::for_dynamic`] with predicates for this watch.
    pub fn for_dynamic_with(
        mut self,
        mapping: &RestMapping,
        predicates: Vec<BoxPredicate<DynamicObject>>,
    ) -> Self {
        if self.for_kind.is_some() {
            self.error.get_or_insert(BuildError::ForCalledTwice);
            return self;
        }
        self.for_kind = Some(mapping.gvk.kind.to_lowercase());
        self.for_gvk = Some(mapping.gvk.clone());
        self.for_owner = Some(EnqueueRequestForOwner::for_group_kind(
            &mapping.gvk.group,
            &mapping.gvk.kind,
            !mapping.is_namespaced(),
        ));
        self.declared
            .push(DeclaredKind::of_mapping(Declaration::Reconciles, mapping));
        let mapping = mapping.clone();
        self.watches.push(Box::new(move |w| {
            w.controller.watch(
                Kind::dynamic(w.cache, &mapping),
                EnqueueRequestForObject,
                with_filters(w.filters, predicates),
            );
        }));
        self
    }

    /// An owned kind known only at run time: its `DynamicObject` events enqueue the owning
    /// `for_` object (controller references only; see [`OwnsOptions`]).
    pub fn owns_dynamic(self, mapping: &RestMapping) -> Self {
        self.owns_dynamic_with(mapping, OwnsOptions::default())
    }

    /// Like [`ControllerManagedBy::owns_dynamic`] with options.
    pub fn owns_dynamic_with(
        mut self,
        mapping: &RestMapping,
        options: OwnsOptions<DynamicObject>,
    ) -> Self {
        self.has_owns = true;
        self.declared
            .push(DeclaredKind::of_mapping(Declaration::Owns, mapping));
        let mapping = mapping.clone();
        self.watches.push(Box::new(move |w| {
            let Some(owner) = w.for_owner else { return };
            let handler = if options.match_every_owner {
                owner.clone().match_every_owner()
            } else {
                owner.clone()
            };
            w.controller.watch(
                Kind::dynamic(w.cache, &mapping),
                handler,
                with_filters(w.filters, options.predicates),
            );
        }));
        self
    }

    /// Watches a kind known only at run time in the shared cache with a custom handler.
    pub fn watches_dynamic(
        mut self,
        mapping: &RestMapping,
        handler: impl EventHandler<DynamicObject>,
        predicates: Vec<BoxPredicate<DynamicObject>>,
    ) -> Self {
        self.declared
            .push(DeclaredKind::of_mapping(Declaration::Watches, mapping));
        let mapping = mapping.clone();
        self.watches.push(Box::new(move |w| {
            w.controller.watch(
                Kind::dynamic(w.cache, &mapping),
                handler,
                with_filters(w.filters, predicates),
            );
        }));
        self
    }

    /// An owned type: its events enqueue the owning `for_` object (controller references only).
    pub fn owns<U: Object>(self) -> Self {
        self.owns_with::<U>(OwnsOptions::default())
    }

    /// Like [`ControllerManagedBy::owns`] with options (every owner, predicates).
    pub fn owns_with<U: Object>(mut self, options: OwnsOptions<U>) -> Self {
        self.has_owns = true;
        self.declared.push(DeclaredKind::of::<U>(Declaration::Owns));
        self.watches.push(Box::new(move |w| {
            let Some(owner) = w.for_owner else { return };
            let handler = if options.match_every_owner {
                owner.clone().match_every_owner()
            } else {
                owner.clone()
            };
            w.controller.watch(
                Kind::<U>::new(w.cache),
                handler,
                with_filters(w.filters, options.predicates),
            );
        }));
        self
    }

    /// Watches `K` in the shared cache with a custom handler.
    pub fn watches<K: Object>(self, handler: impl EventHandler<K>) -> Self {
        self.watches_with::<K>(handler, Vec::new())
    }

    /// Like [`ControllerManagedBy::watches`] with predicates for this watch.
    pub fn watches_with<K: Object>(
        mut self,
        handler: impl EventHandler<K>,
        predicates: Vec<BoxPredicate<K>>,
    ) -> Self {
        self.declared
            .push(DeclaredKind::of::<K>(Declaration::Watches));
        self.watches.push(Box::new(move |w| {
            w.controller.watch(
                Kind::<K>::new(w.cache),
                handler,
                with_filters(w.filters, predicates),
            );
        }));
        self
    }

    /// Watches any source (a `Channel`, a custom source) with a handler; the global event
    /// filters apply.
    pub fn watches_source<K: kube_client::Resource + Send + Sync + 'static>(
        mut self,
        source: impl Source<K>,
        handler: impl EventHandler<K>,
    ) -> Self {
        self.watches.push(Box::new(move |w| {
            w.controller
                .watch(source, handler, with_filters(w.filters, Vec::new()));
        }));
        self
    }

    /// Watches a source exactly as given: the global event filters do not apply.
    pub fn watches_raw<K: Send + Sync + 'static>(
        mut self,
        source: impl Source<K>,
        handler: impl EventHandler<K>,
        predicates: Vec<BoxPredicate<K>>,
    ) -> Self {
        self.watches.push(Box::new(move |w| {
            w.controller.watch(source, handler, predicates);
        }));
        self
    }

    /// Adds a predicate applied to every watch except raw ones.
    pub fn with_event_filter(mut self, predicate: impl MetaPredicate) -> Self {
        self.filters.push(Arc::new(predicate));
        self
    }

    /// Sets the controller's options.
    pub fn with_options(mut self, options: ControllerOptions) -> Self {
        self.options = options;
        self
    }

    /// Shards the controller across replicas: it runs on every replica (active-active, no
    /// leader election) and reconciles only the `for_` objects the ring assigned to this
    /// replica — the host wraps the reconciler (a manager as `Manager::sharded` does; do not
    /// wrap it yourself as well). Needs `for_` of a kind the host shards; `complete` fails
    /// with [`BuildError::Sharding`] otherwise.
    pub fn sharded(mut self) -> Self {
        self.sharded = Some(true);
        self
    }

    /// Keeps the controller a singleton that runs only on the elected leader (the options'
    /// `need_leader_election` applies), also where the host shards controllers by default.
    /// Its `for_` kind must not be one the host shards (that cache holds only this replica's
    /// share): `complete` fails with [`BuildError::SingletonOfShardedKind`].
    pub fn leader_elected(mut self) -> Self {
        self.sharded = Some(false);
        self
    }

    /// Names the controller (default: the lowercase kind of the `for_` type).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Builds the controller, adds it to the host and returns a handle to it.
    pub fn complete<R: Reconciler>(self, reconciler: R) -> Result<Controller, BuildError> {
        if let Some(err) = self.error {
            return Err(err);
        }
        if self.has_owns && self.for_kind.is_none() {
            return Err(BuildError::OwnsWithoutFor);
        }
        if self.watches.is_empty() {
            return Err(BuildError::NoWatches);
        }
        let Some(name) = self.name.or(self.for_kind) else {
            return Err(BuildError::NoName);
        };
        let host = self.host;
        let names = host.controller_names();
        let for_sharded_kind = self.for_gvk.as_ref().filter(|k| host.is_sharded_kind(k));
        let mut options = self.options;
        options.enable_warmup |= host.warm_up_controllers();
        // By default, a controller the user did not take off leader election by hand.
        let sharded = self.sharded.unwrap_or_else(|| {
            options.need_leader_election
                && for_sharded_kind.is_some()
                && host.shards_controllers_by_default()
        });
        let controller = if sharded {
            let Some(kind) = &self.for_gvk else {
                return Err(BuildError::ShardedWithoutFor);
            };
            let reconciler = host
                .shard_reconciler(kind, box_reconciler(reconciler))
                .map_err(|source| BuildError::Sharding {
                    kind: kind.to_string(),
                    source,
                })?;
            options.need_leader_election = false;
            new_controller(names.as_ref(), &name, reconciler, options)?
        } else {
            if options.need_leader_election
                && let Some(kind) = for_sharded_kind
            {
                return Err(BuildError::SingletonOfShardedKind {
                    kind: kind.to_string(),
                });
            }
            new_controller(names.as_ref(), &name, reconciler, options)?
        };
        let cache = self.host.cache();
        let context = WatchContext {
            controller: &controller,
            cache: &cache,
            filters: &self.filters,
            for_owner: self.for_owner.as_ref(),
        };
        for add in self.watches {
            add(&context);
        }
        self.host
            .add(Arc::new(controller.clone()))
            .map_err(|source| BuildError::Add {
                name: name.clone(),
                source,
            })?;
        if let Some(names) = &names {
            names.declare(&name, self.declared);
        }
        Ok(controller)
    }
}

/// Options of an `owns` watch.
pub struct OwnsOptions<U> {
    /// Enqueue every owner of the `for_` type, not only the controller owner.
    pub match_every_owner: bool,
    /// Predicates for this watch.
    pub predicates: Vec<BoxPredicate<U>>,
}

impl<U> Default for OwnsOptions<U> {
    fn default() -> Self {
        OwnsOptions {
            match_every_owner: false,
            predicates: Vec::new(),
        }
    }
}

impl<U> fmt::Debug for OwnsOptions<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnsOptions")
            .field("match_every_owner", &self.match_every_owner)
            .field("predicates", &self.predicates.len())
            .finish()
    }
}

/// A controller whose name is unique among `names` (a manager's), or the process's.
fn new_controller<R: Reconciler>(
    names: Option<&crate::ControllerNames>,
    name: &str,
    reconciler: R,
    options: crate::ControllerOptions,
) -> Result<Controller, crate::Error> {
    match names {
        Some(names) => Controller::new_in(name, reconciler, options, names),
        None => Controller::new(name, reconciler, options),
    }
}
