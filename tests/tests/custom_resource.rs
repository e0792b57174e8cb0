//! A custom resource from `#[derive(CustomResource)]`, end to end against rein-testenv: the CRD
//! installed by the test environment's builder and by `rein::client::crd::install`, a manager
//! whose controller reconciles it (`for_`, `owns`, `watches`), reads it from the cache, writes
//! its status through the status subresource, and the server refusing a schema violation.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rein::client::controllerutil::set_controller_reference;
use rein::client::{Client, ListOptions, PostParams};
use rein::controller::handler::EnqueueRequestsFromMapFunc;
use rein::controller::{Action, Context, ControllerManagedBy, Reconciler, Request};
use rein::manager::{Manager, Options};
use rein::scheme::ObjectKey;
use rein::scheme::Scheme;
use rein::{CustomResource, CustomResourceExt, KubeSchema};
use rein_testenv::TestEnv;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// How long any one wait on the controller may take.
const WAIT: Duration = Duration::from_secs(30);

/// A Widget wants `replicas` (at most 10, a CEL rule) of its `tier` (default `standard`).
#[rein::resource]
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "e2e.rein.dev", version = "v1", kind = "Widget", namespaced)]
#[kube(status = "WidgetStatus", derive = "Default", derive = "PartialEq")]
#[kube(printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"}"#)]
#[serde(rename_all = "camelCase")]
struct WidgetSpec {
    #[x_kube(validation = Rule::new("self <= 10").message("replicas must be at most 10"))]
    replicas: i32,
    #[serde(default = "standard")]
    tier: String,
}

fn standard() -> String {
    "standard".into()
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WidgetStatus {
    ready_replicas: i32,
    config_map: String,
}

fn widget(name: &str, replicas: i32) -> Widget {
    let mut widget = Widget::new(
        name,
        WidgetSpec {
            replicas,
            tier: standard(),
        },
    );
    widget.metadata.namespace = Some("default".into());
    widget
}

/// Gives each Widget a ConfigMap it controls and reports it in the Widget's status.
struct WidgetReconciler {
    client: Client,
}

#[async_trait]
impl Reconciler for WidgetReconciler {
    type Error = rein::client::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Self::Error> {
        let widget = match self.client.get::<Widget>(&req.key).await {
            Ok(widget) => widget,
            Err(err) if err.is_not_found() => return Ok(Action::done()),
            Err(err) => return Err(err),
        };
        let name = format!("{}-config", req.key.name);
        let key = ObjectKey::new("default", &name);
        if rein::client::ignore_not_found(self.client.get::<ConfigMap>(&key).await)?.is_none() {
            let mut cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some("default".into()),
                    ..ObjectMeta::default()
                },
                data: Some(BTreeMap::from([(
                    "replicas".to_string(),
                    widget.spec.replicas.to_string(),
                )])),
                ..ConfigMap::default()
            };
            set_controller_reference(&*widget, &mut cm, self.client.scheme())?;
            rein::client::ignore_already_exists(
                self.client.create(&cm, &PostParams::default()).await,
            )?;
        }
        let want = WidgetStatus {
            ready_replicas: widget.spec.replicas,
            config_map: name,
        };
        if widget.status.as_ref() != Some(&want) {
            let mut widget = Arc::unwrap_or_clone(widget);
            widget.status = Some(want);
            self.client
                .status()
                .update(&widget, &PostParams::default())
                .await?;
        }
        Ok(Action::done())
    }
}

/// Counts the Widget events a second controller sees through `watches`.
struct Counter(Arc<AtomicUsize>);

#[async_trait]
impl Reconciler for Counter {
    type Error = std::convert::Infallible;

    async fn reconcile(&self, _ctx: Context, _req: Request) -> Result<Action, Self::Error> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(Action::done())
    }
}

