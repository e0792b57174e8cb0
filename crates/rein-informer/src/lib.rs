//! client-go's `tools/cache` for Rust: reflector, RealFIFO and DeltaFIFO, indexers, shared
//! informers, listers.
//!
//! `rein-informer` sits above `rein-scheme` (keys, selectors) and `kube-client` (HTTP), and
//! below `rein-client` (whose cache reads through a [`SharedInformerFactory`]) and
//! `rein-controller` (whose `Kind` source registers [`ResourceEventHandler`]s). Data flows one
//! way:
//!
//! ```text
//! ListerWatcher ─► Reflector ─► Fifo (RealFifo | DeltaFifo) ─► process loop ─► Indexer
//!                                                                     └─► listener × N ─► handlers
//! ```
//!
//! Objects are held once, as `Arc<K>`: the queue and the cache share them, and reads never
//! deep-copy.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube_client::core::ObjectMeta;
//! use rein_informer::{Indexer, Lister, NAMESPACE_INDEX};
//! use rein_scheme::labels::Selector;
//!
//! let cache: Indexer<ConfigMap> = Indexer::new();
//! cache.add(Arc::new(ConfigMap {
//!     metadata: ObjectMeta { namespace: Some("default".into()), name: Some("cfg".into()), ..Default::default() },
//!     ..Default::default()
//! }));
//! assert_eq!(cache.by_index(NAMESPACE_INDEX, "default").unwrap().len(), 1);
//! let lister = Lister::new(cache);
//! assert!(lister.get("default", "cfg").is_some());
//! assert_eq!(lister.namespaced("default").list(&Selector::everything()).len(), 1);
//! ```

mod controller;
mod decode;
mod delta;
mod error;
mod factory;
mod fifo;
mod handler;
mod informer;
mod key;
mod lister;
mod lister_watcher;
mod reflector;
mod room;
mod store;
#[cfg(test)]
mod testutil;
mod transform;
mod wait;

pub use controller::{InformerController, InformerControllerConfig, ProcessDeltasFn};
pub use decode::WithoutManagedFields;
pub use delta::{DeletedObject, Delta, DeltaObject, DeltaType};
pub use error::Error;
pub use factory::{InformerSpec, MetaTransform, SharedInformerFactory, TweakListOptions};
pub use fifo::{
    DEFAULT_REAL_FIFO_CAPACITY, DeltaFifo, DeltaFifoOptions, Fifo, ProcessFn, QueueClosed,
    RealFifo, RealFifoOptions, Requeue,
};
pub use handler::{ResourceEventHandler, ResourceEventHandlerFuncs};
pub use informer::{
    HandlerRegistration, InformerOptions, InformerStatus, QueueKind, SharedIndexInformer,
};
pub use key::{deletion_handling_key, meta_namespace_key, split_meta_namespace_key};
pub use lister::{Lister, NamespacedLister};
pub use lister_watcher::{
    ApiListerWatcher, ListPage, ListWatchOptions, ListerWatcher, WatchStream,
};
pub use reflector::{
    BackoffOptions, Reflector, ReflectorHandle, ReflectorOptions, ReflectorPhase, ReflectorStatus,
    ShouldResyncFn, TransformFn, WatchErrorHandler,
};
pub use store::{
    CompactOptions, IndexFunc, Indexer, Indexers, KeyFunc, NAMESPACE_INDEX, StoreKind,
    namespace_index_func,
};
pub use transform::{drop_managed_fields, strip_managed_fields};
pub use wait::{HasSynced, SYNC_POLL_INTERVAL, SyncedSignal, wait_for_cache_sync};
