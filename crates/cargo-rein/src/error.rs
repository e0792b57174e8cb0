//! The crate's error type: one variant per thing `cargo rein` attempts.

use std::path::PathBuf;

/// Why a `cargo rein` command failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The crate name given (or taken from the directory) is not a valid package name.
    #[error(
        "{name:?} is not a valid crate name (lowercase ASCII letters, digits, `-` and `_`, starting with a letter)"
    )]
    InvalidName {
        /// The name.
        name: String,
    },
    /// The target directory of `cargo rein new` exists and is not empty.
    #[error("{} already exists and is not empty", dir.display())]
    DirectoryNotEmpty {
        /// The directory.
        dir: PathBuf,
    },
    /// `--rein-path` does not point at a rein checkout.
    #[error("{} is not a rein checkout (no crates/rein/Cargo.toml there)", path.display())]
    NotAReinCheckout {
        /// The path given.
        path: PathBuf,
    },
    /// Reading or writing a file failed.
    #[error("{what} {}", path.display())]
    Io {
        /// What was being done (`writing`, `reading`, ...).
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Starting cargo (or the operator's binary through it) failed.
    #[error("running `{command}`")]
    Spawn {
        /// The command line.
        command: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A cargo command exited unsuccessfully.
    #[error("`{command}` failed ({status}){}", stderr_tail(stderr))]
    CommandFailed {
        /// The command line.
        command: String,
        /// How it exited.
        status: std::process::ExitStatus,
        /// The end of what it wrote to stderr (empty when it was shown already).
        stderr: String,
    },
    /// The current directory (or `--manifest-path`) holds no operator crate cargo rein knows.
    #[error("{}: {reason}", manifest.display())]
    NotAnOperator {
        /// The `Cargo.toml` looked at.
        manifest: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// The operator printed something that is not a JSON `List` of objects.
    #[error("the operator's `manifests` output is not a JSON List of objects")]
    BadManifests(#[source] serde_json::Error),
    /// A manifests file (`cargo rein rbac --manifests`) is not YAML (or JSON).
    #[error("{}: not YAML manifests", path.display())]
    BadManifestFile {
        /// The file.
        path: PathBuf,
        /// The YAML error.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// An object in the manifests lacks what cargo rein needs (kind, name, ...).
    #[error("manifest object {index}: {reason}")]
    BadObject {
        /// Its position in the list.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A line of the request log is not a request record.
    #[error("{}:{line}: not a request record", path.display())]
    BadRequestLog {
        /// The log file.
        path: PathBuf,
        /// The line number (from 1).
        line: usize,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// Serialising the manifests as YAML failed.
    #[error("writing YAML")]
    Yaml(#[source] serde_saphyr::SerializeError),
    /// Serialising JSON failed.
    #[error("writing JSON")]
    Json(#[source] serde_json::Error),
}

fn stderr_tail(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        return String::new();
    }
    let lines: Vec<&str> = stderr.lines().collect();
    format!(":\n{}", lines[lines.len().saturating_sub(20)..].join("\n"))
}
