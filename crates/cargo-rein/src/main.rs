//! The `cargo-rein` binary: `cargo rein new | manifests | rbac` (see the library's docs).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use cargo_rein::manifests::{Manifests, yaml};
use cargo_rein::operator::OperatorCrate;
use cargo_rein::rbac::{self, Need};
use cargo_rein::scaffold::{self, NewOptions};
use clap::{Args, Parser, Subcommand};

/// Scaffold a rein operator, generate its manifests, derive its RBAC from what it does.
#[derive(Debug, Parser)]
#[command(name = "cargo rein", bin_name = "cargo rein", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write a new operator crate into DIR.
    New {
        /// The directory to create.
        dir: PathBuf,
        /// The package name (default: the directory's name).
        #[arg(long)]
        name: Option<String>,
        /// Depend on the rein checkout at PATH (by path, offline) instead of the published crates.
        #[arg(long, value_name = "PATH")]
        rein_path: Option<PathBuf>,
    },
    /// Print (or write to --out) the operator's manifests as YAML for `kubectl apply`.
    Manifests {
        #[command(flatten)]
        target: Target,
        /// Write the manifests as files into DIR instead of printing them.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Print the RBAC the manifests grant; with --from-tests, add what the tests' requests needed.
    Rbac {
        #[command(flatten)]
        target: Target,
        /// Run `cargo test` with rein-testenv's request log exported and merge what the
        /// operator's ServiceAccount did into the rules.
        #[arg(long)]
        from_tests: bool,
        /// Read the requests from this exported request log instead of running the tests.
        #[arg(long, value_name = "FILE", conflicts_with = "from_tests")]
        request_log: Option<PathBuf>,
        /// Read the manifests from this YAML file or directory (as `manifests` writes them,
        /// perhaps edited since) instead of running the operator's binary.
        #[arg(long, value_name = "PATH")]
        manifests: Option<PathBuf>,
        /// Fail (exit 1) when the rules do not cover every request, instead of adding rules.
        #[arg(long)]
        check: bool,
        /// Write the merged manifests as files into DIR (as `manifests --out`).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Arguments for `cargo test` (after `--`).
        #[arg(last = true)]
        test_args: Vec<String>,
    },
}

/// Which operator crate, and the settings its `manifests` mode takes.
#[derive(Debug, Args)]
struct Target {
    /// The operator's Cargo.toml (default: ./Cargo.toml).
    #[arg(long, value_name = "PATH")]
    manifest_path: Option<PathBuf>,
    /// The namespace to deploy into (passed to `<bin> manifests --namespace`).
    #[arg(long)]
    namespace: Option<String>,
    /// The container image (passed to `<bin> manifests --image`).
    #[arg(long)]
    image: Option<String>,
}

impl Target {
    fn operator(&self) -> anyhow::Result<OperatorCrate> {
        Ok(OperatorCrate::locate(self.manifest_path.as_deref())?)
    }

    /// The manifests the operator's binary prints.
    fn manifests(&self, operator: &OperatorCrate) -> anyhow::Result<Manifests> {
        let mut args = Vec::new();
        if let Some(ns) = &self.namespace {
            args.extend(["--namespace".to_owned(), ns.clone()]);
        }
        if let Some(image) = &self.image {
            args.extend(["--image".to_owned(), image.clone()]);
        }
        Ok(operator.manifests(&args)?)
    }
}

