//! kubectl conformance suite: drives the real `kubectl` against the `rein-apiserver` binary.
//!
//! Each test starts its own server (so tests run in parallel) and checks kubectl's output,
//! parsed where kubectl prints JSON, not only its exit status. kubectl must be on PATH: without
//! it these tests fail with a message saying so.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// How long to wait for the server to say it is listening, or for a watch line.
const WAIT: Duration = Duration::from_secs(30);

pub(super) fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// A running `rein-apiserver` with its own kubeconfig and kubectl cache directory.
pub(super) struct Server {
    child: Child,
    dir: PathBuf,
    /// The `host:port` it listens on.
    addr: String,
}

impl Server {
    pub(super) fn start() -> Server {
        Server::start_with(&[])
    }

    /// Starts the binary with extra flags.
    pub(super) fn start_with(flags: &[&str]) -> Server {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        // `option_env!` so this file compiles before the binary target exists.
        let Some(binary) = option_env!("CARGO_BIN_EXE_rein-apiserver") else {
            panic!("the rein-apiserver binary target is missing from rein-testenv");
        };
        let dir = std::env::temp_dir().join(format!(
            "rein-kubectl-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).expect("creating the test's temporary directory");
        let mut child = Command::new(binary)
            .arg("--kubeconfig-out")
            .arg(dir.join("kubeconfig"))
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting rein-apiserver");
        let stdout = child.stdout.take().expect("rein-apiserver's stdout");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("listening on ") {
                    let _ = tx.send(line);
                }
            }
        });
        let mut server = Server {
            child,
            dir,
            addr: String::new(),
        };
        let line = rx
            .recv_timeout(WAIT)
            .expect("rein-apiserver did not print `listening on URL`");
        server.addr = line.trim_start_matches("listening on http://").to_string();
        // Started without `--listen`: the default must be loopback (a safe default, issue 10).
        assert!(
            line.starts_with("listening on http://127.0.0.1:"),
            "rein-apiserver should listen on loopback by default; ready line: {line}"
        );
        server
    }

    /// The kubeconfig the server wrote.
    pub(super) fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(self.dir.join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .arg("--request-timeout=30s")
            .args(args);
        command
    }

    pub(super) fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut command = self.command(args);
        command
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap_or_else(|err| {
            panic!(
                "could not run kubectl ({err}): the kubectl conformance suite needs `kubectl` \
                 on PATH; install it (https://kubernetes.io/docs/tasks/tools/) and re-run"
            )
        });
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().expect("kubectl's stdin");
            pipe.write_all(input.as_bytes())
                .expect("writing kubectl's stdin");
        }
        child.wait_with_output().expect("waiting for kubectl")
    }

    /// Runs kubectl, asserts success and returns stdout.
    pub(super) fn ok(&self, args: &[&str]) -> String {
        self.ok_with_input(args, None)
    }

    pub(super) fn ok_with_input(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.run(args, stdin);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "kubectl {args:?} failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
            output.status
        );
        stdout
    }

    /// Runs kubectl, asserts failure and returns stderr.
    pub(super) fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args, None);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            !output.status.success(),
            "kubectl {args:?} should have failed:\nstdout: {}\nstderr: {stderr}",
            String::from_utf8_lossy(&output.stdout)
        );
        stderr
    }

    /// Runs kubectl with `-o json` appended and parses the output.
    pub(super) fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        let out = self.ok(&args);
        serde_json::from_str(&out).unwrap_or_else(|err| panic!("kubectl {args:?}: {err}: {out}"))
    }

    /// Starts a long-running kubectl whose stdout lines arrive on the returned channel.
    fn spawn_lines(&self, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
        let mut child = self
            .command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting kubectl (is it on PATH?)");
        let stdout = child.stdout.take().expect("kubectl's stdout");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        (child, rx)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|item| {
            item["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    names.sort();
    names
}

/// Checks kubectl's answer to a delete: `KIND "NAME" deleted`, which kubectl 1.33 and later
/// end with ` from NAMESPACE namespace` for a namespaced object.
fn assert_deleted(out: &str, what: &str) {
    let out = out.trim();
    let rest = out
        .strip_prefix(what)
        .and_then(|r| r.strip_prefix(" deleted"));
    assert!(
        rest.is_some_and(|r| r.is_empty() || (r.starts_with(" from ") && r.ends_with(" namespace"))),
        "kubectl's delete answer {out:?} is not `{what} deleted`"
    );
}

/// Waits for a line matching `wanted` on a watch, failing after [`WAIT`].
fn expect_line(lines: &mpsc::Receiver<String>, wanted: impl Fn(&str) -> bool, what: &str) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if wanted(&line) => return,
            Ok(_) => continue,
            Err(err) => panic!("watch never printed {what}: {err}"),
        }
    }
}

