//! Registration functions for every built-in k8s-openapi API group/version (generated from k8s-openapi 0.29, Kubernetes 1.33).

use super::Scheme;

/// The `v1` API group/version.
pub mod core_v1 {
    use k8s_openapi::api::core::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::Binding>();
        scheme.register::<types::ComponentStatus>();
        scheme.register::<types::ConfigMap>();
        scheme.register::<types::Endpoints>();
        scheme.register::<types::Event>();
        scheme.register::<types::LimitRange>();
        scheme.register::<types::Namespace>();
        scheme.register::<types::Node>();
        scheme.register::<types::PersistentVolume>();
        scheme.register::<types::PersistentVolumeClaim>();
        scheme.register::<types::Pod>();
        scheme.register::<types::PodTemplate>();
        scheme.register::<types::ReplicationController>();
        scheme.register::<types::ResourceQuota>();
        scheme.register::<types::Secret>();
        scheme.register::<types::Service>();
        scheme.register::<types::ServiceAccount>();
    }
}

/// The `admissionregistration.k8s.io/v1` API group/version.
pub mod admissionregistration_v1 {
    use k8s_openapi::api::admissionregistration::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `admissionregistration.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::MutatingWebhookConfiguration>();
        scheme.register::<types::ValidatingAdmissionPolicy>();
        scheme.register::<types::ValidatingAdmissionPolicyBinding>();
        scheme.register::<types::ValidatingWebhookConfiguration>();
    }
}

/// The `admissionregistration.k8s.io/v1alpha1` API group/version.
pub mod admissionregistration_v1alpha1 {
    use k8s_openapi::api::admissionregistration::v1alpha1 as types;

    use crate::Scheme;

    /// Registers every kind of `admissionregistration.k8s.io/v1alpha1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::MutatingAdmissionPolicy>();
        scheme.register::<types::MutatingAdmissionPolicyBinding>();
    }
}

/// The `admissionregistration.k8s.io/v1beta1` API group/version.
pub mod admissionregistration_v1beta1 {
    use k8s_openapi::api::admissionregistration::v1beta1 as types;

    use crate::Scheme;

    /// Registers every kind of `admissionregistration.k8s.io/v1beta1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::ValidatingAdmissionPolicy>();
        scheme.register::<types::ValidatingAdmissionPolicyBinding>();
    }
}

/// The `apiextensions.k8s.io/v1` API group/version.
pub mod apiextensions_v1 {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `apiextensions.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::CustomResourceDefinition>();
    }
}

/// The `apiregistration.k8s.io/v1` API group/version.
pub mod apiregistration_v1 {
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `apiregistration.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::APIService>();
    }
}

/// The `apps/v1` API group/version.
pub mod apps_v1 {
    use k8s_openapi::api::apps::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `apps/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::ControllerRevision>();
        scheme.register::<types::DaemonSet>();
        scheme.register::<types::Deployment>();
        scheme.register::<types::ReplicaSet>();
        scheme.register::<types::StatefulSet>();
    }
}

/// The `authentication.k8s.io/v1` API group/version.
pub mod authentication_v1 {
    use k8s_openapi::api::authentication::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `authentication.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::SelfSubjectReview>();
        scheme.register::<types::TokenRequest>();
        scheme.register::<types::TokenReview>();
    }
}

/// The `authorization.k8s.io/v1` API group/version.
pub mod authorization_v1 {
    use k8s_openapi::api::authorization::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `authorization.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::LocalSubjectAccessReview>();
        scheme.register::<types::SelfSubjectAccessReview>();
        scheme.register::<types::SelfSubjectRulesReview>();
        scheme.register::<types::SubjectAccessReview>();
    }
}

/// The `autoscaling/v1` API group/version.
pub mod autoscaling_v1 {
    use k8s_openapi::api::autoscaling::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `autoscaling/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::HorizontalPodAutoscaler>();
        scheme.register::<types::Scale>();
    }
}

/// The `autoscaling/v2` API group/version.
pub mod autoscaling_v2 {
    use k8s_openapi::api::autoscaling::v2 as types;

    use crate::Scheme;

    /// Registers every kind of `autoscaling/v2` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::HorizontalPodAutoscaler>();
    }
}

/// The `batch/v1` API group/version.
pub mod batch_v1 {
    use k8s_openapi::api::batch::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `batch/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::CronJob>();
        scheme.register::<types::Job>();
    }
}

/// The `certificates.k8s.io/v1` API group/version.
pub mod certificates_v1 {
    use k8s_openapi::api::certificates::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `certificates.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::CertificateSigningRequest>();
    }
}

