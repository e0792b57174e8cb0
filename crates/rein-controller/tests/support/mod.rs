//! Test support: a small controller host over rein-testenv, built from rein-client's Cache and
//! Client (the manager lives above this crate), and condition waits.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rein_client::Client;
use rein_client::cache::{Cache, CacheOptions};
use rein_controller::{BoxError, ControllerHost, Runnable};
use rein_scheme::Scheme;
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

/// A minimal host: a shared cache and client over a test API server; `run` starts the cache
/// and every added runnable.
pub(crate) struct TestHost {
    pub(crate) env: TestEnv,
    cache: Cache,
    client: Client,
    scheme: Arc<Scheme>,
    runnables: Mutex<Vec<Arc<dyn Runnable>>>,
    pub(crate) stop: CancellationToken,
}

impl TestHost {
    pub(crate) async fn start() -> TestHost {
        let env = TestEnv::start().await.expect("test API server starts");
        let kube = env.client();
        let scheme = Arc::new(Scheme::with_builtins());
        let cache = Cache::new(kube.clone(), CacheOptions::default());
        let client = Client::builder(kube)
            .scheme(scheme.clone())
            .cache(cache.clone())
            .build();
        TestHost {
            env,
            cache,
            client,
            scheme,
            runnables: Mutex::new(Vec::new()),
            stop: CancellationToken::new(),
        }
    }

    /// Starts the cache and every runnable added so far; returns their join handles.
    pub(crate) fn run(&self) -> Vec<tokio::task::JoinHandle<Result<(), BoxError>>> {
        let mut handles = Vec::new();
        let cache = self.cache.clone();
        let stop = self.stop.clone();
        handles.push(tokio::spawn(async move {
            cache.start(stop).await.map_err(BoxError::from)
        }));
        for r in self.runnables.lock().iter() {
            let r = r.clone();
            let stop = self.stop.clone();
            handles.push(tokio::spawn(async move { r.start(stop).await }));
        }
        handles
    }

    pub(crate) fn kube(&self) -> kube_client::Client {
        self.env.client()
    }
}

impl ControllerHost for TestHost {
    fn cache(&self) -> Cache {
        self.cache.clone()
    }
    fn client(&self) -> Client {
        self.client.clone()
    }
    fn scheme(&self) -> Arc<Scheme> {
        self.scheme.clone()
    }
    fn add(&self, runnable: Arc<dyn Runnable>) -> Result<(), BoxError> {
        self.runnables.lock().push(runnable);
        Ok(())
    }
}

/// Waits (polling) until `cond` holds; panics after a generous timeout.
pub(crate) async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "timed out waiting for {what}");
}
