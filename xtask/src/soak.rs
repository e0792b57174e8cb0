//! `cargo xtask soak`: builds the chaos soak in release mode and runs it over one or more seeds
//! back to back, streaming each run's output, then prints one line per seed (its result,
//! convergence time, faults, and the client side's peak and final memory).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use anyhow::Context as _;

use crate::{cargo, project_root};

const USAGE: &str = "\
usage: cargo xtask soak [--minutes N] [--seed S] [--seeds N] [--rounds N] [--sharded]

  --minutes N  how long the writer and the chaos driver run, per seed (default 10)
  --seed S     the first seed (default 1)
  --seeds N    run N seeds, S, S+1, ..., one after another (default 1)
  --rounds N   run exactly N rounds instead of a time
  --sharded    the sharded soak: replicas of a sharded manager killed, stopped and
               replaced, the API server held, while ConfigMaps churn
";

/// The soak binary's arguments, checked here so a typo fails before a release build.
#[derive(Debug, Default, PartialEq)]
struct SoakArgs {
    minutes: Option<String>,
    seed: Option<String>,
    seeds: Option<String>,
    rounds: Option<String>,
    sharded: bool,
}

/// glibc's cap on malloc arenas (see [`run`]).
const MALLOC_ARENA_MAX: &str = "MALLOC_ARENA_MAX";

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        return Ok(());
    }
    let parsed = parse(args)?;
    let status = Command::new(cargo())
        .current_dir(project_root())
        .args([
            "build",
            "--release",
            "--locked",
            "-p",
            "rein-tests",
            "--bin",
            "soak",
        ])
        .status()
        .context("building the soak")?;
    anyhow::ensure!(status.success(), "building the soak failed ({status})");
    let exe = project_root().join("target/release/soak");
    let first: u64 = parsed.seed.as_deref().unwrap_or("1").parse()?;
    let count: u64 = parsed.seeds.as_deref().unwrap_or("1").parse()?;
    let mut summaries = Vec::new();
    for seed in first..first + count {
        let mut cmd = Command::new(&exe);
        cmd.args(["--seed", &seed.to_string()]);
        if parsed.sharded {
            cmd.arg("--sharded");
        }
        for (flag, value) in [("--minutes", &parsed.minutes), ("--rounds", &parsed.rounds)] {
            if let Some(value) = value {
                cmd.args([flag, value]);
            }
        }
        // glibc's malloc gives busy threads arenas of their own (up to 8 per core) and rarely
        // returns their pages; the soak states the configuration it measured under, and runs
        // with the cap a long-running operator on glibc should use too (docs/reliability.md).
        // An explicit setting is kept.
        if std::env::var_os(MALLOC_ARENA_MAX).is_none() {
            cmd.env(MALLOC_ARENA_MAX, "2");
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("running {cmd:?}"))?;
        let mut summary = None;
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines() {
                let line = line?;
                println!("{line}");
                if let Some(s) = line.strip_prefix("SOAK|") {
                    summary = Some(s.to_string());
                }
            }
        }
        let status = child.wait()?;
        summaries.push((
            seed,
            status.success(),
            summary.unwrap_or_else(|| format!("no summary ({status})")),
        ));
    }
    println!("\nseed  result  summary");
    for (seed, ok, summary) in &summaries {
        let result = if *ok { "passed" } else { "FAILED" };
        println!("{seed:>4}  {result}  {}", summary.replace('|', "  "));
    }
    let failed = summaries.iter().filter(|s| !s.1).count();
    anyhow::ensure!(
        failed == 0,
        "{failed} of {} soak run(s) failed",
        summaries.len()
    );
    Ok(())
}

fn parse(args: &[String]) -> anyhow::Result<SoakArgs> {
    let mut parsed = SoakArgs::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--sharded" {
            parsed.sharded = true;
            continue;
        }
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (flag.as_str(), None),
        };
        let slot = match name {
            "--minutes" => &mut parsed.minutes,
            "--seed" => &mut parsed.seed,
            "--seeds" => &mut parsed.seeds,
            "--rounds" => &mut parsed.rounds,
            other => anyhow::bail!("unknown argument `{other}`\n\n{USAGE}"),
        };
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .cloned()
                .with_context(|| format!("`{name}` needs a value"))?,
        };
        let ok = match name {
            "--minutes" => value.parse::<f64>().is_ok_and(|m| m > 0.0),
            "--seeds" => value.parse::<u64>().is_ok_and(|n| n > 0),
            _ => value.parse::<u64>().is_ok(),
        };
        anyhow::ensure!(ok, "`{name}` takes a positive number, not `{value}`");
        *slot = Some(value);
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_flags_with_separate_or_inline_values() {
        let parsed = parse(&args(&["--minutes", "2.5", "--seed=9", "--seeds", "10"])).unwrap();
        assert_eq!(parsed.minutes.as_deref(), Some("2.5"));
        assert_eq!(parsed.seed.as_deref(), Some("9"));
        assert_eq!(parsed.seeds.as_deref(), Some("10"));
        assert_eq!(parsed.rounds, None);
        assert!(!parsed.sharded);
        assert!(
            parse(&args(&["--sharded", "--rounds", "3"]))
                .unwrap()
                .sharded
        );
    }

    #[test]
    fn rejects_unknown_flags_and_bad_values() {
        assert!(parse(&args(&["--hours", "1"])).is_err());
        assert!(parse(&args(&["--seed"])).is_err());
        assert!(parse(&args(&["--seed", "x"])).is_err());
        assert!(parse(&args(&["--minutes", "0"])).is_err());
        assert!(parse(&args(&["--seeds", "0"])).is_err());
    }
}
