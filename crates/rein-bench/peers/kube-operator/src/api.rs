//! The `Backup` custom resource, the same type as the scaffold's: what to back up and when,
//! and what the operator observed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of the peer's Backup (the scaffold's is `<name>.example.com`).
pub const GROUP: &str = "kube-operator-peer.example.com";

/// A backup of some paths on a schedule, run as a CronJob configured by a ConfigMap, both
/// owned by the Backup.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kube-operator-peer.example.com",
    version = "v1",
    kind = "Backup",
    namespaced,
    crates(kube_core = "::kube_core")
)]
#[kube(
    status = "BackupStatus",
    derive = "Default",
    derive = "PartialEq",
    shortname = "bk"
)]
#[kube(printcolumn = r#"{"name":"Schedule","type":"string","jsonPath":".spec.schedule"}"#)]
#[kube(
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct BackupSpec {
    /// When to run, in cron syntax (e.g. `0 3 * * *`).
    #[schemars(length(min = 1))]
    pub schedule: String,
    /// The paths to back up.
    #[serde(default)]
    pub paths: Vec<String>,
    /// The image that runs the backup.
    #[serde(default = "default_image")]
    pub image: String,
}

/// What the operator last observed and did.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupStatus {
    /// The `Ready` condition (and any others), as `metav1.Condition`s.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The generation the conditions describe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

fn default_image() -> String {
    "busybox:1.36".to_owned()
}
