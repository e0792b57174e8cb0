//! Hand-kept facts about built-in resources that k8s-openapi does not carry: short names,
//! categories, and which resources serve `status` and `scale` subresources.

use super::ScalePaths;

/// kubectl short names, as kube-apiserver publishes them.
pub(super) fn short_names(group: &str, plural: &str) -> &'static [&'static str] {
    match (group, plural) {
        ("", "pods") => &["po"],
        ("", "services") => &["svc"],
        ("", "namespaces") => &["ns"],
        ("", "nodes") => &["no"],
        ("", "configmaps") => &["cm"],
        ("", "endpoints") => &["ep"],
        ("", "events") => &["ev"],
        ("", "limitranges") => &["limits"],
        ("", "persistentvolumeclaims") => &["pvc"],
        ("", "persistentvolumes") => &["pv"],
        ("", "replicationcontrollers") => &["rc"],
        ("", "resourcequotas") => &["quota"],
        ("", "serviceaccounts") => &["sa"],
        ("", "componentstatuses") => &["cs"],
        ("apps", "deployments") => &["deploy"],
        ("apps", "replicasets") => &["rs"],
        ("apps", "statefulsets") => &["sts"],
        ("apps", "daemonsets") => &["ds"],
        ("batch", "cronjobs") => &["cj"],
        ("autoscaling", "horizontalpodautoscalers") => &["hpa"],
        ("networking.k8s.io", "ingresses") => &["ing"],
        ("networking.k8s.io", "networkpolicies") => &["netpol"],
        ("networking.k8s.io", "ipaddresses") => &["ip"],
        ("policy", "poddisruptionbudgets") => &["pdb"],
        ("scheduling.k8s.io", "priorityclasses") => &["pc"],
        ("storage.k8s.io", "storageclasses") => &["sc"],
        ("apiextensions.k8s.io", "customresourcedefinitions") => &["crd", "crds"],
        ("certificates.k8s.io", "certificatesigningrequests") => &["csr"],
        ("events.k8s.io", "events") => &["ev"],
        _ => &[],
    }
}

/// Categories (`kubectl get all`).
pub(super) fn categories(group: &str, plural: &str) -> &'static [&'static str] {
    match (group, plural) {
        ("", "pods" | "replicationcontrollers" | "services")
        | ("apps", "daemonsets" | "deployments" | "replicasets" | "statefulsets")
        | ("autoscaling", "horizontalpodautoscalers")
        | ("batch", "cronjobs" | "jobs") => &["all"],
        ("apiextensions.k8s.io", "customresourcedefinitions") => &["api-extensions"],
        _ => &[],
    }
}

/// Whether kube-apiserver serves `<plural>/status`.
pub(super) fn has_status(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        (
            "",
            "pods"
                | "nodes"
                | "namespaces"
                | "services"
                | "persistentvolumes"
                | "persistentvolumeclaims"
                | "replicationcontrollers"
                | "resourcequotas"
        ) | (
            "apps",
            "deployments" | "replicasets" | "statefulsets" | "daemonsets"
        ) | ("batch", "jobs" | "cronjobs")
            | ("autoscaling", "horizontalpodautoscalers")
            | ("policy", "poddisruptionbudgets")
            | ("networking.k8s.io", "ingresses" | "servicecidrs")
            | ("certificates.k8s.io", "certificatesigningrequests")
            | ("apiextensions.k8s.io", "customresourcedefinitions")
            | ("apiregistration.k8s.io", "apiservices")
            | (
                "flowcontrol.apiserver.k8s.io",
                "flowschemas" | "prioritylevelconfigurations"
            )
            | ("storage.k8s.io", "volumeattachments")
            | ("resource.k8s.io", "resourceclaims")
            | ("internal.apiserver.k8s.io", "storageversions")
            | ("storagemigration.k8s.io", "storageversionmigrations")
            | (
                "admissionregistration.k8s.io",
                "validatingadmissionpolicies"
            )
    )
}

/// The scale subresource of workload kinds.
pub(super) fn scale(group: &str, plural: &str) -> Option<ScalePaths> {
    let selector = match (group, plural) {
        ("apps", "deployments" | "replicasets" | "statefulsets") => Some("/spec/selector"),
        ("", "replicationcontrollers") => Some("/spec/selector"),
        _ => return None,
    };
    Some(ScalePaths {
        spec_replicas: "/spec/replicas".to_string(),
        status_replicas: "/status/replicas".to_string(),
        label_selector: selector.map(str::to_string),
    })
}