#[test]
fn discovery_explain_and_validation() {
    let server = Server::start();

    let resources = server.ok(&["api-resources", "--no-headers"]);
    let row = |name: &str| -> Vec<String> {
        resources
            .lines()
            .map(|line| {
                line.split_whitespace()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .find(|cols| cols.first().map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("api-resources has no {name}:\n{resources}"))
    };
    assert_eq!(row("pods"), ["pods", "po", "v1", "true", "Pod"]);
    assert_eq!(
        row("deployments"),
        ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    );
    assert_eq!(
        row("namespaces"),
        ["namespaces", "ns", "v1", "false", "Namespace"]
    );
    assert_eq!(
        row("leases")[1..],
        ["coordination.k8s.io/v1", "true", "Lease"]
    );
    let namespaced = server.ok(&["api-resources", "--namespaced=false", "-o", "name"]);
    assert!(namespaced.lines().any(|l| l == "nodes"), "{namespaced}");
    assert!(!namespaced.lines().any(|l| l == "pods"), "{namespaced}");

    let explained = server.ok(&["explain", "pods.spec.containers"]);
    assert!(
        explained.contains("KIND:") && explained.contains("Pod"),
        "{explained}"
    );
    assert!(
        explained.contains("FIELD: containers <[]Container>"),
        "{explained}"
    );
    assert!(
        explained.contains("List of containers belonging to the pod"),
        "{explained}"
    );
    assert!(explained.contains("image\t<string>"), "{explained}");
    let replicas = server.ok(&["explain", "deployment.spec.replicas"]);
    assert!(replicas.contains("FIELD: replicas <integer>"), "{replicas}");

    // Default validation (strict, done by the server) refuses unknown fields.
    let bad = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  a: b\nbogus: 1\n";
    let output = server.run(&["create", "-f", "-"], Some(bad));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "unknown field accepted");
    assert!(stderr.contains("unknown field \"bogus\""), "{stderr}");
    // ... and accepts them when told to ignore.
    let out = server.ok_with_input(&["create", "--validate=false", "-f", "-"], Some(bad));
    assert_eq!(out.trim(), "configmap/bad created");
}

#[test]
fn create_get_label_annotate_patch_and_list() {
    let server = Server::start();
    let created = server.ok(&["create", "-f", &fixture("objects.yaml")]);
    for line in [
        "configmap/settings created",
        "secret/credentials created",
        "service/web created",
        "pod/web-0 created",
        "deployment.apps/api created",
    ] {
        assert!(created.contains(line), "missing {line:?} in:\n{created}");
    }
    let again = server.fails(&["create", "-f", &fixture("objects.yaml")]);
    assert!(
        again.contains("AlreadyExists") || again.contains("already exists"),
        "{again}"
    );

    // get -o json / -o yaml
    let cm = server.json(&["get", "configmap", "settings"]);
    assert_eq!(cm["data"]["colour"], "blue");
    assert!(
        cm["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    assert!(cm["metadata"]["resourceVersion"].as_str().is_some());
    let yaml = server.ok(&["get", "deployment", "api", "-o", "yaml"]);
    let deployment: Value = serde_saphyr::from_str(&yaml).expect("kubectl's YAML output");
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(deployment["kind"], "Deployment");

    // kubectl run builds its pod unstructured (JSON).
    assert_eq!(
        server
            .ok(&["run", "runner", "--image=busybox", "--labels=app=runner"])
            .trim(),
        "pod/runner created"
    );
    let runner = server.json(&["get", "pod", "runner"]);
    assert_eq!(runner["spec"]["containers"][0]["image"], "busybox");

    // label and annotate
    assert_eq!(
        server
            .ok(&["label", "pod", "web-0", "release=stable"])
            .trim(),
        "pod/web-0 labeled"
    );
    assert_eq!(
        server
            .ok(&["annotate", "pod", "web-0", "owner=team-a"])
            .trim(),
        "pod/web-0 annotated"
    );
    let pod = server.json(&["get", "pod", "web-0"]);
    assert_eq!(pod["metadata"]["labels"]["release"], "stable");
    assert_eq!(pod["metadata"]["annotations"]["owner"], "team-a");
    server.ok(&["label", "pod", "web-0", "release-"]);
    let pod = server.json(&["get", "pod", "web-0"]);
    assert!(pod["metadata"]["labels"].get("release").is_none());
    let refused = server.fails(&["label", "pod", "web-0", "tier=other"]);
    assert!(refused.contains("already has a value"), "{refused}");

    // patch: merge, json, strategic
    server.ok(&[
        "patch",
        "configmap",
        "settings",
        "--type=merge",
        "-p",
        r#"{"data":{"size":"large","colour":null}}"#,
    ]);
    let cm = server.json(&["get", "configmap", "settings"]);
    assert_eq!(cm["data"], json!({"size": "large"}));
    server.ok(&[
        "patch",
        "deployment",
        "api",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":4}]"#,
    ]);
    assert_eq!(
        server.json(&["get", "deployment", "api"])["spec"]["replicas"],
        4
    );
    let failed = server.fails(&[
        "patch",
        "deployment",
        "api",
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":9}]"#,
    ]);
    assert!(failed.contains("test operation failed"), "{failed}");
    server.ok(&[
        "patch",
        "deployment",
        "api",
        "--type=strategic",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}"#,
    ]);
    let containers =
        server.json(&["get", "deployment", "api"])["spec"]["template"]["spec"]["containers"]
            .clone();
    let container_names: Vec<&str> = containers
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(container_names, ["api", "sidecar"]);

    // selectors
    let shop = server.json(&["get", "configmaps,secrets,services,pods", "-l", "app=shop"]);
    assert_eq!(names(&shop), ["credentials", "settings", "web", "web-0"]);
    let backend = server.json(&[
        "get",
        "configmaps,pods",
        "--selector",
        "tier in (backend),app",
    ]);
    assert_eq!(names(&backend), ["settings"]);
    let not_frontend = server.json(&["get", "pods", "-l", "tier!=frontend"]);
    assert_eq!(
        names(&not_frontend),
        ["runner"],
        "no tier label also matches !="
    );
    let by_name = server.json(&[
        "get",
        "configmaps",
        "--field-selector",
        "metadata.name=settings",
    ]);
    assert_eq!(names(&by_name), ["settings"]);
    let on_node = server.json(&["get", "pods", "--field-selector", "spec.nodeName=node-a"]);
    assert_eq!(names(&on_node), ["web-0"]);
    let elsewhere = server.json(&["get", "pods", "--field-selector", "spec.nodeName=node-b"]);
    assert_eq!(names(&elsewhere), Vec::<String>::new());

    // paging
    // (YAML through `create -f`: the imperative `kubectl create configmap` sends protobuf.)
    let pages: Vec<String> = (0..7)
        .map(|i| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: page-{i}\ndata:\n  k: v\n")
        })
        .collect();
    let out = server.ok_with_input(&["create", "-f", "-"], Some(&pages.join("---\n")));
    assert_eq!(out.lines().count(), 7, "{out}");
    let paged = server.json(&["get", "configmaps", "--chunk-size=2", "-l", "!app"]);
    let paged_names = names(&paged);
    assert!(
        paged_names
            .iter()
            .filter(|n| n.starts_with("page-"))
            .count()
            == 7,
        "{paged_names:?}"
    );
    let all = server.ok(&["get", "configmaps", "--chunk-size=3", "-o", "name"]);
    assert_eq!(
        all.lines()
            .filter(|l| l.starts_with("configmap/page-"))
            .count(),
        7,
        "{all}"
    );
}

#[test]
fn apply_client_side_server_side_conflicts_and_scale() {
    let server = Server::start();
    let deployment = |replicas: u32, image: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: shop\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: shop\n  template:\n    metadata:\n      labels:\n        app: shop\n    spec:\n      containers:\n      - name: shop\n        image: {image}\n"
        )
    };

    // Client-side apply: create, unchanged, configured.
    let out = server.ok_with_input(&["apply", "-f", "-"], Some(&deployment(1, "shop:1")));
    assert_eq!(out.trim(), "deployment.apps/shop created");
    let out = server.ok_with_input(&["apply", "-f", "-"], Some(&deployment(1, "shop:1")));
    assert_eq!(out.trim(), "deployment.apps/shop unchanged");
    let out = server.ok_with_input(&["apply", "-f", "-"], Some(&deployment(3, "shop:2")));
    assert_eq!(out.trim(), "deployment.apps/shop configured");
    let live = server.json(&["get", "deployment", "shop"]);
    assert_eq!(live["spec"]["replicas"], 3);
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "shop:2"
    );
    let last_applied =
        live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .expect("client-side apply records the last applied configuration");
    assert!(last_applied.contains("shop:2"));

    // Client-side apply adds a container, then drops it: kubectl's three-way strategic merge
    // patch (built from the OpenAPI v3 list extensions) deletes it by name.
    let two = deployment(3, "shop:2").replace(
        "      - name: shop\n",
        "      - name: proxy\n        image: envoy:1\n      - name: shop\n",
    );
    server.ok_with_input(&["apply", "-f", "-"], Some(&two));
    let containers = |live: &Value| -> Vec<String> {
        live["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        containers(&server.json(&["get", "deployment", "shop"])),
        ["proxy", "shop"]
    );
    server.ok_with_input(&["apply", "-f", "-"], Some(&deployment(3, "shop:2")));
    assert_eq!(
        containers(&server.json(&["get", "deployment", "shop"])),
        ["shop"]
    );

    // scale
    assert_eq!(
        server
            .ok(&["scale", "deployment", "shop", "--replicas=5"])
            .trim(),
        "deployment.apps/shop scaled"
    );
    assert_eq!(
        server.json(&["get", "deployment", "shop"])["spec"]["replicas"],
        5
    );
    let raw = server.ok(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/default/deployments/shop/scale",
    ]);
    let scale: Value = serde_json::from_str(&raw).expect("the scale subresource is JSON");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 5);

    // Server-side apply: created with managed fields.
    let config =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"1\"\n  b: \"2\"\n";
    let out = server.ok_with_input(&["apply", "--server-side", "-f", "-"], Some(config));
    assert_eq!(out.trim(), "configmap/ssa serverside-applied");
    let cm = server.json(&["get", "configmap", "ssa", "--show-managed-fields"]);
    let entry = cm["metadata"]["managedFields"]
        .as_array()
        .and_then(|entries| entries.iter().find(|e| e["operation"] == "Apply"))
        .unwrap_or_else(|| panic!("no Apply entry: {cm}"));
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["fieldsV1"]["f:data"], json!({"f:a": {}, "f:b": {}}));

    // Another manager changing an owned field conflicts ...
    let theirs =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"changed\"\n";
    let output = server.run(
        &[
            "apply",
            "--server-side",
            "--field-manager=intruder",
            "-f",
            "-",
        ],
        Some(theirs),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "conflicting apply succeeded");
    assert!(
        stderr.contains("conflict") && stderr.contains(".data.a"),
        "{stderr}"
    );
    assert!(stderr.contains("\"kubectl\""), "{stderr}");
    // ... unless forced.
    server.ok_with_input(
        &[
            "apply",
            "--server-side",
            "--field-manager=intruder",
            "--force-conflicts",
            "-f",
            "-",
        ],
        Some(theirs),
    );
    let cm = server.json(&["get", "configmap", "ssa"]);
    assert_eq!(cm["data"], json!({"a": "changed", "b": "2"}));
    // kubectl stops applying b: it is removed.
    let fewer = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata: {}\n";
    server.ok_with_input(&["apply", "--server-side", "-f", "-"], Some(fewer));
    let cm = server.json(&["get", "configmap", "ssa"]);
    assert_eq!(cm["data"], json!({"a": "changed"}));

    // Fields set by `kubectl create` belong to its Update manager: changing them conflicts.
    let plain = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  k: v\n";
    server.ok_with_input(&["create", "-f", "-"], Some(plain));
    let changed = plain.replace("k: v", "k: w");
    let output = server.run(&["apply", "--server-side", "-f", "-"], Some(&changed));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "apply over kubectl-create's field succeeded"
    );
    assert!(
        stderr.contains("\"kubectl-create\"") && stderr.contains(".data.k"),
        "{stderr}"
    );
    let out = server.ok_with_input(&["apply", "--server-side", "-f", "-"], Some(plain));
    assert_eq!(
        out.trim(),
        "configmap/plain serverside-applied",
        "same value: shared"
    );
}

