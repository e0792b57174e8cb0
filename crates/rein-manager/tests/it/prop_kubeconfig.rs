//! Property tests of kubeconfig handling at rein's boundary (`rein_manager::config::load`):
//! arbitrary YAML files, structurally valid kubeconfigs with missing or odd fields (no
//! current-context, dangling references, unknown user auth, bad base64, missing files), odd
//! `KUBECONFIG` path lists and odd in-cluster environments. Each load gives a config or a typed
//! `config::Error` whose message chain says what went wrong; nothing panics.
//!
//! 128 cases per property by default; set `PROPTEST_CASES` for a longer run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use kube_client::config::KubeconfigError;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use rein_manager::config::{ConfigSources, Error, InClusterSource, load};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use crate::prop_config::config;

/// A scratch directory for one test, removed at the end.
#[derive(Debug)]
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rein-prop-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creates the scratch dir");
        Scratch(dir)
    }

    fn write(&self, name: &str, contents: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, contents).expect("writes");
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The error and its sources, joined: what a user reads.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

fn kubeconfig_error(err: &Error) -> Option<&KubeconfigError> {
    match err {
        Error::ReadKubeconfig { source, .. } | Error::BuildConfig { source, .. } => Some(source),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Arbitrary YAML
// ---------------------------------------------------------------------------------------------

fn yaml_text() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<Vec<u8>>(),
        any::<String>().prop_map(String::into_bytes),
        "[a-z:{}\\[\\]\"'&*!|>#%,. \n-]{0,80}".prop_map(String::into_bytes),
        Just(b"".to_vec()),
        Just(b"---\n---\n".to_vec()),
        Just(b"a: &x [*x, *x, *x]\nb: *x\n".to_vec()),
        Just(b"apiVersion: v1\nkind: Config\n---\napiVersion: v2\nkind: Other\n".to_vec()),
        Just(b"clusters: 5\ncontexts: {}\nusers: [1, 2]\n".to_vec()),
        Just(b"current-context: [x]\n".to_vec()),
        Just(b"!!binary aGVsbG8=\n".to_vec()),
        Just(b"clusters:\n- name: a\n  cluster:\n    server: !!int 5\n".to_vec()),
    ]
}

