//! Prints the CustomResourceDefinition of a derived custom resource as YAML, ready for
//! `kubectl apply -f -` (kube-rs's `crdgen`; controller-gen's `crd` output in the Go world).
// smoke-expect: kind: CustomResourceDefinition
// smoke-expect: name: widgets.demo.rein.dev
// smoke-expect: x-kubernetes-validations

use rein::{CustomResource, CustomResourceExt, KubeSchema};
use serde::{Deserialize, Serialize};

/// The desired state of a Widget (the same shape as the `custom_resource` example's).
#[rein::resource]
#[derive(CustomResource, KubeSchema, Clone, Debug, Serialize, Deserialize)]
#[kube(group = "demo.rein.dev", version = "v1", kind = "Widget", namespaced)]
#[kube(
    status = "WidgetStatus",
    shortname = "wg",
    doc = "A Widget: a demo workload."
)]
#[kube(printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#)]
#[serde(rename_all = "camelCase")]
struct WidgetSpec {
    /// How many replicas, at most 10.
    #[x_kube(validation = Rule::new("self <= 10").message("replicas must be at most 10"))]
    replicas: i32,
    /// The service tier.
    #[serde(default = "default_tier")]
    tier: String,
}

fn default_tier() -> String {
    "standard".into()
}

/// What the controller observed.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WidgetStatus {
    /// Ready replicas.
    ready_replicas: i32,
}

fn main() -> anyhow::Result<()> {
    print!("{}", serde_saphyr::to_string(&Widget::crd())?);
    Ok(())
}
