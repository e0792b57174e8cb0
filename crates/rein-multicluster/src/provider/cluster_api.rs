//! `ClusterApiProvider`: one member per provisioned Cluster API `Cluster`, through its
//! `<name>-kubeconfig` Secret.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Secret;
use rein_client::DynamicObject;
use rein_client::cache::{ByObject, Cache, CacheOptions};
use rein_controller::handler::{EnqueueRequestForObject, EnqueueRequestsFromMapFunc};
use rein_controller::source::Kind;
use rein_controller::{Action, BoxError, Context, Request, reconciler_fn};
use rein_scheme::labels::Selector;
use rein_scheme::{GroupVersionKind, GroupVersionResource, ObjectKey, RestMapping, Scope};
use tokio_util::sync::CancellationToken;

use super::secrets::{Reported, hub_watch_controller, run_hub_watch};
use super::{ClusterSink, Provider, ProviderContext};
use crate::error::ProviderError;
use crate::name::ClusterName;

/// The data key of a Cluster API kubeconfig Secret.
pub const CLUSTER_API_KUBECONFIG_KEY: &str = "value";
/// The label Cluster API puts on a cluster's Secrets.
const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// One member cluster per Cluster API `Cluster` (`cluster.x-k8s.io/v1beta1`) in the hub
/// (multicluster-runtime's `cluster-api` provider): a Cluster whose `status.phase` is
/// `Provisioned` and that is not being deleted is engaged with the kubeconfig in its Secret
/// `<name>-kubeconfig` (key `value`, in the Cluster's namespace); the member is named
/// `<namespace>/<name>`. A Cluster deleted, being deleted or no longer provisioned, or whose
/// Secret is gone, is disengaged. The CRD must be installed in the hub (until it is, the
/// provider waits, retrying).
#[derive(Debug, Clone, Default)]
pub struct ClusterApiProvider {
    namespace: Option<String>,
}

impl ClusterApiProvider {
    /// Clusters in every namespace.
    pub fn new() -> Self {
        ClusterApiProvider::default()
    }

    /// Only the Clusters (and Secrets) in `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// The REST mapping of `cluster.x-k8s.io/v1beta1` `Cluster`.
    pub fn cluster_mapping() -> RestMapping {
        RestMapping {
            gvk: GroupVersionKind::new("cluster.x-k8s.io", "v1beta1", "Cluster"),
            gvr: GroupVersionResource::new("cluster.x-k8s.io", "v1beta1", "clusters"),
            scope: Scope::Namespaced,
        }
    }
}

/// Whether a Cluster object is ready to be engaged.
fn provisioned(cluster: &DynamicObject) -> bool {
    cluster.metadata.deletion_timestamp.is_none()
        && cluster
            .data
            .pointer("/status/phase")
            .and_then(|p| p.as_str())
            == Some("Provisioned")
}

#[async_trait]
impl Provider for ClusterApiProvider {
    async fn run(
        &self,
        ctx: ProviderContext,
        clusters: ClusterSink,
        stop: CancellationToken,
    ) -> Result<(), ProviderError> {
        let mut options = CacheOptions::default();
        if let Some(ns) = &self.namespace {
            options = options.namespace(ns.clone());
        }
        let selector =
            Selector::parse(CLUSTER_NAME_LABEL).unwrap_or_else(|_| Selector::everything());
        let options = options.by_object::<Secret>(ByObject {
            label_selector: Some(selector),
            ..ByObject::default()
        });
        let cache = Cache::new(ctx.kube.clone(), options);
        let mapping = Self::cluster_mapping();
        let reported = Reported::new(clusters);
        let (reconcile_cache, reconcile_mapping) = (cache.clone(), mapping.clone());
        let reconciler = reconciler_fn(move |_ctx: Context, req: Request| {
            let (cache, mapping, reported) = (
                reconcile_cache.clone(),
                reconcile_mapping.clone(),
                reported.clone(),
            );
            async move {
                let origin = format!("Cluster {}", req.key);
                let name = match ClusterName::new(req.key.to_string()) {
                    Ok(name) => name,
                    Err(source) => {
                        let err = ProviderError::ClusterName { origin, source };
                        tracing::warn!(error = %err, "skipping Cluster API cluster");
                        return Ok::<_, BoxError>(Action::done());
                    }
                };
                let informer = cache.dynamic_informer_for(&mapping).await?;
                let cluster = informer.indexer().get_by_key(&req.key.to_string());
                if !cluster.as_deref().is_some_and(provisioned) {
                    reported.disengage(&name);
                    return Ok(Action::done());
                }
                let secret_key = ObjectKey::new(
                    req.namespace().unwrap_or_default(),
                    format!("{}-kubeconfig", req.name()),
                );
                match cache.get::<Secret>(&secret_key).await {
                    Ok(secret) => {
                        let data = secret
                            .data
                            .as_ref()
                            .and_then(|d| d.get(CLUSTER_API_KUBECONFIG_KEY));
                        let origin = format!("Secret {secret_key}");
                        reported
                            .engage_from(
                                name,
                                &origin,
                                data.map(|d| &d.0[..]),
                                CLUSTER_API_KUBECONFIG_KEY,
                            )
                            .await;
                    }
                    Err(err) if err.is_not_found() => reported.disengage(&name),
                    Err(err) => return Err(err.into()),
                }
                Ok(Action::done())
            }
        });
        let controller = hub_watch_controller("cluster-api-clusters", reconciler)?;
        controller.watch(
            Kind::dynamic(&cache, &mapping),
            EnqueueRequestForObject,
            Vec::new(),
        );
        // A kubeconfig Secret wakes the Cluster its label names.
        controller.watch(
            Kind::<Secret>::new(&cache),
            EnqueueRequestsFromMapFunc::new(|secret: &Secret| {
                let cluster = secret
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(CLUSTER_NAME_LABEL));
                match (cluster, &secret.metadata.namespace) {
                    (Some(cluster), Some(ns)) => vec![Request::new(ns.clone(), cluster.clone())],
                    _ => Vec::new(),
                }
            }),
            Vec::new(),
        );
        run_hub_watch(cache, controller, stop, "Cluster API clusters").await
    }

    fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("Cluster API clusters in {ns}"),
            None => "Cluster API clusters".to_owned(),
        }
    }
}
