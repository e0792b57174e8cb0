//! Tests for patching and server-side apply, mostly the Kubernetes documentation's examples.

use serde_json::{Value, json};

use super::*;

fn pod_gvk() -> Gvk {
    Gvk::new("", "v1", "Pod")
}

fn deployment_gvk() -> Gvk {
    Gvk::new("apps", "v1", "Deployment")
}

fn crd_gvk() -> Gvk {
    Gvk::new("example.com", "v1", "Widget")
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "nginx", "image": "nginx:1.14", "ports": [{"containerPort": 80}]}
                    ],
                    "tolerations": [{"effect": "NoSchedule", "key": "dedicated", "value": "test-team"}]
                }
            }
        }
    })
}

fn patch(kind: PatchType, current: &Value, body: Value, gvk: &Gvk) -> Result<Value, PatchError> {
    apply_patch(kind, current, body.to_string().as_bytes(), gvk)
}

#[test]
fn content_types_map_to_patch_types() {
    let cases = [
        ("application/merge-patch+json", PatchType::Merge),
        ("application/json-patch+json", PatchType::Json),
        (
            "application/strategic-merge-patch+json; charset=utf-8",
            PatchType::StrategicMerge,
        ),
        ("application/apply-patch+yaml", PatchType::Apply),
    ];
    for (content_type, expected) in cases {
        assert_eq!(PatchType::from_content_type(content_type), Some(expected));
        assert_eq!(
            PatchType::from_content_type(expected.content_type()),
            Some(expected)
        );
    }
    assert_eq!(PatchType::from_content_type("application/json"), None);
}

#[test]
fn merge_patch_follows_rfc_7386() {
    let current = json!({"a": "b", "c": {"d": "e", "f": "g"}, "list": [1, 2]});
    let out = patch(
        PatchType::Merge,
        &current,
        json!({"a": "z", "c": {"f": null}, "list": [3]}),
        &crd_gvk(),
    )
    .unwrap();
    assert_eq!(out, json!({"a": "z", "c": {"d": "e"}, "list": [3]}));
}

#[test]
fn merge_patch_must_be_an_object() {
    // An array is the whole patched document (RFC 7386), which is no object: 422 on `patch`.
    let err = patch(PatchType::Merge, &json!({}), json!([1]), &crd_gvk()).unwrap_err();
    assert_eq!(err.code(), 422);
    assert_eq!(err.status()["details"]["causes"][0]["field"], "patch");
    // `null` or a scalar is json-patch's ErrBadJSONPatch.
    for bad in [json!(null), json!(3)] {
        let err = patch(PatchType::Merge, &json!({}), bad, &crd_gvk()).unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (400, "Invalid JSON Patch".to_string())
        );
    }
    let err = apply_patch(PatchType::Merge, &json!({}), b"{not json", &crd_gvk()).unwrap_err();
    assert_eq!(err.code(), 400);
    assert!(
        err.message().contains("decoding the merge patch body: "),
        "{}",
        err.message()
    );
}

#[test]
fn json_patch_applies_operations_in_order() {
    let out = patch(
        PatchType::Json,
        &deployment(),
        json!([
            {"op": "test", "path": "/spec/replicas", "value": 2},
            {"op": "replace", "path": "/spec/replicas", "value": 5},
            {"op": "add", "path": "/metadata/labels/tier", "value": "front"},
            {"op": "remove", "path": "/metadata/labels/app"},
            {"op": "add", "path": "/spec/template/spec/containers/-", "value": {"name": "side", "image": "busybox"}}
        ]),
        &deployment_gvk(),
    )
    .unwrap();
    assert_eq!(out["spec"]["replicas"], 5);
    assert_eq!(out["metadata"]["labels"], json!({"tier": "front"}));
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][1]["name"],
        "side"
    );
}

#[test]
fn json_patch_failed_test_is_422_and_changes_nothing() {
    let err = patch(
        PatchType::Json,
        &deployment(),
        json!([{"op": "test", "path": "/spec/replicas", "value": 3}]),
        &deployment_gvk(),
    )
    .unwrap_err();
    assert!(matches!(err, PatchError::TestFailed(_)), "{err:?}");
    assert_eq!(err.code(), 422);
    assert_eq!(err.status()["reason"], "Invalid");
}

