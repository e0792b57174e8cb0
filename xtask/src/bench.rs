//! `cargo xtask bench`: runs every benchmark target and writes `docs/benchmarks.md`.
//!
//! Benchmark targets are `harness = false` binaries that print one line per figure:
//!
//! ```text
//! BENCH|<group>|<case>|<value>|<unit>|<aim or note>
//! ```
//!
//! Everything in `docs/benchmarks.md` below the `<!-- notes -->` marker is kept as written.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use anyhow::Context;

use crate::{cargo, project_root};

const NOTES_MARKER: &str = "<!-- notes -->";

/// One figure printed by a benchmark.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    pub(crate) group: String,
    pub(crate) case: String,
    pub(crate) value: String,
    pub(crate) unit: String,
    pub(crate) note: String,
}

/// Parses a `BENCH|…` line.
pub(crate) fn parse_figure(line: &str) -> Option<Figure> {
    let rest = line.strip_prefix("BENCH|")?;
    let mut parts = rest.splitn(5, '|').map(str::trim);
    Some(Figure {
        group: parts.next()?.to_owned(),
        case: parts.next()?.to_owned(),
        value: parts.next()?.to_owned(),
        unit: parts.next()?.to_owned(),
        note: parts.next().unwrap_or("").to_owned(),
    })
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let root = project_root();
    let mut cmd = Command::new(cargo());
    cmd.current_dir(&root)
        .args(["bench", "--workspace", "--locked"])
        .stdout(Stdio::piped());
    if !args.is_empty() {
        cmd.arg("--").args(args);
    }
    let command_line = if args.is_empty() {
        "cargo xtask bench".to_owned()
    } else {
        format!("cargo xtask bench {}", args.join(" "))
    };
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

    let path = root.join("docs").join("benchmarks.md");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let notes = old
        .split_once(NOTES_MARKER)
        .map(|(_, n)| n.trim().to_owned())
        .unwrap_or_default();
    let doc = render(&figures, &command_line, &notes);
    std::fs::write(&path, doc).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {} ({} figures)", path.display(), figures.len());
    Ok(())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    format!("{cores} cores, {cpu}; {rustc}")
}

fn render(figures: &[Figure], command_line: &str, notes: &str) -> String {
    let mut groups: BTreeMap<&str, Vec<&Figure>> = BTreeMap::new();
    for f in figures {
        groups.entry(f.group.as_str()).or_default().push(f);
    }
    let mut doc = String::from("# Benchmarks\n\n");
    doc.push_str(&format!(
        "Produced by `{command_line}` on {}.\nRelease build; figures are from one run.\n\n",
        machine()
    ));
    for (group, figs) in groups {
        doc.push_str(&format!(
            "## {group}\n\n| case | value | unit | aim / note |\n|---|---:|---|---|\n"
        ));
        for f in figs {
            doc.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                f.case, f.value, f.unit, f.note
            ));
        }
        doc.push('\n');
    }
    doc.push_str(NOTES_MARKER);
    doc.push('\n');
    if !notes.is_empty() {
        doc.push('\n');
        doc.push_str(notes);
        doc.push('\n');
    }
    doc
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
        let doc = render(&[f], "cargo xtask bench", "kept notes");
        assert!(doc.contains("| throughput | 2.9 | M items/s | aim ≥ 2.5 |"));
        assert!(doc.ends_with("kept notes\n"));
    }
}
