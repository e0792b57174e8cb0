//! Rows of kube's printers for objects the server cannot easily be driven into (deleted
//! Pods, lost nodes, sidecars, events of both APIs).

use serde_json::{Value, json};

use super::Row;
use super::core_kinds::{event_row, node_row, pod_row};

fn now() -> jiff::Timestamp {
    "2025-01-01T01:00:00Z".parse().expect("time")
}

fn pod(spec: Value, status: Value) -> Value {
    json!({
        "metadata": {"name": "p", "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": spec,
        "status": status,
    })
}

fn cell(row: &Row, i: usize) -> &str {
    row.cells[i].as_str().unwrap_or_default()
}

#[test]
fn deleted_pods_read_terminating_unless_finished_or_lost() {
    let mut running = pod(
        json!({"containers": [{"name": "a"}]}),
        json!({"phase": "Running"}),
    );
    running["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:59:00Z");
    assert_eq!(cell(&pod_row(&running, now()), 2), "Terminating");
    running["status"]["reason"] = json!("NodeLost");
    assert_eq!(cell(&pod_row(&running, now()), 2), "Unknown");

    let mut done = pod(
        json!({"containers": [{"name": "a"}]}),
        json!({"phase": "Failed", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 137, "signal": 9}}},
        ]}),
    );
    done["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:59:00Z");
    let row = pod_row(&done, now());
    assert_eq!(cell(&row, 2), "Signal:9");
    assert_eq!(
        row.conditions.as_ref().map(|c| &c[0]["reason"]),
        Some(&json!("Failed"))
    );
    assert_eq!(cell(&row, 4), "60m");
}

#[test]
fn init_failures_sidecars_and_restarts() {
    let failed_init = pod(
        json!({"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]}),
        json!({"phase": "Pending", "initContainerStatuses": [
            {"name": "i", "restartCount": 2, "state": {"terminated": {"exitCode": 1}},
             "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2025-01-01T00:55:00Z"}}},
        ]}),
    );
    let row = pod_row(&failed_init, now());
    assert_eq!(cell(&row, 2), "Init:ExitCode:1");
    assert_eq!(cell(&row, 3), "2 (5m ago)");

    let sidecar = pod(
        json!({
            "initContainers": [{"name": "proxy", "restartPolicy": "Always"}],
            "containers": [{"name": "a"}],
        }),
        json!({
            "phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
            "initContainerStatuses": [
                {"name": "proxy", "started": true, "ready": true, "restartCount": 1,
                 "state": {"running": {}}},
            ],
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
            ],
        }),
    );
    let row = pod_row(&sidecar, now());
    assert_eq!(cell(&row, 1), "2/2");
    assert_eq!(cell(&row, 2), "Running");
    assert_eq!(cell(&row, 3), "1");

    let completed_with_running = pod(
        json!({"containers": [{"name": "a"}, {"name": "b"}]}),
        json!({"phase": "Running", "containerStatuses": [
            {"name": "a", "ready": false, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "b", "ready": true, "state": {"running": {}}},
        ]}),
    );
    // Statuses are read last to first: `a`'s Completed is the reason, `b` runs, and the Pod
    // has no Ready condition.
    assert_eq!(
        cell(&pod_row(&completed_with_running, now()), 2),
        "NotReady"
    );
}

#[test]
fn nodes_roles_and_events_of_both_apis() {
    let node = json!({
        "metadata": {"name": "n", "labels": {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/": "x"}},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
    });
    let row = node_row(&node, now());
    assert_eq!(cell(&row, 1), "NotReady");
    assert_eq!(cell(&row, 2), "worker");

    let core = json!({
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
        "reason": "Pulled", "type": "Normal", "message": " pulled \n",
        "source": {"component": "kubelet", "host": "node-a"},
        "firstTimestamp": "2025-01-01T00:00:00Z", "lastTimestamp": "2025-01-01T00:58:00Z",
        "count": 4,
    });
    let row = event_row(&core, now());
    assert_eq!(
        row.cells,
        vec![
            json!("2m"),
            json!("Normal"),
            json!("Pulled"),
            json!("pod/p"),
            json!("spec.containers{a}"),
            json!("kubelet, node-a"),
            json!("pulled"),
            json!("60m"),
            json!(4),
            json!("e1"),
        ]
    );
    let modern = json!({
        "metadata": {"name": "e2"},
        "regarding": {"kind": "Deployment", "name": "web"},
        "reason": "Scaled", "type": "Normal", "note": "scaled up",
        "reportingController": "deployment-controller",
        "eventTime": "2025-01-01T00:59:30.000000Z",
    });
    let row = event_row(&modern, now());
    assert_eq!(cell(&row, 0), "30s");
    assert_eq!(cell(&row, 3), "deployment/web");
    assert_eq!(cell(&row, 5), "deployment-controller");
    assert_eq!(cell(&row, 6), "scaled up");
    assert_eq!(row.cells[8], json!(1));
}

#[test]
fn replica_sets_and_replication_controllers_print_alike_but_for_the_selector() {
    let object = |selector: Value| {
        json!({
            "metadata": {"name": "web", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {
                "replicas": 3,
                "selector": selector,
                "template": {"spec": {"containers": [
                    {"name": "app", "image": "app:1"}, {"name": "side", "image": "side:1"},
                ]}},
            },
            "status": {"replicas": 2, "readyReplicas": 1},
        })
    };
    let cases = [
        (
            "apps",
            "replicasets",
            "io.k8s.api.apps.v1.ReplicaSet",
            object(json!({"matchLabels": {"app": "web"}})),
        ),
        (
            "",
            "replicationcontrollers",
            "io.k8s.api.core.v1.ReplicationController",
            object(json!({"app": "web"})),
        ),
    ];
    for (group, plural, definition, obj) in cases {
        let printer = super::printer(group, plural).expect("a printer");
        let columns: Vec<_> = printer
            .columns
            .iter()
            .map(|c| (c.name, c.kind, c.priority))
            .collect();
        assert_eq!(
            columns,
            [
                ("Name", "string", 0),
                ("Desired", "integer", 0),
                ("Current", "integer", 0),
                ("Ready", "integer", 0),
                ("Age", "string", 0),
                ("Containers", "string", 1),
                ("Images", "string", 1),
                ("Selector", "string", 1),
            ],
            "{plural}"
        );
        let described = |c: usize, definition: &str, field: &str| {
            let want = crate::openapi::field_description(definition, field);
            assert_eq!(printer.columns[c].description, want, "{plural} column {c}");
        };
        described(1, &format!("{definition}Spec"), "replicas");
        described(2, &format!("{definition}Status"), "replicas");
        described(3, &format!("{definition}Status"), "readyReplicas");
        described(7, &format!("{definition}Spec"), "selector");
        assert_eq!(
            (printer.row)(&obj, now()).cells,
            [
                json!("web"),
                json!(3),
                json!(2),
                json!(1),
                json!("60m"),
                json!("app,side"),
                json!("app:1,side:1"),
                json!("app=web"),
            ],
            "{plural}"
        );
    }
}
