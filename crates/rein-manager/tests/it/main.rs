//! Integration tests of rein-manager against rein-testenv. The signal test lives alone in
//! `signals.rs` (its handler is process-wide). The webhook server's tests live in
//! rein-webhook, leader election's in rein-leaderelection.
//!
//! One test binary for the whole crate: every binary links the full dependency tree, so one
//! per file cost hundreds of megabytes of disk and a link each. Run one file's tests with
//! `cargo test -p rein-manager --test it <module>::`.

mod healthz;
mod manager;
mod metrics;
mod prop_config;
mod prop_kubeconfig;
mod prop_probes;
mod rbac;
mod secure_metrics;
