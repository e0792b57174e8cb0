//! `cargo rein`: from the first line of an operator to a cluster.
//!
//! This crate sits beside rein's stack, not in it: it depends on no rein crate and drives an
//! operator crate through cargo. It has three commands:
//!
//! - `cargo rein new DIR [--name NAME] [--rein-path PATH]` ([`scaffold`]): writes an operator
//!   crate — a `Backup` custom resource, a reconciler owning a ConfigMap and a CronJob with a
//!   finalizer, a `Ready` condition and Events, a `main` with health probes, metrics, leader
//!   election and graceful shutdown, tests on rein-testenv (a dev-dependency only), a
//!   Dockerfile. `--rein-path` depends on a rein checkout by path and copies its `Cargo.lock`,
//!   so the crate builds offline with the versions rein is tested with.
//! - `cargo rein manifests [--out DIR]` ([`manifests`], [`operator`]): runs the operator's own
//!   binary as `<bin> manifests`, which prints its CRDs, ServiceAccount, ClusterRole, Role,
//!   bindings, Deployment and Service as a JSON `List` built with rein's types — so the types
//!   and rules come from the crate's code, not from a parser of it — and writes them as YAML
//!   for `kubectl apply`.
//! - `cargo rein rbac [--from-tests | --request-log FILE] [--manifests PATH] [--check]`
//!   ([`rbac`]): the RBAC rules the manifests grant; with `--from-tests`, runs `cargo test`
//!   with rein-testenv's request log exported (`REIN_TESTENV_REQUEST_LOG`), keeps the requests
//!   the operator's ServiceAccount made, and adds what the rules lack as minimal rules;
//!   `--check` fails (exit 1) instead, naming each request the rules do not allow.
//!   `--request-log` reads an exported log instead of running the tests, `--manifests` reads
//!   YAML as `cargo rein manifests` wrote it (perhaps edited) instead of running the binary.
//!
//! `tests/end_to_end.rs` drives all three through the built binary: a scaffolded crate's tests
//! pass, its manifests pass a server-side dry run, `rbac --check` fails once a generated rule
//! is removed, and the operator's binary reconciles as its ServiceAccount with RBAC enforced.
//!
//! Deciding whether rules cover what an operator did:
//!
//! ```
//! use std::path::Path;
//!
//! use cargo_rein::manifests::Manifests;
//! use cargo_rein::rbac;
//!
//! let manifests = Manifests::from_json(br#"[
//!   {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op", "namespace": "ops"}},
//!   {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "op"},
//!    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]},
//!   {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "op"},
//!    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "op"},
//!    "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "ops"}]}
//! ]"#)?;
//! let log = rbac::parse_log(Path::new("requests.jsonl"), concat!(
//!     r#"{"user":"system:serviceaccount:ops:op","verb":"watch","group":"","resource":"configmaps"}"#, "\n",
//!     r#"{"user":"system:serviceaccount:ops:op","verb":"create","group":"","resource":"configmaps","namespace":"a"}"#,
//! ))?;
//! let grants = rbac::granted(&manifests, "ops", "op");
//! let missing = rbac::uncovered(&grants, &log, "system:serviceaccount:ops:op", "ops");
//! let shown: Vec<String> = missing.iter().map(ToString::to_string).collect();
//! assert_eq!(shown, ["create configmaps (core) cluster-wide"]);
//! # Ok::<(), cargo_rein::Error>(())
//! ```

mod error;
pub mod manifests;
pub mod operator;
pub mod rbac;
pub mod scaffold;

pub use error::Error;
