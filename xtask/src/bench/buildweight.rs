//! `cargo xtask bench build-weight`: the cold build time and binary size of the operator
//! `cargo rein new` scaffolds, against the same operator written on kube-rs
//! (`crates/rein-bench/peers/kube-operator`), built alternately A B A B, each build from an
//! empty target directory of its own (the registry's download cache stays warm, and nothing
//! is fetched: `--offline`).
//!
//! Not part of `cargo xtask bench` without this subcommand, nor of `cargo xtask test`: every
//! build is minutes on 2 cores. Prints a Markdown report and keeps it in
//! `target/xtask-bench/build-weight.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::Context as _;

use super::render;
use crate::{cargo, project_root};

const USAGE: &str = "\
usage: cargo xtask bench build-weight [--pairs N] [--release-pairs N] [--work DIR] [--keep]
  --pairs N          cold debug builds of each side, alternated rein, kube-rs, rein, … (default 2)
  --release-pairs N  cold release builds of each side, after the debug ones (default 1; 0: none)
  --work DIR         where to scaffold and build (default: a new directory in the temp dir)
  --keep             keep each build's target directory (GBs) instead of deleting it once measured";

/// Where the kube-rs peer lives, from the workspace root.
const PEER_DIR: &str = "crates/rein-bench/peers/kube-operator";

/// Parsed `build-weight` arguments.
#[derive(Debug, PartialEq)]
struct Options {
    pairs: usize,
    release_pairs: usize,
    work: Option<PathBuf>,
    keep: bool,
}

fn parse_args(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        pairs: 2,
        release_pairs: 1,
        work: None,
        keep: false,
    };
    let mut it = args.iter();
    let count = |value: Option<&String>, flag: &str| {
        value
            .and_then(|n| n.parse::<usize>().ok())
            .with_context(|| format!("{flag} takes a number\n{USAGE}"))
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--pairs" => o.pairs = count(it.next(), "--pairs")?,
            "--release-pairs" => o.release_pairs = count(it.next(), "--release-pairs")?,
            "--work" => {
                o.work = Some(
                    it.next()
                        .with_context(|| format!("--work takes a directory\n{USAGE}"))?
                        .into(),
                );
            }
            "--keep" => o.keep = true,
            "-h" | "--help" => anyhow::bail!("{USAGE}"),
            other => anyhow::bail!("unknown build-weight argument {other:?}\n{USAGE}"),
        }
    }
    anyhow::ensure!(o.pairs + o.release_pairs > 0, "nothing to build\n{USAGE}");
    Ok(o)
}

/// One of the two operators.
#[derive(Debug)]
struct Side {
    label: &'static str,
    dir: PathBuf,
    binary: &'static str,
}

/// One cold build, measured.
#[derive(Debug, Clone, PartialEq)]
struct Build {
    side: &'static str,
    profile: &'static str,
    pair: usize,
    /// Wall-clock seconds of `cargo build`.
    wall: f64,
    /// User + system seconds of cargo and every rustc, linker and build script it waited for.
    cpu: Option<f64>,
    /// The operator binary's size in bytes.
    size: u64,
    /// How many crates cargo compiled (its `Compiling` lines).
    crates: usize,
    /// The machine's 1-minute load average just before the build.
    load: String,
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let options = parse_args(args)?;
    let root = project_root();
    let command_line = ["cargo xtask bench build-weight".to_owned()]
        .into_iter()
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let work = options.work.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("rein-build-weight-{}", std::process::id()))
    });
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let rein_op = work.join("rein-op");
    if rein_op.exists() {
        std::fs::remove_dir_all(&rein_op)
            .with_context(|| format!("removing the earlier {}", rein_op.display()))?;
    }

    eprintln!(
        "[scaffold] cargo run -p cargo-rein -- new {} --rein-path {}",
        rein_op.display(),
        root.display()
    );
    let status = Command::new(cargo())
        .current_dir(&root)
        .args(["run", "-q", "--locked", "-p", "cargo-rein", "--", "new"])
        .arg(&rein_op)
        .arg("--rein-path")
        .arg(&root)
        .status()
        .context("running cargo-rein")?;
    anyhow::ensure!(status.success(), "cargo rein new failed: {status}");

    let sides = [
        Side {
            label: "rein",
            dir: rein_op,
            binary: "rein-op",
        },
        Side {
            label: "kube-rs",
            dir: root.join(PEER_DIR),
            binary: "kube-operator-peer",
        },
    ];
    // Resolve both lockfiles before any clock starts (the scaffold's is rein's whole lock,
    // pruned here to what the operator uses), then check the two agree on every crate they share.
    for side in &sides {
        let status = Command::new(cargo())
            .current_dir(&side.dir)
            .args(["metadata", "--format-version", "1", "--offline"])
            .stdout(Stdio::null())
            .status()
            .with_context(|| format!("resolving {}", side.dir.display()))?;
        anyhow::ensure!(
            status.success(),
            "cargo metadata failed in {}",
            side.dir.display()
        );
    }
    let lock = |side: &Side| {
        let path = side.dir.join("Cargo.lock");
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    };
    let mismatches = lock_mismatches(&lock(&sides[0])?, &lock(&sides[1])?);
    for m in &mismatches {
        eprintln!("warning: the two builds resolve {m} differently");
    }

    let mut builds = Vec::new();
    let total = 2 * (options.pairs + options.release_pairs);
    for (profile, pairs) in [("debug", options.pairs), ("release", options.release_pairs)] {
        for pair in 1..=pairs {
            for side in &sides {
                eprintln!(
                    "[{}/{total}] cold {profile} build of {} (pair {pair}) …",
                    builds.len() + 1,
                    side.label
                );
                let build = cold_build(&work, side, profile, pair, options.keep)?;
                eprintln!(
                    "        {:.1} s wall, {} cpu, {} crates, binary {}",
                    build.wall,
                    build
                        .cpu
                        .map_or_else(|| "?".to_owned(), |c| format!("{c:.0} s")),
                    build.crates,
                    mib(build.size)
                );
                builds.push(build);
            }
        }
    }

    let report = report(
        &builds,
        &command_line,
        &render::machine(),
        &render::now(),
        &mismatches,
    );
    print!("{report}");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let saved = target.join("xtask-bench");
    std::fs::create_dir_all(&saved)?;
    let path = saved.join("build-weight.md");
    std::fs::write(&path, &report).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    if options.work.is_none() && !options.keep {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(())
}

