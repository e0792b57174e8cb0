//! The server flags of `rein-apiserver`, shared with every binary that embeds the server (such
//! as rein-sim's `rein-cluster`): flatten [`ServerFlags`] into a clap parser and build the
//! server with [`ServerFlags::builder`].
//!
//! ```
//! use clap::Parser;
//!
//! #[derive(Parser)]
//! struct Args {
//!     #[command(flatten)]
//!     server: rein_testenv::cli::ServerFlags,
//! }
//!
//! let args = Args::parse_from(["my-server", "--token", "s3cret"]);
//! let (_builder, note) = args.server.builder();
//! // Credentials make the server speak HTTPS, and the note says so.
//! assert!(args.server.serves_tls() && note.is_some());
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::env::builder::DEFAULT_WATCH_HISTORY;
use crate::{AdmissionPlugin, TestEnv, TestEnvBuilder, User};

/// What the server is told by its command line: address, kubeconfig output, TLS, credentials,
/// RBAC, watch history, waits and admission plugins.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerFlags {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Write a kubeconfig for this server to this file.
    #[arg(long)]
    pub kubeconfig_out: Option<PathBuf>,
    /// Serve HTTPS with a generated CA (written into the kubeconfig).
    #[arg(long)]
    pub tls: bool,
    /// Require this bearer token.
    #[arg(long)]
    pub token: Option<String>,
    /// Add a user: `NAME:TOKEN` or `NAME:TOKEN:GROUP1,GROUP2` (repeatable).
    #[arg(long = "user", value_name = "NAME:TOKEN[:GROUPS]", value_parser = parse_user)]
    pub users: Vec<User>,
    /// Authorize every request against the stored RBAC objects (403 when they do not allow).
    #[arg(long)]
    pub enforce_rbac: bool,
    /// Change events kept for watch resumption.
    #[arg(long, default_value_t = DEFAULT_WATCH_HISTORY)]
    pub watch_history: usize,
    /// Seconds a list or streaming watch from a resourceVersion the server has not reached
    /// waits for it before answering 504 (fractions allowed; default 3, as kube-apiserver).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub too_large_rv_wait: Option<Duration>,
    /// Built-in admission plugins to turn off, comma-separated, as kube-apiserver's flag
    /// (ResourceQuota, LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds).
    #[arg(long, value_delimiter = ',', value_parser = parse_plugin)]
    pub disable_admission_plugins: Vec<AdmissionPlugin>,
}

impl ServerFlags {
    /// The names of the flags, for `conflicts_with_all` in a binary that can also run without
    /// the embedded server.
    pub const IDS: [&'static str; 9] = [
        "listen",
        "kubeconfig_out",
        "tls",
        "token",
        "users",
        "enforce_rbac",
        "watch_history",
        "too_large_rv_wait",
        "disable_admission_plugins",
    ];

    /// Whether to serve HTTPS: with `--tls`, and whenever credentials are asked for
    /// (`--token`, `--user`, `--enforce-rbac`), since kubectl sends no credentials to an
    /// `http://` server and the kubeconfig would make every request anonymous.
    pub fn serves_tls(&self) -> bool {
        self.tls || self.asks_for_credentials()
    }

    fn asks_for_credentials(&self) -> bool {
        self.token.is_some() || !self.users.is_empty() || self.enforce_rbac
    }

    /// The server the flags describe, and a note for the operator when TLS was implied by
    /// credentials rather than asked for.
    pub fn builder(&self) -> (TestEnvBuilder, Option<&'static str>) {
        let note = (!self.tls && self.asks_for_credentials()).then_some(
            "serving HTTPS: --token, --user and --enforce-rbac imply --tls (kubectl sends no \
             credentials to an http:// server)",
        );
        let mut builder = TestEnv::builder()
            .listen(self.listen)
            .tls(self.serves_tls())
            .watch_history(self.watch_history)
            .enforce_rbac(self.enforce_rbac);
        for user in &self.users {
            builder = builder.user(user.clone());
        }
        if let Some(token) = &self.token {
            builder = builder.token(token.clone());
        }
        if let Some(wait) = self.too_large_rv_wait {
            builder = builder.too_large_rv_wait(wait);
        }
        for plugin in &self.disable_admission_plugins {
            builder = builder.admission_plugin(*plugin, false);
        }
        (builder, note)
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
fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("not a number of seconds: {s:?}"))?;
    Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("not a non-negative, finite number of seconds: {s:?}"))
}

/// Parses `NAME:TOKEN[:GROUP1,GROUP2]`.
fn parse_user(s: &str) -> Result<User, String> {
    let mut parts = s.splitn(3, ':');
    let (Some(name), Some(token)) = (parts.next(), parts.next()) else {
        return Err(format!("expected NAME:TOKEN[:GROUPS], got {s:?}"));
    };
    if name.is_empty() || token.is_empty() {
        return Err(format!("a user needs a name and a token: {s:?}"));
    }
    let mut user = User::new(name).token(token);
    for group in parts.next().unwrap_or_default().split(',') {
        if !group.is_empty() {
            user = user.group(group);
        }
    }
    Ok(user)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        server: ServerFlags,
    }

    fn parse(argv: &[&str]) -> Result<ServerFlags, clap::Error> {
        Args::try_parse_from(std::iter::once("server").chain(argv.iter().copied()))
            .map(|a| a.server)
    }

    #[test]
    fn credentials_imply_tls() {
        let tls = |argv: &[&str]| {
            let flags = parse(argv).expect("parses");
            (flags.serves_tls(), flags.builder().1)
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

    #[test]
    fn bad_values_are_refused_with_the_reason() {
        let err = |argv: &[&str]| parse(argv).expect_err("refused").to_string();
        assert!(err(&["--too-large-rv-wait=-1"]).contains("non-negative"));
        assert!(err(&["--too-large-rv-wait", "soon"]).contains("not a number"));
        assert!(err(&["--disable-admission-plugins", "Nope"]).contains("unknown admission"));
        let flags = parse(&["--disable-admission-plugins", "Priority,LimitRanger"]).expect("ok");
        assert_eq!(
            flags.disable_admission_plugins,
            [AdmissionPlugin::Priority, AdmissionPlugin::LimitRanger]
        );
    }
}
