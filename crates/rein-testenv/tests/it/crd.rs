//! Custom resources through kube-client: a CRD starts serving its resource (with discovery,
//! status subresource and conditions), and deleting it stops serving.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
    WatchEvent, WatchParams,
};
use kube_client::discovery::Discovery;
use rein_testenv::TestEnv;
use serde_json::json;

use crate::crd_support::{CRDS, assert_cause, causes, create_crd, raw, raw_typed, simple, widgets};

fn crd() -> CustomResourceDefinition {
    serde_saphyr::from_str(include_str!("../fixtures/crontab-crd.yaml")).expect("crd fixture")
}

fn crontab_api(env: &TestEnv) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "crontabs");
    Api::namespaced_with(env.client(), "default", &ar)
}

fn crontab(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": name},
        "spec": {"cronSpec": "* * * * */5", "image": "cron"},
        "status": {"lastRun": "ignored on create"},
    }))
    .expect("crontab")
}

#[tokio::test]
async fn crds_serve_their_resources() {
    let env = TestEnv::start().await.expect("starts");
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let created = crds
        .create(&PostParams::default(), &crd())
        .await
        .expect("creates the crd");
    let name = created.metadata.name.expect("name");
    let stored = crds.get(&name).await.expect("gets");
    let conditions = stored.status.and_then(|s| s.conditions).unwrap_or_default();
    for kind in ["NamesAccepted", "Established"] {
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == kind && c.status == "True"),
            "{kind}"
        );
    }

    let discovery = Discovery::new(env.client()).run().await.expect("discovers");
    assert!(discovery.has_group("stable.example.com"));

    let tabs = crontab_api(&env);
    let made = tabs
        .create(&PostParams::default(), &crontab("every-5"))
        .await
        .expect("creates a crontab");
    assert!(made.data.get("status").is_none(), "status is a subresource");
    let status: DynamicObject = serde_json::from_value(json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "every-5"}, "status": {"lastRun": "now"}})).expect("status");
    let with_status = tabs
        .replace_status("every-5", &PostParams::default(), &status)
        .await
        .expect("status update");
    assert_eq!(with_status.data["status"]["lastRun"], "now");

    let mut watch = tabs
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .expect("watches")
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), watch.try_next())
        .await
        .expect("in time")
        .expect("ok");
    assert!(matches!(first, Some(WatchEvent::Added(_))));

    crds.delete(&name, &DeleteParams::default())
        .await
        .expect("deletes the crd");
    let gone = tokio::time::timeout(Duration::from_secs(10), watch.try_next())
        .await
        .expect("in time")
        .expect("ok");
    assert!(
        matches!(gone, Some(WatchEvent::Deleted(_))),
        "custom objects go with their CRD"
    );
    let err = tabs
        .list(&ListParams::default())
        .await
        .expect_err("no longer served");
    assert!(matches!(err, kube_client::Error::Api(s) if s.code == 404));
}

/// One invalid CRD: how to spoil a valid one, and the cause kube-apiserver reports.
struct Case {
    what: &'static str,
    spoil: fn(&mut serde_json::Value),
    field: &'static str,
    reason: &'static str,
    message: &'static str,
}

/// Checks every case against a fresh copy of `base`: 422 with the expected cause, and
/// nothing stored.
async fn check_cases(env: &TestEnv, base: &serde_json::Value, cases: &[Case]) {
    for case in cases {
        let mut crd = base.clone();
        (case.spoil)(&mut crd);
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let (code, status) = create_crd(env, &crd).await;
        assert_eq!(code, 422, "{}: {status}", case.what);
        assert_cause(&status, &name, case.field, case.reason, case.message);
        let (code, _) = raw(env, "GET", &format!("{CRDS}/{name}"), None).await;
        assert_eq!(code, 404, "{}: an invalid CRD is not stored", case.what);
    }
}

