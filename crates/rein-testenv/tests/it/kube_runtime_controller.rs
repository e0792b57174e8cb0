//! rein-testenv as the test server of a kube-rs operator: a kube-runtime `Controller` (not
//! rein's), written as a kube-rs user writes one, runs against the embedded server through
//! `TestEnv::client()` — a kube-client `Client` — with no cluster. It keeps a finalizer on
//! each ConfigMap (kube-runtime's finalizer helper), copies its data into a Secret it owns,
//! follows an edit, and when the ConfigMap is deleted runs its clean-up and lets the server's
//! garbage collector delete the Secret.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_client::{Client, Resource as _, ResourceExt as _};
use kube_runtime::controller::{Action, Controller};
use kube_runtime::finalizer::{Event, finalizer};
use kube_runtime::watcher;
use parking_lot::Mutex;
use rein_testenv::TestEnv;

const FINALIZER: &str = "copier.example.com/cleanup";

/// What the reconciler shares: the client and the clean-ups it ran.
struct Ctx {
    client: Client,
    cleaned: Mutex<Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
enum CopyError {
    #[error(transparent)]
    Kube(#[from] kube_client::Error),
    #[error(transparent)]
    Finalizer(#[from] Box<kube_runtime::finalizer::Error<kube_client::Error>>),
}

async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, CopyError> {
    let namespace = cm.namespace().unwrap_or_default();
    let maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    finalizer(&maps, FINALIZER, cm, |event| async {
        match event {
            Event::Apply(cm) => {
                let owner = cm.controller_owner_ref(&()).expect("a stored ConfigMap");
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(cm.name_any()),
                        owner_references: Some(vec![owner]),
                        ..ObjectMeta::default()
                    },
                    string_data: cm.data.clone(),
                    ..Secret::default()
                };
                Api::<Secret>::namespaced(ctx.client.clone(), &namespace)
                    .patch(
                        &cm.name_any(),
                        &PatchParams::apply("copier").force(),
                        &Patch::Apply(&secret),
                    )
                    .await?;
                Ok(Action::await_change())
            }
            Event::Cleanup(cm) => {
                ctx.cleaned.lock().push(cm.name_any());
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| CopyError::Finalizer(Box::new(e)))
}

fn error_policy(_cm: Arc<ConfigMap>, _error: &CopyError, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

/// Polls `check` until it holds (20 s at most).
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_kube_runtime_controller_reconciles_against_the_embedded_server() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        cleaned: Mutex::new(Vec::new()),
    });
    let controller = Controller::new(maps.clone(), watcher::Config::default())
        .owns(secrets.clone(), watcher::Config::default())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| async {});
    let running = tokio::spawn(controller);

    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), "v1".to_owned())])),
        ..ConfigMap::default()
    };
    maps.create(&PostParams::default(), &cm)
        .await
        .expect("creates");
    let value = |secret: &Secret| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
    };
    until("the Secret is written", || async {
        secrets
            .get_opt("settings")
            .await
            .unwrap()
            .is_some_and(|s| value(&s).as_deref() == Some("v1"))
    })
    .await;
    let stored = maps.get("settings").await.unwrap();
    assert_eq!(stored.metadata.finalizers, Some(vec![FINALIZER.to_owned()]));

    // An edit is followed.
    maps.patch(
        "settings",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"k": "v2"}})),
    )
    .await
    .unwrap();
    until("the Secret follows the edit", || async {
        secrets
            .get_opt("settings")
            .await
            .unwrap()
            .is_some_and(|s| value(&s).as_deref() == Some("v2"))
    })
    .await;

    // Deleted: the clean-up runs, the finalizer goes, the garbage collector takes the Secret.
    maps.delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    until("the ConfigMap and its Secret are gone", || async {
        maps.get_opt("settings").await.unwrap().is_none()
            && secrets.get_opt("settings").await.unwrap().is_none()
    })
    .await;
    // kube-runtime's clean-up runs at least once: a reconcile that still sees the deleted
    // ConfigMap with its finalizer (its cache behind the finalizer's removal) runs it again,
    // which is why kube-rs asks clean-ups to be idempotent.
    let cleaned = ctx.cleaned.lock().clone();
    assert!(
        !cleaned.is_empty() && cleaned.iter().all(|name| name == "settings"),
        "{cleaned:?}"
    );
    running.abort();
    env.shutdown().await;
}
