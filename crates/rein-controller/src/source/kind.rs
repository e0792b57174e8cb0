//! `Kind` and `Informer` sources: events from a shared informer, through an adapter handler.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use kube_client::Resource;
use rein_informer::{
    DeletedObject, HandlerRegistration, HasSynced, ResourceEventHandler, SharedIndexInformer,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{EventSink, Source};
use crate::event::{CreateEvent, DeleteEvent, UpdateEvent};
use crate::reconcile::BoxError;

/// How often `Kind` retries getting its informer (e.g. while a CRD is not yet installed).
pub const INFORMER_RETRY_INTERVAL: Duration = Duration::from_secs(10);

type InformerGetter<K> = Arc<
    dyn Fn() -> BoxFuture<'static, Result<Arc<SharedIndexInformer<K>>, BoxError>> + Send + Sync,
>;

/// Events for every object of type `K` in a cache (controller-runtime's `source.Kind`).
///
/// `start` returns at once; in the background it asks the cache for the shared informer of `K`
/// (retrying every 10 s, e.g. until a CRD is installed), registers an adapter handler, and
/// `wait_for_sync` waits for the informer's sync and for every initial add to reach the queue.
pub struct Kind<K> {
    getter: InformerGetter<K>,
    registered: watch::Sender<Option<RegistrationState>>,
    _k: PhantomData<fn() -> K>,
}

#[derive(Clone)]
struct RegistrationState {
    registration: HandlerRegistration,
    informer: Arc<dyn HasSynced>,
}

impl HasSynced for RegistrationState {
    fn has_synced(&self) -> bool {
        self.informer.has_synced() && self.registration.has_synced()
    }

    /// Wakes on the informer's and the registration's sync signals (no polling).
    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.informer.wait_synced().await;
            self.registration.wait_synced().await;
        })
    }
}

impl<K> fmt::Debug for Kind<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kind")
            .field("type", &std::any::type_name::<K>())
            .finish_non_exhaustive()
    }
}

impl<K: rein_scheme::Object> Kind<K> {
    /// A source for `K`'s shared informer in `cache` (started by the cache's owner).
    pub fn new(cache: &rein_client::cache::Cache) -> Self {
        let cache = cache.clone();
        Kind::from_getter(move || {
            let cache = cache.clone();
            async move { informer_from_cache::<K>(&cache).await }
        })
    }
}

impl Kind<rein_client::DynamicObject> {
    /// A source for the shared informer of a kind known only at run time (a `DynamicObject`
    /// kind, e.g. a CRD without a Rust type), by its REST mapping
    /// ([`Client::rest_mapping`](rein_client::Client::rest_mapping)).
    pub fn dynamic(cache: &rein_client::cache::Cache, mapping: &rein_scheme::RestMapping) -> Self {
        let (cache, mapping) = (cache.clone(), mapping.clone());
        Kind::from_getter(move || {
            let (cache, mapping) = (cache.clone(), mapping.clone());
            async move { Ok(cache.dynamic_informer_for(&mapping).await?) }
        })
    }
}

/// Asks the cache for `K`'s shared informer.
async fn informer_from_cache<K: rein_scheme::Object>(
    cache: &rein_client::cache::Cache,
) -> Result<Arc<SharedIndexInformer<K>>, BoxError> {
    Ok(cache.informer_for::<K>().await?)
}

