//! `KubeconfigDirProvider`: one member per kubeconfig file in a directory, which it polls.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{ClusterSink, Provider, ProviderContext, config_from_kubeconfig, fingerprint};
use crate::error::ProviderError;
use crate::name::ClusterName;

/// One member cluster per kubeconfig file in a directory (multicluster-runtime's `file`
/// provider): the cluster is named after the file without its extension (`prod-eu.yaml` →
/// `prod-eu`; hidden files and names that are not valid cluster names are skipped with a
/// warning). The directory is read every `interval` (default 5 s): a new file engages its
/// cluster, a changed file re-engages it, a removed file disengages it. A file that does not
/// parse is logged and its cluster left as it was (it may be half written).
#[derive(Debug, Clone)]
pub struct KubeconfigDirProvider {
    dir: PathBuf,
    interval: Duration,
}

impl KubeconfigDirProvider {
    /// Watches `dir`, every 5 s.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        KubeconfigDirProvider {
            dir: dir.into(),
            interval: Duration::from_secs(5),
        }
    }

    /// How often the directory is read (at least every millisecond).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_millis(1));
        self
    }

    /// One pass: the clusters the directory names now, by fingerprint of their file.
    async fn scan(&self) -> Result<HashMap<ClusterName, (PathBuf, Vec<u8>)>, ProviderError> {
        let read_dir = |source| ProviderError::ReadDir {
            dir: self.dir.clone(),
            source,
        };
        let mut entries = tokio::fs::read_dir(&self.dir).await.map_err(read_dir)?;
        let mut found = HashMap::new();
        while let Some(entry) = entries.next_entry().await.map_err(read_dir)? {
            let path = entry.path();
            let Some(name) = cluster_name_of(&path) else {
                continue;
            };
            let name = match ClusterName::new(&name) {
                Ok(name) => name,
                Err(source) => {
                    let err = ProviderError::ClusterName {
                        origin: path.display().to_string(),
                        source,
                    };
                    tracing::warn!(error = %err, "skipping kubeconfig file");
                    continue;
                }
            };
            match tokio::fs::read(&path).await {
                Ok(bytes) => {
                    found.insert(name, (path, bytes));
                }
                // Removed between listing and reading, or a directory: not a cluster.
                Err(err) => tracing::debug!(path = %path.display(), error = %err, "skipping"),
            }
        }
        Ok(found)
    }
}

/// The cluster name a file stands for: its stem, unless hidden or not a regular file name.
fn cluster_name_of(path: &Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    if file.starts_with('.') || file.ends_with('~') {
        return None;
    }
    Some(path.file_stem()?.to_str()?.to_owned())
}

#[async_trait]
impl Provider for KubeconfigDirProvider {
    async fn run(
        &self,
        _ctx: ProviderContext,
        clusters: ClusterSink,
        stop: CancellationToken,
    ) -> Result<(), ProviderError> {
        let mut known: HashMap<ClusterName, u64> = HashMap::new();
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                _ = tick.tick() => {}
            }
            let found = match self.scan().await {
                Ok(found) => found,
                Err(err) => {
                    // A directory that is briefly missing (a ConfigMap volume being swapped)
                    // keeps what was engaged.
                    tracing::warn!(error = %err, "reading the kubeconfig directory failed");
                    continue;
                }
            };
            known.retain(|name, _| {
                let keep = found.contains_key(name);
                if !keep {
                    clusters.disengage(name.clone());
                }
                keep
            });
            for (name, (path, bytes)) in found {
                let print = fingerprint(&bytes);
                if known.get(&name) == Some(&print) {
                    continue;
                }
                let origin = path.display().to_string();
                let parsed = match std::str::from_utf8(&bytes) {
                    Ok(text) => config_from_kubeconfig(&origin, text).await,
                    Err(err) => Err(ProviderError::KubeconfigData {
                        origin,
                        problem: err.to_string(),
                    }),
                };
                match parsed {
                    Ok(config) => {
                        known.insert(name.clone(), print);
                        clusters.engage(name, config);
                    }
                    Err(err) => {
                        tracing::warn!(cluster = %name, error = %err, "ignoring kubeconfig")
                    }
                }
            }
        }
    }

    fn describe(&self) -> String {
        format!("kubeconfig files in {}", self.dir.display())
    }
}