#[tokio::test]
async fn crd_names_groups_and_scopes_are_validated() {
    let env = TestEnv::start().await.expect("starts");
    let cases = [
        Case {
            what: "a name that is not plural.group",
            spoil: |c| c["metadata"]["name"] = json!("gadgets.rein.example.com"),
            field: "metadata.name",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"gadgets.rein.example.com\": must be \
                      spec.names.plural+\".\"+spec.group",
        },
        Case {
            what: "a group without a dot",
            spoil: |c| {
                c["spec"]["group"] = json!("example");
                c["metadata"]["name"] = json!("widgets.example");
            },
            field: "spec.group",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"example\": should be a domain with at least one dot",
        },
        Case {
            what: "no group",
            spoil: |c| {
                c["spec"]["group"] = json!("");
                c["metadata"]["name"] = json!("widgets.");
            },
            field: "spec.group",
            reason: "FieldValueRequired",
            message: "Required value",
        },
        Case {
            what: "an unknown scope",
            spoil: |c| c["spec"]["scope"] = json!("Global"),
            field: "spec.scope",
            reason: "FieldValueNotSupported",
            message: "Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
        },
        Case {
            what: "a plural that is no DNS-1035 label",
            spoil: |c| {
                c["spec"]["names"]["plural"] = json!("Widgets");
                c["metadata"]["name"] = json!("Widgets.rein.example.com");
            },
            field: "spec.names.plural",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"Widgets\": a DNS-1035 label must consist of lower case \
                      alphanumeric characters or '-', start with an alphabetic character, and \
                      end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex \
                      used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        },
        Case {
            what: "a kind with an underscore",
            spoil: |c| c["spec"]["names"]["kind"] = json!("Wid_get"),
            field: "spec.names.kind",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"Wid_get\": may have mixed case, but should otherwise \
                      match: a DNS-1035 label must consist of lower case alphanumeric \
                      characters or '-', start with an alphabetic character, and end with an \
                      alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for \
                      validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        },
        Case {
            what: "listKind equal to kind",
            spoil: |c| c["spec"]["names"]["listKind"] = json!("Widget"),
            field: "spec.names.listKind",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"Widget\": kind and listKind may not be the same",
        },
        Case {
            what: "a bad short name",
            spoil: |c| c["spec"]["names"]["shortNames"] = json!(["wdg", "2w"]),
            field: "spec.names.shortNames[1]",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"2w\": a DNS-1035 label must consist of lower case \
                      alphanumeric characters or '-', start with an alphabetic character, and \
                      end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex \
                      used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        },
        Case {
            what: "a bad category",
            spoil: |c| c["spec"]["names"]["categories"] = json!(["All"]),
            field: "spec.names.categories[0]",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"All\": a DNS-1035 label must consist of lower case \
                      alphanumeric characters or '-', start with an alphabetic character, and \
                      end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex \
                      used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        },
        Case {
            what: "no kind",
            spoil: |c| {
                c["spec"]["names"]
                    .as_object_mut()
                    .expect("names")
                    .remove("kind");
            },
            field: "spec.names.kind",
            reason: "FieldValueRequired",
            message: "Required value",
        },
    ];
    check_cases(&env, &widgets(), &cases).await;
}

#[tokio::test]
async fn crd_versions_are_validated() {
    let env = TestEnv::start().await.expect("starts");
    let cases = [
        Case {
            what: "two storage versions",
            spoil: |c| c["spec"]["versions"][1]["storage"] = json!(true),
            field: "spec.versions",
            reason: "FieldValueInvalid",
            message: "Invalid value: []apiextensions.CustomResourceDefinitionVersion{...}: \
                      must have exactly one version marked as storage version",
        },
        Case {
            what: "no storage version",
            spoil: |c| c["spec"]["versions"][0]["storage"] = json!(false),
            field: "status.storedVersions",
            reason: "FieldValueInvalid",
            message: "Invalid value: []string(nil): must have at least one stored version",
        },
        Case {
            what: "no versions",
            spoil: |c| c["spec"]["versions"] = json!([]),
            field: "spec.versions",
            reason: "FieldValueInvalid",
            message: "Invalid value: []apiextensions.CustomResourceDefinitionVersion{...}: \
                      must have exactly one version marked as storage version",
        },
        Case {
            what: "duplicate version names",
            spoil: |c| c["spec"]["versions"][1]["name"] = json!("v1"),
            field: "spec.versions",
            reason: "FieldValueInvalid",
            message: "Invalid value: []apiextensions.CustomResourceDefinitionVersion{...}: \
                      must contain unique version names",
        },
        Case {
            what: "a version name that is no DNS-1035 label",
            spoil: |c| c["spec"]["versions"][1]["name"] = json!("V2"),
            field: "spec.versions[1].name",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"V2\": a DNS-1035 label must consist of lower case \
                      alphanumeric characters or '-', start with an alphabetic character, and \
                      end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex \
                      used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        },
        Case {
            what: "a version without a schema",
            spoil: |c| {
                c["spec"]["versions"][1]
                    .as_object_mut()
                    .expect("version")
                    .remove("schema");
            },
            field: "spec.versions[1].schema.openAPIV3Schema",
            reason: "FieldValueRequired",
            message: "Required value",
        },
        Case {
            what: "a deprecation warning on a version that is not deprecated",
            spoil: |c| c["spec"]["versions"][1]["deprecationWarning"] = json!("old"),
            field: "spec.versions[1].deprecationWarning",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"old\": can only be set for deprecated versions",
        },
        Case {
            what: "a root type other than object with the status subresource",
            spoil: |c| {
                c["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["type"] = json!("array");
            },
            field: "spec.versions[1].schema.openAPIV3Schema.type",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"array\": only \"object\" is allowed as the type at the \
                      root of the schema if the status subresource is enabled",
        },
        Case {
            what: "a nullable root",
            spoil: |c| {
                c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["nullable"] = json!(true);
            },
            field: "spec.versions[0].schema.openAPIV3Schema.nullable",
            reason: "FieldValueForbidden",
            message: "Forbidden: nullable cannot be true at the root",
        },
    ];
    check_cases(&env, &widgets(), &cases).await;
}

#[tokio::test]
async fn crd_subresources_columns_and_conversion_are_validated() {
    let env = TestEnv::start().await.expect("starts");
    let cases = [
        Case {
            what: "a spec replicas path outside .spec",
            spoil: |c| {
                c["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] =
                    json!(".status.replicas");
            },
            field: "spec.versions[0].subresources.scale.specReplicasPath",
            reason: "FieldValueInvalid",
            message: "Invalid value: \".status.replicas\": should be a json path under .spec",
        },
        Case {
            what: "a status replicas path outside .status",
            spoil: |c| {
                c["spec"]["versions"][0]["subresources"]["scale"]["statusReplicasPath"] =
                    json!(".spec.replicas");
            },
            field: "spec.versions[0].subresources.scale.statusReplicasPath",
            reason: "FieldValueInvalid",
            message: "Invalid value: \".spec.replicas\": should be a json path under .status",
        },
        Case {
            what: "a label selector path that is not a json path",
            spoil: |c| {
                c["spec"]["versions"][0]["subresources"]["scale"]["labelSelectorPath"] =
                    json!("status.selector");
            },
            field: "spec.versions[0].subresources.scale.labelSelectorPath",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"status.selector\": must be a simple json path starting \
                      with .",
        },
        Case {
            what: "no spec replicas path",
            spoil: |c| {
                c["spec"]["versions"][0]["subresources"]["scale"]
                    .as_object_mut()
                    .expect("scale")
                    .remove("specReplicasPath");
            },
            field: "spec.versions[0].subresources.scale.specReplicasPath",
            reason: "FieldValueRequired",
            message: "Required value",
        },
        Case {
            what: "a printer column of an unknown type",
            spoil: |c| {
                c["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] = json!("float");
            },
            field: "spec.versions[0].additionalPrinterColumns[0].type",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"float\": must be one of boolean,date,integer,number,string",
        },
        Case {
            what: "a printer column without a JSON path",
            spoil: |c| {
                c["spec"]["versions"][0]["additionalPrinterColumns"][0]
                    .as_object_mut()
                    .expect("column")
                    .remove("jsonPath");
            },
            field: "spec.versions[0].additionalPrinterColumns[0].JSONPath",
            reason: "FieldValueRequired",
            message: "Required value",
        },
        Case {
            what: "a printer column of an unknown format",
            spoil: |c| {
                c["spec"]["versions"][0]["additionalPrinterColumns"][0]["format"] = json!("uuid");
            },
            field: "spec.versions[0].additionalPrinterColumns[0].format",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"uuid\": must be one of \
                      byte,date,date-time,double,float,int32,int64,password",
        },
        Case {
            what: "an unknown conversion strategy",
            spoil: |c| c["spec"]["conversion"] = json!({"strategy": "Magic"}),
            field: "spec.conversion.strategy",
            reason: "FieldValueNotSupported",
            message: "Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\"",
        },
        Case {
            what: "a webhook conversion without a client config",
            spoil: |c| {
                c["spec"]["conversion"] = json!({"strategy": "Webhook",
                    "webhook": {"conversionReviewVersions": ["v1"]}});
            },
            field: "spec.conversion.webhookClientConfig",
            reason: "FieldValueRequired",
            message: "Required value: required when strategy is set to Webhook",
        },
        Case {
            what: "a webhook conversion without review versions",
            spoil: |c| {
                c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                    "clientConfig": {"url": "https://conv.example.com/convert"}}});
            },
            field: "spec.conversion.conversionReviewVersions",
            reason: "FieldValueRequired",
            message: "Required value",
        },
        Case {
            what: "a webhook URL that is not https",
            spoil: |c| {
                c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                    "clientConfig": {"url": "http://conv.example.com/convert"},
                    "conversionReviewVersions": ["v1"]}});
            },
            field: "spec.conversion.webhookClientConfig.url",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired \
                      format: https://host[/path]",
        },
        Case {
            what: "review versions this server does not know",
            spoil: |c| {
                c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                    "clientConfig": {"url": "https://conv.example.com/convert"},
                    "conversionReviewVersions": ["v2"]}});
            },
            field: "spec.conversion.conversionReviewVersions",
            reason: "FieldValueInvalid",
            message: "Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
        },
        Case {
            what: "a webhook client config with strategy None",
            spoil: |c| {
                c["spec"]["conversion"] = json!({"strategy": "None", "webhook": {
                    "clientConfig": {"url": "https://conv.example.com/convert"}}});
            },
            field: "spec.conversion.webhookClientConfig",
            reason: "FieldValueForbidden",
            message: "Forbidden: should not be set when strategy is not set to Webhook",
        },
    ];
    check_cases(&env, &widgets(), &cases).await;
}

