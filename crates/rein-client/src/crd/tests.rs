//! `install` and `wait_established` against rein-testenv; the condition checks on their own.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use rein_testenv::TestEnv;
use serde_json::json;

use super::*;

fn widget_crd(plural: &str) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{plural}.crd-test.rein.dev")},
        "spec": {
            "group": "crd-test.rein.dev",
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    }))
    .unwrap()
}

fn with_conditions(conditions: serde_json::Value) -> CustomResourceDefinition {
    let mut crd = serde_json::to_value(widget_crd("widgets")).unwrap();
    crd["status"] = json!({"conditions": conditions});
    serde_json::from_value(crd).unwrap()
}

#[tokio::test]
async fn install_creates_and_waits_until_established() {
    let env = TestEnv::start().await.unwrap();
    let client = Client::new(env.client());
    let crd = install(&client, &widget_crd("widgets"), Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        conditions(&crd)
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );
    // The kind is served now.
    let list = env
        .client()
        .request_text(
            http::Request::get("/apis/crd-test.rein.dev/v1/namespaces/default/widgets")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(list.contains("\"items\""), "{list}");
}

#[tokio::test]
async fn install_replaces_the_spec_of_an_existing_crd() {
    let env = TestEnv::start().await.unwrap();
    let client = Client::new(env.client());
    let mut crd = widget_crd("gadgets");
    install(&client, &crd, Duration::from_secs(10))
        .await
        .unwrap();
    crd.spec.names.short_names = Some(vec!["gd".into()]);
    let again = install(&client, &crd, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(again.spec.names.short_names, Some(vec!["gd".into()]));
}

#[tokio::test]
async fn waiting_for_a_missing_crd_times_out_with_a_typed_error() {
    let env = TestEnv::start().await.unwrap();
    let client = Client::new(env.client());
    let err = wait_established(
        &client,
        "nothing.crd-test.rein.dev",
        Duration::from_millis(300),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, CrdError::Timeout { name, conditions, .. }
            if name == "nothing.crd-test.rein.dev" && conditions.is_empty()),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_unnamed_crd_is_refused_before_any_request() {
    let env = TestEnv::start().await.unwrap();
    let client = Client::new(env.client());
    let mut crd = widget_crd("widgets");
    crd.metadata.name = None;
    let err = install(&client, &crd, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(err, CrdError::Unnamed), "{err:?}");
}

#[test]
fn refused_names_fail_at_once() {
    let crd = with_conditions(json!([
        {"type": "NamesAccepted", "status": "False", "reason": "MultipleConflicts",
         "message": "\"widgets\" is already in use"},
        {"type": "Established", "status": "False"},
    ]));
    let err = check("widgets.crd-test.rein.dev", &crd).unwrap_err();
    assert!(
        matches!(&err, CrdError::NamesNotAccepted { reason, message, .. }
            if reason == "MultipleConflicts" && message.contains("already in use")),
        "{err:?}"
    );
}

#[test]
fn pending_and_established_conditions() {
    let pending = with_conditions(json!([{"type": "NamesAccepted", "status": "True"}]));
    assert!(check("w", &pending).unwrap().is_none());
    assert!(check("w", &widget_crd("widgets")).unwrap().is_none());
    let established = with_conditions(json!([{"type": "Established", "status": "True"}]));
    assert!(check("w", &established).unwrap().is_some());
}

#[tokio::test]
async fn a_kind_another_crd_of_the_group_holds_is_refused_without_waiting_out_the_timeout() {
    let env = TestEnv::start().await.unwrap();
    let client = Client::new(env.client());
    install(&client, &widget_crd("widgets"), Duration::from_secs(10))
        .await
        .unwrap();
    // Same group, same kind `Widget`, another plural: kube-apiserver's naming controller
    // answers `NamesAccepted=False` (KindConflict) and never establishes it.
    let started = tokio::time::Instant::now();
    match install(&client, &widget_crd("gizmos"), Duration::from_secs(20)).await {
        Err(CrdError::NamesNotAccepted { name, reason, .. }) => {
            assert_eq!(name, "gizmos.crd-test.rein.dev");
            assert!(reason.ends_with("KindConflict"), "{reason}");
            assert!(started.elapsed() < Duration::from_secs(10), "failed fast");
        }
        Ok(crd) => panic!("a conflicting kind was established: {crd:?}"),
        Err(err) => panic!("unexpected error: {err:?}"),
    }
}
