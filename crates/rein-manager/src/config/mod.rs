//! Config discovery: controller-runtime's `GetConfigOrDie` for kube-client.
//!
//! Sources are tried in this order, and the first one that is present wins:
//!
//! 1. the `--kubeconfig` flag (used alone; a bad file is an error, not a fall-through);
//! 2. `KUBECONFIG` (a path list; existing files are merged, the first to set a value wins);
//! 3. the in-cluster service account (only when `KUBECONFIG` is unset);
//! 4. `~/.kube/config`.
//!
//! A file that exists but is malformed is a typed [`Error`]; when nothing is found the error
//! lists every source tried and why it did not apply.

mod error;
mod sources;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use kube_client::Config;
use kube_client::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

pub use error::{Error, Origin};
pub use sources::{ConfigSources, InClusterSource, SERVICE_ACCOUNT_DIR};

/// Finds a client config from the process (flags, environment, files); see the module docs.
pub async fn get_config() -> Result<Config, Error> {
    load(&ConfigSources::from_env()).await
}

/// Like [`get_config`], but prints the error and exits the process with status 1 — the
/// behaviour of controller-runtime's `GetConfigOrDie`, for `main` functions.
pub async fn get_config_or_exit() -> Config {
    match get_config().await {
        Ok(config) => config,
        Err(err) => {
            eprintln!("error: {}", error_chain(&err));
            std::process::exit(1);
        }
    }
}

/// A config for a server that is never there (`https://127.0.0.1:9`, the discard port):
/// for a manager built only to be asked what it declares — its
/// [`permissions`](crate::Manager::permissions), for manifests — and never started, so that
/// printing manifests needs no cluster. Building a manager sends no request; any request a
/// client made with it would fail to connect.
pub fn unreachable() -> Config {
    let mut config = Config::new(
        "https://127.0.0.1:9"
            .parse()
            .expect("a constant, valid URL"),
    );
    config.connect_timeout = Some(std::time::Duration::from_secs(1));
    config
}

/// Finds a client config from explicitly given sources.
pub async fn load(sources: &ConfigSources) -> Result<Config, Error> {
    let options = KubeConfigOptions {
        context: sources.context.clone(),
        ..KubeConfigOptions::default()
    };
    let mut tried = Vec::new();

    if let Some(path) = &sources.kubeconfig_flag {
        let kubeconfig = read_kubeconfig(Origin::Flag, path)?;
        return build(Origin::Flag, kubeconfig, &options).await;
    }
    tried.push("--kubeconfig: not given".to_owned());

    if let Some(value) = &sources.kubeconfig_env {
        let mut merged: Option<Kubeconfig> = None;
        let mut missing = Vec::new();
        for path in std::env::split_paths(value) {
            if path.as_os_str().is_empty() {
                continue;
            }
            if !path.exists() {
                missing.push(path.display().to_string());
                continue;
            }
            let next = read_kubeconfig(Origin::Env, &path)?;
            merged = Some(match merged {
                None => next,
                Some(base) => base.merge(next).map_err(|source| Error::ReadKubeconfig {
                    origin: Origin::Env,
                    path: path.clone(),
                    source,
                })?,
            });
        }
        match merged {
            Some(kubeconfig) => return build(Origin::Env, kubeconfig, &options).await,
            None => tried.push(format!(
                "KUBECONFIG: none of its files exist ({})",
                missing.join(", ")
            )),
        }
    } else {
        tried.push("KUBECONFIG: not set".to_owned());
        match in_cluster(&sources.in_cluster) {
            Ok(config) => return Ok(config),
            Err(reason) => tried.push(format!("in-cluster: {reason}")),
        }
    }

    // Go's loading rules consult ~/.kube/config only when KUBECONFIG is unset.
    if sources.kubeconfig_env.is_none() {
        match &sources.home {
            Some(home) => {
                let path = home.join(".kube").join("config");
                if path.exists() {
                    let kubeconfig = read_kubeconfig(Origin::Home, &path)?;
                    return build(Origin::Home, kubeconfig, &options).await;
                }
                tried.push(format!("{}: not found", path.display()));
            }
            None => tried.push("~/.kube/config: no home directory".to_owned()),
        }
    }
    Err(Error::NotFound { tried })
}

/// The in-cluster config of a Pod's service account, or why there is none (the reason
/// ends up in [`Error::NotFound`]).
pub(crate) fn in_cluster(source: &InClusterSource) -> Result<Config, String> {
    let (Some(host), Some(port)) = (&source.service_host, &source.service_port) else {
        return Err("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT not set".to_owned());
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("KUBERNETES_SERVICE_PORT {port:?} is not a port number"))?;
    let authority = match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(ip)) => format!("[{ip}]:{port}"),
        _ => format!("{host}:{port}"),
    };
    let url: http::Uri = format!("https://{authority}")
        .parse()
        .map_err(|err| format!("invalid service address {authority:?}: {err}"))?;
    if !source.token_file.is_file() {
        return Err(format!(
            "service-account token {} not found",
            source.token_file.display()
        ));
    }
    let ca = std::fs::read(&source.ca_file)
        .map_err(|err| format!("reading CA bundle {}: {err}", source.ca_file.display()))?;
    let mut roots = Vec::new();
    for cert in rustls_pemfile::certs(&mut ca.as_slice()) {
        let cert =
            cert.map_err(|err| format!("parsing CA bundle {}: {err}", source.ca_file.display()))?;
        roots.push(cert.to_vec());
    }
    if roots.is_empty() {
        return Err(format!(
            "CA bundle {} holds no certificate",
            source.ca_file.display()
        ));
    }
    let namespace = std::fs::read_to_string(&source.namespace_file)
        .map(|ns| ns.trim().to_owned())
        .ok()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_owned());

    let mut config = Config::new(url);
    config.default_namespace = namespace;
    config.root_cert = Some(roots);
    config.auth_info.token_file = Some(source.token_file.display().to_string());
    Ok(config)
}

/// The namespace of the Pod this process runs in, read from the service account.
///
/// Leader election defaults its lease namespace to this, like controller-runtime.
pub fn in_cluster_namespace() -> Option<String> {
    std::fs::read_to_string(Path::new(SERVICE_ACCOUNT_DIR).join("namespace"))
        .ok()
        .map(|ns| ns.trim().to_owned())
        .filter(|ns| !ns.is_empty())
}

fn read_kubeconfig(origin: Origin, path: &Path) -> Result<Kubeconfig, Error> {
    Kubeconfig::read_from(path).map_err(|source| Error::ReadKubeconfig {
        origin,
        path: PathBuf::from(path),
        source,
    })
}

async fn build(
    origin: Origin,
    kubeconfig: Kubeconfig,
    options: &KubeConfigOptions,
) -> Result<Config, Error> {
    let config = Config::from_custom_kubeconfig(kubeconfig, options)
        .await
        .map_err(|source: KubeconfigError| Error::BuildConfig { origin, source })?;
    if config.root_cert.as_ref().is_some_and(Vec::is_empty) {
        return Err(Error::NoCertificateAuthority { origin });
    }
    Ok(config)
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}
