//! `rein-apiserver`: the in-process test API server as a standalone process for kubectl.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use rein_testenv::AdmissionPlugin;

/// An embedded Kubernetes API server for tests and for trying kubectl against.
#[derive(Debug, Parser)]
#[command(name = "rein-apiserver", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Write a kubeconfig for this server to this file.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Serve HTTPS with a generated CA (written into the kubeconfig).
    #[arg(long)]
    tls: bool,
    /// Require this bearer token.
    #[arg(long)]
    token: Option<String>,
    /// Add a user: `NAME:TOKEN` or `NAME:TOKEN:GROUP1,GROUP2` (repeatable).
    #[arg(long = "user", value_name = "NAME:TOKEN[:GROUPS]", value_parser = parse_user)]
    users: Vec<rein_testenv::User>,
    /// Authorize every request against the stored RBAC objects (403 when they do not allow).
    #[arg(long)]
    enforce_rbac: bool,
    /// Change events kept for watch resumption.
    #[arg(long, default_value_t = rein_testenv::DEFAULT_WATCH_HISTORY)]
    watch_history: usize,
    /// Seconds a list or streaming watch from a resourceVersion the server has not reached
    /// waits for it before answering 504 (fractions allowed; default 3, as kube-apiserver).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    too_large_rv_wait: Option<std::time::Duration>,
    /// Built-in admission plugins to turn off, comma-separated, as kube-apiserver's flag
    /// (ResourceQuota, LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds).
    #[arg(long, value_delimiter = ',', value_parser = parse_plugin)]
    disable_admission_plugins: Vec<AdmissionPlugin>,
    /// What finishes graceful deletions of Pods bound to a node: `absent` (the default: they
    /// wait for a grace-0 delete), `at-once` (finished in the delete itself) or `after-grace`
    /// (finished once their grace period has run out).
    #[arg(long, value_name = "MODE", value_parser = parse_kubelet)]
    kubelet: Option<rein_testenv::Kubelet>,
}

/// A `--kubelet` mode.
fn parse_kubelet(s: &str) -> Result<rein_testenv::Kubelet, String> {
    match s {
        "absent" => Ok(rein_testenv::Kubelet::Absent),
        "at-once" => Ok(rein_testenv::Kubelet::StopsAtOnce),
        "after-grace" => Ok(rein_testenv::Kubelet::StopsAfterGrace),
        other => Err(format!(
            "unknown kubelet mode {other:?} (absent, at-once, after-grace)"
        )),
    }
}

/// An admission plugin by its kube-apiserver name.
fn parse_plugin(s: &str) -> Result<AdmissionPlugin, String> {
    Ok(match s.trim() {
        "ResourceQuota" => AdmissionPlugin::ResourceQuota,
        "LimitRanger" => AdmissionPlugin::LimitRanger,
        "ServiceAccount" => AdmissionPlugin::ServiceAccount,
        "Priority" => AdmissionPlugin::Priority,
        "DefaultTolerationSeconds" => AdmissionPlugin::DefaultTolerationSeconds,
        other => return Err(format!("unknown admission plugin {other:?}")),
    })
}

/// Parses a non-negative, finite number of seconds, such as `0.25` or `3`.
fn parse_seconds(s: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("not a number of seconds: {s:?}"))?;
    std::time::Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("not a non-negative, finite number of seconds: {s:?}"))
}

/// Parses `NAME:TOKEN[:GROUP1,GROUP2]`.
fn parse_user(s: &str) -> Result<rein_testenv::User, String> {
    let mut parts = s.splitn(3, ':');
    let (Some(name), Some(token)) = (parts.next(), parts.next()) else {
        return Err(format!("expected NAME:TOKEN[:GROUPS], got {s:?}"));
    };
    if name.is_empty() || token.is_empty() {
        return Err(format!("a user needs a name and a token: {s:?}"));
    }
    let mut user = rein_testenv::User::new(name).token(token);
    for group in parts.next().unwrap_or_default().split(',') {
        if !group.is_empty() {
            user = user.group(group);
        }
    }
    Ok(user)
}

/// Whether to serve HTTPS: with `--tls`, and whenever credentials are asked for (`--token`,
/// `--user`, `--enforce-rbac`), since kubectl sends no credentials to an `http://` server and
/// the kubeconfig would make every request anonymous. The note says when TLS was implied.
fn serves_tls(args: &Args) -> (bool, Option<&'static str>) {
    let credentials = args.token.is_some() || !args.users.is_empty() || args.enforce_rbac;
    match (args.tls, credentials) {
        (true, _) => (true, None),
        (false, true) => (
            true,
            Some(
                "serving HTTPS: --token, --user and --enforce-rbac imply --tls (kubectl sends no \
                 credentials to an http:// server)",
            ),
        ),
        (false, false) => (false, None),
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (tls, note) = serves_tls(&args);
    if let Some(note) = note {
        eprintln!("{note}");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut builder = rein_testenv::TestEnv::builder()
            .listen(args.listen)
            .tls(tls)
            .watch_history(args.watch_history)
            .enforce_rbac(args.enforce_rbac);
        for user in args.users {
            builder = builder.user(user);
        }
        if let Some(token) = &args.token {
            builder = builder.token(token.clone());
        }
        if let Some(wait) = args.too_large_rv_wait {
            builder = builder.too_large_rv_wait(wait);
        }
        for plugin in &args.disable_admission_plugins {
            builder = builder.admission_plugin(*plugin, false);
        }
        if let Some(kubelet) = args.kubelet {
            builder = builder.kubelet(kubelet);
        }
        let env = builder.start().await?;
        if let Some(path) = &args.kubeconfig_out {
            env.write_kubeconfig(path)?;
        }
        println!("listening on {}", env.base_url());
        rein_testenv::run_until_signal(env).await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Args, parse_user, serves_tls};

    #[test]
    fn credentials_imply_tls() {
        let tls = |argv: &[&str]| {
            let args =
                Args::parse_from(std::iter::once("rein-apiserver").chain(argv.iter().copied()));
            serves_tls(&args)
        };
        assert_eq!(tls(&[]), (false, None));
        assert_eq!(tls(&["--tls"]), (true, None));
        for argv in [
            &["--token", "t"][..],
            &["--enforce-rbac"],
            &["--user", "a:t"],
        ] {
            let (on, note) = tls(argv);
            assert!(
                on && note.is_some_and(|n| n.contains("imply --tls")),
                "{argv:?}"
            );
        }
    }

    #[test]
    fn users_parse_with_and_without_groups() {
        let user = parse_user("alice:t0k:devs,ops").expect("parses");
        assert_eq!(
            (user.name(), user.bearer_token(), user.groups()),
            (
                "alice",
                Some("t0k"),
                &["devs".to_string(), "ops".to_string()][..]
            )
        );
        assert!(parse_user("bob:t").expect("parses").groups().is_empty());
        assert!(parse_user("bob").is_err());
        assert!(parse_user(":t").is_err());
    }
}