#[test]
fn delete_finalizers_wait_and_watch() {
    let server = Server::start();
    let (mut watch, lines) = server.spawn_lines(&["get", "configmaps", "--watch", "-o", "name"]);

    server.ok_with_input(
        &["create", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guarded\n  finalizers:\n  - example.com/hold\n"),
    );
    expect_line(&lines, |l| l == "configmap/guarded", "configmap/guarded");
    let _ = watch.kill();
    let _ = watch.wait();

    let out = server.ok(&["delete", "configmap", "guarded", "--wait=false"]);
    assert_deleted(&out, "configmap \"guarded\"");
    let pending = server.json(&["get", "configmap", "guarded"]);
    assert!(
        pending["metadata"]["deletionTimestamp"].is_string(),
        "{pending}"
    );

    let (mut waiter, _) =
        server.spawn_lines(&["wait", "--for=delete", "configmap/guarded", "--timeout=30s"]);
    server.ok(&[
        "patch",
        "configmap",
        "guarded",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    let status = waiter.wait().expect("waiting for kubectl wait");
    assert!(status.success(), "kubectl wait --for=delete failed");
    let gone = server.fails(&["get", "configmap", "guarded"]);
    assert!(
        gone.contains("NotFound") || gone.contains("not found"),
        "{gone}"
    );

    // wait --for=condition on a status condition set through the status subresource.
    server.ok_with_input(
        &["create", "-f", "-"],
        Some("apiVersion: v1\nkind: Pod\nmetadata:\n  name: ready\nspec:\n  containers:\n  - name: c\n    image: busybox\n"),
    );
    let (mut waiter, _) = server.spawn_lines(&[
        "wait",
        "--for=condition=Ready",
        "pod/ready",
        "--timeout=30s",
    ]);
    server.ok(&[
        "patch",
        "pod",
        "ready",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
    ]);
    assert!(
        waiter.wait().expect("kubectl wait").success(),
        "kubectl wait --for=condition=Ready failed"
    );
    let pod = server.json(&["get", "pod", "ready"]);
    assert_eq!(pod["status"]["conditions"][0]["type"], "Ready");

    let out = server.ok(&["delete", "pod", "ready"]);
    assert_deleted(&out, "pod \"ready\"");
}

#[test]
fn custom_resource_definitions() {
    let server = Server::start();
    let out = server.ok(&["apply", "-f", &fixture("crontab-crd.yaml")]);
    assert_eq!(
        out.trim(),
        "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created"
    );
    let out = server.ok(&[
        "wait",
        "--for=condition=established",
        "crd/crontabs.stable.example.com",
        "--timeout=30s",
    ]);
    assert!(out.contains("condition met"), "{out}");

    let out = server.ok(&["create", "-f", &fixture("crontab.yaml")]);
    assert_eq!(out.trim(), "crontab.stable.example.com/nightly created");
    let crontab = server.json(&["get", "crontab", "nightly"]);
    assert_eq!(crontab["spec"]["cronSpec"], "0 3 * * *");
    assert_eq!(crontab["kind"], "CronTab");
    let listed = server.json(&["get", "ct"]);
    assert_eq!(names(&listed), ["nightly"]);
    let resources = server.ok(&[
        "api-resources",
        "--api-group=stable.example.com",
        "--no-headers",
    ]);
    assert!(
        resources
            .split_whitespace()
            .collect::<Vec<_>>()
            .starts_with(&["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"]),
        "{resources}"
    );

    server.ok(&[
        "patch",
        "crontab",
        "nightly",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    assert_eq!(
        server.json(&["get", "crontab", "nightly"])["spec"]["replicas"],
        3
    );
    let strategic = server.fails(&[
        "patch",
        "crontab",
        "nightly",
        "--type=strategic",
        "-p",
        r#"{"spec":{"replicas":4}}"#,
    ]);
    assert!(!strategic.is_empty());

    let explained = server.ok(&["explain", "crontab.spec.cronSpec"]);
    assert!(
        explained.contains("The schedule in cron format."),
        "{explained}"
    );

    let bad = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: bad\nspec:\n  cronSpec: x\n  colour: red\n";
    let output = server.run(&["create", "-f", "-"], Some(bad));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("unknown field \"spec.colour\""),
        "{stderr}"
    );

    let out = server.ok(&["delete", "crontab", "nightly"]);
    assert_deleted(&out, "crontab.stable.example.com \"nightly\"");
    assert_eq!(
        names(&server.json(&["get", "crontabs"])),
        Vec::<String>::new()
    );
    server.ok(&["delete", "-f", &fixture("crontab-crd.yaml")]);
    // With kubectl's discovery cache still listing crontabs the list answers 404; with a
    // fresh cache kubectl no longer knows the type. Either way it is gone.
    let gone = server.fails(&["get", "crontabs"]);
    assert!(
        gone.contains("the server doesn't have a resource type")
            || gone.contains("the server could not find the requested resource"),
        "{gone}"
    );
    let fresh_cache = server.dir.join("fresh-cache").display().to_string();
    let fresh = server.fails(&["get", "crontabs", "--cache-dir", &fresh_cache]);
    assert!(
        fresh.contains("the server doesn't have a resource type \"crontabs\""),
        "{fresh}"
    );
}

#[test]
fn secret_string_data_is_stored_as_data() {
    let server = Server::start();
    server.ok(&["create", "-f", &fixture("objects.yaml")]);
    let secret = server.json(&["get", "secret", "credentials"]);
    assert_eq!(
        secret["data"]["password"], "aHVudGVyMg==",
        "stringData is encoded"
    );
    assert!(secret.get("stringData").is_none(), "{secret}");
}

/// Imperative `kubectl create <kind>` uses client-go's typed clients, which send protobuf
/// request bodies; each object read back as JSON has what kubectl put in it.
#[test]
fn imperative_create_commands() {
    let server = Server::start();
    let out = server.ok(&[
        "create",
        "configmap",
        "literal",
        "--from-literal=k=v",
        "--from-literal=mode=fast",
    ]);
    assert_eq!(out.trim(), "configmap/literal created");
    let cm = server.json(&["get", "configmap", "literal"]);
    assert_eq!(cm["data"], json!({"k": "v", "mode": "fast"}));
    assert!(cm["metadata"]["uid"].as_str().is_some());

    let out = server.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=password=hunter2",
    ]);
    assert_eq!(out.trim(), "secret/creds created");
    let secret = server.json(&["get", "secret", "creds"]);
    assert_eq!(secret["data"], json!({"password": "aHVudGVyMg=="}));
    assert_eq!(secret["type"], "Opaque");

    let out = server.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=3",
        "--port=8080",
    ]);
    assert_eq!(out.trim(), "deployment.apps/web created");
    let deployment = server.json(&["get", "deployment", "web"]);
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert_eq!(
        deployment["spec"]["selector"]["matchLabels"],
        json!({"app": "web"})
    );
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.27");
    assert_eq!(container["name"], "nginx");
    assert_eq!(container["ports"][0]["containerPort"], 8080);
    assert_eq!(deployment["metadata"]["generation"], 1);
    // Server-side defaults, as kube-apiserver fills them in.
    assert_eq!(deployment["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(deployment["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(container["imagePullPolicy"], "IfNotPresent");
    assert_eq!(container["ports"][0]["protocol"], "TCP");

    let out = server.ok(&["create", "namespace", "team-a"]);
    assert_eq!(out.trim(), "namespace/team-a created");
    let namespace = server.json(&["get", "namespace", "team-a"]);
    assert_eq!(namespace["status"]["phase"], "Active");
    assert_eq!(namespace["spec"]["finalizers"], json!(["kubernetes"]));

    let out = server.ok(&["create", "serviceaccount", "robot", "-n", "team-a"]);
    assert_eq!(out.trim(), "serviceaccount/robot created");
    let account = server.json(&["get", "serviceaccount", "robot", "-n", "team-a"]);
    assert_eq!(account["metadata"]["namespace"], "team-a");

    let out = server.ok(&[
        "create",
        "job",
        "once",
        "--image=busybox",
        "--",
        "echo",
        "hi",
    ]);
    assert_eq!(out.trim(), "job.batch/once created");
    let job = server.json(&["get", "job", "once"]);
    let pod_spec = &job["spec"]["template"]["spec"];
    assert_eq!(pod_spec["containers"][0]["command"], json!(["echo", "hi"]));
    assert_eq!(pod_spec["restartPolicy"], "Never");

    let out = server.ok(&["create", "service", "clusterip", "front", "--tcp=80:8080"]);
    assert_eq!(out.trim(), "service/front created");
    let service = server.json(&["get", "service", "front"]);
    assert_eq!(service["spec"]["ports"][0]["port"], 80);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], 8080);
    assert!(
        service["spec"]["clusterIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("10.")),
        "{service}"
    );
    assert_eq!(job["spec"]["backoffLimit"], 6);

    let out = server.ok(&[
        "create",
        "role",
        "reader",
        "--verb=get,list",
        "--resource=pods",
    ]);
    assert_eq!(out.trim(), "role.rbac.authorization.k8s.io/reader created");
    let role = server.json(&["get", "role", "reader"]);
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])
    );

    // A protobuf create that conflicts gets the usual 409 Status.
    let again = server.fails(&["create", "configmap", "literal", "--from-literal=k=v"]);
    assert!(again.contains("already exists"), "{again}");
}

