//! The custom-resource example end to end with kubectl: the example's webhooks, served by its
//! manager and registered with rein-testenv by webhook configurations, deny a `kubectl apply`
//! of a bad widget with the webhook's message. kubectl must be on PATH (or at
//! `/usr/bin/kubectl`): without it this test fails with a message saying so.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the example may take.
const WAIT: Duration = Duration::from_secs(120);

/// The example's executable: `cargo test -p rein-examples` builds the examples into
/// `examples/` beside the test binaries' `deps` (as `<name>-<hash>` when a separate build
/// directory is configured; then the newest one).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the build directory")
        .join("examples");
    let plain = dir.join(name);
    if plain.exists() {
        return plain;
    }
    let prefix = format!("{name}-");
    std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            file.starts_with(&prefix) && !file.contains('.')
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
        .unwrap_or_else(|| {
            panic!(
                "no {name} example in {}: `cargo test -p rein-examples` builds the examples \
                 before their tests",
                dir.display()
            )
        })
}

fn kubectl() -> PathBuf {
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("kubectl"))
                .collect()
        })
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([PathBuf::from("/usr/bin/kubectl")])
        .find(|p| p.exists())
        .expect("kubectl must be on PATH to run the kubectl test of the custom_resource example")
}

#[test]
fn kubectl_apply_of_a_bad_widget_is_denied_with_the_webhooks_message() {
    let mut child = Command::new(example("custom_resource"))
        .arg("--quick")
        .arg("--kubectl")
        .arg(kubectl())
        .env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example starts");
    let start = Instant::now();
    while child.try_wait().expect("the example's status").is_none() {
        if start.elapsed() > WAIT {
            let _ = child.kill();
            panic!("the example did not finish within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("the example's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let denial = "kubectl apply of widget default/kubectl-latest: Error from server \
                  (Forbidden): error when creating \"STDIN\": admission webhook \
                  \"vwidget.demo.rein.dev\" denied the request: spec.image must name a tag \
                  other than latest, got \"nginx:latest\"";
    assert!(stdout.contains(denial), "{stdout}\n{stderr}");
    // kubectl's v2 table: each row converted, `SIZE` being v1's replicas.
    let row = stdout
        .lines()
        .skip_while(|l| !l.starts_with("kubectl get widgets.v2.demo.rein.dev:"))
        .find(|l| l.starts_with("demo "))
        .unwrap_or_else(|| panic!("no demo row in kubectl's v2 table: {stdout}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[..3], ["demo", "1", "Ready"], "{stdout}");
    assert!(stdout.contains("custom_resource finished"), "{stdout}");
}
