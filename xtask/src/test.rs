//! `cargo xtask test`: every check the project keeps true, with one summary at the end.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::{cargo, project_root, smoke};

/// The environment variable proptest reads its random seed from.
const PROPTEST_SEED_VAR: &str = "PROPTEST_RNG_SEED";
/// The seed the suite's property tests use unless [`PROPTEST_SEED_VAR`] is set.
const PROPTEST_DEFAULT_SEED: &str = "20261123";

/// The outcome of one step of the suite.
struct StepResult {
    name: String,
    ok: bool,
    seconds: f64,
}

/// Test counts summed over every `cargo test` result line seen.
#[derive(Default)]
struct Counts {
    passed: u64,
    failed: u64,
    ignored: u64,
    /// Each test binary's wall time (`finished in`), named by cargo's `Running` line.
    binaries: Vec<(String, f64)>,
}

/// The package tested beside the rest of the workspace (see the tests step).
const BESIDE: &str = "cargo-rein";

/// Property tests explore with a fixed seed here, so the suite (and CI) gives the same answer
/// on every run; set PROPTEST_RNG_SEED to explore other inputs.
fn seed(cmd: &mut Command) {
    if std::env::var_os(PROPTEST_SEED_VAR).is_none() {
        cmd.env(PROPTEST_SEED_VAR, PROPTEST_DEFAULT_SEED);
    }
}

/// How many of the slowest test binaries the summary names.
const SLOWEST_SHOWN: usize = 8;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let quick = args.iter().any(|a| a == "--no-lint");
    let root = project_root();
    std::env::set_current_dir(&root)?;
    let mut results = Vec::new();
    let mut counts = Counts::default();

    if !quick {
        results.push(step("fmt", || {
            status(Command::new(cargo()).args(["fmt", "--all", "--check"]))
        }));
        results.push(step("clippy", || {
            status(Command::new(cargo()).args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ]))
        }));
    }
    results.push(step("tests (unit, integration, doc)", || {
        // Every test target is compiled first (exactly what the runs below would compile), so
        // that the package whose end-to-end test builds a whole operator crate of its own
        // (cargo-rein: minutes of compiling on two cores, most of it on one) runs beside the
        // rest instead of after it. Cargo holds its build-directory lock only while compiling,
        // so the two runs, and the operator's builds, do not wait on each other once started.
        if !status(Command::new(cargo()).args(["test", "--workspace", "--locked", "--no-run"])) {
            return false;
        }
        let beside = std::thread::spawn(|| {
            let mut counts = Counts::default();
            let mut cmd = Command::new(cargo());
            cmd.args(["test", "--locked", "--no-fail-fast", "-p", BESIDE]);
            seed(&mut cmd);
            let ok = run_counting(&mut cmd, &mut counts);
            (ok, counts)
        });
        let mut cmd = Command::new(cargo());
        cmd.args([
            "test",
            "--workspace",
            "--locked",
            "--no-fail-fast",
            "--exclude",
            BESIDE,
        ]);
        seed(&mut cmd);
        println!(
            "{PROPTEST_SEED_VAR}={}",
            std::env::var(PROPTEST_SEED_VAR).unwrap_or_else(|_| PROPTEST_DEFAULT_SEED.into())
        );
        let ok = run_counting(&mut cmd, &mut counts);
        let (beside_ok, beside_counts) =
            beside.join().unwrap_or_else(|_| (false, Counts::default()));
        counts.passed += beside_counts.passed;
        counts.failed += beside_counts.failed;
        counts.ignored += beside_counts.ignored;
        counts.binaries.extend(beside_counts.binaries);
        ok && beside_ok
    }));
    if !quick {
        results.push(step("docs", || {
            status(
                Command::new(cargo())
                    .args(["doc", "--workspace", "--no-deps", "--locked"])
                    .env("RUSTDOCFLAGS", "-D warnings"),
            )
        }));
    }
    results.push(step("example smoke runs", || match smoke::run_all(&root) {
        Ok(n) => {
            counts.passed += n.passed;
            counts.failed += n.failed;
            n.failed == 0
        }
        Err(err) => {
            eprintln!("example smoke runs could not start: {err:#}");
            false
        }
    }));

    println!();
    println!("==== cargo xtask test: summary ====");
    for r in &results {
        let mark = if r.ok { "ok  " } else { "FAIL" };
        println!("  {mark} {:<34} {:>7.1}s", r.name, r.seconds);
    }
    let failed_steps = results.iter().filter(|r| !r.ok).count();
    println!(
        "  {} ignored test(s); {} of {} step(s) failed",
        counts.ignored,
        failed_steps,
        results.len()
    );
    println!("tests: {} passed, {} failed", counts.passed, counts.failed);
    counts
        .binaries
        .sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if !counts.binaries.is_empty() {
        println!("slowest test binaries:");
        for (name, seconds) in counts.binaries.iter().take(SLOWEST_SHOWN) {
            println!("  {seconds:>7.1}s {name}");
        }
    }
    if failed_steps > 0 {
        anyhow::bail!("{failed_steps} step(s) failed");
    }
    Ok(())
}