/// `cargo build [--release] --offline` of `side` into a target directory made for it.
fn cold_build(
    work: &Path,
    side: &Side,
    profile: &'static str,
    pair: usize,
    keep: bool,
) -> anyhow::Result<Build> {
    let name = format!("{}-{profile}-{pair}", side.label);
    let target = work.join(format!("target-{name}"));
    if target.exists() {
        std::fs::remove_dir_all(&target)
            .with_context(|| format!("emptying {}", target.display()))?;
    }
    let log_path = work.join(format!("build-{name}.log"));
    let log = std::fs::File::create(&log_path)?;
    let mut cmd = Command::new(cargo());
    cmd.current_dir(&side.dir).args(["build", "--offline"]);
    if profile == "release" {
        cmd.arg("--release");
    }
    cmd.env("CARGO_TARGET_DIR", &target)
        .stdout(Stdio::null())
        .stderr(log);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default();
    let cpu_before = children_cpu_seconds();
    let started = Instant::now();
    let status = cmd.status().context("running cargo build")?;
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_before
        .zip(children_cpu_seconds())
        .map(|(before, after)| after - before);
    anyhow::ensure!(
        status.success(),
        "cargo build of {} failed: {status}; see {}",
        side.label,
        log_path.display()
    );
    let binary = target.join(profile).join(side.binary);
    let size = std::fs::metadata(&binary)
        .with_context(|| format!("reading {}", binary.display()))?
        .len();
    let crates = std::fs::read_to_string(&log_path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.trim_start().starts_with("Compiling "))
        .count();
    if !keep {
        std::fs::remove_dir_all(&target)
            .with_context(|| format!("removing {}", target.display()))?;
    }
    Ok(Build {
        side: side.label,
        profile,
        pair,
        wall,
        cpu,
        size,
        crates,
        load,
    })
}

/// The user + system seconds of this process's waited-for children so far (fields 16 and 17
/// of `/proc/self/stat`, in clock ticks of 1/100 s, the value on every Linux this runs on).
fn children_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (the state).
    let ticks = |field: usize| fields.get(field - 3)?.parse::<f64>().ok();
    Some((ticks(16)? + ticks(17)?) / 100.0)
}

/// The crates both lockfiles hold at different versions, as `name (a vs b)`.
fn lock_mismatches(a: &str, b: &str) -> Vec<String> {
    let (a, b) = (lock_versions(a), lock_versions(b));
    a.iter()
        .filter_map(|(name, va)| {
            let vb = b.get(name)?;
            (va != vb).then(|| {
                let join = |v: &BTreeSet<String>| v.iter().cloned().collect::<Vec<_>>().join(", ");
                format!("{name} ({} vs {})", join(va), join(vb))
            })
        })
        .collect()
}