/// The `certificates.k8s.io/v1alpha1` API group/version.
pub mod certificates_v1alpha1 {
    use k8s_openapi::api::certificates::v1alpha1 as types;

    use crate::Scheme;

    /// Registers every kind of `certificates.k8s.io/v1alpha1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::ClusterTrustBundle>();
    }
}

/// The `certificates.k8s.io/v1beta1` API group/version.
pub mod certificates_v1beta1 {
    use k8s_openapi::api::certificates::v1beta1 as types;

    use crate::Scheme;

    /// Registers every kind of `certificates.k8s.io/v1beta1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::ClusterTrustBundle>();
    }
}

/// The `coordination.k8s.io/v1` API group/version.
pub mod coordination_v1 {
    use k8s_openapi::api::coordination::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `coordination.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::Lease>();
    }
}

/// The `coordination.k8s.io/v1alpha2` API group/version.
pub mod coordination_v1alpha2 {
    use k8s_openapi::api::coordination::v1alpha2 as types;

    use crate::Scheme;

    /// Registers every kind of `coordination.k8s.io/v1alpha2` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::LeaseCandidate>();
    }
}

/// The `coordination.k8s.io/v1beta1` API group/version.
pub mod coordination_v1beta1 {
    use k8s_openapi::api::coordination::v1beta1 as types;

    use crate::Scheme;

    /// Registers every kind of `coordination.k8s.io/v1beta1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::LeaseCandidate>();
    }
}

/// The `discovery.k8s.io/v1` API group/version.
pub mod discovery_v1 {
    use k8s_openapi::api::discovery::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `discovery.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::EndpointSlice>();
    }
}

/// The `events.k8s.io/v1` API group/version.
pub mod events_v1 {
    use k8s_openapi::api::events::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `events.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::Event>();
    }
}

/// The `flowcontrol.apiserver.k8s.io/v1` API group/version.
pub mod flowcontrol_v1 {
    use k8s_openapi::api::flowcontrol::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `flowcontrol.apiserver.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::FlowSchema>();
        scheme.register::<types::PriorityLevelConfiguration>();
    }
}

/// The `internal.apiserver.k8s.io/v1alpha1` API group/version.
pub mod apiserverinternal_v1alpha1 {
    use k8s_openapi::api::apiserverinternal::v1alpha1 as types;

    use crate::Scheme;

    /// Registers every kind of `internal.apiserver.k8s.io/v1alpha1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::StorageVersion>();
    }
}

/// The `networking.k8s.io/v1` API group/version.
pub mod networking_v1 {
    use k8s_openapi::api::networking::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `networking.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::IPAddress>();
        scheme.register::<types::Ingress>();
        scheme.register::<types::IngressClass>();
        scheme.register::<types::NetworkPolicy>();
        scheme.register::<types::ServiceCIDR>();
    }
}

/// The `networking.k8s.io/v1beta1` API group/version.
pub mod networking_v1beta1 {
    use k8s_openapi::api::networking::v1beta1 as types;

    use crate::Scheme;

    /// Registers every kind of `networking.k8s.io/v1beta1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::IPAddress>();
        scheme.register::<types::ServiceCIDR>();
    }
}

/// The `node.k8s.io/v1` API group/version.
pub mod node_v1 {
    use k8s_openapi::api::node::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `node.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::RuntimeClass>();
    }
}

/// The `policy/v1` API group/version.
pub mod policy_v1 {
    use k8s_openapi::api::policy::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `policy/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::Eviction>();
        scheme.register::<types::PodDisruptionBudget>();
    }
}

/// The `rbac.authorization.k8s.io/v1` API group/version.
pub mod rbac_v1 {
    use k8s_openapi::api::rbac::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `rbac.authorization.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::ClusterRole>();
        scheme.register::<types::ClusterRoleBinding>();
        scheme.register::<types::Role>();
        scheme.register::<types::RoleBinding>();
    }
}

/// The `resource.k8s.io/v1alpha3` API group/version.
pub mod resource_v1alpha3 {
    use k8s_openapi::api::resource::v1alpha3 as types;

    use crate::Scheme;

    /// Registers every kind of `resource.k8s.io/v1alpha3` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::DeviceClass>();
        scheme.register::<types::DeviceTaintRule>();
        scheme.register::<types::ResourceClaim>();
        scheme.register::<types::ResourceClaimTemplate>();
        scheme.register::<types::ResourceSlice>();
    }
}

/// The `resource.k8s.io/v1beta1` API group/version.
pub mod resource_v1beta1 {
    use k8s_openapi::api::resource::v1beta1 as types;

    use crate::Scheme;

    /// Registers every kind of `resource.k8s.io/v1beta1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::DeviceClass>();
        scheme.register::<types::ResourceClaim>();
        scheme.register::<types::ResourceClaimTemplate>();
        scheme.register::<types::ResourceSlice>();
    }
}