#[tokio::test]
async fn fields_shared_by_every_version_are_reported_at_the_top_level() {
    // kube-apiserver validates the internal type: a v1 CRD whose versions all carry the same
    // subresources, schema or columns has them moved to `spec.subresources`,
    // `spec.validation`, `spec.additionalPrinterColumns`, and the causes say so.
    let env = TestEnv::start().await.expect("starts");
    let base = simple("rein.example.com", "gizmos", "Gizmo");
    let cases = [
        Case {
            what: "a shared scale subresource",
            spoil: |c| {
                c["spec"]["versions"][0]["subresources"]["scale"] = json!({
                    "specReplicasPath": ".status.replicas",
                    "statusReplicasPath": ".status.replicas",
                });
            },
            field: "spec.subresources.scale.specReplicasPath",
            reason: "FieldValueInvalid",
            message: "Invalid value: \".status.replicas\": should be a json path under .spec",
        },
        Case {
            what: "shared printer columns",
            spoil: |c| {
                c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "Age", "type": "time", "jsonPath": ".metadata.creationTimestamp"}]);
            },
            field: "spec.additionalPrinterColumns[0].type",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"time\": must be one of boolean,date,integer,number,string",
        },
        Case {
            what: "a shared nullable schema root",
            spoil: |c| {
                c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["nullable"] = json!(true);
            },
            field: "spec.validation.openAPIV3Schema.nullable",
            reason: "FieldValueForbidden",
            message: "Forbidden: nullable cannot be true at the root",
        },
        Case {
            what: "the first version's bad name, also reported as spec.version",
            spoil: |c| c["spec"]["versions"][0]["name"] = json!("1"),
            field: "spec.version",
            reason: "FieldValueInvalid",
            message: "Invalid value: \"1\": a DNS-1035 label must consist of lower case \
                      alphanumeric characters or '-', start with an alphabetic character, and \
                      end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex \
                      used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        },
    ];
    check_cases(&env, &base, &cases).await;
}