fn step(name: &str, f: impl FnOnce() -> bool) -> StepResult {
    println!("\n==== {name} ====");
    let start = Instant::now();
    let ok = f();
    StepResult {
        name: name.to_owned(),
        ok,
        seconds: start.elapsed().as_secs_f64(),
    }
}

fn status(cmd: &mut Command) -> bool {
    match cmd.status() {
        Ok(s) => s.success(),
        Err(err) => {
            eprintln!("could not run {cmd:?}: {err}");
            false
        }
    }
}

/// Runs a `cargo test` command, echoing its output and summing its `test result:` lines.
///
/// Cargo names each test binary on stderr (`Running …`) before the binary writes its results
/// to stdout, so the last name seen on stderr is the binary a result line belongs to.
fn run_counting(cmd: &mut Command, counts: &mut Counts) -> bool {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(err) => {
            eprintln!("could not run {cmd:?}: {err}");
            return false;
        }
    };
    let running = Arc::new(Mutex::new(String::new()));
    let echo_stderr = child.stderr.take().map(|err| {
        let running = Arc::clone(&running);
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("{line}");
                if let Some(name) = running_binary(&line) {
                    *running.lock().unwrap_or_else(|e| e.into_inner()) = name.to_owned();
                }
            }
        })
    });
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            if let Some(rest) = line.strip_prefix("test result: ") {
                parse_result_line(rest, counts);
                if let Some(seconds) = finished_in(rest) {
                    let name = running.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    counts.binaries.push((name, seconds));
                }
            }
        }
    }
    let ok = child.wait().map(|s| s.success()).unwrap_or(false);
    if let Some(handle) = echo_stderr {
        let _ = handle.join();
    }
    ok
}

/// The binary a cargo `Running` or `Doc-tests` line names.
fn running_binary(line: &str) -> Option<&str> {
    let line = line.trim_start();
    if let Some(rest) = line.strip_prefix("Running ") {
        return Some(rest.split(" (").next().unwrap_or(rest).trim());
    }
    line.strip_prefix("Doc-tests ").map(str::trim)
}

/// The seconds of a result line's `finished in 1.23s`.
fn finished_in(rest: &str) -> Option<f64> {
    let after = rest.split("finished in ").nth(1)?;
    after.trim().trim_end_matches('s').parse().ok()
}

/// Parses `ok. 3 passed; 0 failed; 1 ignored; ...`.
fn parse_result_line(rest: &str, counts: &mut Counts) {
    for part in rest.split(';') {
        let mut words = part.split_whitespace().rev();
        let (Some(label), Some(n)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        match label {
            "passed" => counts.passed += n,
            "failed" => counts.failed += n,
            "ignored" => counts.ignored += n,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cargo_result_lines() {
        let mut c = Counts::default();
        parse_result_line(
            "ok. 12 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.01s",
            &mut c,
        );
        parse_result_line("ok. 3 passed; 0 failed; 0 ignored", &mut c);
        assert_eq!((c.passed, c.failed, c.ignored), (15, 1, 2));
    }

    #[test]
    fn names_binaries_and_their_times() {
        assert_eq!(
            running_binary("     Running tests/it/main.rs (target/debug/deps/it-0f3a)"),
            Some("tests/it/main.rs")
        );
        assert_eq!(
            running_binary("   Doc-tests rein_client"),
            Some("rein_client")
        );
        assert_eq!(running_binary("   Compiling rein v0.1.0"), None);
        assert_eq!(
            finished_in("ok. 3 passed; 0 failed; 0 ignored; finished in 12.50s"),
            Some(12.5)
        );
        assert_eq!(finished_in("ok. 3 passed"), None);
    }
}
