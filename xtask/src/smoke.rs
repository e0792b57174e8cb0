//! Smoke runs of every example: each example file declares its quick-mode arguments, the
//! output it must print and (optionally) text it must not, in header lines the suite reads:
//!
//! ```text
//! // smoke-args: --quick
//! // smoke-expect: processed 3 items
//! // smoke-forbid: writing the event failed
//! // smoke-timeout: 60
//! ```

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::cargo;

/// How many smoke runs passed and failed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SmokeCounts {
    pub(crate) passed: u64,
    pub(crate) failed: u64,
}

/// One example's smoke specification, read from its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SmokeSpec {
    pub(crate) name: String,
    pub(crate) args: Vec<String>,
    pub(crate) expect: Vec<String>,
    /// Text the output must not contain (`// smoke-forbid:`), e.g. a warning a clean run
    /// never prints.
    pub(crate) forbid: Vec<String>,
    pub(crate) timeout: Duration,
}

/// The example sources: `examples/examples/*.rs`, sorted by name.
pub(crate) fn example_files(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let dir = root.join("examples").join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    Ok(files)
}

/// Reads the `// smoke-*` header lines of one example.
pub(crate) fn parse_spec(name: &str, source: &str) -> SmokeSpec {
    let mut spec = SmokeSpec {
        name: name.to_owned(),
        args: Vec::new(),
        expect: Vec::new(),
        forbid: Vec::new(),
        timeout: Duration::from_secs(120),
    };
    for line in source.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("// smoke-args:") {
            spec.args.extend(v.split_whitespace().map(str::to_owned));
        } else if let Some(v) = line.strip_prefix("// smoke-expect:") {
            spec.expect.push(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("// smoke-forbid:") {
            spec.forbid.push(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("// smoke-timeout:")
            && let Ok(secs) = v.trim().parse()
        {
            spec.timeout = Duration::from_secs(secs);
        }
    }
    spec
}

/// Builds every example once, then runs each in its quick mode and checks its output.
///
/// The examples are built by `cargo test --workspace --no-run`, the very build the test step
/// has already made (`cargo test` compiles examples too), so their binaries and the rein
/// crates under them are not built a second time with another feature set. Building them
/// with `cargo build --package rein-examples` instead resolved features differently and put a
/// second copy of every example and of the crates under them in `target/`, about 2 GB.
pub(crate) fn run_all(root: &Path) -> anyhow::Result<SmokeCounts> {
    let executables = example_executables()?;
    let mut counts = SmokeCounts::default();
    for file in example_files(root)? {
        let name = file
            .file_stem()
            .and_then(|s| s.to_str())
            .context("example file name")?
            .to_owned();
        let source = std::fs::read_to_string(&file)?;
        let spec = parse_spec(&name, &source);
        let Some(exe) = executables.get(&name) else {
            println!("  FAIL example {name}: cargo built no executable for it");
            counts.failed += 1;
            continue;
        };
        match run_one(exe, &spec) {
            Ok(secs) => {
                println!("  ok   example {name} ({secs:.1}s)");
                counts.passed += 1;
            }
            Err(err) => {
                println!("  FAIL example {name}: {err:#}");
                counts.failed += 1;
            }
        }
    }
    Ok(counts)
}

/// Builds the workspace's examples (as programs, not as test harnesses: an example with
/// `test = true` is also a test target) and returns each example's executable, by name, from
/// cargo's JSON artifact messages.
fn example_executables() -> anyhow::Result<HashMap<String, PathBuf>> {
    let output = Command::new(cargo())
        .args([
            "build",
            "--workspace",
            "--locked",
            "--examples",
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo build --examples")?;
    anyhow::ensure!(output.status.success(), "building the examples failed");
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(stdout.lines().filter_map(example_artifact).collect())
}

/// Reads one line of cargo's JSON messages: an example's name and executable, if it is one.
fn example_artifact(line: &str) -> Option<(String, PathBuf)> {
    let msg: serde_json::Value = serde_json::from_str(line).ok()?;
    if msg.get("reason")?.as_str()? != "compiler-artifact" {
        return None;
    }
    let target = msg.get("target")?;
    let is_example = target
        .get("kind")?
        .as_array()?
        .iter()
        .any(|k| k.as_str() == Some("example"));
    // An example built as its own test harness (`test = true`) is not the program.
    let harness = msg
        .pointer("/profile/test")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    if !is_example || harness {
        return None;
    }
    let name = target.get("name")?.as_str()?.to_owned();
    let exe = msg.get("executable")?.as_str()?;
    Some((name, PathBuf::from(exe)))
}

fn run_one(exe: &Path, spec: &SmokeSpec) -> anyhow::Result<f64> {
    anyhow::ensure!(
        !spec.expect.is_empty(),
        "no `// smoke-expect:` line in the example's header"
    );
    let start = Instant::now();
    let mut child = Command::new(exe)
        .args(&spec.args)
        .env_remove("KUBECONFIG")
        .env("REIN_EXAMPLE_SMOKE", "1")
        .env("NO_COLOR", "1")
        // An example's error line must stay within the tail we print, not behind a backtrace.
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let mut stdout = child.stdout.take().context("stdout")?;
    let mut stderr = child.stderr.take().context("stderr")?;
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() > spec.timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    let all = format!("{out}\n{err}");
    let tail = |s: &str| -> String {
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    };
    let Some(status) = status else {
        anyhow::bail!(
            "timed out after {:?}; last output:\n{}",
            spec.timeout,
            tail(&all)
        );
    };
    anyhow::ensure!(
        status.success(),
        "exited with {status}; last output:\n{}",
        tail(&all)
    );
    for want in &spec.expect {
        anyhow::ensure!(
            all.contains(want.as_str()),
            "output lacks {want:?}; last output:\n{}",
            tail(&all)
        );
    }
    for unwanted in &spec.forbid {
        anyhow::ensure!(
            !all.contains(unwanted.as_str()),
            "output contains {unwanted:?}; last output:\n{}",
            tail(&all)
        );
    }
    Ok(start.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_header_lines() {
        let src = "//! x\n// smoke-args: --quick --n 3\n// smoke-expect: done\n// smoke-expect: a b\n// smoke-forbid: WARN x\n// smoke-timeout: 9\nfn main() {}\n";
        let spec = parse_spec("x", src);
        assert_eq!(spec.args, ["--quick", "--n", "3"]);
        assert_eq!(spec.expect, ["done", "a b"]);
        assert_eq!(spec.forbid, ["WARN x"]);
        assert_eq!(spec.timeout, Duration::from_secs(9));
    }

    #[test]
    fn picks_examples_out_of_cargo_messages() {
        let example = r#"{"reason":"compiler-artifact","target":{"kind":["example"],"name":"quickstart"},"executable":"/t/debug/examples/quickstart-1a2b"}"#;
        let test = r#"{"reason":"compiler-artifact","target":{"kind":["test"],"name":"watch"},"executable":"/t/debug/deps/watch-3c"}"#;
        let lib = r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"rein"},"executable":null}"#;
        assert_eq!(
            example_artifact(example),
            Some((
                "quickstart".to_owned(),
                PathBuf::from("/t/debug/examples/quickstart-1a2b")
            ))
        );
        assert_eq!(example_artifact(test), None);
        let harness = r#"{"reason":"compiler-artifact","target":{"kind":["example"],"name":"operator"},"profile":{"test":true},"executable":"/t/debug/examples/operator-9f"}"#;
        assert_eq!(example_artifact(harness), None);
        assert_eq!(example_artifact(lib), None);
        assert_eq!(example_artifact("   Compiling rein v0.1.0"), None);
        assert_eq!(
            example_artifact(r#"{"reason":"build-finished","success":true}"#),
            None
        );
    }
}
