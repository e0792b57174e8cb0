//! Helpers shared by the unit tests: small ConfigMaps.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::core::ObjectMeta;

pub(crate) fn cm(ns: &str, name: &str, rv: &str) -> Arc<ConfigMap> {
    cm_labels(ns, name, rv, &[])
}

pub(crate) fn cm_labels(ns: &str, name: &str, rv: &str, labels: &[(&str, &str)]) -> Arc<ConfigMap> {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            namespace: (!ns.is_empty()).then(|| ns.to_string()),
            name: Some(name.to_string()),
            resource_version: Some(rv.to_string()),
            labels: (!labels.is_empty()).then_some(labels),
            ..Default::default()
        },
        ..Default::default()
    })
}