#[test]
fn json_patch_on_a_missing_path_is_invalid_and_garbage_is_bad_request() {
    let err = patch(
        PatchType::Json,
        &deployment(),
        json!([{"op": "remove", "path": "/spec/nothing/here"}]),
        &deployment_gvk(),
    )
    .unwrap_err();
    assert_eq!(err.code(), 422);
    let err = patch(
        PatchType::Json,
        &deployment(),
        json!({"op": "add"}),
        &deployment_gvk(),
    )
    .unwrap_err();
    assert_eq!(err.code(), 400);
}

#[test]
fn patch_that_changes_the_kind_is_invalid() {
    let err = patch(
        PatchType::Merge,
        &deployment(),
        json!({"kind": "Pod"}),
        &deployment_gvk(),
    )
    .unwrap_err();
    assert_eq!(err.code(), 422);
}

// From "Update API Objects in Place Using kubectl patch": containers merge by name.
#[test]
fn strategic_merge_adds_a_container_by_name() {
    let out = patch(
        PatchType::StrategicMerge,
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "patch-demo-ctr-2", "image": "redis"}]}}}}),
        &deployment_gvk(),
    )
    .unwrap();
    let containers = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().unwrap().len(), 2);
    assert_eq!(containers[0]["image"], "nginx:1.14");
    assert_eq!(containers[1]["name"], "patch-demo-ctr-2");
}

#[test]
fn strategic_merge_merges_into_an_existing_container_and_its_ports() {
    let out = patch(
        PatchType::StrategicMerge,
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.16", "ports": [{"containerPort": 443}],
             "env": [{"name": "A", "value": "1"}]}
        ]}}}}),
        &deployment_gvk(),
    )
    .unwrap();
    let container = &out["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.16");
    assert_eq!(
        container["ports"],
        json!([{"containerPort": 80}, {"containerPort": 443}])
    );
    assert_eq!(container["env"], json!([{"name": "A", "value": "1"}]));
}

// The documentation's tolerations example: tolerations have no patch strategy, so replace.
#[test]
fn strategic_merge_replaces_atomic_lists() {
    let out = patch(
        PatchType::StrategicMerge,
        &deployment(),
        json!({"spec": {"template": {"spec": {"tolerations": [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]}}}}),
        &deployment_gvk(),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["tolerations"],
        json!([{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}])
    );
}

#[test]
fn strategic_merge_delete_and_replace_directives() {
    let out = patch(
        PatchType::StrategicMerge,
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx", "$patch": "delete"}]}}}}),
        &deployment_gvk(),
    )
    .unwrap();
    assert_eq!(out["spec"]["template"]["spec"]["containers"], json!([]));

    let out = patch(
        PatchType::StrategicMerge,
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "x"}, {"$patch": "replace"}]}}}}),
        &deployment_gvk(),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "only", "image": "x"}])
    );

    let out = patch(
        PatchType::StrategicMerge,
        &deployment(),
        json!({"metadata": {"labels": {"$patch": "replace", "new": "yes"}}}),
        &deployment_gvk(),
    )
    .unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"new": "yes"}));

    let out = patch(
        PatchType::StrategicMerge,
        &deployment(),
        json!({"spec": {"template": {"$patch": "delete"}}}),
        &deployment_gvk(),
    )
    .unwrap();
    assert!(out["spec"].get("template").is_none());
}

#[test]
fn strategic_merge_finalizers_are_a_set_and_primitive_deletes_work() {
    let current = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a", "b"]}});
    let out = patch(
        PatchType::StrategicMerge,
        &current,
        json!({"metadata": {"finalizers": ["b", "c"]}}),
        &pod_gvk(),
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
    let out = patch(
        PatchType::StrategicMerge,
        &out,
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "c"]}}),
        &pod_gvk(),
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
}