#[tokio::test]
async fn several_problems_are_one_answer_with_a_cause_each() {
    let env = TestEnv::start().await.expect("starts");
    let mut crd = widgets();
    crd["spec"]["scope"] = json!("Global");
    crd["spec"]["versions"][1]["storage"] = json!(true);
    let (code, status) = create_crd(&env, &crd).await;
    assert_eq!(code, 422);
    let fields: Vec<String> = causes(&status).into_iter().map(|(_, f, _)| f).collect();
    // The strategy records the first storage version (v1), so the second is missing from
    // status.storedVersions too, as kube-apiserver reports it.
    assert_eq!(
        fields,
        ["spec.scope", "spec.versions", "status.storedVersions"],
        "{status}"
    );
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "CustomResourceDefinition.apiextensions.k8s.io \"widgets.rein.example.com\" is \
             invalid: [spec.scope: Unsupported value: \"Global\""
        ),
        "{message}"
    );
    assert!(
        message.ends_with("must have the storage version v1beta1]"),
        "{message}"
    );
}

#[tokio::test]
async fn crds_are_defaulted_like_v1() {
    let env = TestEnv::start().await.expect("starts");
    let (code, created) = create_crd(&env, &widgets()).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(created["spec"]["names"]["singular"], "widget");
    assert_eq!(created["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(created["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(created["status"]["acceptedNames"]["singular"], "widget");
    assert_eq!(
        created["status"]["acceptedNames"]["shortNames"],
        json!(["wdg"])
    );
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(
        created["metadata"]["finalizers"].is_null(),
        "the clean-up finalizer is only added by DELETE"
    );

    let mut webhook = simple("rein.example.com", "gizmos", "Gizmo");
    webhook["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "conv", "namespace": "default", "path": "/convert"}},
        "conversionReviewVersions": ["v1"]}});
    let (code, created) = create_crd(&env, &webhook).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
        443
    );
}

