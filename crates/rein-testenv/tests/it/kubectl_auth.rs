//! The real kubectl's auth commands against rein-testenv: `kubectl auth whoami`,
//! `kubectl auth can-i` (with `--list` and `--as`), `kubectl create token`, and the 403 a
//! kubectl user sees when RBAC is enforced. kubectl must be on PATH.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use kube_client::config::Kubeconfig;
use rein_testenv::{TestEnv, User};
use serde_json::{Value, json};

use super::auth_support::{binding, create_rbac, post, service_account};

/// A directory holding one kubeconfig per identity, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "rein-kubectl-auth-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        Dir(dir)
    }

    fn write(&self, name: &str, kubeconfig: &Kubeconfig) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, serde_saphyr::to_string(kubeconfig).expect("yaml")).expect("writes");
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs kubectl with `kubeconfig` off the async runtime.
async fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    let mut command = Command::new("kubectl");
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(kubeconfig.with_extension("cache"))
        .arg("--request-timeout=30s")
        .args(args);
    tokio::task::spawn_blocking(move || {
        command.output().unwrap_or_else(|err| {
            panic!("could not run kubectl ({err}): these tests need `kubectl` on PATH")
        })
    })
    .await
    .expect("kubectl thread")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).trim().to_string()
}

#[tokio::test]
async fn whoami_shows_users_certificates_and_impersonation() {
    let env = TestEnv::builder()
        .tls(true)
        .token("admin-token")
        .start()
        .await
        .expect("starts");
    let dir = Dir::new();
    let carol = dir.write(
        "carol",
        &env.kubeconfig_for(&User::new("carol").group("ops").group("oncall"))
            .expect("cert"),
    );
    let out = kubectl(&carol, &["auth", "whoami", "-o", "json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let review: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(
        review["status"]["userInfo"],
        json!({"username": "carol", "groups": ["ops", "oncall", "system:authenticated"]})
    );
    let admin = dir.write("admin", &env.kubeconfig());
    let out = kubectl(
        &admin,
        &[
            "auth",
            "whoami",
            "--as",
            "dave",
            "--as-group",
            "qa",
            "-o",
            "json",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let review: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(review["status"]["userInfo"]["username"], "dave");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        json!(["qa", "system:authenticated"])
    );
}

#[tokio::test]
async fn can_i_follows_rbac_and_forbidden_requests_show_kubes_message() {
    let alice = User::new("alice").token("alice-token");
    let env = TestEnv::builder()
        .tls(true)
        .enforce_rbac(true)
        .user(alice.clone())
        .start()
        .await
        .expect("starts");
    let dir = Dir::new();
    let as_alice = dir.write("alice", &env.kubeconfig_for(&alice).expect("kubeconfig"));
    let admin = dir.write("admin", &env.kubeconfig());

    let out = kubectl(&as_alice, &["auth", "can-i", "list", "pods"]).await;
    assert_eq!(
        (out.status.code(), stdout(&out)),
        (Some(1), "no".to_string()),
        "{}",
        stderr(&out)
    );
    let out = kubectl(&as_alice, &["get", "pods"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" \
             in the namespace \"default\""
        ),
        "{}",
        stderr(&out)
    );

    create_rbac(
        &env.client(),
        json!({"kind": "Role",
        "metadata": {"name": "pods", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
    )
    .await;
    create_rbac(
        &env.client(),
        binding(
            "RoleBinding",
            "alice",
            Some("default"),
            ("Role", "pods"),
            json!([{"kind": "User", "name": "alice"}]),
        ),
    )
    .await;
    let out = kubectl(&as_alice, &["auth", "can-i", "list", "pods"]).await;
    assert_eq!(
        (out.status.code(), stdout(&out)),
        (Some(0), "yes".to_string()),
        "{}",
        stderr(&out)
    );
    let out = kubectl(&as_alice, &["auth", "can-i", "delete", "pods"]).await;
    assert_eq!(stdout(&out), "no");
    let out = kubectl(&as_alice, &["get", "pods"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = kubectl(&as_alice, &["auth", "can-i", "--list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = stdout(&out);
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with("pods ") && l.contains("[get list]")),
        "{listing}"
    );
    // The admin asks about alice through impersonation.
    let out = kubectl(&admin, &["auth", "can-i", "list", "pods", "--as", "alice"]).await;
    assert_eq!(stdout(&out), "yes", "{}", stderr(&out));
    let out = kubectl(
        &admin,
        &[
            "auth",
            "can-i",
            "list",
            "pods",
            "-n",
            "kube-system",
            "--as",
            "alice",
        ],
    )
    .await;
    assert_eq!(stdout(&out), "no", "{}", stderr(&out));
}

#[tokio::test]
async fn create_token_issues_a_token_the_server_accepts() {
    let env = TestEnv::builder()
        .tls(true)
        .token("admin-token")
        .start()
        .await
        .expect("starts");
    service_account(&env.client(), "default", "robot").await;
    let dir = Dir::new();
    let admin = dir.write("admin", &env.kubeconfig());
    let out = kubectl(
        &admin,
        &[
            "create",
            "token",
            "robot",
            "--duration",
            "20m",
            "--audience",
            "vault",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let token = stdout(&out);
    let review = post(
        &env.client(),
        "/apis/authentication.k8s.io/v1/tokenreviews",
        json!({"spec": {"token": token, "audiences": ["vault"]}}),
    )
    .await
    .expect("TokenReview");
    assert_eq!(review["status"]["authenticated"], true);
    assert_eq!(
        review["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );

    let out = kubectl(&admin, &["create", "token", "ghost"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("serviceaccounts \"ghost\" not found"),
        "{}",
        stderr(&out)
    );

    let out = kubectl(&admin, &["create", "token", "robot"]).await;
    let robot = dir.write(
        "robot",
        &env.kubeconfig_with_token(&stdout(&out))
            .expect("kubeconfig"),
    );
    let out = kubectl(
        &robot,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )
    .await;
    assert_eq!(
        stdout(&out),
        "system:serviceaccount:default:robot",
        "{}",
        stderr(&out)
    );
}
