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
