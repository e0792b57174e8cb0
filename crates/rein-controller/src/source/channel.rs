//! `Channel`: generic events from a tokio channel, fanned out to every controller watching it.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{EventSink, Source};
use crate::event::GenericEvent;
use crate::reconcile::BoxError;

/// Default size of each destination's buffer.
pub const DEFAULT_BUFFER_SIZE: usize = 1024;

/// A source of generic events read from a channel (controller-runtime's `source.Channel`).
///
/// One distribution task reads the channel and sends each event to every destination started
/// from this source (each controller watching it), waiting when a destination's buffer is full.
/// A closed channel or a cancelled stop ends the distribution.
pub struct Channel<K> {
    shared: Arc<Shared<K>>,
    buffer_size: usize,
}

struct Shared<K> {
    source: Mutex<Option<mpsc::Receiver<GenericEvent<K>>>>,
    destinations: Mutex<Vec<mpsc::Sender<GenericEvent<K>>>>,
}

impl<K> fmt::Debug for Channel<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("buffer_size", &self.buffer_size)
            .finish_non_exhaustive()
    }
}

impl<K> Clone for Channel<K> {
    fn clone(&self) -> Self {
        Channel {
            shared: self.shared.clone(),
            buffer_size: self.buffer_size,
        }
    }
}

impl<K: Send + Sync + 'static> Channel<K> {
    /// A source reading `source`.
    pub fn new(source: mpsc::Receiver<GenericEvent<K>>) -> Self {
        Channel {
            shared: Arc::new(Shared {
                source: Mutex::new(Some(source)),
                destinations: Mutex::new(Vec::new()),
            }),
            buffer_size: DEFAULT_BUFFER_SIZE,
        }
    }

    /// Sets the buffer size of destinations started afterwards (minimum 1).
    pub fn buffer_size(mut self, size: usize) -> Self {
        self.buffer_size = size.max(1);
        self
    }
}

#[async_trait]
impl<K: Send + Sync + 'static> Source<K> for Channel<K> {
    async fn start(&self, sink: EventSink<K>, stop: CancellationToken) -> Result<(), BoxError> {
        let (tx, mut rx) = mpsc::channel::<GenericEvent<K>>(self.buffer_size);
        self.shared.destinations.lock().push(tx);
        let consumer_stop = stop.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = consumer_stop.cancelled() => return,
                    event = rx.recv() => match event {
                        Some(event) => sink.generic(&event),
                        None => return,
                    },
                }
            }
        });
        let Some(mut source) = self.shared.source.lock().take() else {
            return Ok(());
        };
        let shared = self.shared.clone();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    _ = stop.cancelled() => break,
                    event = source.recv() => match event {
                        Some(event) => event,
                        None => break,
                    },
                };
                let destinations = shared.destinations.lock().clone();
                for dest in destinations {
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = dest.send(event.clone()) => {}
                    }
                }
            }
            shared.destinations.lock().clear();
        });
        Ok(())
    }

    fn describe(&self) -> String {
        format!("channel source (buffer {})", self.buffer_size)
    }
}