/// Any file behind `--kubeconfig`: a config or a typed error naming the file's origin.
#[test]
fn arbitrary_yaml_files_give_a_config_or_a_typed_error() {
    let rt = Runtime::new().expect("runtime");
    let scratch = Scratch::new("yaml");
    let mut runner = TestRunner::new(config(128));
    runner
        .run(&yaml_text(), |text| {
            let path = scratch.write("config", &text);
            let result = rt.block_on(load(&ConfigSources::empty().kubeconfig(&path)));
            if let Err(err) = result {
                prop_assert!(
                    matches!(
                        err,
                        Error::ReadKubeconfig { .. }
                            | Error::BuildConfig { .. }
                            | Error::NoCertificateAuthority { .. }
                    ),
                    "{:?}",
                    err
                );
                prop_assert!(!chain(&err).is_empty());
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

// ---------------------------------------------------------------------------------------------
// Structurally valid kubeconfigs with odd fields
// ---------------------------------------------------------------------------------------------

/// One way the selected cluster entry can be.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ClusterShape {
    Good,
    NoServer,
    BadServer,
    BadCaBase64,
    CaNotPem,
    MissingCaFile,
}

/// One way the selected user entry can be.
#[derive(Debug, Clone, Copy, PartialEq)]
enum UserShape {
    Token,
    Empty,
    MissingTokenFile,
    BadClientCertBase64,
    MissingClientCertFile,
    UnknownAuthProvider,
    BasicAuth,
}

/// Where the selected context points.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Selection {
    /// `current-context` names the context.
    Current,
    /// No `current-context` at all.
    NoCurrent,
    /// `current-context` names a context that does not exist.
    DanglingCurrent,
    /// The context names a cluster that does not exist.
    DanglingCluster,
    /// The context names a user that does not exist.
    DanglingUser,
}

/// Standard base64 with padding (what kubeconfig `*-data` fields hold).
fn b64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A kubeconfig (as JSON, which is YAML) built from the shapes, and what loading must say.
fn kubeconfig(cluster: ClusterShape, user: UserShape, selection: Selection) -> Value {
    static CA: OnceLock<String> = OnceLock::new();
    let ca_pem = CA.get_or_init(|| {
        rein_manager::webhook::GeneratedCertificates::generate(&["localhost"])
            .expect("certs")
            .ca_pem
    });
    let mut c = json!({"server": "https://127.0.0.1:6443", "certificate-authority-data": b64(ca_pem.as_bytes())});
    match cluster {
        ClusterShape::Good => {}
        ClusterShape::NoServer => {
            c.as_object_mut().expect("object").remove("server");
        }
        ClusterShape::BadServer => c["server"] = json!("ht tp://not a url"),
        ClusterShape::BadCaBase64 => c["certificate-authority-data"] = json!("!!!not base64!!!"),
        ClusterShape::CaNotPem => {
            c["certificate-authority-data"] = json!(b64(b"not a certificate"))
        }
        ClusterShape::MissingCaFile => {
            c.as_object_mut()
                .expect("object")
                .remove("certificate-authority-data");
            c["certificate-authority"] = json!("/nonexistent/rein/ca.crt");
        }
    }
    let u = match user {
        UserShape::Token => json!({"token": "abc"}),
        UserShape::Empty => json!({}),
        UserShape::MissingTokenFile => json!({"tokenFile": "/nonexistent/rein/token"}),
        UserShape::BadClientCertBase64 => {
            json!({"client-certificate-data": "%%%", "client-key-data": "%%%"})
        }
        UserShape::MissingClientCertFile => json!({
            "client-certificate": "/nonexistent/rein/tls.crt",
            "client-key": "/nonexistent/rein/tls.key",
        }),
        UserShape::UnknownAuthProvider => {
            json!({"auth-provider": {"name": "no-such-provider", "config": {}}})
        }
        UserShape::BasicAuth => json!({"username": "u", "password": "p"}),
    };
    let (cluster_ref, user_ref) = match selection {
        Selection::DanglingCluster => ("missing-cluster", "u"),
        Selection::DanglingUser => ("c", "missing-user"),
        _ => ("c", "u"),
    };
    let mut doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": c}],
        "users": [{"name": "u", "user": u}],
        "contexts": [{"name": "ctx", "context": {"cluster": cluster_ref, "user": user_ref}}],
    });
    match selection {
        Selection::NoCurrent => {}
        Selection::DanglingCurrent => doc["current-context"] = json!("missing-context"),
        _ => doc["current-context"] = json!("ctx"),
    }
    doc
}

const CLUSTER_SHAPES: [ClusterShape; 6] = [
    ClusterShape::Good,
    ClusterShape::NoServer,
    ClusterShape::BadServer,
    ClusterShape::BadCaBase64,
    ClusterShape::CaNotPem,
    ClusterShape::MissingCaFile,
];

const USER_SHAPES: [UserShape; 7] = [
    UserShape::Token,
    UserShape::Empty,
    UserShape::MissingTokenFile,
    UserShape::BadClientCertBase64,
    UserShape::MissingClientCertFile,
    UserShape::UnknownAuthProvider,
    UserShape::BasicAuth,
];

const SELECTIONS: [Selection; 5] = [
    Selection::Current,
    Selection::NoCurrent,
    Selection::DanglingCurrent,
    Selection::DanglingCluster,
    Selection::DanglingUser,
];