fn main() -> ExitCode {
    // Run as `cargo rein ...`, cargo passes `rein` first; run directly, it does not.
    let mut args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "rein") {
        args.remove(1);
    }
    let cli = Cli::parse_from(args);
    match run(cli.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::New {
            dir,
            name,
            rein_path,
        } => {
            let written = scaffold::new_crate(&NewOptions {
                dir: dir.clone(),
                name,
                rein_path,
            })?;
            println!("created {} ({} files)", dir.display(), written.len());
            println!("next: cd {} && cargo test", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Manifests { target, out } => {
            let manifests = target.manifests(&target.operator()?)?;
            emit(&manifests, out.as_deref(), manifests.objects().iter())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Rbac {
            target,
            from_tests,
            request_log,
            manifests,
            check,
            out,
            test_args,
        } => rbac_command(&RbacOptions {
            target,
            from_tests,
            request_log,
            manifests,
            check,
            out,
            test_args,
        }),
    }
}

/// What `cargo rein rbac` was asked.
#[derive(Debug)]
struct RbacOptions {
    target: Target,
    from_tests: bool,
    request_log: Option<PathBuf>,
    manifests: Option<PathBuf>,
    check: bool,
    out: Option<PathBuf>,
    test_args: Vec<String>,
}

fn rbac_command(options: &RbacOptions) -> anyhow::Result<ExitCode> {
    let RbacOptions {
        target,
        from_tests,
        request_log,
        manifests: manifests_path,
        check,
        out,
        test_args,
    } = options;
    let (from_tests, check) = (*from_tests, *check);
    // The crate is needed to print its manifests or to run its tests; not when both come
    // from files.
    let operator = if manifests_path.is_none() || from_tests {
        Some(target.operator()?)
    } else {
        None
    };
    let mut manifests = match (manifests_path, &operator) {
        (Some(path), _) => Manifests::read(path)
            .with_context(|| format!("reading the manifests at {}", path.display()))?,
        (None, Some(operator)) => target.manifests(operator)?,
        (None, None) => unreachable!("the crate is located when no manifests file is given"),
    };
    let (sa_namespace, sa_name) = manifests.service_account()?;
    let user = format!("system:serviceaccount:{sa_namespace}:{sa_name}");
    let is_rbac = |o: &&serde_json::Value| {
        matches!(
            o["kind"].as_str(),
            Some("ClusterRole" | "ClusterRoleBinding" | "Role" | "RoleBinding")
        )
    };
    let (requests, tests_passed) = match (from_tests, request_log) {
        (false, None) => {
            anyhow::ensure!(!check, "--check needs --from-tests or --request-log");
            let objects: Vec<_> = manifests
                .objects()
                .iter()
                .filter(is_rbac)
                .cloned()
                .collect();
            emit(&manifests, out.as_deref(), objects.iter())?;
            return Ok(ExitCode::SUCCESS);
        }
        (_, Some(path)) => (rbac::read_log(path)?, true),
        (true, None) => {
            let operator = operator.as_ref().expect("located for --from-tests");
            let log = std::env::temp_dir()
                .join(format!("cargo-rein-requests-{}.jsonl", std::process::id()));
            let _ = std::fs::remove_file(&log);
            let passed = operator.test_with_request_log(&log, test_args)?;
            let requests = rbac::read_log(&log);
            let _ = std::fs::remove_file(&log);
            (requests?, passed)
        }
    };
    let ours = requests.iter().filter(|r| r.user == user).count();
    anyhow::ensure!(
        ours > 0,
        "the tests made no request as {user}: run the operator in its tests as its ServiceAccount \
         (rein-testenv `User::new(\"{user}\")`) so its requests can be told from the test's own"
    );
    let grants = rbac::granted(&manifests, &sa_namespace, &sa_name);
    let missing: BTreeSet<Need> = rbac::uncovered(&grants, &requests, &user, &sa_namespace);
    eprintln!(
        "{ours} requests by {user}; {} permission(s) the manifests' RBAC does not grant",
        missing.len()
    );
    if !tests_passed {
        eprintln!(
            "warning: the tests failed, so they may not have done everything the operator does"
        );
    }
    if check {
        for need in &missing {
            eprintln!("  not covered: {need}");
        }
        let ok = missing.is_empty() && tests_passed;
        if ok {
            eprintln!("the RBAC rules cover every request the tests made");
        }
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    for need in &missing {
        eprintln!("  adding: {need}");
    }
    rbac::merge(&mut manifests, &missing)?;
    match &out {
        Some(_) => emit(&manifests, out.as_deref(), manifests.objects().iter())?,
        None => {
            let objects: Vec<_> = manifests
                .objects()
                .iter()
                .filter(is_rbac)
                .cloned()
                .collect();
            print!("{}", yaml(objects.iter())?);
        }
    }
    Ok(if tests_passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Writes `manifests` to `out` as files, or prints `objects` as YAML.
fn emit<'a>(
    manifests: &Manifests,
    out: Option<&std::path::Path>,
    objects: impl Iterator<Item = &'a serde_json::Value>,
) -> anyhow::Result<()> {
    match out {
        Some(dir) => {
            for file in manifests.write_dir(dir).context("writing the manifests")? {
                println!("wrote {}", file.display());
            }
        }
        None => print!("{}", yaml(objects)?),
    }
    Ok(())
}
