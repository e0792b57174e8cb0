//! Tests of config discovery with temporary files and hand-built sources.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

fn kubeconfig_yaml(server: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
current-context: test
clusters:
- name: test
  cluster:
    server: {server}
contexts:
- name: test
  context:
    cluster: test
    user: test
    namespace: {namespace}
- name: other
  context:
    cluster: test
    user: test
    namespace: other-ns
users:
- name: test
  user:
    token: abc
"
    )
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "rein-manager-config-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.0.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn flag_wins_over_everything() {
    let dir = TempDir::new();
    let flag = dir.write(
        "flag.yaml",
        &kubeconfig_yaml("https://flag.example:6443", "f"),
    );
    let env = dir.write(
        "env.yaml",
        &kubeconfig_yaml("https://env.example:6443", "e"),
    );
    dir.write(
        ".kube/config",
        &kubeconfig_yaml("https://home.example", "h"),
    );
    let mut sources = ConfigSources::empty().kubeconfig(&flag);
    sources.kubeconfig_env = Some(env.into_os_string());
    sources.home = Some(dir.path().to_owned());

    let config = load(&sources).await.unwrap();
    assert_eq!(config.cluster_url.host(), Some("flag.example"));
    assert_eq!(config.default_namespace, "f");
}

#[tokio::test]
async fn kubeconfig_env_merges_files_in_order() {
    let dir = TempDir::new();
    let first = dir.write("a.yaml", &kubeconfig_yaml("https://first.example", "a"));
    let second = dir.write("b.yaml", &kubeconfig_yaml("https://second.example", "b"));
    let mut sources = ConfigSources::empty();
    sources.kubeconfig_env = Some(std::env::join_paths([&first, &second]).unwrap());
    sources.home = Some(dir.path().to_owned());

    let config = load(&sources).await.unwrap();
    assert_eq!(config.cluster_url.host(), Some("first.example"));
    assert_eq!(config.default_namespace, "a");
}

#[tokio::test]
async fn context_selects_another_context() {
    let dir = TempDir::new();
    let path = dir.write("k.yaml", &kubeconfig_yaml("https://ctx.example", "a"));
    let sources = ConfigSources::empty().kubeconfig(&path).context("other");
    let config = load(&sources).await.unwrap();
    assert_eq!(config.default_namespace, "other-ns");
}

#[tokio::test]
async fn home_config_is_the_last_resort() {
    let dir = TempDir::new();
    dir.write(
        ".kube/config",
        &kubeconfig_yaml("https://home.example", "h"),
    );
    let mut sources = ConfigSources::empty();
    sources.home = Some(dir.path().to_owned());
    let config = load(&sources).await.unwrap();
    assert_eq!(config.cluster_url.host(), Some("home.example"));
}

#[tokio::test]
async fn in_cluster_comes_before_home() {
    let dir = TempDir::new();
    dir.write(
        ".kube/config",
        &kubeconfig_yaml("https://home.example", "h"),
    );
    let token = dir.write("sa/token", "secret-token");
    let ca = dir.write("sa/ca.crt", TEST_CA);
    let namespace = dir.write("sa/namespace", "operators\n");
    let mut sources = ConfigSources::empty();
    sources.home = Some(dir.path().to_owned());
    sources.in_cluster = InClusterSource {
        service_host: Some("10.0.0.1".into()),
        service_port: Some("443".into()),
        token_file: token.clone(),
        ca_file: ca,
        namespace_file: namespace,
    };

    let config = load(&sources).await.unwrap();
    assert_eq!(config.cluster_url.host(), Some("10.0.0.1"));
    assert_eq!(config.default_namespace, "operators");
    assert_eq!(config.root_cert.as_ref().map(Vec::len), Some(1));
    assert_eq!(
        config.auth_info.token_file.as_deref(),
        Some(token.to_str().unwrap())
    );
}

#[tokio::test]
async fn in_cluster_is_skipped_when_kubeconfig_is_set() {
    let dir = TempDir::new();
    let env = dir.write("env.yaml", &kubeconfig_yaml("https://env.example", "e"));
    let mut sources = ConfigSources::empty();
    sources.kubeconfig_env = Some(env.into_os_string());
    sources.in_cluster.service_host = Some("10.0.0.1".into());
    sources.in_cluster.service_port = Some("443".into());
    let config = load(&sources).await.unwrap();
    assert_eq!(config.cluster_url.host(), Some("env.example"));
}

