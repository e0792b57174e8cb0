//! kubectl against the `rein-cluster` binary, as against a small cluster: Deployments roll
//! out, update and roll back, Pods show their nodes and IPs, Jobs complete, a Service's
//! EndpointSlice lists the ready Pods, and `--kubeconfig` puts simulated nodes on an existing
//! API server. Each test runs its own `rein-cluster` process and real kubectl; without
//! kubectl on PATH the tests print that they are skipped and pass.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long to wait for the binary's ready line, for its exit, or for a polled condition.
const WAIT: Duration = Duration::from_secs(60);

/// Whether kubectl can run here; prints why a test is skipped when it cannot.
fn kubectl_available() -> bool {
    let ok = Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipping: kubectl is not on PATH");
    }
    ok
}

/// A temporary directory per test (kubeconfig, kubectl's cache), removed on drop.
fn temp_dir() -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "rein-cluster-kubectl-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).expect("creating the test's temporary directory");
    dir
}

/// A running `rein-cluster` and the kubeconfig kubectl uses against it.
struct Cluster {
    child: Child,
    dir: PathBuf,
    kubeconfig: PathBuf,
    /// The line it printed once ready (`listening on URL`, or `simulating N nodes on URL`).
    ready_line: String,
}

impl Cluster {
    /// Starts `rein-cluster` with its embedded API server, writing the kubeconfig.
    fn start(flags: &[&str]) -> Cluster {
        let dir = temp_dir();
        let kubeconfig = dir.join("kubeconfig");
        let out = kubeconfig.display().to_string();
        let mut args = vec!["--kubeconfig-out", out.as_str()];
        args.extend(flags);
        Cluster::spawn(
            dir,
            kubeconfig.clone(),
            &args,
            "listening on http://127.0.0.1:",
        )
    }

    /// Starts `rein-cluster --kubeconfig PATH` against an existing API server.
    fn beside(kubeconfig: &Path, flags: &[&str]) -> Cluster {
        let path = kubeconfig.display().to_string();
        let mut args = vec!["--kubeconfig", path.as_str()];
        args.extend(flags);
        Cluster::spawn(temp_dir(), kubeconfig.to_path_buf(), &args, "simulating ")
    }

