//! The side-by-side runs: which `rein-bench case …` processes to start, and their medians.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context;

use super::figure::{Figure, median, parse_figure};

/// Creates per second of the paced controller runs: well below what rein-testenv takes
/// (~10–20k small creates/s), so latency is measured with the server unsaturated.
const PACED_RATE: &str = "1000";

/// One `rein-bench` invocation.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// What the progress line says.
    pub(crate) label: String,
    /// Arguments after `rein-bench`.
    pub(crate) args: Vec<String>,
}

/// Configured alike: kube-runtime drops managedFields before caching (`WatchStreamExt::modify`,
/// its best configuration), as rein's cache does by default. Cases run so are named
/// `<case>-alike`.
const ALIKE: &str = "--strip-managed-fields";

/// Every run of one repetition, in order, keeping those whose label contains one of `filter`
/// (all when it is empty). Sides within a run share one server (sync, watch, metadata-only,
/// multi-namespace); their order rotates with `rep` so no side always goes first. The
/// informer cases run twice: both sides in their default configuration, then configured
/// alike.
pub(crate) fn runs(quick: bool, rep: usize, filter: &[String]) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut push = |label: &str, scenario: &[&str], sides: &[&str]| {
        let mut sides = sides.to_vec();
        let n = sides.len();
        sides.rotate_left(rep % n);
        let mut args: Vec<String> = ["case"]
            .iter()
            .chain(scenario)
            .map(|a| (*a).to_owned())
            .collect();
        for side in &sides {
            args.push("--side".to_owned());
            args.push((*side).to_owned());
        }
        if quick {
            args.push("--quick".to_owned());
        }
        runs.push(Run {
            label: format!("{label}: {}", sides.join(", ")),
            args,
        });
    };
    let all = ["rein", "kube-runtime", "kube-runtime-streaming"];
    push("initial sync", &["sync"], &all);
    push("initial sync, configured alike", &["sync", ALIKE], &all);
    push("metadata-only initial sync", &["metadata"], &all);
    push(
        "metadata-only initial sync, configured alike",
        &["metadata", ALIKE],
        &all,
    );
    push(
        "multi-namespace initial sync, 3 of 10 namespaces",
        &["namespaces"],
        &all,
    );
    push(
        "multi-namespace initial sync, 3 of 10 namespaces, configured alike",
        &["namespaces", ALIKE],
        &all,
    );
    push("watch throughput", &["watch"], &all);
    push(
        "watch throughput, configured alike",
        &["watch", ALIKE],
        &all,
    );
    // kube-runtime's watch phase is the same code with either list mode: two sides suffice.
    push(
        "watch throughput, backlog drained by a stopped client",
        &["watch", "--backlog"],
        &["rein", "kube-runtime"],
    );
    push(
        "watch throughput, backlog drained by a stopped client, configured alike",
        &["watch", "--backlog", ALIKE],
        &["rein", "kube-runtime"],
    );
    // The controller cases' ConfigMaps carry no managedFields (written without a field
    // manager): their default configurations are already alike.
    for concurrency in ["1", "16"] {
        push(
            &format!("controller end to end, concurrency {concurrency}, burst writer"),
            &["controller", "--concurrency", concurrency],
            &["rein", "kube-runtime"],
        );
    }
    for concurrency in ["1", "16"] {
        push(
            &format!(
                "controller end to end, concurrency {concurrency}, paced writer {PACED_RATE}/s"
            ),
            &[
                "controller",
                "--concurrency",
                concurrency,
                "--paced",
                PACED_RATE,
            ],
            &["rein", "kube-runtime"],
        );
    }
    runs.retain(|r| filter.is_empty() || filter.iter().any(|f| r.label.contains(f.as_str())));
    runs
}

/// The figures of a filtered run merged into the saved ones: every case the new figures
/// cover is replaced whole; the other cases keep their saved figures.
pub(crate) fn merge(saved: Vec<Figure>, new: Vec<Figure>) -> Vec<Figure> {
    let rerun: std::collections::BTreeSet<String> = new
        .iter()
        .filter_map(|f| f.side_key().map(|(case, _, _)| case.to_owned()))
        .collect();
    saved
        .into_iter()
        .filter(|f| {
            f.side_key()
                .is_none_or(|(case, _, _)| !rerun.contains(case))
        })
        .chain(new)
        .collect()
}

/// Runs `exe <args>` and returns its figures; its stderr passes through.
pub(crate) fn run_one(exe: &Path, run: &Run) -> anyhow::Result<Vec<Figure>> {
    let mut child = Command::new(exe)
        .args(&run.args)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let out = child.stdout.take().context("stdout")?;
    let figures: Vec<Figure> = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| parse_figure(&l))
        .collect();
    let status = child.wait()?;
    anyhow::ensure!(status.success(), "{} failed: {status}", run.label);
    Ok(figures)
}

/// Folds the repetitions into one figure per case: the median value, with the repetition
/// count in the note.
pub(crate) fn medians(all: &[Figure]) -> Vec<Figure> {
    let mut by_key: BTreeMap<(String, String), (Figure, Vec<f64>)> = BTreeMap::new();
    for f in all {
        let entry = by_key
            .entry((f.group.clone(), f.case.clone()))
            .or_insert_with(|| (f.clone(), Vec::new()));
        if let Ok(v) = f.value.parse::<f64>() {
            entry.1.push(v);
        }
    }
    by_key
        .into_values()
        .map(|(mut f, values)| {
            if let Some(m) = median(&values) {
                f.value = format!("{m:.3}");
                if values.len() > 1 {
                    f.note = format!("{} (median of {})", f.note, values.len());
                }
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_keeps_the_runs_it_names() {
        let all = runs(false, 0, &[]);
        let some = runs(false, 0, &["metadata-only".to_owned()]);
        assert!(all.len() > some.len());
        assert_eq!(some.len(), 2);
        assert!(some.iter().all(|r| r.args[1] == "metadata"));
    }

    #[test]
    fn a_filtered_run_replaces_only_the_cases_it_ran() {
        let parse = |lines: &[&str]| -> Vec<Figure> {
            lines.iter().filter_map(|l| parse_figure(l)).collect()
        };
        let saved = parse(&[
            "BENCH|side-by-side|initial-sync/peak RSS/rein|600|MiB|",
            "BENCH|side-by-side|metadata-only/peak RSS/rein|90|MiB|",
        ]);
        let new = parse(&["BENCH|side-by-side|metadata-only/peak RSS/rein|77|MiB|"]);
        let merged: Vec<String> = merge(saved, new).iter().map(|f| f.value.clone()).collect();
        assert_eq!(merged, ["600", "77"]);
    }
}
