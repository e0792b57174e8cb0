//! `KubeconfigSecretProvider`: one member per labelled kubeconfig Secret in the hub.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Secret;
use parking_lot::Mutex;
use rein_client::cache::{ByObject, Cache, CacheOptions};
use rein_controller::handler::EnqueueRequestForObject;
use rein_controller::source::Kind;
use rein_controller::{
    Action, BoxError, Context, Controller, ControllerNames, ControllerOptions, Request, Runnable,
    reconciler_fn,
};
use rein_scheme::labels::Selector;
use tokio_util::sync::CancellationToken;

use super::{ClusterSink, Provider, ProviderContext, config_from_kubeconfig, fingerprint};
use crate::error::ProviderError;
use crate::name::ClusterName;

/// The label a kubeconfig Secret carries by default: `multicluster.rein.dev/kubeconfig=true`.
pub const DEFAULT_KUBECONFIG_LABEL: &str = "multicluster.rein.dev/kubeconfig";
/// The Secret data key holding the kubeconfig by default.
pub const DEFAULT_KUBECONFIG_KEY: &str = "kubeconfig";

/// One member cluster per kubeconfig Secret in one namespace of the hub, selected by label
/// (multicluster-runtime's `kubeconfig` provider): the cluster is named after the Secret, its
/// kubeconfig is the data under `key`. Creating or changing such a Secret engages its cluster,
/// deleting it (or removing the label) disengages it. A Secret without the key or with a
/// kubeconfig that does not parse is logged and its cluster left as it was.
#[derive(Debug, Clone)]
pub struct KubeconfigSecretProvider {
    namespace: String,
    selector: Selector,
    key: String,
}

impl KubeconfigSecretProvider {
    /// Secrets in `namespace` labelled `multicluster.rein.dev/kubeconfig=true`, key
    /// `kubeconfig`.
    pub fn new(namespace: impl Into<String>) -> Self {
        let selector = Selector::parse(&format!("{DEFAULT_KUBECONFIG_LABEL}=true"))
            .unwrap_or_else(|_| Selector::everything());
        KubeconfigSecretProvider {
            namespace: namespace.into(),
            selector,
            key: DEFAULT_KUBECONFIG_KEY.to_owned(),
        }
    }

    /// Selects the Secrets by `selector` instead.
    pub fn selector(mut self, selector: Selector) -> Self {
        self.selector = selector;
        self
    }

    /// Reads the kubeconfig from data key `key` instead.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = key.into();
        self
    }
}

#[async_trait]
impl Provider for KubeconfigSecretProvider {
    async fn run(
        &self,
        ctx: ProviderContext,
        clusters: ClusterSink,
        stop: CancellationToken,
    ) -> Result<(), ProviderError> {
        let cache = Cache::new(
            ctx.kube.clone(),
            CacheOptions::default()
                .namespace(self.namespace.clone())
                .by_object::<Secret>(ByObject {
                    label_selector: Some(self.selector.clone()),
                    ..ByObject::default()
                }),
        );
        let reported = Reported::new(clusters);
        let key = self.key.clone();
        let reconcile_cache = cache.clone();
        let reconciler = reconciler_fn(move |_ctx: Context, req: Request| {
            let (cache, reported, key) = (reconcile_cache.clone(), reported.clone(), key.clone());
            async move {
                let origin = format!("Secret {}", req.key);
                let name = match ClusterName::new(req.name()) {
                    Ok(name) => name,
                    Err(source) => {
                        let err = ProviderError::ClusterName { origin, source };
                        tracing::warn!(error = %err, "skipping kubeconfig Secret");
                        return Ok::<_, BoxError>(Action::done());
                    }
                };
                match cache.get::<Secret>(&req.key).await {
                    Ok(secret) => {
                        let data = secret.data.as_ref().and_then(|d| d.get(&key));
                        reported
                            .engage_from(name, &origin, data.map(|d| &d.0[..]), &key)
                            .await;
                    }
                    Err(err) if err.is_not_found() => reported.disengage(&name),
                    Err(err) => return Err(err.into()),
                }
                Ok(Action::done())
            }
        });
        let controller = hub_watch_controller("kubeconfig-secrets", reconciler)?;
        controller.watch(
            Kind::<Secret>::new(&cache),
            EnqueueRequestForObject,
            Vec::new(),
        );
        run_hub_watch(cache, controller, stop, "kubeconfig Secrets").await
    }

    fn describe(&self) -> String {
        format!(
            "kubeconfig Secrets in {} selected by {}",
            self.namespace, self.selector
        )
    }
}

/// A provider's private controller over the hub (its own scope of names).
pub(super) fn hub_watch_controller<R: rein_controller::Reconciler>(
    name: &str,
    reconciler: R,
) -> Result<Controller, ProviderError> {
    let options = ControllerOptions {
        need_leader_election: false,
        ..ControllerOptions::default()
    };
    Controller::new_in(name, reconciler, options, &ControllerNames::new()).map_err(|source| {
        ProviderError::Watch {
            what: name.to_owned(),
            source: source.into(),
        }
    })
}

/// Runs a provider's cache and controller until `stop`.
pub(super) async fn run_hub_watch(
    cache: Cache,
    controller: Controller,
    stop: CancellationToken,
    what: &str,
) -> Result<(), ProviderError> {
    let cache_stop = stop.child_token();
    let cache_task = {
        let (cache, cache_stop) = (cache.clone(), cache_stop.clone());
        tokio::spawn(async move { cache.start(cache_stop).await })
    };
    let result = controller.start(stop).await;
    cache_stop.cancel();
    let _ = cache_task.await;
    result.map_err(|source| ProviderError::Watch {
        what: what.to_owned(),
        source,
    })
}

/// What a provider has reported, so it reports a cluster again only when its kubeconfig
/// changed, and disengages only what it engaged.
#[derive(Clone)]
pub(super) struct Reported {
    sink: ClusterSink,
    known: Arc<Mutex<HashMap<ClusterName, u64>>>,
}

impl Reported {
    pub(super) fn new(sink: ClusterSink) -> Self {
        Reported {
            sink,
            known: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Engages `name` from the kubeconfig bytes `data` (`None`: the key is missing).
    pub(super) async fn engage_from(
        &self,
        name: ClusterName,
        origin: &str,
        data: Option<&[u8]>,
        key: &str,
    ) {
        let Some(bytes) = data else {
            let err = ProviderError::KubeconfigData {
                origin: origin.to_owned(),
                problem: format!("no data under key {key:?}"),
            };
            tracing::warn!(cluster = %name, error = %err, "ignoring kubeconfig");
            return;
        };
        let print = fingerprint(bytes);
        if self.known.lock().get(&name) == Some(&print) {
            return;
        }
        let parsed = match std::str::from_utf8(bytes) {
            Ok(text) => config_from_kubeconfig(origin, text).await,
            Err(err) => Err(ProviderError::KubeconfigData {
                origin: origin.to_owned(),
                problem: err.to_string(),
            }),
        };
        match parsed {
            Ok(config) => {
                self.known.lock().insert(name.clone(), print);
                self.sink.engage(name, config);
            }
            Err(err) => tracing::warn!(cluster = %name, error = %err, "ignoring kubeconfig"),
        }
    }

    /// Disengages `name` if it was engaged.
    pub(super) fn disengage(&self, name: &ClusterName) {
        if self.known.lock().remove(name).is_some() {
            self.sink.disengage(name.clone());
        }
    }
}
