//! kubectl against `rein-apiserver` for what rides on Tables and OpenAPI: `kubectl get` with
//! kube's printer columns (`-o wide`, `--sort-by`) and `create`/`apply -f` of a `List`
//! (which reads `/openapi/v2` as protobuf).

use super::kubectl::Server;

const LIST: &str = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: first
  data:
    a: b
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: second
";

#[test]
fn create_and_apply_a_list_file() {
    let server = Server::start();
    let out = server.ok_with_input(&["create", "-f", "-"], Some(LIST));
    assert!(
        out.contains("configmap/first created"),
        "create said: {out}"
    );
    assert!(
        out.contains("configmap/second created"),
        "create said: {out}"
    );
    let applied = LIST.replace("a: b", "a: c");
    let out = server.ok_with_input(&["apply", "-f", "-"], Some(&applied));
    assert!(
        out.contains("configmap/first configured"),
        "apply said: {out}"
    );
    let first = server.json(&["get", "configmap", "first"]);
    assert_eq!(first["data"]["a"], "c");
}

/// The whitespace-separated fields of each line of kubectl's table output.
fn table_lines(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn node(name: &str, labels: &str) -> String {
    format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {labels}\n")
}

#[test]
fn get_nodes_wide_and_cordoned() {
    let server = Server::start();
    let nodes = [
        node("cp", "{node-role.kubernetes.io/control-plane: \"\"}"),
        node("worker", "{}"),
    ]
    .join("---\n");
    server.ok_with_input(&["create", "-f", "-"], Some(&nodes));
    let status = r#"{"status":{"conditions":[{"type":"Ready","status":"True"}],"addresses":[{"type":"InternalIP","address":"10.1.0.1"}],"nodeInfo":{"kubeletVersion":"v1.33.0","osImage":"Ubuntu","kernelVersion":"6.8","containerRuntimeVersion":"containerd://2.0","machineID":"","systemUUID":"","bootID":"","kubeProxyVersion":"","operatingSystem":"linux","architecture":"amd64"}}}"#;
    server.ok(&[
        "patch",
        "node",
        "cp",
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ]);
    server.ok(&["cordon", "cp"]);

    let plain = table_lines(&server.ok(&["get", "nodes"]));
    assert_eq!(plain[0], ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    assert_eq!(
        plain[1][..3],
        ["cp", "Ready,SchedulingDisabled", "control-plane"]
    );
    assert_eq!(plain[1][4], "v1.33.0");
    assert_eq!(plain[2][..3], ["worker", "Unknown", "<none>"]);

    let wide = table_lines(&server.ok(&["get", "nodes", "-o", "wide"]));
    assert_eq!(
        wide[0],
        [
            "NAME",
            "STATUS",
            "ROLES",
            "AGE",
            "VERSION",
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION",
            "CONTAINER-RUNTIME",
        ]
    );
    assert_eq!(
        wide[1][5..],
        ["10.1.0.1", "<none>", "Ubuntu", "6.8", "containerd://2.0"]
    );
}

#[test]
fn get_pods_wide_and_sorted_by_object_fields() {
    let server = Server::start();
    for (name, ip) in [("b", "10.0.0.3"), ("a", "10.0.0.9"), ("c", "10.0.0.1")] {
        server.ok(&["run", name, "--image=nginx:1.27", "--restart=Never"]);
        let status = format!(
            r#"{{"status":{{"phase":"Running","podIP":"{ip}","podIPs":[{{"ip":"{ip}"}}]}}}}"#
        );
        server.ok(&[
            "patch",
            "pod",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status,
        ]);
    }
    let first_column = |args: &[&str]| -> Vec<String> {
        table_lines(&server.ok(args))
            .into_iter()
            .skip(1)
            .map(|l| l[0].clone())
            .collect()
    };
    assert_eq!(
        first_column(&["get", "pods", "--sort-by=.metadata.name"]),
        ["a", "b", "c"]
    );
    assert_eq!(
        first_column(&["get", "pods", "--sort-by=.status.podIP"]),
        ["c", "b", "a"]
    );
    let wide = table_lines(&server.ok(&["get", "pods", "-o", "wide", "--sort-by=.metadata.name"]));
    assert_eq!(
        wide[0],
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES"
        ]
    );
    assert_eq!(wide[1][..3], ["a", "0/1", "Running"]);
    assert_eq!(wide[1][5..], ["10.0.0.9", "<none>", "<none>", "<none>"]);
}

#[test]
fn get_events_crds_and_wide_deployments() {
    let server = Server::start();
    let event = "apiVersion: v1
kind: Event
metadata:
  name: web.1
involvedObject:
  kind: Pod
  name: web
  namespace: default
reason: Pulled
type: Normal
message: pulled the image
source:
  component: kubelet
";
    server.ok_with_input(&["create", "-f", "-"], Some(event));
    let events = table_lines(&server.ok(&["get", "events"]));
    assert_eq!(
        events[0],
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    assert_eq!(
        events[1][1..],
        ["Normal", "Pulled", "pod/web", "pulled", "the", "image"]
    );

    server.ok(&["apply", "-f", &super::kubectl::fixture("widget-crd.yaml")]);
    let crds = table_lines(&server.ok(&["get", "crds"]));
    assert_eq!(crds[0], ["NAME", "CREATED", "AT"]);
    assert!(crds[1][1].ends_with('Z'), "{crds:?}");

    server.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
    ]);
    let wide = table_lines(&server.ok(&["get", "deployments", "-o", "wide"]));
    assert_eq!(
        wide[0],
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    assert_eq!(wide[1][..4], ["web", "0/2", "0", "0"]);
    assert_eq!(wide[1][5..], ["nginx", "nginx:1.27", "app=web"]);
}
