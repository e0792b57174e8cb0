//! `cargo rein` end to end, through the built `cargo-rein` binary: `new` writes an operator
//! crate whose tests pass; `manifests` writes YAML the API server accepts (server-side dry run,
//! by kube-client and by kubectl when it is on the PATH); `rbac --check` passes with the
//! generated rules and fails, naming what is uncovered, when one is removed; and the operator's
//! own binary, run as its ServiceAccount against rein-testenv with RBAC enforced and the
//! manifests applied, reconciles a Backup with no request refused.
//!
//! **Slow.** The first test to run scaffolds one crate, shared by all of them, and builds it
//! (`cargo test`, then `cargo run -- manifests`) with the workspace's own target directory,
//! offline, so that rein's crates and their dependencies are reused and only the scaffolded
//! crate's code compiles: about half a minute once the workspace is built; minutes when rein
//! must compile first.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use cargo_rein::manifests::{Manifests, yaml};
use cargo_rein::rbac;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube_client::Client;
use kube_client::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

/// The scaffolded crate's name: of its binary, ServiceAccount and roles.
const NAME: &str = "rein-e2e-op";
/// The namespace its manifests deploy into (the default of `<bin> manifests`).
const NAMESPACE: &str = "rein-e2e-op-system";
/// How long the operator may take to reconcile, or to stop.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The scaffolded crate, built and tested once for every test here.
static OPERATOR: LazyLock<Operator> = LazyLock::new(Operator::scaffold);

/// The crate `cargo rein new` wrote, and what its first commands answered.
struct Operator {
    /// Its `Cargo.toml`.
    manifest: PathBuf,
    /// A scratch directory beside it.
    scratch: PathBuf,
    /// What `cargo test` printed.
    test_output: String,
    /// The request log its tests exported (`REIN_TESTENV_REQUEST_LOG`).
    request_log: PathBuf,
    /// `cargo rein manifests` on stdout.
    yaml: String,
    /// `cargo rein manifests --out DIR`.
    deploy: PathBuf,
    /// The operator's binary, built by `cargo rein manifests`.
    binary: PathBuf,
}

impl Operator {
    fn scaffold() -> Operator {
        let started = Instant::now();
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-rein-e2e");
        // One fixed place, so the crate keeps one package id and its incremental state from
        // run to run instead of leaving a new set of artifacts in the target dir each time.
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("creating the scratch directory");
        let dir = root.join(NAME);
        let rein = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");

        let new = cargo_rein(
            &root,
            [
                OsStr::new("new"),
                dir.as_os_str(),
                OsStr::new("--rein-path"),
                rein.as_os_str(),
            ],
        );
        assert_success("cargo rein new", &new);
        assert!(stdout(&new).contains("created"), "{}", stdout(&new));
        let manifest = dir.join("Cargo.toml");
        assert!(
            dir.join("Cargo.lock").is_file(),
            "--rein-path copies rein's Cargo.lock"
        );

        let request_log = root.join("requests.jsonl");
        let test = cargo(&dir)
            .args(["test", "--offline"])
            .env(rein_testenv::REQUEST_LOG_ENV, &request_log)
            .output()
            .expect("running cargo test");
        assert_success("cargo test in the scaffolded crate", &test);
        let test_output = format!("{}{}", stdout(&test), String::from_utf8_lossy(&test.stderr));

        let manifests = cargo_rein(&dir, ["manifests"]);
        assert_success("cargo rein manifests", &manifests);
        let deploy = root.join("deploy");
        let out = cargo_rein(
            &dir,
            [
                OsStr::new("manifests"),
                OsStr::new("--out"),
                deploy.as_os_str(),
            ],
        );
        assert_success("cargo rein manifests --out", &out);

        eprintln!(
            "scaffolded, tested and built {NAME} in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Operator {
            manifest,
            scratch: root,
            test_output,
            request_log,
            yaml: stdout(&manifests),
            deploy,
            binary: target_dir().join("debug").join(NAME),
        }
    }

    fn manifests(&self) -> Manifests {
        Manifests::from_yaml(Path::new("stdout"), &self.yaml).expect("the manifests are YAML")
    }

    /// `cargo rein ARGS --manifest-path <the crate>`, run from the scratch directory.
    fn cargo_rein(&self, args: &[&str]) -> Output {
        let args = args.iter().map(OsStr::new);
        let manifest = [OsStr::new("--manifest-path"), self.manifest.as_os_str()];
        cargo_rein(&self.scratch, args.chain(manifest))
    }
}

