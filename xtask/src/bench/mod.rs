//! `cargo xtask bench`: runs the per-crate benchmarks and the side-by-side harness, and writes
//! `docs/benchmarks.md` and `docs/benchmarks.svg`.
//!
//! Benchmark targets are `harness = false` binaries that print one line per figure:
//!
//! ```text
//! BENCH|<group>|<case>|<value>|<unit>|<aim or note>
//! ```
//!
//! The side-by-side harness (`rein-bench`) prints `BENCH|side-by-side|<case>/<metric>/<side>|…`.
//! Each run's figures are also kept in `target/xtask-bench/<part>.txt`, so `--only` can rerun one
//! part and still render the other. Everything in `docs/benchmarks.md` below the
//! `<!-- notes -->` marker is kept as written.
//!
//! `cargo xtask bench build-weight` is apart: cold builds of a scaffolded operator and of the
//! same operator on kube-rs ([`buildweight`]); it prints a report and leaves the page alone.

mod buildweight;
mod chart;
mod compare;
pub(crate) mod figure;
mod render;
mod sidebyside;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;

use crate::{cargo, project_root};
use figure::{Figure, parse_figure};
use render::{NOTES_MARKER, Page};

const USAGE: &str = "\
usage: cargo xtask bench [--quick] [--only crates|sidebyside] [--reps N] [-- BENCH FILTER…]
       cargo xtask bench build-weight [--pairs N] [--release-pairs N] [--work DIR] [--keep]
  --quick       small side-by-side sizes, one repetition (a smoke run)
  --only PART   run only the per-crate benches or only the side-by-side harness
  --reps N      side-by-side repetitions (median reported; default 2, 1 with --quick)
  FILTER…       per-crate: passed to the bench targets; side-by-side: run only the runs whose
                label contains one (e.g. metadata-only, multi-namespace, \"initial sync\"),
                keeping the saved figures of the other cases
  build-weight  cold build time and binary size of the operator `cargo rein new` writes
                against the same operator on kube-rs (minutes a build; see --help)";

/// Parsed `cargo xtask bench` arguments.
#[derive(Debug)]
struct Options {
    quick: bool,
    crates: bool,
    sidebyside: bool,
    reps: usize,
    filter: Vec<String>,
}

fn parse_args(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        quick: false,
        crates: true,
        sidebyside: true,
        reps: 0,
        filter: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => o.quick = true,
            "--only" => match it.next().map(String::as_str) {
                Some("crates") => o.sidebyside = false,
                Some("sidebyside" | "side-by-side") => o.crates = false,
                other => anyhow::bail!("--only takes crates or sidebyside, not {other:?}\n{USAGE}"),
            },
            "--reps" => {
                o.reps = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
                    .with_context(|| format!("--reps takes a positive number\n{USAGE}"))?;
            }
            "--" => o.filter.extend(it.by_ref().cloned()),
            "-h" | "--help" => anyhow::bail!("{USAGE}"),
            other => o.filter.push(other.to_owned()),
        }
    }
    if o.reps == 0 {
        o.reps = if o.quick { 1 } else { 2 };
    }
    Ok(o)
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    if args.first().map(String::as_str) == Some("build-weight") {
        return buildweight::run(&args[1..]);
    }
    let options = parse_args(args)?;
    let root = project_root();
    let command_line = ["cargo xtask bench".to_owned()]
        .into_iter()
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let saved = target.join("xtask-bench");
    std::fs::create_dir_all(&saved)?;

    if options.crates {
        eprintln!("[crates] cargo bench --workspace (per-crate bench targets)");
        let figures = crate_benches(&root, &options.filter)?;
        save(&saved.join("crates.txt"), &figures, &command_line)?;
    }
    if options.sidebyside {
        let mut figures = side_by_side(&root, &target, &options)?;
        let path = saved.join("sidebyside.txt");
        if !options.filter.is_empty() {
            figures = sidebyside::merge(load(&path), figures);
        }
        save(&path, &figures, &command_line)?;
    }

    let mut sources = Vec::new();
    let mut figures = Vec::new();
    for (part, file) in [
        ("side-by-side", "sidebyside.txt"),
        ("per-crate", "crates.txt"),
    ] {
        let path = saved.join(file);
        let loaded = load(&path);
        if !loaded.is_empty() {
            sources.push(format!("{part} figures from {}", origin(&path)));
        }
        figures.extend(loaded);
    }
    let (rows, complete) = compare::rows(&figures);
    let docs = root.join("docs");
    let chart_path = docs.join("benchmarks.svg");
    let chart = if rows.iter().any(|r| r.advantage().is_some()) {
        chart::draw(&rows, &chart_path)?;
        Some("benchmarks.svg")
    } else {
        None
    };
    let path = docs.join("benchmarks.md");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let notes = old
        .split_once(NOTES_MARKER)
        .map(|(_, n)| n.trim().to_owned())
        .unwrap_or_default();
    let doc = render::render(&Page {
        sources: &sources,
        machine: render::machine(),
        figures: &figures,
        rows: &rows,
        complete,
        chart,
        notes: &notes,
    });
    std::fs::write(&path, doc).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {} ({} figures)", path.display(), figures.len());
    anyhow::ensure!(
        complete,
        "a side-by-side case missed objects: see the table in {}",
        path.display()
    );
    Ok(())
}

