//! TLS with a generated CA, bearer tokens, users, client certificates, service-account
//! tokens (TokenRequest, TokenReview), impersonation, the kubeconfig, and start-up.

use k8s_openapi::api::core::v1::Namespace;
use kube_client::api::{Api, ListParams};
use rein_testenv::{TestEnv, User};
use serde_json::json;

use super::auth_support::{api_error, get, post, request, service_account, token_for, whoami};

#[tokio::test]
async fn tls_and_token_work_through_the_kubeconfig() {
    let env = TestEnv::builder()
        .tls(true)
        .token("s3cret")
        .start()
        .await
        .expect("starts");
    assert!(env.base_url().starts_with("https://127.0.0.1:"));
    let nss: Api<Namespace> = Api::all(env.client());
    assert_eq!(
        nss.list(&ListParams::default())
            .await
            .expect("lists")
            .items
            .len(),
        4
    );

    let kubeconfig = env.kubeconfig();
    let cluster = kubeconfig.clusters[0].cluster.as_ref().expect("cluster");
    assert!(cluster.certificate_authority_data.is_some());
    let dir = std::env::temp_dir().join(format!("rein-testenv-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("kubeconfig");
    env.write_kubeconfig(&path).expect("writes");
    let text = std::fs::read_to_string(&path).expect("reads");
    assert!(text.contains("s3cret") && text.contains(&env.base_url()));
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn requests_without_the_token_get_401() {
    let env = TestEnv::builder()
        .token("right")
        .start()
        .await
        .expect("starts");
    let mut config = env.config();
    config.auth_info.token = None;
    let client = kube_client::Client::try_from(config).expect("client");
    let nss: Api<Namespace> = Api::all(client);
    let err = nss
        .list(&ListParams::default())
        .await
        .expect_err("unauthorized");
    assert!(matches!(err, kube_client::Error::Api(s) if s.code == 401));
}

#[tokio::test]
async fn shutdown_stops_serving() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    env.shutdown().await;
    let nss: Api<Namespace> = Api::all(client);
    assert!(nss.list(&ListParams::default()).await.is_err());
}

#[tokio::test]
async fn user_tokens_authenticate_with_their_groups_and_wrong_ones_get_401() {
    let alice = User::new("alice").group("devs").token("alice-token");
    let env = TestEnv::builder()
        .token("admin-token")
        .user(alice.clone())
        .start()
        .await
        .expect("starts");
    assert_eq!(
        whoami(&env.client()).await,
        (
            rein_testenv::ADMIN_USER.to_string(),
            vec!["system:masters".into(), "system:authenticated".into()]
        )
    );
    let as_alice = env.client_for(&alice).await.expect("client");
    assert_eq!(
        whoami(&as_alice).await,
        (
            "alice".to_string(),
            vec!["devs".into(), "system:authenticated".into()]
        )
    );
    let stranger = env
        .client_with_token("nobody-has-this")
        .await
        .expect("client");
    let err = get(&stranger, "/api/v1/namespaces").await.expect_err("401");
    assert_eq!(api_error(err), (401, "Unauthorized".to_string()));
    // Health and version stay public.
    get(&stranger, "/version").await.expect("version is public");
}

#[tokio::test]
async fn client_certificates_authenticate_as_their_common_name_and_organization() {
    let env = TestEnv::builder()
        .tls(true)
        .token("admin-token")
        .start()
        .await
        .expect("starts");
    let carol = User::new("carol").group("ops").group("oncall");
    let client = env.client_for(&carol).await.expect("client");
    assert_eq!(
        whoami(&client).await,
        (
            "carol".to_string(),
            vec!["ops".into(), "oncall".into(), "system:authenticated".into()]
        )
    );
    let plain = TestEnv::start().await.expect("starts");
    assert!(matches!(
        plain.kubeconfig_for(&carol),
        Err(rein_testenv::Error::ClientCertificate(_))
    ));
}

#[tokio::test]
async fn token_requests_issue_tokens_that_authenticate_and_token_review_accepts() {
    let env = TestEnv::builder()
        .tls(true)
        .token("admin-token")
        .start()
        .await
        .expect("starts");
    let client = env.client();
    let sa = service_account(&client, "default", "robot").await;
    let answer = token_for(
        &client,
        "default",
        "robot",
        json!({"expirationSeconds": 1200}),
    )
    .await
    .expect("TokenRequest");
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["spec"]["expirationSeconds"], 1200);
    assert_eq!(
        answer["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert!(answer["status"]["expirationTimestamp"].is_string());
    let token = answer["status"]["token"]
        .as_str()
        .expect("token")
        .to_string();

    let review = post(
        &client,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
               "spec": {"token": token}}),
    )
    .await
    .expect("TokenReview");
    let status = &review["status"];
    assert_eq!(status["authenticated"], true);
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:robot"
    );
    assert_eq!(status["user"]["uid"], sa["metadata"]["uid"]);
    assert_eq!(
        status["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert!(
        status["user"]["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .is_some_and(|id| id.starts_with("JTI="))
    );

    let as_robot = env.client_with_token(&token).await.expect("client");
    assert_eq!(
        whoami(&as_robot).await.0,
        "system:serviceaccount:default:robot"
    );

    // A token for another audience passes its own review, not the API.
    let custom = token_for(&client, "default", "robot", json!({"audiences": ["vault"]}))
        .await
        .expect("TokenRequest")["status"]["token"]
        .as_str()
        .expect("token")
        .to_string();
    let review = |token: String, audiences: serde_json::Value| {
        let client = client.clone();
        async move {
            post(
                &client,
                "/apis/authentication.k8s.io/v1/tokenreviews",
                json!({"spec": {"token": token, "audiences": audiences}}),
            )
            .await
            .expect("TokenReview")["status"]
                .clone()
        }
    };
    let ok = review(custom.clone(), json!(["vault"])).await;
    assert_eq!(
        (ok["authenticated"].clone(), ok["audiences"].clone()),
        (json!(true), json!(["vault"]))
    );
    let refused = review(custom.clone(), json!([])).await;
    assert_eq!(refused["authenticated"], serde_json::Value::Null);
    assert_eq!(
        refused["error"],
        "token audiences [\"vault\"] is invalid for the target audiences \
         [\"https://kubernetes.default.svc.cluster.local\"]"
    );
    let as_vault = env.client_with_token(&custom).await.expect("client");
    let err = get(&as_vault, "/api/v1/namespaces").await.expect_err("401");
    assert_eq!(api_error(err).0, 401);

    // Validation and a missing ServiceAccount.
    let err = token_for(
        &client,
        "default",
        "robot",
        json!({"expirationSeconds": 60}),
    )
    .await
    .expect_err("422");
    assert_eq!(
        api_error(err),
        (
            422,
            "TokenRequest.authentication.k8s.io \"robot\" is invalid: spec.expirationSeconds: \
             Invalid value: 60: may not specify a duration less than 10 minutes"
                .to_string()
        )
    );
    let err = token_for(&client, "default", "ghost", json!({}))
        .await
        .expect_err("404");
    assert_eq!(
        api_error(err),
        (404, "serviceaccounts \"ghost\" not found".to_string())
    );

    // Once the ServiceAccount is gone its tokens stop working.
    request(
        &client,
        http::Method::DELETE,
        "/api/v1/namespaces/default/serviceaccounts/robot",
        None,
        &[],
    )
    .await
    .expect("deletes");
    let gone = review(token, json!([])).await;
    assert_eq!(gone["error"], "serviceaccount \"robot\" not found");
    let err = get(&as_robot, "/api/v1/namespaces").await.expect_err("401");
    assert_eq!(api_error(err).0, 401);
}

#[tokio::test]
async fn impersonation_headers_change_the_user() {
    let env = TestEnv::builder()
        .token("admin-token")
        .start()
        .await
        .expect("starts");
    let client = env.client();
    let review = request(
        &client,
        http::Method::POST,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(json!({})),
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "qa"),
            ("Impersonate-Uid", "b-1"),
            ("Impersonate-Extra-Scopes", "read"),
        ],
    )
    .await
    .expect("SelfSubjectReview");
    assert_eq!(
        review["status"]["userInfo"],
        json!({"username": "bob", "uid": "b-1", "groups": ["qa", "system:authenticated"],
               "extra": {"scopes": ["read"]}})
    );
    let err = request(
        &client,
        http::Method::GET,
        "/api/v1/namespaces",
        None,
        &[("Impersonate-Group", "qa")],
    )
    .await
    .expect_err("400");
    assert_eq!(
        api_error(err),
        (
            400,
            "requested [{Group  qa    }] without impersonating a user".to_string()
        )
    );
}