impl<K> Kind<K>
where
    K: Resource + Clone + Send + Sync + fmt::Debug + 'static,
{
    /// A source for the informer `get` returns (retried until it succeeds).
    pub fn from_getter<F, Fut>(get: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Arc<SharedIndexInformer<K>>, BoxError>> + Send + 'static,
    {
        let getter: InformerGetter<K> = Arc::new(move || Box::pin(get()));
        Kind {
            getter,
            registered: watch::channel(None).0,
            _k: PhantomData,
        }
    }
}

#[async_trait]
impl<K> Source<K> for Kind<K>
where
    K: Resource + Clone + Send + Sync + fmt::Debug + 'static,
{
    async fn start(&self, sink: EventSink<K>, stop: CancellationToken) -> Result<(), BoxError> {
        let getter = self.getter.clone();
        let registered = self.registered.clone();
        let describe = self.describe();
        tokio::spawn(async move {
            let informer = loop {
                match getter().await {
                    Ok(informer) => break informer,
                    Err(err) => {
                        tracing::error!(source = %describe, error = %err, "getting the informer failed; if the kind is a CRD, install it before starting the controller");
                    }
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(INFORMER_RETRY_INTERVAL) => {}
                }
            };
            match register(&informer, sink, stop.clone()) {
                Ok(state) => {
                    registered.send_replace(Some(state));
                }
                Err(err) => {
                    tracing::error!(source = %describe, error = %err, "registering the event handler failed");
                }
            }
        });
        Ok(())
    }

    async fn wait_for_sync(&self, stop: CancellationToken) -> Result<(), BoxError> {
        let mut rx = self.registered.subscribe();
        let state = tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            state = rx.wait_for(Option::is_some) => match state {
                Ok(state) => state.clone(),
                Err(_) => return Ok(()),
            },
        };
        if let Some(state) = state {
            rein_informer::wait_for_cache_sync(&stop, &[&state]).await;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("kind source: {}", std::any::type_name::<K>())
    }
}

/// Events from an informer the caller already has (controller-runtime's `source.Informer`).
pub struct Informer<K> {
    kind: Kind<K>,
}

impl<K> fmt::Debug for Informer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Informer")
            .field("type", &std::any::type_name::<K>())
            .finish()
    }
}

impl<K> Informer<K>
where
    K: Resource + Clone + Send + Sync + fmt::Debug + 'static,
{
    /// A source for `informer` (which the caller runs).
    pub fn new(informer: Arc<SharedIndexInformer<K>>) -> Self {
        Informer {
            kind: Kind::from_getter(move || {
                let informer = informer.clone();
                async move { Ok(informer) }
            }),
        }
    }
}

#[async_trait]
impl<K> Source<K> for Informer<K>
where
    K: Resource + Clone + Send + Sync + fmt::Debug + 'static,
{
    async fn start(&self, sink: EventSink<K>, stop: CancellationToken) -> Result<(), BoxError> {
        self.kind.start(sink, stop).await
    }

    async fn wait_for_sync(&self, stop: CancellationToken) -> Result<(), BoxError> {
        self.kind.wait_for_sync(stop).await
    }

    fn describe(&self) -> String {
        format!("informer source: {}", std::any::type_name::<K>())
    }
}

/// Registers the adapter on `informer`; unregisters it when `stop` is cancelled.
fn register<K>(
    informer: &Arc<SharedIndexInformer<K>>,
    sink: EventSink<K>,
    stop: CancellationToken,
) -> Result<RegistrationState, BoxError>
where
    K: Resource + Clone + Send + Sync + fmt::Debug + 'static,
{
    let registration = informer.add_event_handler(Adapter { sink })?;
    let remove = (informer.clone(), registration.clone());
    tokio::spawn(async move {
        stop.cancelled().await;
        remove.0.remove_event_handler(&remove.1);
    });
    Ok(RegistrationState {
        registration,
        informer: informer.clone(),
    })
}

/// Turns informer notifications into events for a sink.
struct Adapter<K> {
    sink: EventSink<K>,
}

impl<K: Send + Sync + 'static> ResourceEventHandler<K> for Adapter<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        self.sink.create(&CreateEvent {
            object: obj.clone(),
            is_in_initial_list,
        });
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        self.sink.update(&UpdateEvent {
            object_old: old.clone(),
            object_new: new.clone(),
        });
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        let (object, delete_state_unknown) = match obj {
            DeletedObject::Object(o) => (o.clone(), false),
            DeletedObject::Tombstone { obj, .. } => (obj.clone(), true),
        };
        self.sink.delete(&DeleteEvent {
            object,
            delete_state_unknown,
        });
    }
}