#[test]
fn strategic_merge_set_element_order_reorders() {
    let current = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "a", "image": "1"}, {"name": "b", "image": "2"}
    ]}});
    let out = patch(
        PatchType::StrategicMerge,
        &current,
        json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}], "containers": [{"name": "a", "image": "3"}]}}),
        &pod_gvk(),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "b", "image": "2"}, {"name": "a", "image": "3"}])
    );
}

#[test]
fn strategic_merge_conditions_by_type_and_owner_references_by_uid() {
    let current = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "ownerReferences": [{"uid": "1", "name": "o", "kind": "X", "apiVersion": "v1"}]},
        "status": {"conditions": [{"type": "Available", "status": "False"}, {"type": "Progressing", "status": "True"}]}});
    let out = patch(
        PatchType::StrategicMerge,
        &current,
        json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "p", "kind": "X", "apiVersion": "v1"}]},
               "status": {"conditions": [{"type": "Available", "status": "True"}]}}),
        &deployment_gvk(),
    )
    .unwrap();
    assert_eq!(
        out["metadata"]["ownerReferences"].as_array().unwrap().len(),
        2
    );
    assert_eq!(
        out["status"]["conditions"],
        json!([{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}])
    );
}

#[test]
fn strategic_merge_service_ports_merge_by_port() {
    let current = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "name": "http"}]}});
    let out = patch(
        PatchType::StrategicMerge,
        &current,
        json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "name": "https"}]}}),
        &Gvk::new("", "v1", "Service"),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 80, "name": "http", "targetPort": 8080}, {"port": 443, "name": "https"}])
    );
}

#[test]
fn strategic_merge_rejects_missing_merge_keys_and_custom_resources() {
    let err = patch(
        PatchType::StrategicMerge,
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
        &deployment_gvk(),
    )
    .unwrap_err();
    assert_eq!(err.code(), 400);
    let err = patch(PatchType::StrategicMerge, &json!({}), json!({}), &crd_gvk()).unwrap_err();
    assert_eq!(err.code(), 415);
}

#[test]
fn custom_resources_only_merge_metadata_lists() {
    assert_eq!(
        strategy::list_kind(&crd_gvk(), &["spec", "template", "spec", "containers"]),
        strategy::ListKind::Atomic
    );
    assert_eq!(
        strategy::list_kind(&crd_gvk(), &["metadata", "finalizers"]),
        strategy::ListKind::Set
    );
}

// ---- server-side apply ----

fn ssa(
    current: Option<&Value>,
    applied: &str,
    manager: &str,
    force: bool,
) -> Result<Value, PatchError> {
    server_side_apply(
        current,
        applied.as_bytes(),
        manager,
        force,
        &deployment_gvk(),
    )
}

const APPLIED: &str = "
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels:
    app: web
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: nginx
        image: nginx:1.14
";

fn managers(object: &Value) -> Vec<(String, String)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap().to_string(),
                        e["operation"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn apply_creates_and_records_fields_v1() {
    let out = ssa(None, APPLIED, "kubectl", false).unwrap();
    assert_eq!(out["spec"]["replicas"], 3);
    assert_eq!(out["metadata"]["name"], "web");
    let entry = &out["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["apiVersion"], "apps/v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        entry["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                    ".": {}, "f:image": {}, "f:name": {}
                }}}}
            }
        })
    );
}

#[test]
fn apply_accepts_json_and_rejects_garbage() {
    let out = ssa(
        None,
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "j"}})
            .to_string(),
        "m",
        false,
    )
    .unwrap();
    assert_eq!(out["metadata"]["name"], "j");
    assert_eq!(ssa(None, "a: [", "m", false).unwrap_err().code(), 400);
    assert_eq!(
        ssa(None, "metadata: {name: x}", "m", false)
            .unwrap_err()
            .code(),
        400
    );
    assert_eq!(ssa(None, APPLIED, "", false).unwrap_err().code(), 422);
    let err = ssa(
        None,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}",
        "m",
        false,
    )
    .unwrap_err();
    assert_eq!(err.code(), 422);
}

