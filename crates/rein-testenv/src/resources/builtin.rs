//! The built-in resource types, read from k8s-openapi's `Resource` constants.

use std::collections::BTreeMap;

use super::tables;
use super::{ResourceDef, compare_versions};

/// Whether a k8s-openapi scope marker is namespaced.
trait Scope {
    const NAMESPACED: bool;
}

impl Scope for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// One (group, version, kind, plural, namespaced) row.
struct Row {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
}

fn row<K>() -> Row
where
    K: k8s_openapi::Resource,
    K::Scope: Scope,
{
    Row {
        group: K::GROUP,
        version: K::VERSION,
        kind: K::KIND,
        plural: K::URL_PATH_SEGMENT,
        namespaced: <K::Scope as Scope>::NAMESPACED,
    }
}

/// Calls `$callback! { <every built-in k8s-openapi resource type>, … }`: the one list of
/// served built-in types, shared by the resource catalogue and the OpenAPI documents.
macro_rules! with_builtin_types {
    ($callback:ident) => {
        $callback! {
            k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration,
            k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy,
            k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
            k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
            k8s_openapi::api::admissionregistration::v1alpha1::MutatingAdmissionPolicy,
            k8s_openapi::api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding,
            k8s_openapi::api::admissionregistration::v1beta1::ValidatingAdmissionPolicy,
            k8s_openapi::api::admissionregistration::v1beta1::ValidatingAdmissionPolicyBinding,
            k8s_openapi::api::apiserverinternal::v1alpha1::StorageVersion,
            k8s_openapi::api::apps::v1::ControllerRevision,
            k8s_openapi::api::apps::v1::DaemonSet,
            k8s_openapi::api::apps::v1::Deployment,
            k8s_openapi::api::apps::v1::ReplicaSet,
            k8s_openapi::api::apps::v1::StatefulSet,
            k8s_openapi::api::authentication::v1::SelfSubjectReview,
            k8s_openapi::api::authentication::v1::TokenReview,
            k8s_openapi::api::authorization::v1::LocalSubjectAccessReview,
            k8s_openapi::api::authorization::v1::SelfSubjectAccessReview,
            k8s_openapi::api::authorization::v1::SelfSubjectRulesReview,
            k8s_openapi::api::authorization::v1::SubjectAccessReview,
            k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler,
            k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler,
            k8s_openapi::api::batch::v1::CronJob,
            k8s_openapi::api::batch::v1::Job,
            k8s_openapi::api::certificates::v1::CertificateSigningRequest,
            k8s_openapi::api::certificates::v1alpha1::ClusterTrustBundle,
            k8s_openapi::api::certificates::v1beta1::ClusterTrustBundle,
            k8s_openapi::api::coordination::v1::Lease,
            k8s_openapi::api::coordination::v1alpha2::LeaseCandidate,
            k8s_openapi::api::coordination::v1beta1::LeaseCandidate,
            k8s_openapi::api::core::v1::Binding,
            k8s_openapi::api::core::v1::ComponentStatus,
            k8s_openapi::api::core::v1::ConfigMap,
            k8s_openapi::api::core::v1::Endpoints,
            k8s_openapi::api::core::v1::Event,
            k8s_openapi::api::core::v1::LimitRange,
            k8s_openapi::api::core::v1::Namespace,
            k8s_openapi::api::core::v1::Node,
            k8s_openapi::api::core::v1::PersistentVolume,
            k8s_openapi::api::core::v1::PersistentVolumeClaim,
            k8s_openapi::api::core::v1::Pod,
            k8s_openapi::api::core::v1::PodTemplate,
            k8s_openapi::api::core::v1::ReplicationController,
            k8s_openapi::api::core::v1::ResourceQuota,
            k8s_openapi::api::core::v1::Secret,
            k8s_openapi::api::core::v1::Service,
            k8s_openapi::api::core::v1::ServiceAccount,
            k8s_openapi::api::discovery::v1::EndpointSlice,
            k8s_openapi::api::events::v1::Event,
            k8s_openapi::api::flowcontrol::v1::FlowSchema,
            k8s_openapi::api::flowcontrol::v1::PriorityLevelConfiguration,
            k8s_openapi::api::networking::v1::IPAddress,
            k8s_openapi::api::networking::v1::Ingress,
            k8s_openapi::api::networking::v1::IngressClass,
            k8s_openapi::api::networking::v1::NetworkPolicy,
            k8s_openapi::api::networking::v1::ServiceCIDR,
            k8s_openapi::api::networking::v1beta1::IPAddress,
            k8s_openapi::api::networking::v1beta1::ServiceCIDR,
            k8s_openapi::api::node::v1::RuntimeClass,
            k8s_openapi::api::policy::v1::PodDisruptionBudget,
            k8s_openapi::api::rbac::v1::ClusterRole,
            k8s_openapi::api::rbac::v1::ClusterRoleBinding,
            k8s_openapi::api::rbac::v1::Role,
            k8s_openapi::api::rbac::v1::RoleBinding,
            k8s_openapi::api::resource::v1alpha3::DeviceClass,
            k8s_openapi::api::resource::v1alpha3::DeviceTaintRule,
            k8s_openapi::api::resource::v1alpha3::ResourceClaim,
            k8s_openapi::api::resource::v1alpha3::ResourceClaimTemplate,
            k8s_openapi::api::resource::v1alpha3::ResourceSlice,
            k8s_openapi::api::resource::v1beta1::DeviceClass,
            k8s_openapi::api::resource::v1beta1::ResourceClaim,
            k8s_openapi::api::resource::v1beta1::ResourceClaimTemplate,
            k8s_openapi::api::resource::v1beta1::ResourceSlice,
            k8s_openapi::api::resource::v1beta2::DeviceClass,
            k8s_openapi::api::resource::v1beta2::ResourceClaim,
            k8s_openapi::api::resource::v1beta2::ResourceClaimTemplate,
            k8s_openapi::api::resource::v1beta2::ResourceSlice,
            k8s_openapi::api::scheduling::v1::PriorityClass,
            k8s_openapi::api::storage::v1::CSIDriver,
            k8s_openapi::api::storage::v1::CSINode,
            k8s_openapi::api::storage::v1::CSIStorageCapacity,
            k8s_openapi::api::storage::v1::StorageClass,
            k8s_openapi::api::storage::v1::VolumeAttachment,
            k8s_openapi::api::storage::v1alpha1::VolumeAttributesClass,
            k8s_openapi::api::storage::v1beta1::VolumeAttributesClass,
            k8s_openapi::api::storagemigration::v1alpha1::StorageVersionMigration,
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
            k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService,
        }
    };
}
pub(crate) use with_builtin_types;

