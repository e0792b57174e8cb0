//! The request log exported to a file: one JSON line per authenticated resource request (who,
//! verb, group, version, resource, subresource, namespace, name), appended to the file
//! [`TestEnvBuilder::request_log_export`] names or, by default, the one the
//! [`REQUEST_LOG_ENV`] environment variable names — so a tool can run a crate's whole test
//! suite and learn what its code asked of the API server (`cargo rein rbac --from-tests`).
//!
//! Lines are written with one `write` on a file opened for appending, so the test binaries and
//! the environments of one run can share the file; each line is a [`RequestExport`]-shaped
//! JSON object:
//!
//! ```text
//! {"user":"system:serviceaccount:default:op","groups":["system:serviceaccounts","system:authenticated"],
//!  "verb":"list","group":"","version":"v1","resource":"configmaps","subresource":"","namespace":"","name":""}
//! ```
//!
//! [`TestEnvBuilder::request_log_export`]: crate::TestEnvBuilder::request_log_export

use std::io::Write as _;
use std::path::{Path, PathBuf};

use http::Method;
use parking_lot::Mutex;
use serde_json::json;

use crate::auth::UserInfo;

/// The environment variable naming the file every [`TestEnv`](crate::TestEnv) appends its
/// request log to, unless [`TestEnvBuilder::request_log_export`] says otherwise.
///
/// [`TestEnvBuilder::request_log_export`]: crate::TestEnvBuilder::request_log_export
pub const REQUEST_LOG_ENV: &str = "REIN_TESTENV_REQUEST_LOG";

/// The file the server appends each authenticated resource request to.
#[derive(Debug)]
pub(crate) struct RequestExport {
    file: Mutex<std::fs::File>,
}

impl RequestExport {
    /// Opens `path` for appending (creating it).
    pub(crate) fn open(path: &Path) -> Result<RequestExport, crate::Error> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| crate::Error::RequestLogExport {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(RequestExport {
            file: Mutex::new(file),
        })
    }

    /// Appends the request `method path?query` made by `user`, if it is a resource request.
    /// A failed write is logged, never fails the request.
    pub(crate) fn record(&self, user: &UserInfo, method: &Method, path: &str, query: Option<&str>) {
        let Some(line) = line(user, method, path, query) else {
            return;
        };
        if let Err(error) = self.file.lock().write_all(line.as_bytes()) {
            tracing::warn!(%error, "appending to the exported request log failed");
        }
    }
}

/// The export file the environment names, if any.
pub(crate) fn path_from_env() -> Option<PathBuf> {
    std::env::var_os(REQUEST_LOG_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// The JSON line (with its newline) for one request; `None` for non-resource requests.
fn line(user: &UserInfo, method: &Method, path: &str, query: Option<&str>) -> Option<String> {
    let attrs = crate::rbac::request::attributes(user, method, path, query);
    if !attrs.resource_request {
        return None;
    }
    let mut line = json!({
        "user": attrs.user.name,
        "groups": attrs.user.groups,
        "verb": attrs.verb,
        "group": attrs.api_group,
        "version": attrs.api_version,
        "resource": attrs.resource,
        "subresource": attrs.subresource,
        "namespace": attrs.namespace,
        "name": attrs.name,
    })
    .to_string();
    line.push('\n');
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into()],
            ..UserInfo::default()
        }
    }

    #[test]
    fn resource_requests_become_one_json_line_each() {
        let status = line(
            &alice(),
            &Method::PUT,
            "/apis/demo.rein.dev/v1/namespaces/ns/backups/b1/status",
            None,
        )
        .unwrap();
        assert!(status.ends_with('\n') && !status.trim_end().contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&status).unwrap();
        assert_eq!(
            v,
            json!({"user": "alice", "groups": ["devs"], "verb": "update", "group": "demo.rein.dev",
                   "version": "v1", "resource": "backups", "subresource": "status",
                   "namespace": "ns", "name": "b1"})
        );
        let watch = line(
            &alice(),
            &Method::GET,
            "/api/v1/configmaps",
            Some("watch=true"),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&watch).unwrap();
        assert_eq!(
            (v["verb"].as_str(), v["namespace"].as_str()),
            (Some("watch"), Some(""))
        );
    }

    #[test]
    fn non_resource_requests_are_left_out() {
        assert_eq!(line(&alice(), &Method::GET, "/apis", None), None);
        assert_eq!(line(&alice(), &Method::GET, "/api/v1", None), None);
    }

    #[test]
    fn records_append_to_the_file() {
        let path = std::env::temp_dir().join(format!(
            "rein-testenv-export-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_file(&path);
        let export = RequestExport::open(&path).unwrap();
        export.record(&alice(), &Method::GET, "/api/v1/namespaces/a/pods/p", None);
        export.record(&alice(), &Method::GET, "/version", None);
        drop(export);
        let again = RequestExport::open(&path).unwrap();
        again.record(&alice(), &Method::DELETE, "/api/v1/namespaces/a/pods", None);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let verbs: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["verb"].to_string())
            .collect();
        assert_eq!(verbs, [r#""get""#, r#""deletecollection""#]);
    }

    #[tokio::test]
    async fn a_test_env_exports_what_its_clients_asked() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube_client::Api;
        use kube_client::api::{DeleteParams, PostParams};

        let path =
            std::env::temp_dir().join(format!("rein-testenv-export-e2e-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let env = crate::TestEnv::builder()
            .request_log_export(Some(path.clone()))
            .start()
            .await
            .unwrap();
        let client = env.client();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("c".into());
        cms.create(&PostParams::default(), &cm).await.unwrap();
        cms.get("c").await.unwrap();
        Api::<ConfigMap>::all(client.clone())
            .list(&Default::default())
            .await
            .unwrap();
        cms.delete("c", &DeleteParams::default()).await.unwrap();
        // Not a resource request: not exported.
        client.apiserver_version().await.unwrap();
        env.shutdown().await;

        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|v: &serde_json::Value| v["resource"] == "configmaps")
            .collect();
        let seen: Vec<(&str, &str, &str)> = lines
            .iter()
            .map(|v| {
                (
                    v["verb"].as_str().unwrap(),
                    v["namespace"].as_str().unwrap(),
                    v["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("create", "default", ""),
                ("get", "default", "c"),
                ("list", "", ""),
                ("delete", "default", "c"),
            ],
            "{text}"
        );
        assert!(
            lines.iter().all(|v| v["user"] == crate::ADMIN_USER
                && v["group"] == ""
                && v["version"] == "v1")
        );
        assert!(!text.contains("/version"), "{text}");
    }

    #[tokio::test]
    async fn a_test_env_with_an_unopenable_export_fails_to_start() {
        let bad = Path::new("/nonexistent-dir/requests.jsonl");
        let Err(err) = crate::TestEnv::builder()
            .request_log_export(Some(bad.to_path_buf()))
            .start()
            .await
        else {
            panic!("the export file cannot be opened, so the server must not start");
        };
        assert!(
            matches!(&err, crate::Error::RequestLogExport { path, .. } if path == bad),
            "{err}"
        );
        assert!(
            err.to_string().contains("/nonexistent-dir/requests.jsonl"),
            "{err}"
        );
    }

    #[test]
    fn an_unopenable_path_is_a_typed_error() {
        let err = RequestExport::open(Path::new("/nonexistent-dir/requests.jsonl")).unwrap_err();
        assert!(
            matches!(err, crate::Error::RequestLogExport { .. }),
            "{err}"
        );
    }
}