/// Every package of a Cargo.lock, with the versions it is locked at.
fn lock_versions(lock: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut packages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut name = None;
    for line in lock.lines() {
        let quoted = |key: &str| {
            line.strip_prefix(key)
                .and_then(|v| v.trim().strip_prefix('"'))
                .and_then(|v| v.strip_suffix('"'))
                .map(str::to_owned)
        };
        if let Some(n) = quoted("name = ") {
            name = Some(n);
        } else if let (Some(v), Some(n)) = (quoted("version = "), name.take()) {
            packages.entry(n).or_default().insert(v);
        }
    }
    packages
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1_048_576.0)
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}×", a / b)
    } else {
        "—".to_owned()
    }
}

/// The Markdown report: every build, then rein / kube-rs pair by pair.
fn report(
    builds: &[Build],
    command_line: &str,
    machine: &str,
    when: &str,
    mismatches: &[String],
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "`{command_line}`, {when}; {machine}.\n");
    if mismatches.is_empty() {
        out.push_str("Both lockfiles resolve every crate they share to the same version.\n\n");
    } else {
        let _ = writeln!(
            out,
            "Crates the two lockfiles resolve differently: {}.\n",
            mismatches.join("; ")
        );
    }
    out.push_str(
        "| profile | pair | operator | wall | CPU (user+sys) | crates compiled | binary | load before |\n\
         | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for b in builds {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} s | {} | {} | {} ({} B) | {} |",
            b.profile,
            b.pair,
            b.side,
            b.wall,
            b.cpu
                .map_or_else(|| "—".to_owned(), |c| format!("{c:.0} s")),
            b.crates,
            mib(b.size),
            b.size,
            b.load
        );
    }
    out.push_str(
        "\n| profile | pair | wall rein / kube-rs | CPU rein / kube-rs | binary rein / kube-rs |\n\
         | --- | --- | ---: | ---: | ---: |\n",
    );
    for a in builds.iter().filter(|b| b.side == "rein") {
        let Some(b) = builds
            .iter()
            .find(|b| b.side != "rein" && b.profile == a.profile && b.pair == a.pair)
        else {
            continue;
        };
        let cpu = match (a.cpu, b.cpu) {
            (Some(x), Some(y)) => ratio(x, y),
            _ => "—".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            a.profile,
            a.pair,
            ratio(a.wall, b.wall),
            cpu,
            ratio(a.size as f64, b.size as f64)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        let o = parse_args(&[]).unwrap();
        assert_eq!((o.pairs, o.release_pairs, o.keep), (2, 1, false));
        let args: Vec<String> = ["--pairs", "3", "--release-pairs", "0", "--keep"]
            .map(String::from)
            .to_vec();
        let o = parse_args(&args).unwrap();
        assert_eq!((o.pairs, o.release_pairs, o.keep), (3, 0, true));
        assert!(parse_args(&["--pairs".into(), "x".into()]).is_err());
        assert!(
            parse_args(&[
                "--pairs".into(),
                "0".into(),
                "--release-pairs".into(),
                "0".into()
            ])
            .is_err()
        );
        assert!(parse_args(&["fast".into()]).is_err());
    }

    #[test]
    fn lockfiles_compare_by_version() {
        let a = "[[package]]\nname = \"tokio\"\nversion = \"1.54.1\"\n\n[[package]]\nname = \"syn\"\nversion = \"2.0.1\"\n\n[[package]]\nname = \"syn\"\nversion = \"3.0.0\"\n";
        let b = "[[package]]\nname = \"tokio\"\nversion = \"1.54.1\"\n\n[[package]]\nname = \"syn\"\nversion = \"2.0.1\"\n";
        assert_eq!(lock_mismatches(a, a), Vec::<String>::new());
        assert_eq!(lock_mismatches(a, b), ["syn (2.0.1, 3.0.0 vs 2.0.1)"]);
    }

    #[test]
    fn report_pairs_the_sides() {
        let build = |side, pair, wall, size| Build {
            side,
            profile: "debug",
            pair,
            wall,
            cpu: Some(wall * 1.5),
            size,
            crates: 200,
            load: "0.10".to_owned(),
        };
        let builds = [
            build("rein", 1, 120.0, 2_000_000),
            build("kube-rs", 1, 100.0, 1_000_000),
        ];
        let text = report(
            &builds,
            "cargo xtask bench build-weight",
            "2 cores",
            "now",
            &[],
        );
        assert!(
            text.contains(
                "| debug | 1 | rein | 120.0 s | 180 s | 200 | 1.9 MiB (2000000 B) | 0.10 |"
            )
        );
        assert!(text.contains("| debug | 1 | 1.20× | 1.20× | 2.00× |"));
    }

    #[test]
    fn children_cpu_is_read() {
        assert!(children_cpu_seconds().is_some_and(|s| s >= 0.0));
    }
}