/// Polls `check` until it answers `Some`, for at most [`WAIT`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    tokio::time::timeout(WAIT, async {
        loop {
            if let Some(value) = check().await {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out after {WAIT:?} waiting for {what}"))
}

/// Creates `widget`, which breaks the CRD's schema, and checks the server refuses it with 422
/// Invalid and `message`.
async fn expect_invalid(client: &Client, widget: &Widget, message: &str) {
    let err = client
        .create(widget, &PostParams::default())
        .await
        .expect_err("the server refuses an object that breaks the CRD's schema");
    assert!(err.is_invalid(), "{err:?}");
    assert!(format!("{err:?}").contains(message), "{err:?}");
}

#[tokio::test]
async fn derived_custom_resource_is_reconciled_with_status_and_validated() {
    let env = TestEnv::builder().crd(Widget::crd()).start().await.unwrap();

    let mut scheme = Scheme::with_builtins();
    scheme.register::<Widget>();
    let mgr = Manager::builder(env.config())
        .options(Options::default().scheme(Arc::new(scheme)))
        .build()
        .await
        .unwrap();
    ControllerManagedBy::new(&mgr)
        .for_::<Widget>()
        .owns::<ConfigMap>()
        .complete(WidgetReconciler {
            client: mgr.client(),
        })
        .unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    ControllerManagedBy::new(&mgr)
        .named("widget-watcher")
        .for_::<ConfigMap>()
        .watches::<Widget>(EnqueueRequestsFromMapFunc::new(|w: &Widget| {
            vec![Request::new(
                "default",
                format!("{}-config", w.metadata.name.as_deref().unwrap_or_default()),
            )]
        }))
        .complete(Counter(seen.clone()))
        .unwrap();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;

    // Create through the manager's client; the controller gives it a ConfigMap and a status.
    let client = mgr.client();
    client
        .create(&widget("demo", 3), &PostParams::default())
        .await
        .unwrap();
    let key = ObjectKey::new("default", "demo");
    let status = eventually("the Widget's status", || {
        let client = client.clone();
        let key = key.clone();
        async move { client.get::<Widget>(&key).await.ok()?.status.clone() }
    })
    .await;
    assert_eq!(
        status,
        WidgetStatus {
            ready_replicas: 3,
            config_map: "demo-config".into()
        }
    );
    let cm_key = ObjectKey::new("default", "demo-config");
    let cm: Arc<ConfigMap> = client.get(&cm_key).await.unwrap();
    let owner = &cm.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.api_version.as_str(),
            owner.controller
        ),
        ("Widget", "e2e.rein.dev/v1", Some(true))
    );
    eventually("the watches::<Widget> controller to reconcile", || {
        let seen = seen.clone();
        async move { (seen.load(Ordering::SeqCst) > 0).then_some(()) }
    })
    .await;

    // `owns`: a deleted ConfigMap comes back.
    let uid = cm.metadata.uid.clone();
    client
        .delete::<ConfigMap>(&cm_key, &Default::default())
        .await
        .unwrap();
    eventually("the ConfigMap to be re-created", || {
        let client = client.api_reader();
        let (cm_key, uid) = (cm_key.clone(), uid.clone());
        async move {
            let cm = client.get::<ConfigMap>(&cm_key).await.ok()?;
            (cm.metadata.uid != uid).then_some(())
        }
    })
    .await;

    // The status subresource: a spec update leaves the status alone, and the controller
    // brings the status up to the new spec.
    let mut stored: Widget = Arc::unwrap_or_clone(client.api_reader().get(&key).await.unwrap());
    stored.spec.replicas = 5;
    stored.status = Some(WidgetStatus::default());
    let updated = client
        .update(&stored, &PostParams::default())
        .await
        .unwrap();
    assert_eq!(
        updated.status.map(|s| s.config_map),
        Some("demo-config".into()),
        "an update of the main resource ignores .status"
    );
    eventually("the status to follow the spec", || {
        let client = client.clone();
        let key = key.clone();
        async move {
            let status = client.get::<Widget>(&key).await.ok()?.status.clone()?;
            (status.ready_replicas == 5).then_some(())
        }
    })
    .await;

    // The cache lists derived objects too.
    let list = client
        .list::<Widget>(&ListOptions::default().namespace("default"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);

    // A schema violation (the CEL rule on spec.replicas) is refused with 422 Invalid.
    expect_invalid(
        &client,
        &widget("too-big", 100),
        "replicas must be at most 10",
    )
    .await;

    stop.cancel();
    tokio::time::timeout(WAIT, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn crd_install_makes_a_derived_kind_served() {
    let env = TestEnv::start().await.unwrap();
    let client = Client::new(env.client());
    let crd = rein::client::crd::install(&client, &Widget::crd(), WAIT)
        .await
        .unwrap();
    assert_eq!(crd.metadata.name.as_deref(), Some("widgets.e2e.rein.dev"));
    let created = client
        .create(&widget("served", 1), &PostParams::default())
        .await
        .unwrap();
    assert_eq!(created.spec.tier, "standard");

    // The schema default is the server's: an object sent without `tier` is stored with it.
    let body = serde_json::json!({
        "apiVersion": "e2e.rein.dev/v1", "kind": "Widget",
        "metadata": {"name": "bare", "namespace": "default"},
        "spec": {"replicas": 2},
    });
    let stored = env
        .client()
        .request_text(
            http::Request::post("/apis/e2e.rein.dev/v1/namespaces/default/widgets")
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).unwrap())
                .unwrap(),
        )
        .await
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored["spec"]["tier"], "standard", "{stored}");
    // Installing again is idempotent.
    rein::client::crd::install(&client, &Widget::crd(), WAIT)
        .await
        .unwrap();
}
