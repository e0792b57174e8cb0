//! kubectl against Pod subresources: `kubectl logs` and `kubectl exec` fail and succeed as on
//! a cluster without a reachable kubelet, and `kubectl drain` evicts through `pods/eviction`,
//! retrying while a PodDisruptionBudget blocks it.

use super::kubectl::Server;

const READY: &str =
    r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;

fn pod_yaml(name: &str, node: Option<&str>) -> String {
    let node = node
        .map(|n| format!("  nodeName: {n}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels:\n    app: web\nspec:\n{node}  containers:\n  - name: app\n    image: nginx\n"
    )
}

#[test]
fn kubectl_logs_and_exec_without_a_kubelet() {
    let server = Server::start();
    server.ok_with_input(&["apply", "-f", "-"], Some(&pod_yaml("p", None)));
    // Not scheduled yet: no logs, nothing to exec into.
    assert_eq!(server.ok(&["logs", "p"]), "");
    let stderr = server.fails(&["logs", "p", "-c", "nope"]);
    assert!(
        stderr.contains("container nope is not valid for pod p"),
        "{stderr}"
    );
    let stderr = server.fails(&["exec", "p", "--", "ls"]);
    assert!(
        stderr.contains("pod p does not have a host assigned"),
        "{stderr}"
    );

    // Scheduled to a node that does not exist.
    server.ok_with_input(&["apply", "-f", "-"], Some(&pod_yaml("q", Some("node-a"))));
    let stderr = server.fails(&["logs", "q"]);
    assert!(stderr.contains("nodes \"node-a\" not found"), "{stderr}");
    let stderr = server.fails(&["exec", "q", "--", "ls"]);
    assert!(stderr.contains("nodes \"node-a\" not found"), "{stderr}");
}

#[test]
fn kubectl_drain_evicts_and_retries_while_a_budget_blocks() {
    let server = Server::start_with(&["--kubelet", "at-once"]);
    server.ok_with_input(
        &["apply", "-f", "-"],
        Some("apiVersion: v1\nkind: Node\nmetadata:\n  name: node-a\n"),
    );
    server.ok_with_input(
        &["apply", "-f", "-"],
        Some(&pod_yaml("web-0", Some("node-a"))),
    );
    server.ok(&[
        "patch",
        "pod",
        "web-0",
        "--subresource=status",
        "--type=merge",
        "-p",
        READY,
    ]);
    server.ok_with_input(
        &["apply", "-f", "-"],
        Some(
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\n  namespace: default\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n      app: web\n",
        ),
    );
    let budget = server.json(&["get", "pdb", "web"]);
    assert_eq!(budget["status"]["disruptionsAllowed"], 0, "{budget}");
    assert_eq!(budget["status"]["currentHealthy"], 1, "{budget}");

    let stderr = server.fails(&["drain", "node-a", "--force", "--timeout=2s"]);
    assert!(
        stderr.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{stderr}"
    );
    let node = server.json(&["get", "node", "node-a"]);
    assert_eq!(node["spec"]["unschedulable"], true, "drain cordons first");
    assert_eq!(
        server.json(&["get", "pod", "web-0"])["metadata"]["name"],
        "web-0"
    );

    server.ok(&["delete", "pdb", "web"]);
    let out = server.ok(&["drain", "node-a", "--force", "--timeout=30s"]);
    assert!(out.contains("evicted"), "{out}");
    let pods = server.json(&["get", "pods"]);
    assert_eq!(pods["items"].as_array().map(Vec::len), Some(0), "{pods}");
}
