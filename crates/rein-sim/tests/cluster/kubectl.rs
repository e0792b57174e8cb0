//! kubectl against the simulated cluster, when kubectl is on PATH (skipped otherwise):
//! `get pods -o wide` shows the Pod Running with its IP and node, and `wait --for=condition=Ready`
//! returns.

use std::path::Path;
use std::process::Output;

use tokio::process::Command;

use crate::support::{Sim, pod};

/// Runs kubectl with `kubeconfig` (on tokio's process support, so the simulation keeps
/// running on this runtime meanwhile).
async fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--request-timeout=30s")
        .args(args)
        .output()
        .await
        .expect("running kubectl")
}

async fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .await
        .is_ok_and(|o| o.status.success())
}

#[tokio::test]
async fn kubectl_sees_pods_running_and_waits_for_ready() {
    if !kubectl_available().await {
        eprintln!("skipping: kubectl is not on PATH");
        return;
    }
    let sim = Sim::fast().await;
    let dir = std::env::temp_dir().join(format!("rein-sim-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let kubeconfig = dir.join("kubeconfig");
    sim.env
        .write_kubeconfig(&kubeconfig)
        .expect("writing the kubeconfig");
    sim.create(pod("web")).await;

    let waited = kubectl(
        &kubeconfig,
        &["wait", "--for=condition=Ready", "pod/web", "--timeout=30s"],
    )
    .await;
    let stdout = String::from_utf8_lossy(&waited.stdout);
    assert!(
        waited.status.success(),
        "kubectl wait: {stdout}{}",
        String::from_utf8_lossy(&waited.stderr)
    );
    assert_eq!(stdout.trim(), "pod/web condition met");

    let listed = kubectl(&kubeconfig, &["get", "pods", "-o", "wide"]).await;
    let table = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.status.success(),
        "kubectl get: {table}{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        &header[..7],
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"],
        "{table}"
    );
    let row: Vec<&str> = table
        .lines()
        .find(|l| l.starts_with("web "))
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(&row[..4], ["web", "1/1", "Running", "0"], "{table}");
    assert!(row[5].starts_with("10.244."), "{table}");
    assert!(row[6].starts_with("sim-node-"), "{table}");

    let nodes = kubectl(&kubeconfig, &["get", "nodes"]).await;
    let nodes = String::from_utf8_lossy(&nodes.stdout).into_owned();
    assert_eq!(
        nodes.lines().filter(|l| l.contains(" Ready ")).count(),
        3,
        "{nodes}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    sim.shutdown().await;
}
