//! `namespaces/finalize` and `certificatesigningrequests/approval` over real HTTP.

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Namespace;
use kube_client::api::{Api, DeleteParams, PostParams};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::pod_support::raw;

#[tokio::test]
async fn finalize_changes_spec_finalizers_and_holds_a_terminating_namespace() {
    let env = TestEnv::start().await.expect("starts");
    let namespaces: Api<Namespace> = Api::all(env.client());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "held"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("creates");
    let mut body = serde_json::to_value(namespaces.get("held").await.unwrap()).unwrap();
    body["spec"]["finalizers"] = json!(["kubernetes", "example.com/hold"]);
    body["status"]["phase"] = json!("Terminating");
    let path = "/api/v1/namespaces/held/finalize";
    let (code, _, stored) = raw(&env.client(), "PUT", path, "application/json", &body).await;
    assert_eq!(code, 200, "{stored}");
    assert_eq!(
        stored["spec"]["finalizers"],
        json!(["kubernetes", "example.com/hold"])
    );
    assert_eq!(
        stored["status"]["phase"], "Active",
        "status is not changed through finalize"
    );

    let mut bad = stored.clone();
    bad["spec"]["finalizers"] = json!(["nodomain"]);
    let (code, _, refused) = raw(&env.client(), "PUT", path, "application/json", &bad).await;
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        refused["message"],
        "Namespace \"held\" is invalid: spec.finalizers[0]: Invalid value: \"nodomain\": name is neither a standard finalizer name nor is it fully qualified"
    );

    namespaces
        .delete("held", &DeleteParams::default())
        .await
        .expect("deletes");
    // The namespace controller removes its own finalizer; the other one holds the namespace.
    let mut terminating = serde_json::to_value(namespaces.get("held").await.unwrap()).unwrap();
    for _ in 0..100 {
        if terminating["spec"]["finalizers"] == json!(["example.com/hold"]) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        terminating = serde_json::to_value(namespaces.get("held").await.unwrap()).unwrap();
    }
    assert_eq!(
        terminating["spec"]["finalizers"],
        json!(["example.com/hold"])
    );
    assert_eq!(terminating["status"]["phase"], "Terminating");
    terminating["spec"]["finalizers"] = json!([]);
    let (code, _, body) = raw(&env.client(), "PUT", path, "application/json", &terminating).await;
    assert_eq!(code, 200, "{body}");
    let mut gone = false;
    for _ in 0..100 {
        if namespaces.get_opt("held").await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        gone,
        "the namespace is removed once its finalizers are gone"
    );
}

fn csr(name: &str) -> CertificateSigningRequest {
    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["example.com".to_string()]).expect("params");
    let request = params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "request": base64_encode(request.as_bytes()),
            "signerName": "example.com/signer",
            "usages": ["digital signature", "key encipherment", "server auth"],
        },
    }))
    .expect("valid csr")
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test]
async fn approval_changes_only_conditions_and_checks_them() {
    let env = TestEnv::start().await.expect("starts");
    let csrs: Api<CertificateSigningRequest> = Api::all(env.client());
    csrs.create(&PostParams::default(), &csr("c"))
        .await
        .expect("creates");
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval";
    let (code, _, current) =
        raw(&env.client(), "GET", path, "application/json", &Value::Null).await;
    assert_eq!(code, 200);
    let mut body = current.clone();
    body["spec"]["signerName"] = json!("example.com/other");
    body["status"] = json!({"conditions": [
        {"type": "Approved", "status": "True", "reason": "Test", "message": "ok"},
    ]});
    let (code, _, approved) = raw(&env.client(), "PUT", path, "application/json", &body).await;
    assert_eq!(code, 200, "{approved}");
    let condition = &approved["status"]["conditions"][0];
    assert_eq!(condition["type"], "Approved");
    assert!(condition["lastUpdateTime"].is_string());
    assert_eq!(
        approved["spec"]["signerName"], "example.com/signer",
        "only conditions change"
    );

    let mut both = approved.clone();
    both["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "Denied", "status": "True"}));
    let (code, _, refused) = raw(&env.client(), "PUT", path, "application/json", &both).await;
    assert_eq!(code, 422, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("Approved and Denied conditions are mutually exclusive"),
        "{refused}"
    );

    let mut removed = approved.clone();
    removed["status"]["conditions"] = json!([]);
    let (code, _, refused) = raw(&env.client(), "PUT", path, "application/json", &removed).await;
    assert_eq!(code, 422);
    assert_eq!(
        refused["message"],
        "CertificateSigningRequest.certificates.k8s.io \"c\" is invalid: status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
    );

    let mut not_true = approved.clone();
    not_true["status"]["conditions"][0]["status"] = json!("False");
    let (code, _, refused) = raw(&env.client(), "PUT", path, "application/json", &not_true).await;
    assert_eq!(code, 422);
    assert_eq!(
        refused["details"]["causes"][0]["field"],
        "status.conditions[0].status"
    );
}