#[tokio::test]
async fn updates_keep_identity_fields_and_stored_versions() {
    let env = TestEnv::start().await.expect("starts");
    let (code, created) = create_crd(&env, &widgets()).await;
    assert_eq!(code, 201, "{created}");
    let path = format!("{CRDS}/widgets.rein.example.com");
    let merge = "application/merge-patch+json";

    for (patch, field, message) in [
        (
            json!({"spec": {"scope": "Cluster"}}),
            "spec.scope",
            "Invalid value: \"Cluster\": field is immutable",
        ),
        (
            json!({"spec": {"names": {"kind": "Gadget", "listKind": "GadgetList"}}}),
            "spec.names.kind",
            "Invalid value: \"Gadget\": field is immutable",
        ),
        (
            json!({"spec": {"group": "other.example.com"}}),
            "spec.group",
            "Invalid value: \"other.example.com\": field is immutable",
        ),
    ] {
        let (code, status) = raw_typed(&env, "PATCH", &path, Some(&patch), merge).await;
        assert_eq!(code, 422, "{patch}: {status}");
        assert_cause(
            &status,
            "widgets.rein.example.com",
            field,
            "FieldValueInvalid",
            message,
        );
    }

    // Moving storage to v1beta1 records it; v1 stays a stored version.
    let swap = json!({"spec": {"versions": [
        {"name": "v1", "served": true, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v1beta1", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object"}}},
    ]}});
    let (code, swapped) = raw_typed(&env, "PATCH", &path, Some(&swap), merge).await;
    assert_eq!(code, 200, "{swapped}");
    assert_eq!(
        swapped["status"]["storedVersions"],
        json!(["v1", "v1beta1"])
    );
    assert_eq!(swapped["metadata"]["generation"], 2);

    // Dropping v1 from the versions while it is still stored is refused.
    let drop_v1 = json!({"spec": {"versions": [
        {"name": "v1beta1", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object"}}},
    ]}});
    let (code, status) = raw_typed(&env, "PATCH", &path, Some(&drop_v1), merge).await;
    assert_eq!(code, 422, "{status}");
    assert_cause(
        &status,
        "widgets.rein.example.com",
        "status.storedVersions[0]",
        "FieldValueInvalid",
        "Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage \
         version, and must remain in spec.versions until a storage migration ensures no data \
         remains persisted in v1 and removes v1 from status.storedVersions",
    );

    // After a storage migration removes v1 from storedVersions (through /status), it can go.
    let mut current = raw(&env, "GET", &path, None).await.1;
    current["status"]["storedVersions"] = json!(["v1beta1"]);
    let (code, migrated) = raw(&env, "PUT", &format!("{path}/status"), Some(&current)).await;
    assert_eq!(code, 200, "{migrated}");
    let (code, dropped) = raw_typed(&env, "PATCH", &path, Some(&drop_v1), merge).await;
    assert_eq!(code, 200, "{dropped}");
    assert_eq!(dropped["status"]["storedVersions"], json!(["v1beta1"]));
}

#[tokio::test]
async fn a_crd_named_after_another_plural_cannot_take_over_its_endpoint() {
    let env = TestEnv::start().await.expect("starts");
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    crds.create(&PostParams::default(), &crd())
        .await
        .expect("creates crontabs");
    let tabs = crontab_api(&env);
    tabs.create(&PostParams::default(), &crontab("kept"))
        .await
        .expect("creates a crontab");
    // Same plural and group, another name: refused.
    let mut usurper = serde_json::to_value(crd()).expect("json");
    usurper["metadata"]["name"] = json!("usurper.stable.example.com");
    let (code, status) = create_crd(&env, &usurper).await;
    assert_eq!(code, 422, "{status}");
    assert_cause(
        &status,
        "usurper.stable.example.com",
        "metadata.name",
        "FieldValueInvalid",
        "Invalid value: \"usurper.stable.example.com\": must be spec.names.plural+\".\"+spec.group",
    );
    let (code, _) = raw(
        &env,
        "DELETE",
        &format!("{CRDS}/usurper.stable.example.com"),
        None,
    )
    .await;
    assert_eq!(code, 404);
    let kept = tabs.get("kept").await.expect("crontabs are still served");
    assert_eq!(kept.metadata.name.as_deref(), Some("kept"));
}