/// The workspace's target directory, where rein's crates are already built.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}

/// `program` in `dir`, building into the workspace's target dir, offline, with no request
/// log exported unless the caller asks.
fn command(program: impl AsRef<OsStr>, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove(rein_testenv::REQUEST_LOG_ENV)
        .stdin(Stdio::null());
    command
}

/// Cargo (the one running these tests) in `dir`.
fn cargo(dir: &Path) -> Command {
    command(
        std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()),
        dir,
    )
}

/// The built `cargo-rein` binary in `dir`.
fn cargo_rein<A: AsRef<OsStr>>(dir: &Path, args: impl IntoIterator<Item = A>) -> Output {
    command(env!("CARGO_BIN_EXE_cargo-rein"), dir)
        .args(args)
        .output()
        .expect("running cargo-rein")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[track_caller]
fn assert_success(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        stdout(output),
        stderr(output)
    );
}

/// The API for `object`'s kind, in its namespace if it has one.
fn api_for(client: &Client, object: &Value) -> Api<DynamicObject> {
    let api_version = object["apiVersion"].as_str().expect("apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().expect("kind");
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

fn describe(object: &Value) -> String {
    format!("{} {}", object["kind"], object["metadata"]["name"])
}

/// Creates `object`, for real or as a server-side dry run.
async fn create(
    client: &Client,
    object: &Value,
    dry_run: bool,
) -> Result<DynamicObject, kube_client::Error> {
    let dynamic: DynamicObject = serde_json::from_value(object.clone()).expect("an object");
    let pp = PostParams {
        dry_run,
        ..PostParams::default()
    };
    api_for(client, object).create(&pp, &dynamic).await
}

/// Polls `check` until it answers `Some`; `None` after [`TIMEOUT`].
async fn eventually<T, F, Fut>(mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn new_writes_a_crate_whose_tests_pass() {
    let op = &*OPERATOR;
    for test in [
        "a_backup_gets_a_config_map_a_cron_job_a_finalizer_and_ready",
        "deleting_a_backup_runs_the_finalizer",
        "probes_and_metrics_are_served",
        "runs_as_its_service_account_with_the_generated_rbac",
    ] {
        assert!(
            op.test_output.contains(&format!("test {test} ... ok")),
            "{test} did not pass:\n{}",
            op.test_output
        );
    }
    let requests = rbac::read_log(&op.request_log).expect("the exported request log");
    let user = format!("system:serviceaccount:{NAMESPACE}:{NAME}");
    assert!(
        requests.iter().any(|r| r.user == user),
        "the tests ran the operator as its ServiceAccount"
    );
}

#[tokio::test]
async fn manifests_apply_with_a_server_side_dry_run() {
    let op = &*OPERATOR;
    let manifests = op.manifests();
    let kinds: Vec<&str> = manifests
        .objects()
        .iter()
        .filter_map(|o| o["kind"].as_str())
        .collect();
    for kind in [
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let from_dir = Manifests::read(&op.deploy).expect("reading --out");
    let key = |o: &Value| (o["kind"].to_string(), o["metadata"]["name"].to_string());
    let mut a: Vec<_> = manifests.objects().iter().map(key).collect();
    let mut b: Vec<_> = from_dir.objects().iter().map(key).collect();
    a.sort();
    b.sort();
    assert_eq!(a, b, "--out writes the objects stdout shows");

    let env = TestEnv::start().await.expect("a test server");
    let client = env.client();
    let (namespaced, cluster): (Vec<&Value>, Vec<&Value>) = manifests
        .objects()
        .iter()
        .partition(|o| o["metadata"]["namespace"].is_string());
    for object in &cluster {
        create(&client, object, true)
            .await
            .unwrap_or_else(|e| panic!("dry run of {}: {e}", describe(object)));
    }
    let crd = cluster
        .iter()
        .find(|o| o["kind"] == "CustomResourceDefinition")
        .expect("a CRD");
    let name = crd["metadata"]["name"].as_str().unwrap();
    assert!(
        api_for(&client, crd).get_opt(name).await.unwrap().is_none(),
        "a dry run persists nothing"
    );
    // The namespaced objects need their namespace to exist, as with `kubectl apply --dry-run`.
    let ns = cluster.iter().find(|o| o["kind"] == "Namespace").unwrap();
    create(&client, ns, false)
        .await
        .expect("creating the namespace");
    for object in &namespaced {
        create(&client, object, true)
            .await
            .unwrap_or_else(|e| panic!("dry run of {}: {e}", describe(object)));
    }
    env.shutdown().await;
}

#[tokio::test]
async fn kubectl_applies_the_manifests_with_a_server_side_dry_run() {
    if Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_err()
    {
        eprintln!("kubectl is not on the PATH; skipping");
        return;
    }
    let op = &*OPERATOR;
    let env = TestEnv::start().await.expect("a test server");
    let dir = op.scratch.join("kubectl");
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    env.write_kubeconfig(&kubeconfig).unwrap();
    let kubectl = |args: &[&str]| {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(dir.join("cache"))
            .args(args);
        // kubectl blocks its thread; the server runs on this test's runtime.
        tokio::task::spawn_blocking(move || command.output().expect("running kubectl"))
    };
    let file = |name: &str| op.deploy.join(name).display().to_string();
    let (namespace, crds) = (file("00-namespace.yaml"), file("01-crds.yaml"));
    let first = kubectl(&["apply", "--dry-run=server", "-f", &namespace, "-f", &crds])
        .await
        .unwrap();
    assert_success("kubectl apply --dry-run=server (namespace, CRD)", &first);
    // As for any `kubectl apply --dry-run=server` of a new namespace's objects: it must exist.
    let created = kubectl(&["apply", "-f", &namespace]).await.unwrap();
    assert_success("kubectl apply (namespace)", &created);
    let deploy = op.deploy.display().to_string();
    let all = kubectl(&["apply", "--dry-run=server", "-f", &deploy])
        .await
        .unwrap();
    assert_success("kubectl apply --dry-run=server -f DIR", &all);
    let out = stdout(&all);
    for line in [
        format!("deployment.apps/{NAME} created (server dry run)"),
        format!("clusterrole.rbac.authorization.k8s.io/{NAME} created (server dry run)"),
    ] {
        assert!(out.contains(&line), "{line:?} not in:\n{out}");
    }
    env.shutdown().await;
}

#[test]
fn rbac_check_passes_with_the_generated_rules_and_fails_without_one() {
    let op = &*OPERATOR;
    let log = op.request_log.display().to_string();
    let check = op.cargo_rein(&["rbac", "--check", "--request-log", &log]);
    assert_success("cargo rein rbac --check --request-log", &check);
    assert!(
        stderr(&check).contains("cover every request"),
        "{}",
        stderr(&check)
    );

    // One generated rule less: the ClusterRole's rule for CronJobs.
    let mut objects = op.manifests().objects().to_vec();
    let role = objects
        .iter_mut()
        .find(|o| o["kind"] == "ClusterRole")
        .expect("a ClusterRole");
    let rules = role["rules"].as_array_mut().unwrap();
    let before = rules.len();
    rules.retain(|r| r["resources"] != json!(["cronjobs"]));
    assert_eq!(rules.len(), before - 1, "one rule for CronJobs: {rules:#?}");
    let edited = op.scratch.join("without-cronjobs.yaml");
    std::fs::write(&edited, yaml(objects.iter()).unwrap()).unwrap();
    let edited = edited.display().to_string();

    let check = op.cargo_rein(&[
        "rbac",
        "--check",
        "--request-log",
        &log,
        "--manifests",
        &edited,
    ]);
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let err = stderr(&check);
    assert!(
        err.contains("not covered: create cronjobs (batch)")
            && err.contains("not covered: watch cronjobs (batch)"),
        "the uncovered requests are named:\n{err}"
    );
    assert!(
        !err.contains("configmaps"),
        "only CronJobs are uncovered:\n{err}"
    );

    // Without --check, the rules the log needs are added back.
    let merged = op.cargo_rein(&["rbac", "--request-log", &log, "--manifests", &edited]);
    assert_success("cargo rein rbac --request-log --manifests", &merged);
    let rules = Manifests::from_yaml(Path::new("stdout"), &stdout(&merged)).unwrap();
    let requests = rbac::read_log(&op.request_log).unwrap();
    let grants = rbac::granted(&rules, NAMESPACE, NAME);
    let user = format!("system:serviceaccount:{NAMESPACE}:{NAME}");
    let missing = rbac::uncovered(&grants, &requests, &user, NAMESPACE);
    assert!(missing.is_empty(), "{missing:#?}");
}

#[test]
fn rbac_from_tests_check_runs_the_tests_and_passes() {
    let op = &*OPERATOR;
    let check = op.cargo_rein(&["rbac", "--from-tests", "--check"]);
    assert_success("cargo rein rbac --from-tests --check", &check);
    assert!(
        stderr(&check).contains("cover every request"),
        "{}",
        stderr(&check)
    );
}

#[tokio::test]
async fn the_operator_binary_reconciles_as_its_service_account_with_rbac_enforced() {
    let op = &*OPERATOR;
    let manifests = op.manifests();
    let env = TestEnv::builder()
        .enforce_rbac(true)
        .start()
        .await
        .expect("a test server");
    let admin = env.client();
    for object in manifests.objects() {
        create(&admin, object, false)
            .await
            .unwrap_or_else(|e| panic!("creating {}: {e}", describe(object)));
    }

    // The ServiceAccount's own token, by TokenRequest, as the kubelet would mount it.
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), NAMESPACE);
    let request =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let answer: Value = accounts
        .create_subresource("token", NAME, &PostParams::default(), &request)
        .await
        .expect("a token for the ServiceAccount");
    let token = answer["status"]["token"].as_str().expect("a token");
    let kubeconfig = env.kubeconfig_with_token(token).unwrap();
    let dir = op.scratch.join("run");
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig_path = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig_path,
        serde_json::to_string(&kubeconfig).unwrap(),
    )
    .unwrap();
    let log_path = dir.join("operator.log");
    let log = std::fs::File::create(&log_path).unwrap();

    let mut child = Command::new(&op.binary)
        .arg("--kubeconfig")
        .arg(&kubeconfig_path)
        .args([
            "--leader-elect",
            "--leader-election-namespace",
            NAMESPACE,
            "--health-probe-bind-address=127.0.0.1:0",
            "--metrics-bind-address=127.0.0.1:0",
        ])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("starting the operator");
    let operator_log = || std::fs::read_to_string(&log_path).unwrap_or_default();

    let crd = manifests
        .of_kind("CustomResourceDefinition")
        .next()
        .expect("a CRD");
    let group = crd["spec"]["group"].as_str().unwrap();
    let backup = json!({
        "apiVersion": format!("{group}/v1"), "kind": "Backup",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"schedule": "0 3 * * *", "paths": ["/data"]},
    });
    create(&admin, &backup, false)
        .await
        .expect("creating a Backup");
    let backups = api_for(&admin, &backup);
    let ready = eventually(|| async {
        let b = backups.get("nightly").await.ok()?;
        let conditions = b.data["status"]["conditions"].as_array()?;
        conditions
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
            .then_some(())
    })
    .await;
    let leases: Api<Lease> = Api::namespaced(admin.clone(), NAMESPACE);
    let lease = leases.get_opt(&format!("{NAME}-leader")).await.unwrap();
    let holder = lease.and_then(|l| l.spec?.holder_identity);
    let forbidden: Vec<String> = env
        .requests()
        .iter()
        .filter(|r| r.status == 403)
        .map(|r| {
            format!(
                "{} {}?{}",
                r.method,
                r.path,
                r.query.as_deref().unwrap_or("")
            )
        })
        .collect();

    // SIGTERM: the operator stops gracefully (releasing its Lease) and exits 0.
    let _ = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", child.id())])
        .status();
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // RBAC is enforced: the token gets nothing the roles do not grant.
    let as_operator = env.client_with_token(token).await.unwrap();
    let secrets = Api::<Secret>::all(as_operator)
        .list(&Default::default())
        .await;
    assert!(
        matches!(&secrets, Err(kube_client::Error::Api(s)) if s.code == 403),
        "listing Secrets as the operator: {secrets:?}"
    );
    assert!(
        ready.is_some(),
        "the Backup did not become Ready; the operator's log:\n{}",
        operator_log()
    );
    assert!(
        forbidden.is_empty(),
        "requests refused by RBAC: {forbidden:#?}\nthe operator's log:\n{}",
        operator_log()
    );
    assert!(
        holder.is_some_and(|h| !h.is_empty()),
        "the operator, as its ServiceAccount, holds the leader-election Lease"
    );
    assert!(
        status.is_some_and(|s| s.success()),
        "the operator did not stop gracefully on SIGTERM ({status:?}):\n{}",
        operator_log()
    );
    env.shutdown().await;
}