#[test]
fn apply_conflicts_with_another_applier_unless_forced() {
    let first = ssa(None, APPLIED, "alice", false).unwrap();
    let changed = APPLIED.replace("replicas: 3", "replicas: 5");
    let err = ssa(Some(&first), &changed, "bob", false).unwrap_err();
    let PatchError::Conflict(conflicts) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        conflicts,
        &[FieldConflict {
            manager: "alice".into(),
            api_version: "apps/v1".into(),
            operation: "Apply".into(),
            subresource: None,
            field: ".spec.replicas".into()
        }]
    );
    assert_eq!(err.code(), 409);
    assert_eq!(
        err.message(),
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas"
    );
    let status = err.status();
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "FieldManagerConflict"
    );
    assert_eq!(status["details"]["causes"][0]["field"], ".spec.replicas");

    let forced = ssa(Some(&first), &changed, "bob", true).unwrap();
    assert_eq!(forced["spec"]["replicas"], 5);
    let alice = forced["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "alice")
        .unwrap();
    assert!(alice["fieldsV1"]["f:spec"].get("f:replicas").is_none());
}

#[test]
fn applying_the_same_values_shares_ownership() {
    let first = ssa(None, APPLIED, "alice", false).unwrap();
    let second = ssa(Some(&first), APPLIED, "bob", false).unwrap();
    assert_eq!(
        managers(&second),
        vec![
            ("alice".into(), "Apply".into()),
            ("bob".into(), "Apply".into())
        ]
    );
    // alice stops applying replicas: bob still owns it, so it stays.
    let without = APPLIED.replace("  replicas: 3\n", "");
    let third = ssa(Some(&second), &without, "alice", false).unwrap();
    assert_eq!(third["spec"]["replicas"], 3);
}

