//! Each API failure maps to its typed error, with the server's Status kept.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use rein_client::{Client, Error, PostParams, StatusReason};
use rein_scheme::GroupVersionKind;
use rein_scheme::ObjectKey;
use rein_testenv::{Fault, TestEnv};

use crate::support::{config_map, env, pod};

#[tokio::test]
async fn not_found_already_exists_conflict() {
    let (_env, client) = env().await;
    let key = ObjectKey::new("default", "cm");
    let err = client.get::<ConfigMap>(&key).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert_eq!(err.status().unwrap().code, 404);
    assert!(err.to_string().contains("default/cm"), "{err}");
    assert_eq!(
        rein_client::ignore_not_found(client.get::<ConfigMap>(&key).await).unwrap(),
        None
    );

    let cm = config_map("default", "cm", &[]);
    let first = client.create(&cm, &PostParams::default()).await.unwrap();
    let err = client
        .create(&cm, &PostParams::default())
        .await
        .unwrap_err();
    assert!(err.is_already_exists(), "{err}");
    assert_eq!(err.reason(), Some(StatusReason::AlreadyExists));

    // Optimistic concurrency: the second writer with the old resourceVersion loses.
    let mut a = first.clone();
    a.data = Some([("w".to_string(), "a".to_string())].into());
    client.update(&a, &PostParams::default()).await.unwrap();
    let mut b = first;
    b.data = Some([("w".to_string(), "b".to_string())].into());
    let err = client.update(&b, &PostParams::default()).await.unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(err.status().unwrap().code, 409);
}

#[tokio::test]
async fn invalid_objects() {
    let (_env, client) = env().await;
    let err = client
        .create(
            &config_map("default", "Not_A_Valid_Name", &[]),
            &PostParams::default(),
        )
        .await
        .unwrap_err();
    assert!(err.is_invalid(), "{err}");
    assert_eq!(err.status().unwrap().code, 422);
}

#[tokio::test]
async fn injected_server_errors_and_throttling() {
    let (env, client) = env().await;
    let key = ObjectKey::new("default", "p");
    env.faults()
        .inject(Fault::server_error(1).matching("/api/v1/namespaces/default/pods"));
    let err = client.get::<Pod>(&key).await.unwrap_err();
    assert!(err.is_server_error(), "{err}");
    assert!(err.status().unwrap().code >= 500);

    // kube-client retries 429s by default; without its retry layer the 429 reaches us.
    let mut config = env.config();
    config.default_retry = false;
    let no_retry = Client::new(kube_client::Client::try_from(config).unwrap());
    env.faults()
        .inject(Fault::too_many_requests(1, 7).matching("/api/v1/namespaces/default/pods"));
    let err = no_retry.get::<Pod>(&key).await.unwrap_err();
    assert!(err.is_too_many_requests(), "{err}");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));

    // The faults were used up: the next call reaches the store.
    client
        .create(&pod("default", "p", &[]), &PostParams::default())
        .await
        .unwrap();
    client.get::<Pod>(&key).await.unwrap();
}

#[tokio::test]
async fn unauthorized_without_the_token() {
    let env = TestEnv::builder()
        .token("secret-token")
        .start()
        .await
        .unwrap();
    let mut config = env.config();
    config.auth_info = Default::default();
    let kube = kube_client::Client::try_from(config).unwrap();
    let err = Client::new(kube)
        .get::<Pod>(&ObjectKey::new("default", "x"))
        .await
        .unwrap_err();
    assert!(err.is_unauthorized(), "{err}");
    // With the token it works.
    let ok = Client::new(env.client())
        .get::<Pod>(&ObjectKey::new("default", "x"))
        .await
        .unwrap_err();
    assert!(ok.is_not_found(), "{ok}");
}

#[tokio::test]
async fn undecodable_answers_and_unknown_kinds() {
    let (_env, client) = env().await;
    client
        .create(&pod("default", "p", &[]), &PostParams::default())
        .await
        .unwrap();
    // Decoding a Pod as a number fails with a typed JSON error.
    let err = client
        .sub_resource("status")
        .get::<Pod, u32>(&ObjectKey::new("default", "p"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Json { .. }), "{err}");

    let err = client
        .dynamic()
        .resource(&GroupVersionKind::new("example.com", "v1", "Nope"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotServed { .. }), "{err}");
}