/// The `resource.k8s.io/v1beta2` API group/version.
pub mod resource_v1beta2 {
    use k8s_openapi::api::resource::v1beta2 as types;

    use crate::Scheme;

    /// Registers every kind of `resource.k8s.io/v1beta2` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::DeviceClass>();
        scheme.register::<types::ResourceClaim>();
        scheme.register::<types::ResourceClaimTemplate>();
        scheme.register::<types::ResourceSlice>();
    }
}

/// The `scheduling.k8s.io/v1` API group/version.
pub mod scheduling_v1 {
    use k8s_openapi::api::scheduling::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `scheduling.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::PriorityClass>();
    }
}

/// The `storage.k8s.io/v1` API group/version.
pub mod storage_v1 {
    use k8s_openapi::api::storage::v1 as types;

    use crate::Scheme;

    /// Registers every kind of `storage.k8s.io/v1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::CSIDriver>();
        scheme.register::<types::CSINode>();
        scheme.register::<types::CSIStorageCapacity>();
        scheme.register::<types::StorageClass>();
        scheme.register::<types::VolumeAttachment>();
    }
}

/// The `storage.k8s.io/v1alpha1` API group/version.
pub mod storage_v1alpha1 {
    use k8s_openapi::api::storage::v1alpha1 as types;

    use crate::Scheme;

    /// Registers every kind of `storage.k8s.io/v1alpha1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::VolumeAttributesClass>();
    }
}

/// The `storage.k8s.io/v1beta1` API group/version.
pub mod storage_v1beta1 {
    use k8s_openapi::api::storage::v1beta1 as types;

    use crate::Scheme;

    /// Registers every kind of `storage.k8s.io/v1beta1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::VolumeAttributesClass>();
    }
}

/// The `storagemigration.k8s.io/v1alpha1` API group/version.
pub mod storagemigration_v1alpha1 {
    use k8s_openapi::api::storagemigration::v1alpha1 as types;

    use crate::Scheme;

    /// Registers every kind of `storagemigration.k8s.io/v1alpha1` with the scheme.
    pub fn add_to_scheme(scheme: &mut Scheme) {
        scheme.register::<types::StorageVersionMigration>();
    }
}

/// Registers every built-in group/version.
pub fn add_all_to_scheme(scheme: &mut Scheme) {
    core_v1::add_to_scheme(scheme);
    admissionregistration_v1::add_to_scheme(scheme);
    admissionregistration_v1alpha1::add_to_scheme(scheme);
    admissionregistration_v1beta1::add_to_scheme(scheme);
    apiextensions_v1::add_to_scheme(scheme);
    apiregistration_v1::add_to_scheme(scheme);
    apps_v1::add_to_scheme(scheme);
    authentication_v1::add_to_scheme(scheme);
    authorization_v1::add_to_scheme(scheme);
    autoscaling_v1::add_to_scheme(scheme);
    autoscaling_v2::add_to_scheme(scheme);
    batch_v1::add_to_scheme(scheme);
    certificates_v1::add_to_scheme(scheme);
    certificates_v1alpha1::add_to_scheme(scheme);
    certificates_v1beta1::add_to_scheme(scheme);
    coordination_v1::add_to_scheme(scheme);
    coordination_v1alpha2::add_to_scheme(scheme);
    coordination_v1beta1::add_to_scheme(scheme);
    discovery_v1::add_to_scheme(scheme);
    events_v1::add_to_scheme(scheme);
    flowcontrol_v1::add_to_scheme(scheme);
    apiserverinternal_v1alpha1::add_to_scheme(scheme);
    networking_v1::add_to_scheme(scheme);
    networking_v1beta1::add_to_scheme(scheme);
    node_v1::add_to_scheme(scheme);
    policy_v1::add_to_scheme(scheme);
    rbac_v1::add_to_scheme(scheme);
    resource_v1alpha3::add_to_scheme(scheme);
    resource_v1beta1::add_to_scheme(scheme);
    resource_v1beta2::add_to_scheme(scheme);
    scheduling_v1::add_to_scheme(scheme);
    storage_v1::add_to_scheme(scheme);
    storage_v1alpha1::add_to_scheme(scheme);
    storage_v1beta1::add_to_scheme(scheme);
    storagemigration_v1alpha1::add_to_scheme(scheme);
}
