//! A watch: one source bound to a handler and predicates, with the type erased so a controller
//! can hold watches of many kinds.

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::handler::BoxEventHandler;
use crate::predicate::BoxPredicate;
use crate::queue::RequestQueue;
use crate::reconcile::BoxError;
use crate::source::{EventSink, Source};

#[async_trait]
pub(crate) trait ErasedWatch: Send + Sync {
    async fn start(&self, queue: RequestQueue, stop: CancellationToken) -> Result<(), BoxError>;
    async fn wait_for_sync(&self, stop: CancellationToken) -> Result<(), BoxError>;
    fn describe(&self) -> String;
}

pub(crate) struct Watch<K> {
    pub(crate) source: Arc<dyn Source<K>>,
    pub(crate) handler: BoxEventHandler<K>,
    pub(crate) predicates: Vec<BoxPredicate<K>>,
}

#[async_trait]
impl<K: Send + Sync + 'static> ErasedWatch for Watch<K> {
    async fn start(&self, queue: RequestQueue, stop: CancellationToken) -> Result<(), BoxError> {
        let sink = EventSink::new(self.handler.clone(), self.predicates.clone(), queue);
        self.source.start(sink, stop).await
    }

    async fn wait_for_sync(&self, stop: CancellationToken) -> Result<(), BoxError> {
        self.source.wait_for_sync(stop).await
    }

    fn describe(&self) -> String {
        self.source.describe()
    }
}
