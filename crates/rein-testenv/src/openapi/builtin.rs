//! The built-in resource types and their schemas, generated from k8s-openapi on first use.

use std::any::type_name;
use std::sync::OnceLock;

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::patch::Gvk;
use crate::patch::strategy::{self, ListKind};

/// One built-in resource: where it is served and which definition describes it.
#[derive(Debug, Clone)]
pub(super) struct BuiltinResource {
    pub(super) gvk: Gvk,
    pub(super) plural: &'static str,
    pub(super) namespaced: bool,
    /// The definition name, e.g. `io.k8s.api.core.v1.Pod`.
    pub(super) definition: String,
}

/// Every built-in resource and every definition they reference, with the `x-kubernetes-*`
/// extensions kube-apiserver publishes.
#[derive(Debug)]
pub(super) struct Builtins {
    pub(super) resources: Vec<BuiltinResource>,
    /// Definitions keyed by name; `$ref`s point at `#/definitions/<name>`.
    pub(super) definitions: Map<String, Value>,
}

/// The built-in schemas, built on first use (not at server start-up).
pub(super) fn builtins() -> &'static Builtins {
    static BUILTINS: OnceLock<Builtins> = OnceLock::new();
    BUILTINS.get_or_init(build)
}

fn build() -> Builtins {
    let mut generator = SchemaSettings::draft07()
        .with(|settings| {
            settings.meta_schema = None;
            settings.transforms.clear();
        })
        .into_generator();
    let resources = collect(&mut generator);
    let mut definitions = generator.take_definitions(false);
    for resource in &resources {
        if let Some(Value::Object(schema)) = definitions.get_mut(&resource.definition) {
            schema.insert(
                "x-kubernetes-group-version-kind".to_string(),
                json!([{
                    "group": resource.gvk.group,
                    "version": resource.gvk.version,
                    "kind": resource.gvk.kind,
                }]),
            );
        }
    }
    for (name, schema) in definitions.iter_mut() {
        add_list_extensions(name, schema);
    }
    Builtins {
        resources,
        definitions,
    }
}

/// Adds `x-kubernetes-patch-*` and `x-kubernetes-list-*` to the list properties of `schema`.
fn add_list_extensions(definition: &str, schema: &mut Value) {
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    for (property, property_schema) in properties.iter_mut() {
        let Value::Object(property_schema) = property_schema else {
            continue;
        };
        if property_schema.get("type").and_then(Value::as_str) != Some("array") {
            continue;
        }
        let extensions = match strategy::definition_list_kind(definition, property) {
            ListKind::Atomic => json!({"x-kubernetes-list-type": "atomic"}),
            ListKind::Set => json!({
                "x-kubernetes-list-type": "set",
                "x-kubernetes-patch-strategy": "merge",
            }),
            ListKind::Map { merge_key, keys } => json!({
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": keys,
                "x-kubernetes-patch-merge-key": merge_key,
                "x-kubernetes-patch-strategy": "merge",
            }),
        };
        if let Value::Object(extensions) = extensions {
            property_schema.extend(extensions);
        }
    }
}

fn resource<K>(generator: &mut SchemaGenerator) -> BuiltinResource
where
    K: k8s_openapi::Resource + JsonSchema,
{
    generator.subschema_for::<K>();
    BuiltinResource {
        gvk: Gvk::new(K::GROUP, K::VERSION, K::KIND),
        plural: K::URL_PATH_SEGMENT,
        namespaced: type_name::<K::Scope>().ends_with("NamespaceResourceScope"),
        definition: K::schema_name().into_owned(),
    }
}

macro_rules! builtin_resources {
    ($($ty:path),* $(,)?) => {
        fn collect(generator: &mut SchemaGenerator) -> Vec<BuiltinResource> {
            vec![$(resource::<$ty>(generator)),*]
        }
    };
}

builtin_resources! {
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