    fn spawn(dir: PathBuf, kubeconfig: PathBuf, args: &[&str], ready: &str) -> Cluster {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rein-cluster"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting rein-cluster");
        let stdout = child.stdout.take().expect("rein-cluster's stdout");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let mut cluster = Cluster {
            child,
            dir,
            kubeconfig,
            ready_line: String::new(),
        };
        cluster.ready_line = rx
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("rein-cluster printed no ready line within {WAIT:?}"));
        assert!(
            cluster.ready_line.starts_with(ready),
            "rein-cluster's ready line should start with {ready:?}: {}",
            cluster.ready_line
        );
        cluster
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .arg("--request-timeout=30s")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("running kubectl")
    }

    /// Runs kubectl, asserts success and returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "kubectl {args:?} failed ({}):\nstdout: {stdout}\nstderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    /// Runs kubectl with `-o json` appended and parses its output.
    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        let out = self.ok(&args);
        serde_json::from_str(&out).unwrap_or_else(|err| panic!("kubectl {args:?}: {err}: {out}"))
    }

    /// `kubectl rollout status`, which must report success.
    fn rolled_out(&self, deployment: &str) {
        let out = self.ok(&["rollout", "status", deployment, "--timeout=60s"]);
        assert!(out.contains("successfully rolled out"), "{out}");
    }

    /// Sends `signal` (`INT`, `TERM`) and waits for the process to exit.
    fn stop(mut self, signal: &str) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args([format!("-{signal}"), pid])
            .status()
            .expect("running kill");
        assert!(sent.success(), "kill -{signal} failed");
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting for rein-cluster") {
                return status;
            }
            assert!(
                started.elapsed() < WAIT,
                "rein-cluster did not stop within {WAIT:?} of SIG{signal}"
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Polls `check` until it returns `Ok`, failing after [`WAIT`] with `what` and the last
/// `Err` (a description of what was seen).
fn until<T>(what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
    let started = Instant::now();
    loop {
        match check() {
            Ok(value) => return value,
            Err(last) => assert!(
                started.elapsed() < WAIT,
                "{what} did not happen within {WAIT:?}; last seen: {last}"
            ),
        }
        thread::sleep(Duration::from_millis(200));
    }
}

/// The `items` of a kubectl list.
fn items(list: &Value) -> &[Value] {
    list["items"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The IPs of the running, not terminating Pods labelled `app=<app>`.
fn pod_ips(cluster: &Cluster, app: &str) -> BTreeSet<String> {
    let pods = cluster.json(&["get", "pods", "-l", &format!("app={app}")]);
    items(&pods)
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| p["status"]["phase"] == "Running")
        .filter_map(|p| p["status"]["podIP"].as_str().map(str::to_owned))
        .collect()
}

/// The image of the first container of a Pod template.
fn template_image(object: &Value) -> &str {
    object["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_deployment_rolls_out_updates_and_rolls_back() {
    if !kubectl_available() {
        return;
    }
    let cluster = Cluster::start(&["--nodes", "3"]);
    cluster.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1",
        "--replicas=3",
    ]);
    cluster.rolled_out("deployment/web");

    cluster.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    cluster.rolled_out("deployment/web");
    let deployment = cluster.json(&["get", "deployment", "web"]);
    assert_eq!(template_image(&deployment), "nginx:2");
    let revision = |object: &Value| {
        object["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(revision(&deployment), "2", "{deployment:#}");
    let sets = cluster.json(&["get", "replicasets", "-l", "app=web"]);
    let sets = items(&sets);
    assert_eq!(sets.len(), 2, "an old and a new ReplicaSet: {sets:#?}");
    let new = sets
        .iter()
        .find(|rs| revision(rs) == "2")
        .unwrap_or_else(|| panic!("no ReplicaSet of revision 2: {sets:#?}"));
    assert_eq!(template_image(new), "nginx:2");
    assert_eq!(new["status"]["readyReplicas"], 3, "{new:#}");
    let old = sets
        .iter()
        .find(|rs| revision(rs) == "1")
        .expect("revision 1");
    assert_eq!(template_image(old), "nginx:1");
    assert_eq!(old["spec"]["replicas"], 0, "{old:#}");

    let history = cluster.ok(&["rollout", "history", "deployment/web"]);
    assert!(history.contains("REVISION"), "{history}");
    cluster.ok(&["rollout", "undo", "deployment/web"]);
    cluster.rolled_out("deployment/web");
    let deployment = cluster.json(&["get", "deployment", "web"]);
    assert_eq!(template_image(&deployment), "nginx:1", "{deployment:#}");
    // Rolling back re-uses the first ReplicaSet, now at revision 3.
    assert_eq!(revision(&deployment), "3", "{deployment:#}");
    let sets = cluster.json(&["get", "replicasets", "-l", "app=web"]);
    assert_eq!(items(&sets).len(), 2, "{sets:#}");
    let running = until("three nginx:1 Pods running", || {
        let pods = cluster.json(&["get", "pods", "-l", "app=web"]);
        let images: Vec<String> = items(&pods)
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .map(|p| {
                p["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect();
        if images.len() == 3 && images.iter().all(|i| i == "nginx:1") {
            Ok(images)
        } else {
            Err(format!("{images:?}"))
        }
    });
    assert_eq!(running.len(), 3);

    let status = cluster.stop("INT");
    assert!(
        status.success(),
        "rein-cluster exited with {status} on SIGINT"
    );
}

#[test]
fn pods_show_their_nodes_and_ips_and_a_service_lists_the_ready_ones() {
    if !kubectl_available() {
        return;
    }
    let cluster = Cluster::start(&[]);
    let nodes = cluster.ok(&["get", "nodes"]);
    let ready: Vec<&str> = nodes.lines().filter(|l| l.contains(" Ready ")).collect();
    assert_eq!(ready.len(), 3, "three Ready nodes by default: {nodes}");
    assert!(ready.iter().all(|l| l.starts_with("sim-node-")), "{nodes}");

    cluster.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1",
        "--replicas=3",
    ]);
    cluster.rolled_out("deployment/web");
    let table = cluster.ok(&["get", "pods", "-o", "wide"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header.get(..7),
        Some(&["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"][..]),
        "{table}"
    );
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| l.starts_with("web-"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 3, "{table}");
    for row in &rows {
        assert_eq!(row.get(1..3), Some(&["1/1", "Running"][..]), "{table}");
        assert!(row[5].starts_with("10.244."), "a Pod IP: {table}");
        assert!(row[6].starts_with("sim-node-"), "a simulated node: {table}");
    }
    let ips: BTreeSet<&str> = rows.iter().map(|r| r[5]).collect();
    assert_eq!(ips.len(), 3, "each Pod has its own IP: {table}");

    cluster.ok(&["expose", "deployment", "web", "--port=80"]);
    let service = cluster.json(&["get", "service", "web"]);
    assert_eq!(service["spec"]["selector"]["app"], "web", "{service:#}");
    let want = pod_ips(&cluster, "web");
    assert_eq!(want.len(), 3, "{want:?}");
    let slice = until("the EndpointSlice of web listing the Pods' IPs", || {
        let slices = cluster.json(&[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web",
        ]);
        let ready: BTreeSet<String> = items(&slices)
            .iter()
            .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
            .filter(|e| e["conditions"]["ready"] == true)
            .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect();
        match items(&slices) {
            [slice] if ready == want => Ok(slice.clone()),
            _ => Err(format!("ready addresses {ready:?}; {slices:#}")),
        }
    });
    assert_eq!(slice["addressType"], "IPv4", "{slice:#}");
    assert_eq!(slice["ports"][0]["port"], 80, "{slice:#}");
    let endpoints = slice["endpoints"].as_array().cloned().unwrap_or_default();
    assert!(
        endpoints.iter().all(|e| e["nodeName"]
            .as_str()
            .is_some_and(|n| n.starts_with("sim-node-"))
            && e["targetRef"]["kind"] == "Pod"),
        "{slice:#}"
    );
}

#[test]
fn kubectl_waits_for_a_job_to_complete() {
    if !kubectl_available() {
        return;
    }
    let cluster = Cluster::start(&["--nodes", "1"]);
    cluster.ok(&["create", "job", "j", "--image=busybox"]);
    let out = cluster.ok(&["wait", "--for=condition=complete", "job/j", "--timeout=60s"]);
    assert_eq!(out.trim(), "job.batch/j condition met");
    let job = cluster.json(&["get", "job", "j"]);
    assert_eq!(job["status"]["succeeded"], 1, "{job:#}");
    let pods = cluster.json(&["get", "pods", "-l", "job-name=j"]);
    let phases: Vec<&Value> = items(&pods).iter().map(|p| &p["status"]["phase"]).collect();
    assert_eq!(phases, [&Value::from("Succeeded")], "{pods:#}");
}

#[test]
fn simulated_nodes_join_an_existing_api_server_and_stop_on_sigterm() {
    if !kubectl_available() {
        return;
    }
    // The existing cluster: a rein-testenv in this process, without nodes or controllers.
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let env = runtime
        .block_on(rein_testenv::TestEnv::start())
        .expect("starting rein-testenv");
    let dir = temp_dir();
    let kubeconfig = dir.join("kubeconfig");
    env.write_kubeconfig(&kubeconfig)
        .expect("writing the kubeconfig");

    let cluster = Cluster::beside(&kubeconfig, &["--nodes", "2", "--node-cpu", "2"]);
    assert!(
        cluster
            .ready_line
            .starts_with(&format!("simulating 2 nodes on {}", env.base_url())),
        "{}",
        cluster.ready_line
    );
    let nodes = cluster.json(&["get", "nodes"]);
    let names: Vec<&str> = items(&nodes)
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["sim-node-0", "sim-node-1"], "{nodes:#}");
    assert!(
        items(&nodes)
            .iter()
            .all(|n| n["status"]["capacity"]["cpu"] == "2"),
        "{nodes:#}"
    );
    cluster.ok(&["run", "p", "--image=nginx:1"]);
    let out = cluster.ok(&["wait", "--for=condition=Ready", "pod/p", "--timeout=60s"]);
    assert_eq!(out.trim(), "pod/p condition met");

    let status = cluster.stop("TERM");
    assert!(
        status.success(),
        "rein-cluster exited with {status} on SIGTERM"
    );
    // A stopped kubelet leaves its Node behind, as on a real cluster.
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["get", "node", "sim-node-0", "-o", "name"])
        .output()
        .expect("running kubectl");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "node/sim-node-0"
    );
    runtime.block_on(env.shutdown());
    let _ = std::fs::remove_dir_all(&dir);
}
