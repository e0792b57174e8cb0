//! controllerutil against a real server: create-or-update idempotence, create-or-patch,
//! owner references.

use k8s_openapi::api::core::v1::{ConfigMap, Pod, PodStatus};
use rein_client::PostParams;
use rein_client::controllerutil::{
    OperationResult, add_finalizer, create_or_patch, create_or_update, set_controller_reference,
};
use rein_scheme::ObjectKey;
use std::sync::Arc;

use crate::support::{config_map, env, pod};

#[tokio::test]
async fn create_or_update_writes_only_on_change() {
    let (env, client) = env().await;
    let mut cm = config_map("default", "cm", &[]);
    let result = create_or_update(&client, &mut cm, |cm| {
        cm.data = Some([("k".to_string(), "v".to_string())].into());
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Created);
    assert!(cm.metadata.uid.is_some());

    env.clear_requests();
    let mut again = config_map("default", "cm", &[]);
    let result = create_or_update(&client, &mut again, |cm| {
        cm.data = Some([("k".to_string(), "v".to_string())].into());
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Unchanged);
    let writes: Vec<_> = env
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .collect();
    assert!(writes.is_empty(), "no write when unchanged: {writes:?}");

    let result = create_or_update(&client, &mut again, |cm| {
        cm.data = Some([("k".to_string(), "w".to_string())].into());
        add_finalizer(cm, "example.com/cleanup");
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Updated);
    let stored: Arc<ConfigMap> = client.get(&ObjectKey::new("default", "cm")).await.unwrap();
    assert_eq!(stored.data.as_ref().unwrap()["k"], "w");

    // Renaming inside mutate is refused.
    let err = create_or_update(&client, &mut again, |cm| {
        cm.metadata.name = Some("other".into());
    })
    .await
    .unwrap_err();
    assert!(
        matches!(err, rein_client::Error::InvalidInput { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn create_or_patch_separates_status() {
    let (env, client) = env().await;
    let mut p = pod("default", "p", &[]);
    assert_eq!(
        create_or_patch(&client, &mut p, |_| {}).await.unwrap(),
        OperationResult::Created
    );
    env.clear_requests();
    assert_eq!(
        create_or_patch(&client, &mut p, |_| {}).await.unwrap(),
        OperationResult::Unchanged
    );
    assert!(env.requests().iter().all(|r| r.method == "GET"));

    let set_phase = |p: &mut Pod, phase: &str| {
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        });
    };
    assert_eq!(
        create_or_patch(&client, &mut p, |p| set_phase(p, "Running"))
            .await
            .unwrap(),
        OperationResult::UpdatedStatusOnly
    );
    assert_eq!(
        create_or_patch(&client, &mut p, |p| {
            set_phase(p, "Succeeded");
            p.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
        })
        .await
        .unwrap(),
        OperationResult::UpdatedStatus
    );
    assert_eq!(
        create_or_patch(&client, &mut p, |p| {
            p.metadata.labels = Some([("a".to_string(), "c".to_string())].into());
        })
        .await
        .unwrap(),
        OperationResult::Updated
    );
    let stored: Arc<Pod> = client.get(&ObjectKey::new("default", "p")).await.unwrap();
    assert_eq!(
        stored.status.as_ref().unwrap().phase.as_deref(),
        Some("Succeeded")
    );
    assert_eq!(stored.metadata.labels.as_ref().unwrap()["a"], "c");
}

#[tokio::test]
async fn controller_reference_survives_a_round_trip() {
    let (_env, client) = env().await;
    let owner = client
        .create(&config_map("default", "owner", &[]), &PostParams::default())
        .await
        .unwrap();
    let mut owned = pod("default", "owned", &[]);
    set_controller_reference(&owner, &mut owned, client.scheme()).unwrap();
    let stored = client.create(&owned, &PostParams::default()).await.unwrap();
    let refs = stored.metadata.owner_references.unwrap();
    assert_eq!(refs[0].kind, "ConfigMap");
    assert_eq!(refs[0].api_version, "v1");
    assert_eq!(refs[0].uid, owner.metadata.uid.unwrap());
    assert_eq!(refs[0].controller, Some(true));
}

/// The fallible forms (controller-runtime's `MutateFn` returns an error): a failing mutate
/// writes nothing and its own error comes back; a client error converts into the caller's
/// error type.
#[tokio::test]
async fn try_create_or_update_returns_the_mutate_functions_error_and_writes_nothing() {
    use rein_client::controllerutil::{try_create_or_patch, try_create_or_update};

    #[derive(Debug)]
    enum OpError {
        Desired(String),
        Client(rein_client::Error),
    }
    impl From<rein_client::Error> for OpError {
        fn from(e: rein_client::Error) -> Self {
            OpError::Client(e)
        }
    }

    let (env, client) = env().await;
    env.clear_requests();
    let mut cm = config_map("default", "fallible", &[]);
    let err = try_create_or_update(&client, &mut cm, |_| {
        Err(OpError::Desired("no desired state yet".into()))
    })
    .await
    .unwrap_err();
    assert!(
        matches!(err, OpError::Desired(ref m) if m == "no desired state yet"),
        "{err:?}"
    );
    assert!(
        env.requests().iter().all(|r| r.method == "GET"),
        "nothing written: {:?}",
        env.requests()
    );

    let created = try_create_or_patch(&client, &mut cm, |cm| {
        cm.data = Some([("k".to_string(), "v".to_string())].into());
        Ok::<_, OpError>(())
    })
    .await
    .unwrap();
    assert_eq!(created, OperationResult::Created);

    let renamed = try_create_or_update(&client, &mut cm, |cm| {
        cm.metadata.name = Some("other".into());
        Ok::<_, OpError>(())
    })
    .await
    .unwrap_err();
    assert!(
        matches!(
            renamed,
            OpError::Client(rein_client::Error::InvalidInput { .. })
        ),
        "{renamed:?}"
    );
}