#[tokio::test]
async fn nothing_found_names_every_source() {
    let dir = TempDir::new();
    let mut sources = ConfigSources::empty();
    sources.home = Some(dir.path().to_owned());
    let err = load(&sources).await.unwrap_err();
    let Error::NotFound { tried } = &err else {
        panic!("expected NotFound, got {err:?}");
    };
    assert_eq!(tried.len(), 4, "{tried:?}");
    let text = err.to_string();
    for needle in ["--kubeconfig", "KUBECONFIG", "in-cluster", ".kube/config"] {
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
}

#[tokio::test]
async fn missing_kubeconfig_env_files_are_reported() {
    let dir = TempDir::new();
    let mut sources = ConfigSources::empty();
    sources.kubeconfig_env = Some(OsString::from(dir.path().join("nope.yaml")));
    let err = load(&sources).await.unwrap_err();
    assert!(err.to_string().contains("nope.yaml"), "{err}");
}

#[tokio::test]
async fn malformed_kubeconfig_is_a_typed_error() {
    let dir = TempDir::new();
    let path = dir.write("bad.yaml", "clusters: [this is: not: valid");
    let err = load(&ConfigSources::empty().kubeconfig(&path))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::ReadKubeconfig {
                origin: Origin::Flag,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(std::error::Error::source(&err).is_some());
}

#[tokio::test]
async fn missing_flag_file_is_an_error_not_a_fall_through() {
    let dir = TempDir::new();
    dir.write(
        ".kube/config",
        &kubeconfig_yaml("https://home.example", "h"),
    );
    let mut sources = ConfigSources::empty().kubeconfig(dir.path().join("absent.yaml"));
    sources.home = Some(dir.path().to_owned());
    let err = load(&sources).await.unwrap_err();
    assert!(matches!(err, Error::ReadKubeconfig { .. }), "{err:?}");
}

#[tokio::test]
async fn kubeconfig_without_context_is_a_build_error() {
    let dir = TempDir::new();
    let path = dir.write("empty.yaml", "apiVersion: v1\nkind: Config\n");
    let err = load(&ConfigSources::empty().kubeconfig(&path))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::BuildConfig { .. }), "{err:?}");
}

#[test]
fn flag_values_follow_go_syntax() {
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        sources::flag_value(&args(&["--kubeconfig", "/a"]), "kubeconfig").as_deref(),
        Some("/a")
    );
    assert_eq!(
        sources::flag_value(&args(&["-kubeconfig=/b"]), "kubeconfig").as_deref(),
        Some("/b")
    );
    assert_eq!(
        sources::flag_value(&args(&["--quick", "--kubeconfig=/c"]), "kubeconfig").as_deref(),
        Some("/c")
    );
    assert_eq!(
        sources::flag_value(&args(&["--", "--kubeconfig=/d"]), "kubeconfig"),
        None
    );
    assert_eq!(
        sources::flag_value(&args(&["--kubeconfigx=/e"]), "kubeconfig"),
        None
    );
}

/// A self-signed certificate, only parsed (never used for a handshake).
const TEST_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBgzCCASmgAwIBAgIUKCmoVUVQJ/3UjXkr0e+KlLzLVBgwCgYIKoZIzj0EAwIw
FzEVMBMGA1UEAwwMcmVpbi10ZXN0LWNhMB4XDTI2MTEyMjIxMzgxMFoXDTM2MTEx
OTIxMzgxMFowFzEVMBMGA1UEAwwMcmVpbi10ZXN0LWNhMFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAExekRS08uOBwBb4giEXqG3KU5Uhzd1L80sDUG86Hefz8hLkP5
efRfn7n7VQGNrodMHjEklf352A06rCVcTYBbDaNTMFEwHQYDVR0OBBYEFObUpban
fGydNrLdhRKFs20MtS/LMB8GA1UdIwQYMBaAFObUpbanfGydNrLdhRKFs20MtS/L
MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAILvWJQ9cXHRyXhD
2M6rK0ZadZeStrAyjuKvpcaT9vUnAiANT21BH0ICJREQsxbkme2wrcFcZSEZ7vZe
X8Jka+JqGg==
-----END CERTIFICATE-----
";
