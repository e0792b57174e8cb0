//! Integration tests of rein-testenv, over real HTTP and with the real kubectl.
//!
//! One test binary for the whole crate: every binary links the full dependency tree, so one
//! per file cost hundreds of megabytes of disk and a link each. Run one file's tests with
//! `cargo test -p rein-testenv --test it <module>::`.

mod admission;
mod admission_support;
mod apply_pruning;
mod auth;
mod auth_support;
mod canonical;
mod crd;
mod crd_cel_optionals;
mod crd_lifecycle;
mod crd_schema;
mod crd_serving;
mod crd_support;
mod cron_jobs;
mod crud;
mod defaults;
mod deletion;
mod discovery;
mod faults;
mod field_selectors;
mod finalize_approval;
mod future_rv;
mod hostile;
mod http_support;
mod kube_runtime_controller;
mod kubectl;
mod kubectl_auth;
mod kubectl_crd;
mod kubectl_pods;
mod kubectl_tables;
mod limitranger;
mod load;
mod managed_fields;
mod openapi_proto;
mod paging;
mod pod_deletion;
mod pod_eviction;
mod pod_subresources;
mod pod_support;
mod prop_config;
mod prop_patch;
mod prop_requests;
mod protocol;
mod quota;
mod rbac;
mod rbac_escalation;
mod representations;
mod root_paths;
mod server_limits;
mod serviceaccount_admission;
mod status_strategies;
mod subresource_admission;
mod sweep;
mod tables;
mod validation;
mod views;
mod watch;

/// The ConfigMap the root CA publisher keeps in every namespace, as in a real cluster: tests
/// that list or watch a namespace's ConfigMaps leave it out.
pub(crate) const ROOT_CA: &str = "kube-root-ca.crt";
