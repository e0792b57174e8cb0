//! Shared helpers: embedded clusters, the fleet options tests use, a ConfigMap propagation
//! controller, and waiting on a condition with a deadline.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use rein_client::{Client, PostParams};
use rein_controller::{Action, BoxError, Request};
use rein_manager::{CancellationToken, Manager};
use rein_multicluster::{
    ClusterContext, ClusterOptions, ClusterReconciler, ClusterRequest, Fleet,
    FleetControllerBuilder, FleetOptions, MapToClusters, On,
};
use rein_scheme::ObjectKey;
use rein_testenv::TestEnv;

/// The label that asks for a hub ConfigMap to be copied into every member.
pub(crate) const PROPAGATE: &str = "fleet.rein.dev/propagate";
/// The label on every copy.
pub(crate) const COPIED: &str = "fleet.rein.dev/copied-from-hub";
/// How long any condition may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(20);

/// Fleet options with short timeouts, so a partitioned member is noticed in well under a
/// second and its requests fail fast.
pub(crate) fn quick_options() -> FleetOptions {
    FleetOptions {
        cluster: ClusterOptions {
            request_timeouts: rein_client::timeout::RequestTimeouts {
                request: Some(Duration::from_millis(800)),
                ..Default::default()
            },
            health_interval: Duration::from_millis(100),
            health_timeout: Duration::from_millis(300),
            ..ClusterOptions::default()
        },
        disengage_timeout: Duration::from_secs(5),
        restart_backoff: Duration::from_millis(200),
        sharding: None,
    }
}

/// Waits until `check` holds, polling every 20 ms; panics with `what` after [`DEADLINE`].
pub(crate) async fn wait_for<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A hub manager, started on its own task; cancel the token to stop it.
pub(crate) struct Hub {
    pub(crate) env: TestEnv,
    pub(crate) mgr: Manager,
    pub(crate) stop: CancellationToken,
    run: Option<tokio::task::JoinHandle<Result<(), rein_manager::Error>>>,
}

impl Hub {
    pub(crate) async fn new() -> Hub {
        let env = TestEnv::start().await.expect("hub");
        let mgr = Manager::builder(env.config())
            .build()
            .await
            .expect("manager");
        Hub::from_parts(env, mgr)
    }

    pub(crate) fn from_parts(env: TestEnv, mgr: Manager) -> Hub {
        Hub {
            env,
            mgr,
            stop: CancellationToken::new(),
            run: None,
        }
    }

    pub(crate) fn start(&mut self) {
        let (mgr, stop) = (self.mgr.clone(), self.stop.clone());
        self.run = Some(tokio::spawn(async move { mgr.start(stop).await }));
    }

    pub(crate) async fn stop(mut self) {
        self.stop.cancel();
        if let Some(run) = self.run.take() {
            run.await.expect("join").expect("manager stopped cleanly");
        }
    }
}

/// A ConfigMap in `default`, with `data` and `labels`.
pub(crate) fn config_map(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.namespace = Some("default".to_owned());
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    cm.metadata.labels = (!labels.is_empty()).then_some(labels);
    cm.data = Some(
        data.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    cm
}

/// The `value` key of ConfigMap `default/name` in the cluster `client` talks to.
pub(crate) async fn value_of(client: &Client, name: &str) -> Option<String> {
    let cm = client
        .get::<ConfigMap>(&ObjectKey::new("default", name))
        .await
        .ok()?;
    cm.data.as_ref()?.get("value").cloned()
}

/// Copies hub ConfigMaps labelled [`PROPAGATE`] into every member; deletes copies whose
/// source is gone.
#[derive(Debug)]
pub(crate) struct Propagate;

#[async_trait::async_trait]
impl ClusterReconciler for Propagate {
    type Error = BoxError;

    async fn reconcile(
        &self,
        ctx: ClusterContext,
        req: ClusterRequest,
    ) -> Result<Action, BoxError> {
        let source = match ctx.hub_client().get::<ConfigMap>(&req.key).await {
            Ok(cm) if is_labelled(&cm, PROPAGATE) => Some(cm),
            Ok(_) => None,
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        let copy = match ctx.client().get::<ConfigMap>(&req.key).await {
            Ok(cm) => Some(cm),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        match (source, copy) {
            (None, Some(copy)) if is_labelled(&copy, COPIED) => {
                rein_client::ignore_not_found(
                    ctx.client()
                        .delete::<ConfigMap>(&req.key, &Default::default())
                        .await,
                )?;
            }
            (None, _) => {}
            (Some(source), None) => {
                let mut cm = config_map(req.name(), &[(COPIED, "true")], &[]);
                cm.metadata.namespace = req.namespace().map(str::to_owned);
                cm.data = source.data.clone();
                rein_client::ignore_already_exists(
                    ctx.client().create(&cm, &PostParams::default()).await,
                )?;
            }
            (Some(source), Some(copy)) if copy.data != source.data => {
                let mut cm = std::sync::Arc::unwrap_or_clone(copy);
                cm.data = source.data.clone();
                ctx.client().update(&cm, &PostParams::default()).await?;
            }
            (Some(_), Some(_)) => {}
        }
        Ok(Action::done())
    }
}

fn is_labelled(cm: &ConfigMap, label: &str) -> bool {
    cm.metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.get(label).map(String::as_str) == Some("true"))
}

/// Adds the propagation controller to `fleet`: member copies (drift is repaired) and hub
/// sources fanned out to every member.
pub(crate) fn add_propagation(fleet: &Fleet) {
    FleetControllerBuilder::new(fleet)
        .named("propagate")
        .for_::<ConfigMap>(
            On::members().with_predicate(rein_controller::predicate::filter(|cm: &ConfigMap| {
                is_labelled(cm, COPIED)
            })),
        )
        .watches_across::<ConfigMap>(
            On::hub().with_predicate(rein_controller::predicate::filter(|cm: &ConfigMap| {
                is_labelled(cm, PROPAGATE)
            })),
            MapToClusters::to_every_member(|cm: &ConfigMap| vec![Request::from_object(cm)]),
        )
        .complete(Propagate)
        .expect("controller");
}