#[test]
fn apply_removes_fields_the_manager_no_longer_applies() {
    let with_sidecar = format!("{APPLIED}      - name: sidecar\n        image: busybox\n");
    let first = ssa(None, &with_sidecar, "kubectl", false).unwrap();
    assert_eq!(
        first["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let without = APPLIED.replace("  labels:\n    app: web\n", "");
    let second = ssa(Some(&first), &without, "kubectl", false).unwrap();
    let containers = second["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0]["name"], "nginx");
    assert!(
        second["metadata"]["labels"].get("app").is_none(),
        "{second}"
    );
}

#[test]
fn apply_keeps_fields_owned_by_an_updater_and_merges_lists_by_key() {
    let created = ssa(None, APPLIED, "kubectl", false).unwrap();
    // A controller adds an env var to the container with a plain update.
    let mut updated = created.clone();
    updated["spec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "X", "value": "1"}]);
    record_update_managed_fields(
        Some(&created),
        &mut updated,
        "controller",
        "Update",
        &deployment_gvk(),
    );
    assert_eq!(
        managers(&updated),
        vec![
            ("kubectl".into(), "Apply".into()),
            ("controller".into(), "Update".into())
        ]
    );
    // Re-applying without env keeps it: the list element merges by name.
    let reapplied = ssa(
        Some(&updated),
        &APPLIED.replace("1.14", "1.15"),
        "kubectl",
        false,
    )
    .unwrap();
    let container = &reapplied["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.15");
    assert_eq!(container["env"], json!([{"name": "X", "value": "1"}]));
    // Changing the controller's field conflicts with the Update manager.
    let steal = APPLIED.replace(
        "        image: nginx:1.14\n",
        "        image: nginx:1.14\n        env:\n        - name: X\n          value: \"2\"\n",
    );
    let err = ssa(Some(&reapplied), &steal, "kubectl", false).unwrap_err();
    let PatchError::Conflict(conflicts) = err else {
        panic!()
    };
    assert_eq!(conflicts[0].manager, "controller");
    assert_eq!(
        conflicts[0].field,
        ".spec.template.spec.containers[name=\"nginx\"].env[name=\"X\"].value"
    );
}

#[test]
fn updates_take_ownership_from_appliers_without_conflict() {
    let created = ssa(None, APPLIED, "kubectl", false).unwrap();
    let mut scaled = created.clone();
    scaled["spec"]["replicas"] = json!(7);
    record_update_managed_fields(
        Some(&created),
        &mut scaled,
        "hpa",
        "Update",
        &deployment_gvk(),
    );
    let entries = scaled["metadata"]["managedFields"].as_array().unwrap();
    let kubectl = entries.iter().find(|e| e["manager"] == "kubectl").unwrap();
    let hpa = entries.iter().find(|e| e["manager"] == "hpa").unwrap();
    assert!(kubectl["fieldsV1"]["f:spec"].get("f:replicas").is_none());
    assert_eq!(hpa["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    // kubectl re-applying replicas: 3 now conflicts with hpa.
    let err = ssa(Some(&scaled), APPLIED, "kubectl", false).unwrap_err();
    // An Update manager is named with its apiVersion (an applier is not).
    assert_eq!(
        err.message(),
        "Apply failed with 1 conflict: conflict with \"hpa\" using apps/v1: .spec.replicas"
    );
    assert_eq!(
        err.status()["details"]["causes"][0]["message"],
        "conflict with \"hpa\" using apps/v1"
    );
}

#[test]
fn update_records_creation_and_honours_a_reset() {
    let mut created = deployment();
    record_update_managed_fields(
        None,
        &mut created,
        "kubectl-create",
        "Update",
        &deployment_gvk(),
    );
    let entry = &created["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubectl-create");
    // The port leaves `protocol` out: its key carries the schema default, as
    // structured-merge-diff keys it.
    assert!(entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"]["f:ports"]
        .get("k:{\"containerPort\":80,\"protocol\":\"TCP\"}")
        .is_some());
    let mut reset = created.clone();
    reset["metadata"]["managedFields"] = json!([]);
    record_update_managed_fields(Some(&created), &mut reset, "x", "Update", &deployment_gvk());
    assert!(reset["metadata"].get("managedFields").is_none());
    // No manager: nothing recorded.
    let mut anonymous = deployment();
    record_update_managed_fields(None, &mut anonymous, "", "Update", &deployment_gvk());
    assert!(anonymous["metadata"].get("managedFields").is_none());
}

#[test]
fn sent_entries_are_the_base_and_untracked_updates_stay_untracked() {
    // A create that sends entries: every field it sets is new, so the creator takes them;
    // the sent entry keeps only what the object does not set.
    let mut created = deployment();
    created["metadata"]["managedFields"] = json!([{
        "manager": "other", "operation": "Update", "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}},
    }]);
    record_update_managed_fields(None, &mut created, "creator", "Update", &deployment_gvk());
    let entries = created["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries[0]["manager"], "other");
    assert_eq!(entries[0]["fieldsV1"], json!({"f:spec": {"f:paused": {}}}));
    assert_eq!(entries[1]["manager"], "creator");
    assert!(entries[1]["fieldsV1"]["f:spec"].get("f:replicas").is_some());

    // An update of an object without entries records none.
    let untracked = deployment();
    let mut scaled = untracked.clone();
    scaled["spec"]["replicas"] = json!(9);
    record_update_managed_fields(
        Some(&untracked),
        &mut scaled,
        "hpa",
        "Update",
        &deployment_gvk(),
    );
    assert!(
        scaled["metadata"].get("managedFields").is_none(),
        "{scaled}"
    );
}

#[test]
fn apply_through_apply_patch_needs_a_manager() {
    let err = apply_patch(
        PatchType::Apply,
        &deployment(),
        APPLIED.as_bytes(),
        &deployment_gvk(),
    )
    .unwrap_err();
    assert_eq!(err.code(), 422);
}

#[test]
fn multiple_conflicts_are_listed_per_manager() {
    let first = ssa(None, APPLIED, "alice", false).unwrap();
    let changed = APPLIED
        .replace("replicas: 3", "replicas: 5")
        .replace("app: web", "app: other");
    let err = ssa(Some(&first), &changed, "bob", false).unwrap_err();
    assert_eq!(
        err.message(),
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .metadata.labels.app\n- .spec.replicas"
    );
}

#[test]
fn strategic_merge_retain_keys_drops_unlisted_fields() {
    let current = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    let out = patch(
        PatchType::StrategicMerge,
        &current,
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        &deployment_gvk(),
    )
    .unwrap();
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn set_members_are_tracked_as_values() {
    let applied = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  finalizers: [a.io/x]\n";
    let out = server_side_apply(None, applied.as_bytes(), "m", false, &pod_gvk()).unwrap();
    assert_eq!(
        out["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {"v:\"a.io/x\"": {}}}})
    );
    let other = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  finalizers: [b.io/y]\n";
    let out = server_side_apply(Some(&out), other.as_bytes(), "n", false, &pod_gvk()).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["a.io/x", "b.io/y"]));
    // m drops its finalizer: only its own member goes.
    let none = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n";
    let out = server_side_apply(Some(&out), none.as_bytes(), "m", false, &pod_gvk()).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b.io/y"]));
}

#[test]
fn first_apply_to_an_untracked_object_conflicts_with_before_first_apply() {
    let untracked = deployment();
    let err = ssa(Some(&untracked), APPLIED, "kubectl", false).unwrap_err();
    let PatchError::Conflict(conflicts) = err else {
        panic!()
    };
    assert_eq!(conflicts[0].manager, "before-first-apply");
    assert_eq!(conflicts[0].field, ".spec.replicas");
    let same = APPLIED.replace("replicas: 3", "replicas: 2");
    let out = ssa(Some(&untracked), &same, "kubectl", false).unwrap();
    assert_eq!(
        managers(&out),
        vec![
            ("before-first-apply".into(), "Update".into()),
            ("kubectl".into(), "Apply".into())
        ]
    );
    assert_eq!(
        out["spec"]["template"]["spec"]["tolerations"],
        untracked["spec"]["template"]["spec"]["tolerations"]
    );
}

#[test]
fn a_failing_json_patch_after_a_move_to_the_root_is_an_error_not_a_panic() {
    // json-patch's own undo of a move to the root panics; found by tests/it/prop_patch.rs.
    let err = patch(
        PatchType::Json,
        &deployment(),
        json!([
            {"op": "add", "path": "/metadata/labels", "value": {}},
            {"op": "move", "from": "/apiVersion", "path": ""},
            {"op": "test", "path": "/spec/replicas", "value": 3}
        ]),
        &deployment_gvk(),
    )
    .unwrap_err();
    assert_eq!(err.code(), 422);
}

/// A widget type whose schema makes `spec.items` a map keyed by `name` and `spec.tags` a set.
fn ordered_gvk() -> Gvk {
    Gvk::new("example.com", "v1", "Widget").with_schema(Some(std::sync::Arc::new(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object",
                                "x-kubernetes-preserve-unknown-fields": true}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set",
                     "items": {"type": "string"}},
        }}},
    }))))
}

#[test]
fn apply_orders_associative_lists_as_structured_merge_diff() {
    let gvk = ordered_gvk();
    let applied = |manager: &str, spec: Value, current: Option<&Value>| {
        let body = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                          "metadata": {"name": "w"}, "spec": spec});
        server_side_apply(current, body.to_string().as_bytes(), manager, false, &gvk)
            .expect("applies")
    };
    let first = applied(
        "a",
        json!({"tags": ["a", "b", "c"], "items": [{"name": "a"}, {"name": "b"}, {"name": "c", "v": 1}]}),
        None,
    );
    // b names c then b: live elements it does not name keep their place, the ones it names
    // come in its order, merged with the live ones.
    let second = applied(
        "b",
        json!({"tags": ["c", "b", "d"], "items": [{"name": "c", "w": 2}, {"name": "b"}]}),
        Some(&first),
    );
    assert_eq!(second["spec"]["tags"], json!(["a", "c", "b", "d"]));
    assert_eq!(
        second["spec"]["items"],
        json!([{"name": "a"}, {"name": "c", "v": 1, "w": 2}, {"name": "b"}])
    );
}