macro_rules! rows {
    ($($ty:path),* $(,)?) => {
        fn rows() -> Vec<Row> {
            vec![$(row::<$ty>()),*]
        }
    };
}

/// Every built-in resource, one entry per (group, plural) with all its versions.
pub(crate) fn builtin_resources() -> Vec<ResourceDef> {
    let mut by_key: BTreeMap<(&'static str, &'static str), ResourceDef> = BTreeMap::new();
    for r in rows() {
        let def = by_key
            .entry((r.group, r.plural))
            .or_insert_with(|| ResourceDef {
                group: r.group.to_string(),
                versions: Vec::new(),
                kind: r.kind.to_string(),
                plural: r.plural.to_string(),
                singular: r.kind.to_ascii_lowercase(),
                namespaced: r.namespaced,
                short_names: tables::short_names(r.group, r.plural)
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                categories: tables::categories(r.group, r.plural)
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                status: tables::has_status(r.group, r.plural),
                scale: tables::scale(r.group, r.plural),
                custom_versions: Default::default(),
                custom: false,
                schemas: BTreeMap::new(),
                conversion: None,
                storage_version: None,
            });
        def.versions.push(r.version.to_string());
    }
    let mut out: Vec<ResourceDef> = by_key.into_values().collect();
    for def in &mut out {
        def.versions.sort_by(|a, b| compare_versions(a, b));
    }
    out
}

with_builtin_types!(rows);
