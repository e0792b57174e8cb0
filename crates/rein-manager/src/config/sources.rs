//! A snapshot of everything config discovery looks at: flag, environment, files.

use std::ffi::OsString;
use std::path::PathBuf;

/// The in-cluster service-account environment of a Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InClusterSource {
    /// `KUBERNETES_SERVICE_HOST`.
    pub service_host: Option<String>,
    /// `KUBERNETES_SERVICE_PORT`.
    pub service_port: Option<String>,
    /// The service-account token file.
    pub token_file: PathBuf,
    /// The cluster CA bundle.
    pub ca_file: PathBuf,
    /// The file holding the Pod's namespace.
    pub namespace_file: PathBuf,
}

/// The directory Kubernetes mounts the service-account credentials into.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

impl InClusterSource {
    /// Reads the service environment variables; files at their standard paths.
    pub fn from_env() -> Self {
        let dir = PathBuf::from(SERVICE_ACCOUNT_DIR);
        InClusterSource {
            service_host: non_empty_var("KUBERNETES_SERVICE_HOST"),
            service_port: non_empty_var("KUBERNETES_SERVICE_PORT"),
            token_file: dir.join("token"),
            ca_file: dir.join("ca.crt"),
            namespace_file: dir.join("namespace"),
        }
    }

    /// No service environment at all (what a process outside a cluster sees).
    pub fn absent() -> Self {
        let dir = PathBuf::from(SERVICE_ACCOUNT_DIR);
        InClusterSource {
            service_host: None,
            service_port: None,
            token_file: dir.join("token"),
            ca_file: dir.join("ca.crt"),
            namespace_file: dir.join("namespace"),
        }
    }
}

/// Everything config discovery consults, in the order it consults it.
///
/// [`ConfigSources::from_env`] reads the process; tests and tools build one by hand so that
/// discovery never depends on (or mutates) the real environment.
#[derive(Debug, Clone)]
pub struct ConfigSources {
    /// The value of a `--kubeconfig` flag: used alone when set.
    pub kubeconfig_flag: Option<PathBuf>,
    /// The raw `KUBECONFIG` value (a path list, merged in order).
    pub kubeconfig_env: Option<OsString>,
    /// The in-cluster service account, tried when `KUBECONFIG` is unset.
    pub in_cluster: InClusterSource,
    /// The home directory whose `.kube/config` is the last resort.
    pub home: Option<PathBuf>,
    /// The kubeconfig context to use instead of `current-context` (`--context`).
    pub context: Option<String>,
}

impl ConfigSources {
    /// Reads the process: `--kubeconfig`/`--context` flags from the command line, `KUBECONFIG`,
    /// the in-cluster service environment and `HOME`.
    pub fn from_env() -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        ConfigSources {
            kubeconfig_flag: flag_value(&args, "kubeconfig").map(PathBuf::from),
            kubeconfig_env: std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()),
            in_cluster: InClusterSource::from_env(),
            home: std::env::home_dir(),
            context: flag_value(&args, "context"),
        }
    }

    /// Nothing at all: no flag, no environment, no home. A base for building sources by hand.
    pub fn empty() -> Self {
        ConfigSources {
            kubeconfig_flag: None,
            kubeconfig_env: None,
            in_cluster: InClusterSource::absent(),
            home: None,
            context: None,
        }
    }

    /// Sets the kubeconfig path as if given with `--kubeconfig` (e.g. from your own clap flag).
    pub fn kubeconfig(mut self, path: impl Into<PathBuf>) -> Self {
        self.kubeconfig_flag = Some(path.into());
        self
    }

    /// Selects a kubeconfig context other than `current-context`.
    pub fn context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }
}

fn non_empty_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Finds `--name=value`, `--name value`, `-name=value` or `-name value` (Go flag syntax).
pub(crate) fn flag_value(args: &[String], name: &str) -> Option<String> {
    let long = format!("--{name}");
    let short = format!("-{name}");
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            return None;
        }
        for prefix in [&long, &short] {
            if arg == prefix {
                return iter.next().cloned();
            }
            if let Some(value) = arg
                .strip_prefix(prefix.as_str())
                .and_then(|r| r.strip_prefix('='))
            {
                return Some(value.to_owned());
            }
        }
    }
    None
}
