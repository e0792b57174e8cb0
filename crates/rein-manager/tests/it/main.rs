//! Integration tests of rein-manager against rein-testenv. The signal test lives alone in
//! `signals.rs` (its handler is process-wide); leader election in `leader_election.rs`, whose
//! real-time lease timings are kept away from the CPU-heavy property tests.
//!
//! One test binary for the whole crate: every binary links the full dependency tree, so one
//! per file cost hundreds of megabytes of disk and a link each. Run one file's tests with
//! `cargo test -p rein-manager --test it <module>::`.

mod healthz;
mod manager;
mod metrics;
mod prop_admission;
mod prop_config;
mod prop_kubeconfig;
mod prop_probes;
mod webhook;
