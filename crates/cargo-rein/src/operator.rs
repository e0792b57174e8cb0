//! The operator crate `cargo rein` works on: found with `cargo metadata`, its binary run through
//! `cargo run -- manifests` to print its manifests, its tests run with rein-testenv's request
//! log exported.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::Error;
use crate::manifests::Manifests;

/// The environment variable rein-testenv exports its request log to (rein-testenv's
/// `REQUEST_LOG_ENV`).
pub const REQUEST_LOG_ENV: &str = "REIN_TESTENV_REQUEST_LOG";

/// An operator crate: its manifest and the binary that prints its manifests.
#[derive(Debug, Clone)]
pub struct OperatorCrate {
    manifest: PathBuf,
    bin: String,
    cargo: OsString,
}

impl OperatorCrate {
    /// The crate whose `Cargo.toml` is `manifest` (default: `./Cargo.toml`). It must have one
    /// binary target (or one named as the package).
    pub fn locate(manifest: Option<&Path>) -> Result<OperatorCrate, Error> {
        let manifest = manifest.map_or_else(|| PathBuf::from("Cargo.toml"), Path::to_path_buf);
        if !manifest.is_file() {
            return Err(Error::NotAnOperator {
                manifest,
                reason: "no Cargo.toml here; run inside the operator crate or pass --manifest-path"
                    .to_owned(),
            });
        }
        let cargo = cargo();
        let mut command = Command::new(&cargo);
        command
            .args([
                "metadata",
                "--no-deps",
                "--format-version",
                "1",
                "--manifest-path",
            ])
            .arg(&manifest);
        let stdout = run_capturing(command)?;
        let metadata: Value =
            serde_json::from_slice(&stdout).map_err(|source| Error::NotAnOperator {
                manifest: manifest.clone(),
                reason: format!("cargo metadata answered something unexpected: {source}"),
            })?;
        let bin = operator_bin(&metadata, &manifest)?;
        Ok(OperatorCrate {
            manifest,
            bin,
            cargo,
        })
    }

    /// The binary target that prints the manifests.
    pub fn bin(&self) -> &str {
        &self.bin
    }

    /// Runs `<bin> manifests ARGS` and reads the JSON `List` it prints.
    pub fn manifests(&self, args: &[String]) -> Result<Manifests, Error> {
        let mut command = Command::new(&self.cargo);
        command
            .args(["run", "--quiet", "--manifest-path"])
            .arg(&self.manifest)
            .args(["--bin", &self.bin, "--", "manifests"])
            .args(args);
        let stdout = run_capturing(command)?;
        Manifests::from_json(&stdout)
    }

    /// Runs `cargo test ARGS` with every rein-testenv server appending its requests to `log`;
    /// answers whether the tests passed. Their output goes to this process's stderr.
    pub fn test_with_request_log(&self, log: &Path, args: &[String]) -> Result<bool, Error> {
        let mut command = Command::new(&self.cargo);
        command
            .args(["test", "--manifest-path"])
            .arg(&self.manifest)
            .args(args)
            .env(REQUEST_LOG_ENV, log)
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit());
        let shown = command_line(&command);
        let status = command.status().map_err(|source| Error::Spawn {
            command: shown,
            source,
        })?;
        Ok(status.success())
    }
}

/// Cargo: the one that ran us (`CARGO`), else `cargo` on the `PATH`.
fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The package's binary target from `cargo metadata`: the only one, or the one named as the
/// package.
fn operator_bin(metadata: &Value, manifest: &Path) -> Result<String, Error> {
    let not = |reason: &str| Error::NotAnOperator {
        manifest: manifest.to_path_buf(),
        reason: reason.to_owned(),
    };
    let packages = metadata["packages"]
        .as_array()
        .ok_or_else(|| not("cargo metadata lists no packages"))?;
    let wanted = std::fs::canonicalize(manifest).ok();
    let package = packages
        .iter()
        .find(|p| {
            p["manifest_path"]
                .as_str()
                .and_then(|m| std::fs::canonicalize(m).ok())
                .is_some_and(|m| Some(m) == wanted)
        })
        .or_else(|| (packages.len() == 1).then(|| &packages[0]))
        .ok_or_else(|| {
            not("a workspace root: pass the operator's own Cargo.toml with --manifest-path")
        })?;
    let bins: Vec<&str> = package["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"))
        })
        .filter_map(|t| t["name"].as_str())
        .collect();
    let name = package["name"].as_str().unwrap_or_default();
    match bins.as_slice() {
        [only] => Ok((*only).to_owned()),
        _ if bins.contains(&name) => Ok(name.to_owned()),
        [] => Err(not("the package has no binary to print its manifests")),
        _ => Err(not(
            "the package has several binaries and none is named as the package",
        )),
    }
}

/// Runs `command`, its stderr shown, and answers its stdout; a failure is an error.
fn run_capturing(mut command: Command) -> Result<Vec<u8>, Error> {
    let shown = command_line(&command);
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|source| Error::Spawn {
            command: shown.clone(),
            source,
        })?;
    if !output.status.success() {
        return Err(Error::CommandFailed {
            command: shown,
            status: output.status,
            stderr: String::new(),
        });
    }
    Ok(output.stdout)
}

fn command_line(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_binary_is_the_only_one_or_the_one_named_as_the_package() {
        let meta = |bins: &[&str]| {
            let targets: Vec<Value> = bins
                .iter()
                .map(|b| json!({"name": b, "kind": ["bin"]}))
                .chain([json!({"name": "op", "kind": ["lib"]})])
                .collect();
            json!({"packages": [{"name": "op", "manifest_path": "/nowhere/Cargo.toml", "targets": targets}]})
        };
        let m = Path::new("/nowhere/Cargo.toml");
        assert_eq!(operator_bin(&meta(&["op-bin"]), m).unwrap(), "op-bin");
        assert_eq!(operator_bin(&meta(&["x", "op"]), m).unwrap(), "op");
        assert!(matches!(
            operator_bin(&meta(&[]), m),
            Err(Error::NotAnOperator { .. })
        ));
        assert!(matches!(
            operator_bin(&meta(&["x", "y"]), m),
            Err(Error::NotAnOperator { .. })
        ));
    }

    #[test]
    fn a_missing_manifest_is_a_typed_error() {
        let err = OperatorCrate::locate(Some(Path::new("/nonexistent/Cargo.toml"))).unwrap_err();
        assert!(matches!(err, Error::NotAnOperator { .. }), "{err}");
    }
}