/// `kubectl delete --cascade=background|foreground|orphan`: the garbage collector deletes,
/// waits for or orphans the dependents.
#[test]
fn delete_cascades() {
    let server = Server::start();
    let owned = |name: &str, owner: &str, finalizer: bool| {
        let owner = server.json(&["get", "configmap", owner]);
        let mut child = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true,
            }]},
        });
        if finalizer {
            child["metadata"]["finalizers"] = json!(["example.com/hold"]);
        }
        let out = server.ok_with_input(&["create", "-f", "-"], Some(&child.to_string()));
        assert_eq!(out.trim(), format!("configmap/{name} created"));
    };
    for owner in ["owner-bg", "owner-fg", "owner-or"] {
        server.ok(&["create", "configmap", owner]);
    }
    owned("child-bg", "owner-bg", false);
    owned("child-fg", "owner-fg", true);
    owned("child-or", "owner-or", false);

    let out = server.ok(&["delete", "configmap", "owner-bg", "--cascade=background"]);
    assert_deleted(&out, "configmap \"owner-bg\"");
    server.ok(&[
        "wait",
        "--for=delete",
        "configmap/child-bg",
        "--timeout=30s",
    ]);

    let out = server.ok(&[
        "delete",
        "configmap",
        "owner-fg",
        "--cascade=foreground",
        "--wait=false",
    ]);
    assert_deleted(&out, "configmap \"owner-fg\"");
    let owner = server.json(&["get", "configmap", "owner-fg"]);
    assert_eq!(
        owner["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert!(owner["metadata"]["deletionTimestamp"].is_string());
    server.ok(&[
        "wait",
        "--for=jsonpath={.metadata.deletionTimestamp}",
        "configmap/child-fg",
        "--timeout=30s",
    ]);
    server.ok(&[
        "patch",
        "configmap",
        "child-fg",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    server.ok(&[
        "wait",
        "--for=delete",
        "configmap/owner-fg",
        "--timeout=30s",
    ]);
    server.fails(&["get", "configmap", "child-fg"]);

    let out = server.ok(&["delete", "configmap", "owner-or", "--cascade=orphan"]);
    assert_deleted(&out, "configmap \"owner-or\"");
    server.fails(&["get", "configmap", "owner-or"]);
    let child = server.json(&["get", "configmap", "child-or"]);
    assert!(
        child["metadata"].get("ownerReferences").is_none(),
        "{child}"
    );
}

/// `--too-large-rv-wait` sets how long a list from a future resourceVersion waits before its
/// 504; a value that is not a non-negative number of seconds stops the binary with an error.
/// Plain HTTP, no kubectl: client-go would retry the 504 (it carries `Retry-After`).
#[test]
fn apiserver_flag_too_large_rv_wait() {
    use std::io::Read;
    use std::net::TcpStream;

    let server = Server::start_with(&["--too-large-rv-wait", "0.05"]);
    let mut stream = TcpStream::connect(&server.addr).expect("connects");
    stream.set_read_timeout(Some(WAIT)).expect("read timeout");
    write!(
        stream,
        "GET /api/v1/namespaces/default/configmaps?resourceVersion=99999999&\
         resourceVersionMatch=NotOlderThan HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        server.addr
    )
    .expect("sends");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
    assert!(
        answer.contains("Timeout: Too large resource version: 99999999"),
        "{answer}"
    );

    let binary = env!("CARGO_BIN_EXE_rein-apiserver");
    for bad in ["soon", "-1", "NaN", "inf"] {
        let output = Command::new(binary)
            .arg(format!("--too-large-rv-wait={bad}"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("runs rein-apiserver");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("--too-large-rv-wait"), "{bad}: {stderr}");
    }
}

/// kubectl asks for aggregated discovery first: one request each for `/api` and `/apis`, no
/// per-group-version lists, and a CRD's resource appears with its short name.
#[test]
fn api_resources_use_aggregated_discovery() {
    let server = Server::start();
    server.ok(&["apply", "-f", &fixture("crontab-crd.yaml")]);
    // A fresh cache, so no answer is a 304 to an earlier command's `If-None-Match`.
    let fresh = server.dir.join("fresh-cache").display().to_string();
    let output = server.run(
        &[
            "api-resources",
            "--no-headers",
            "-v=8",
            "--cache-dir",
            &fresh,
        ],
        None,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(Path::new(&fresh).exists(), "kubectl used the fresh cache");
    assert!(
        stderr.contains(
            "Content-Type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("/apis/apps/v1"),
        "legacy per-version lists fetched: {stderr}"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("crontabs "))
        .unwrap_or_else(|| panic!("no crontabs in {stdout}"));
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"]
    );
}

#[test]
fn events_through_either_api_and_componentstatuses() {
    let server = Server::start();
    let events = r#"
apiVersion: v1
kind: Event
metadata: {name: old-style, namespace: default}
involvedObject: {kind: Pod, name: web, namespace: default}
reason: Pulled
message: pulled the image
type: Normal
source: {component: kubelet}
firstTimestamp: "2025-01-01T00:00:00Z"
lastTimestamp: "2025-01-01T00:00:00Z"
count: 1
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: new-style, namespace: default}
eventTime: "2025-01-01T00:00:00.000000Z"
regarding: {kind: Deployment, name: web, namespace: default}
reportingController: example.com/ctl
reportingInstance: ctl-0
action: Scale
reason: Scaled
note: scaled to three
type: Warning
"#;
    server.ok_with_input(&["create", "-f", "-"], Some(events));
    // kube's Table of events names the objects only in its wide columns; `kubectl events`
    // prints the objects' fields itself.
    for args in [
        &["get", "events", "-o", "wide"][..],
        &["get", "events.v1.events.k8s.io", "-o", "wide"][..],
    ] {
        let out = server.ok(args);
        for expected in ["old-style", "new-style", "Pulled", "Scaled"] {
            assert!(out.contains(expected), "kubectl {args:?}:\n{out}");
        }
    }
    let out = server.ok(&["events"]);
    for expected in ["Pulled", "Scaled", "Pod/web", "Deployment/web"] {
        assert!(out.contains(expected), "kubectl events:\n{out}");
    }
    let out = server.ok(&["events", "--types=Warning"]);
    assert!(
        out.contains("scaled to three") && !out.contains("pulled the image"),
        "{out}"
    );
    let listed = server.json(&["get", "events.v1.events.k8s.io", "old-style", "-o", "json"]);
    assert_eq!(listed["note"], "pulled the image");
    assert_eq!(listed["regarding"]["name"], "web");

    let out = server.run(&["get", "componentstatuses"], None);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("v1 ComponentStatus is deprecated in v1.19+"),
        "{stderr}"
    );
    for line in ["scheduler", "controller-manager", "etcd-0"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(line) && l.contains("Healthy") && l.contains("ok")),
            "{stdout}"
        );
    }
    assert!(stdout.starts_with("NAME"), "{stdout}");
    assert!(
        stdout.contains("STATUS") && stdout.contains("MESSAGE"),
        "{stdout}"
    );
}

/// Starts `rein-apiserver` with `flags`, runs one kubectl command against the kubeconfig it
/// wrote, and answers (the ready line, the server's stderr, the kubeconfig, kubectl's output).
fn run_against_binary(flags: &[&str], args: &[&str]) -> (String, String, String, Output) {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let binary = env!("CARGO_BIN_EXE_rein-apiserver");
    let dir = std::env::temp_dir().join(format!(
        "rein-kubectl-flags-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(binary)
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting rein-apiserver");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("listening on ") {
                let _ = tx.send(line);
            }
        }
    });
    let line = rx.recv_timeout(WAIT).expect("rein-apiserver started");
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--request-timeout=30s")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("runs kubectl");
    let _ = child.kill();
    let _ = child.wait();
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    let written = std::fs::read_to_string(&kubeconfig).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (line, stderr, written, output)
}

/// `--token` without `--tls`: kubectl sends no bearer token to an `http://` server, so the
/// written kubeconfig would make every request anonymous. The binary serves HTTPS instead
/// (and says so), and kubectl, with the kubeconfig it wrote, is authenticated.
#[test]
fn a_token_implies_tls_so_kubectl_sends_it() {
    let (line, stderr, _, output) = run_against_binary(
        &["--token", "s3cret"],
        &["get", "namespace", "default", "-o", "name"],
    );
    assert!(line.starts_with("listening on https://"), "{line}");
    assert!(stderr.contains("imply --tls"), "{stderr}");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "namespace/default"
    );
}

/// `--tls` without `--token` wrote a kubeconfig with no user, and kubectl stopped at "Please
/// enter Username". Its user is now an admin client certificate the server's CA issued.
#[test]
fn tls_without_a_token_writes_a_client_certificate_user() {
    let (line, _, kubeconfig, output) =
        run_against_binary(&["--tls"], &["get", "namespace", "default", "-o", "name"]);
    assert!(line.starts_with("listening on https://"), "{line}");
    assert!(
        kubeconfig.contains("client-certificate-data"),
        "{kubeconfig}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("Username"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "namespace/default"
    );
}
