//! `cargo xtask soak`: builds the chaos soak in release mode and runs it, streaming its output.

use std::process::Command;

use anyhow::Context as _;

use crate::{cargo, project_root};

const USAGE: &str = "\
usage: cargo xtask soak [--minutes N] [--seed S] [--rounds N]

  --minutes N  how long the writer and the chaos driver run (default 10)
  --seed S     seeds the writer's and the chaos driver's decisions (default 1)
  --rounds N   run exactly N rounds instead of a time
";

/// The soak binary's arguments, checked here so a typo fails before a release build.
#[derive(Debug, Default, PartialEq)]
struct SoakArgs {
    minutes: Option<String>,
    seed: Option<String>,
    rounds: Option<String>,
}

/// glibc's cap on malloc arenas (see [`run`]).
const MALLOC_ARENA_MAX: &str = "MALLOC_ARENA_MAX";

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        return Ok(());
    }
    let parsed = parse(args)?;
    let mut cmd = Command::new(cargo());
    cmd.current_dir(project_root()).args([
        "run",
        "--release",
        "--locked",
        "-p",
        "rein-tests",
        "--bin",
        "soak",
        "--",
    ]);
    for (flag, value) in [
        ("--minutes", &parsed.minutes),
        ("--seed", &parsed.seed),
        ("--rounds", &parsed.rounds),
    ] {
        if let Some(value) = value {
            cmd.args([flag, value]);
        }
    }
    // glibc's malloc gives busy threads arenas of their own (up to 8 per core) and rarely
    // returns their pages: without a cap the 3-minute soak's resident memory climbed in steps
    // to 850 MiB and failed the growth check, with 2 arenas it stays at ~380 MiB (soak finding
    // F4, docs/reliability.md). The check is there to find leaks, so it runs with the cap a
    // long-running operator on glibc should use too; an explicit setting is kept.
    if std::env::var_os(MALLOC_ARENA_MAX).is_none() {
        cmd.env(MALLOC_ARENA_MAX, "2");
    }
    // Inherited stdio: the soak's per-round lines and its report stream straight through.
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    anyhow::ensure!(status.success(), "the soak failed ({status})");
    Ok(())
}

fn parse(args: &[String]) -> anyhow::Result<SoakArgs> {
    let mut parsed = SoakArgs::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (flag.as_str(), None),
        };
        let slot = match name {
            "--minutes" => &mut parsed.minutes,
            "--seed" => &mut parsed.seed,
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
        let ok = if name == "--minutes" {
            value.parse::<f64>().is_ok_and(|m| m > 0.0)
        } else {
            value.parse::<u64>().is_ok()
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
        let parsed = parse(&args(&["--minutes", "2.5", "--seed=9"])).unwrap();
        assert_eq!(parsed.minutes.as_deref(), Some("2.5"));
        assert_eq!(parsed.seed.as_deref(), Some("9"));
        assert_eq!(parsed.rounds, None);
    }

    #[test]
    fn rejects_unknown_flags_and_bad_values() {
        assert!(parse(&args(&["--hours", "1"])).is_err());
        assert!(parse(&args(&["--seed"])).is_err());
        assert!(parse(&args(&["--seed", "x"])).is_err());
        assert!(parse(&args(&["--minutes", "0"])).is_err());
    }
}