/// `cargo bench` over the workspace (the harness crate excluded); returns every figure printed.
fn crate_benches(root: &Path, filter: &[String]) -> anyhow::Result<Vec<Figure>> {
    let mut cmd = Command::new(cargo());
    cmd.current_dir(root)
        .args([
            "bench",
            "--workspace",
            "--locked",
            "--exclude",
            "rein-bench",
        ])
        .stdout(Stdio::piped());
    if !filter.is_empty() {
        cmd.arg("--").args(filter);
    }
    let mut child = cmd.spawn().context("running cargo bench")?;
    let out = child.stdout.take().context("stdout")?;
    let mut figures = Vec::new();
    for line in BufReader::new(out).lines().map_while(Result::ok) {
        println!("{line}");
        if let Some(f) = parse_figure(&line) {
            figures.push(f);
        }
    }
    let status = child.wait()?;
    anyhow::ensure!(status.success(), "cargo bench failed: {status}");
    Ok(figures)
}

/// Builds `rein-bench` in release once, runs every case `reps` times (progress on stderr) and
/// returns the medians.
fn side_by_side(root: &Path, target: &Path, options: &Options) -> anyhow::Result<Vec<Figure>> {
    eprintln!("[build] cargo build --release -p rein-bench");
    let status = Command::new(cargo())
        .current_dir(root)
        .args(["build", "--release", "--locked", "-p", "rein-bench"])
        .status()
        .context("building rein-bench")?;
    anyhow::ensure!(status.success(), "building rein-bench failed: {status}");
    let exe = target.join("release").join("rein-bench");
    let total = sidebyside::runs(options.quick, 0, &options.filter).len() * options.reps;
    let mut all = Vec::new();
    let mut done = 0;
    for rep in 1..=options.reps {
        for run in &sidebyside::runs(options.quick, rep - 1, &options.filter) {
            done += 1;
            eprintln!(
                "[{done}/{total}] {} (repetition {rep}/{}) …",
                run.label, options.reps
            );
            let started = std::time::Instant::now();
            let figures = sidebyside::run_one(&exe, run)?;
            for f in &figures {
                println!("{}", f.line());
            }
            eprintln!("        done in {:.1} s", started.elapsed().as_secs_f64());
            all.extend(figures);
        }
    }
    Ok(sidebyside::medians(&all))
}

/// Writes `figures` with a first line saying which command produced them and when.
fn save(path: &Path, figures: &[Figure], command_line: &str) -> anyhow::Result<()> {
    let mut text = format!("# `{command_line}`, {}\n", render::now());
    text.extend(figures.iter().map(|f| f.line() + "\n"));
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The first line [`save`] wrote: the command and time a part's figures come from.
fn origin(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# "))
        .unwrap_or("an earlier run")
        .to_owned()
}

fn load(path: &Path) -> Vec<Figure> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(parse_figure)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_renders_figures() {
        let f = parse_figure("BENCH|workqueue|throughput|2.9|M items/s|aim ≥ 2.5").unwrap();
        assert_eq!(f.group, "workqueue");
        assert_eq!(f.note, "aim ≥ 2.5");
        assert!(parse_figure("test foo ... ok").is_none());
        let figures = [f];
        let doc = render::render(&Page {
            sources: &["side-by-side figures from `cargo xtask bench`".to_owned()],
            machine: "test machine".to_owned(),
            figures: &figures,
            rows: &[],
            complete: true,
            chart: None,
            notes: "kept notes",
        });
        assert!(doc.contains("| throughput | 2.9 | M items/s | aim ≥ 2.5 |"));
        assert!(doc.ends_with("kept notes\n"));
    }

    #[test]
    fn medians_fold_repetitions() {
        let lines = [
            "BENCH|side-by-side|watch/events per second/rein|3|events/s|n",
            "BENCH|side-by-side|watch/events per second/rein|1|events/s|n",
            "BENCH|side-by-side|watch/events per second/rein|2|events/s|n",
        ];
        let all: Vec<Figure> = lines.iter().filter_map(|l| parse_figure(l)).collect();
        let m = sidebyside::medians(&all);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].value, "2.000");
        assert!(m[0].note.contains("median of 3"));
        assert_eq!(figure::median(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
    }

    #[test]
    fn options_parse() {
        let o = parse_args(&["--quick".into(), "--only".into(), "sidebyside".into()]).unwrap();
        assert!(o.quick && !o.crates && o.sidebyside && o.reps == 1);
        assert!(parse_args(&["--only".into(), "nothing".into()]).is_err());
    }

    #[test]
    fn chart_draws_an_svg() {
        let lines = [
            "BENCH|side-by-side|initial-sync/time to synced/rein|2.0|s|",
            "BENCH|side-by-side|initial-sync/time to synced/kube-runtime|4.0|s|",
            "BENCH|side-by-side|watch/events per second/rein|900|events/s|",
            "BENCH|side-by-side|watch/events per second/kube-runtime|1000|events/s|",
        ];
        let figures: Vec<Figure> = lines.iter().filter_map(|l| parse_figure(l)).collect();
        let (rows, _) = compare::rows(&figures);
        let path = std::env::temp_dir().join(format!("xtask-chart-{}.svg", std::process::id()));
        assert_eq!(chart::draw(&rows, &path).unwrap(), 2);
        let svg = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("initial-sync: time to synced"));
    }
}