/// Every combination of cluster, user and context shape, from a file behind `--kubeconfig` or
/// `KUBECONFIG`, as JSON or block YAML: a broken context or cluster is a typed error naming
/// it; a broken user fails when a client is built from the config (where kube-client reads
/// credentials); a kubeconfig broken in no way gives a config and a client.
#[test]
fn odd_kubeconfigs_give_typed_errors_saying_what_is_wrong() {
    let rt = Runtime::new().expect("runtime");
    let scratch = Scratch::new("shapes");
    let check = |cluster: ClusterShape,
                 user: UserShape,
                 selection: Selection,
                 as_env: bool,
                 yaml: bool|
     -> Result<(), TestCaseError> {
        let doc = kubeconfig(cluster, user, selection);
        let text = if yaml {
            serde_yaml_text(&doc)
        } else {
            serde_json::to_vec_pretty(&doc).expect("serialises")
        };
        let path = scratch.write("config", &text);
        let sources = if as_env {
            let mut s = ConfigSources::empty();
            s.kubeconfig_env = Some(path.clone().into_os_string());
            s
        } else {
            ConfigSources::empty().kubeconfig(&path)
        };
        let result = rt.block_on(load(&sources));
        let context_broken = matches!(
            selection,
            Selection::NoCurrent | Selection::DanglingCurrent | Selection::DanglingCluster
        );
        let cluster_broken = cluster != ClusterShape::Good;
        // A context naming a missing user gets no credentials (kube-client's choice),
        // so the user entry only matters when the context finds it.
        let user_broken = selection != Selection::DanglingUser
            && matches!(
                user,
                UserShape::BadClientCertBase64
                    | UserShape::MissingClientCertFile
                    | UserShape::MissingTokenFile
                    | UserShape::UnknownAuthProvider
            );
        match result {
            Ok(loaded) => {
                prop_assert!(
                    !context_broken && !cluster_broken,
                    "{:?}/{:?}/{:?} loaded",
                    cluster,
                    user,
                    selection
                );
                // Client certificates are read when a client is built (kube-client's
                // choice): that is where a broken one must fail, with a typed error.
                let client = rt.block_on(async { kube_client::Client::try_from(loaded) });
                prop_assert_eq!(
                    client.is_err(),
                    user_broken,
                    "{:?}: {:?}",
                    user,
                    client.err()
                );
            }
            Err(Error::NoCertificateAuthority { .. }) => {
                prop_assert_eq!(cluster, ClusterShape::CaNotPem);
            }
            Err(err) => {
                let Some(source) = kubeconfig_error(&err) else {
                    return Err(TestCaseError::fail(format!("untyped: {err:?}")));
                };
                prop_assert!(
                    context_broken || cluster_broken || user_broken,
                    "a usable kubeconfig failed: {}",
                    chain(&err)
                );
                if context_broken {
                    prop_assert!(
                        matches!(
                            source,
                            KubeconfigError::CurrentContextNotSet
                                | KubeconfigError::LoadContext(_)
                                | KubeconfigError::LoadClusterOfContext(_)
                        ),
                        "{:?}/{:?}: {}",
                        selection,
                        cluster,
                        chain(&err)
                    );
                }
                prop_assert!(chain(&err).len() > 20, "{}", chain(&err));
            }
        }
        Ok(())
    };
    // The space is small: check every combination rather than a sample.
    for cluster in CLUSTER_SHAPES {
        for user in USER_SHAPES {
            for selection in SELECTIONS {
                for as_env in [false, true] {
                    for yaml in [false, true] {
                        if let Err(e) = check(cluster, user, selection, as_env, yaml) {
                            panic!(
                                "{cluster:?}/{user:?}/{selection:?} (env {as_env}, yaml {yaml}): {e}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// JSON is YAML; write it block-style sometimes so the YAML path is exercised too.
fn serde_yaml_text(doc: &Value) -> Vec<u8> {
    fn emit(v: &Value, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        match v {
            Value::Object(map) if !map.is_empty() => {
                for (k, v) in map {
                    match v {
                        Value::Object(m) if !m.is_empty() => {
                            out.push_str(&format!("{pad}{k}:\n"));
                            emit(v, indent + 2, out);
                        }
                        Value::Array(a) if !a.is_empty() => {
                            out.push_str(&format!("{pad}{k}:\n"));
                            emit(v, indent, out);
                        }
                        _ => out.push_str(&format!("{pad}{k}: {v}\n")),
                    }
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for item in items {
                    out.push_str(&format!("{pad}- {}\n", item));
                }
            }
            other => out.push_str(&format!("{pad}{other}\n")),
        }
    }
    let mut out = String::new();
    emit(doc, 0, &mut out);
    out.into_bytes()
}

// ---------------------------------------------------------------------------------------------
// KUBECONFIG path lists and in-cluster environments
// ---------------------------------------------------------------------------------------------

/// `KUBECONFIG` lists of missing, empty, directory and garbage entries, and odd in-cluster
/// variables: a config, or a typed error (`NotFound` lists one reason per source tried).
#[test]
fn odd_environments_give_a_config_or_a_typed_error() {
    let rt = Runtime::new().expect("runtime");
    let scratch = Scratch::new("env");
    let garbage = scratch.write("garbage", b"clusters: [1, 2]\n");
    let empty = scratch.write("empty", b"");
    let dir = scratch.0.clone();
    let entry = prop_oneof![
        Just(PathBuf::from("/nonexistent/rein/config")),
        Just(PathBuf::new()),
        Just(garbage.clone()),
        Just(empty.clone()),
        Just(dir.clone()),
        "[a-z/.]{1,12}".prop_map(PathBuf::from),
    ];
    let kubeconfig_env = prop::option::of(prop::collection::vec(entry, 0..4));
    let host = prop::option::of(prop_oneof![
        Just("10.0.0.1".to_string()),
        Just("::1".to_string()),
        Just("kubernetes.default.svc".to_string()),
        any::<String>(),
    ]);
    let port = prop::option::of(prop_oneof![
        Just("443".to_string()),
        Just("99999".to_string()),
        Just("-1".to_string()),
        any::<String>(),
    ]);
    let files = (
        any::<bool>(),
        prop_oneof![
            Just(b"".to_vec()),
            Just(b"not pem".to_vec()),
            any::<Vec<u8>>()
        ],
    );
    let mut runner = TestRunner::new(config(128));
    runner
        .run(
            &(kubeconfig_env, host, port, files, any::<bool>()),
            |(env_paths, host, port, (token_exists, ca), home)| {
                let token = scratch.write("token", b"t");
                if !token_exists {
                    let _ = std::fs::remove_file(&token);
                }
                let ca = scratch.write("ca.crt", &ca);
                let mut sources = ConfigSources::empty();
                sources.kubeconfig_env = env_paths.map(|paths| {
                    std::env::join_paths(paths.iter().filter(|p| !p.as_os_str().is_empty()))
                        .unwrap_or_else(|_| OsString::from("/nonexistent/rein/config"))
                });
                sources.in_cluster = InClusterSource {
                    service_host: host,
                    service_port: port,
                    token_file: token,
                    ca_file: ca,
                    namespace_file: Path::new("/nonexistent/rein/namespace").to_path_buf(),
                };
                sources.home = home.then(|| dir.clone());
                match rt.block_on(load(&sources)) {
                    Ok(_) => {}
                    Err(Error::NotFound { tried }) => {
                        prop_assert!(!tried.is_empty());
                        prop_assert!(tried.iter().all(|t| !t.is_empty()));
                    }
                    Err(
                        err @ (Error::ReadKubeconfig { .. }
                        | Error::BuildConfig { .. }
                        | Error::NoCertificateAuthority { .. }),
                    ) => {
                        prop_assert!(!chain(&err).is_empty());
                    }
                    Err(err) => return Err(TestCaseError::fail(format!("untyped: {err:?}"))),
                }
                Ok(())
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A certificate authority that decodes but holds no certificate loaded, and every later TLS
/// handshake would have failed; now loading says so.
#[test]
fn regression_a_certificate_authority_without_certificates_is_refused() {
    let rt = Runtime::new().expect("runtime");
    let scratch = Scratch::new("no-ca");
    let doc = kubeconfig(ClusterShape::CaNotPem, UserShape::Token, Selection::Current);
    let path = scratch.write("config", &serde_json::to_vec(&doc).expect("serialises"));
    let err = rt
        .block_on(load(&ConfigSources::empty().kubeconfig(&path)))
        .expect_err("a CA without certificates loaded");
    assert!(
        matches!(err, Error::NoCertificateAuthority { .. }),
        "{err:?}"
    );
    assert!(
        chain(&err).contains("holds no PEM certificate"),
        "{}",
        chain(&err)
    );
}
