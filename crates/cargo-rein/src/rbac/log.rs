//! The request log rein-testenv exports (`REIN_TESTENV_REQUEST_LOG`): one JSON object per line
//! for each authenticated resource request.

use std::path::Path;

use serde::Deserialize;

use crate::Error;

/// One request a rein-testenv server served.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Request {
    /// Who made it.
    pub user: String,
    /// The RBAC verb (`get`, `list`, `watch`, `create`, ...).
    pub verb: String,
    /// The API group (empty: core).
    pub group: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource (`status`, ...), or empty.
    #[serde(default)]
    pub subresource: String,
    /// The namespace, or empty for cluster scope.
    #[serde(default)]
    pub namespace: String,
    /// The object's name, or empty.
    #[serde(default)]
    pub name: String,
}

impl Request {
    /// `resource` or `resource/subresource`, as RBAC rules name it.
    pub fn rbac_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// Reads the log at `path` (a missing file is an empty log: no server ran).
pub fn read(path: &Path) -> Result<Vec<Request>, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Io {
                what: "reading",
                path: path.to_path_buf(),
                source,
            });
        }
    };
    parse(path, &text)
}

/// Parses log text; `path` names it in errors.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Request>, Error> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|source| Error::BadRequestLog {
                path: path.to_path_buf(),
                line: i + 1,
                source,
            })
        })
        .collect()
}
