//! What runs the operator in a cluster, as Kubernetes objects: its Namespace, the CRD, a
//! ServiceAccount, a ClusterRole and a leader-election Role with their bindings, a Deployment
//! and a Service for the metrics; `kube-operator-peer manifests` prints them as a JSON `List`.
//! The same objects as the scaffold's, except that the RBAC rules are written out by hand
//! ([`cluster_rules`], [`namespaced_rules`]): kube-rs derives none.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction, Namespace,
    ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec, Probe, ResourceRequirements,
    SeccompProfile, SecurityContext, Service, ServiceAccount, ServicePort, ServiceSpec,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube_core::CustomResourceExt as _;
use serde_json::{Value, json};

use crate::api::{Backup, GROUP};

/// The port the Deployment serves metrics on.
pub const METRICS_PORT: i32 = 8080;
/// The port the Deployment serves health probes on.
pub const PROBE_PORT: i32 = 8081;

/// Where and what to deploy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The operator's name: of its ServiceAccount, roles, Deployment and Service.
    pub name: String,
    /// The namespace it runs in (and elects its leader in).
    pub namespace: String,
    /// The container image.
    pub image: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            name: "kube-operator-peer".to_owned(),
            namespace: "kube-operator-peer-system".to_owned(),
            image: "kube-operator-peer:latest".to_owned(),
        }
    }
}

impl Settings {
    /// The user name the operator's requests carry: its ServiceAccount's.
    pub fn service_account_user(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    fn meta(&self, name: &str, namespaced: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: namespaced.then(|| self.namespace.clone()),
            labels: Some(self.labels()),
            ..ObjectMeta::default()
        }
    }

    fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("app.kubernetes.io/name".to_owned(), self.name.clone())])
    }
}

/// Every object, in the order `kubectl apply` should create them.
pub fn all(settings: &Settings) -> serde_json::Result<Vec<Value>> {
    Ok(vec![
        serde_json::to_value(namespace(settings))?,
        serde_json::to_value(Backup::crd())?,
        serde_json::to_value(service_account(settings))?,
        serde_json::to_value(cluster_role(settings))?,
        serde_json::to_value(cluster_role_binding(settings))?,
        serde_json::to_value(role(settings))?,
        serde_json::to_value(role_binding(settings))?,
        serde_json::to_value(service(settings))?,
        serde_json::to_value(deployment(settings))?,
    ])
}

/// [`all`] as a `v1/List`, the JSON `kube-operator-peer manifests` prints.
pub fn list(settings: &Settings) -> serde_json::Result<Value> {
    Ok(json!({"apiVersion": "v1", "kind": "List", "items": all(settings)?}))
}

/// The operator's namespace.
pub fn namespace(settings: &Settings) -> Namespace {
    Namespace {
        metadata: settings.meta(&settings.namespace, false),
        ..Namespace::default()
    }
}

/// The ServiceAccount the operator runs as.
pub fn service_account(settings: &Settings) -> ServiceAccount {
    ServiceAccount {
        metadata: settings.meta(&settings.name, true),
        ..ServiceAccount::default()
    }
}

/// The cluster-wide permissions ([`cluster_rules`]).
pub fn cluster_role(settings: &Settings) -> ClusterRole {
    ClusterRole {
        metadata: settings.meta(&settings.name, false),
        rules: Some(cluster_rules()),
        ..ClusterRole::default()
    }
}

/// Binds [`cluster_role`] to the ServiceAccount.
pub fn cluster_role_binding(settings: &Settings) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: settings.meta(&settings.name, false),
        role_ref: role_ref("ClusterRole", &settings.name),
        subjects: Some(vec![subject(settings)]),
    }
}

/// The leader-election permissions in the operator's namespace ([`namespaced_rules`]).
pub fn role(settings: &Settings) -> Role {
    Role {
        metadata: settings.meta(&format!("{}-leader-election", settings.name), true),
        rules: Some(namespaced_rules()),
    }
}

/// Binds [`role`] to the ServiceAccount.
pub fn role_binding(settings: &Settings) -> RoleBinding {
    let name = format!("{}-leader-election", settings.name);
    RoleBinding {
        metadata: settings.meta(&name, true),
        role_ref: role_ref("Role", &name),
        subjects: Some(vec![subject(settings)]),
    }
}

/// The Service in front of the metrics port.
pub fn service(settings: &Settings) -> Service {
    Service {
        metadata: settings.meta(&format!("{}-metrics", settings.name), true),
        spec: Some(ServiceSpec {
            selector: Some(settings.labels()),
            ports: Some(vec![ServicePort {
                name: Some("metrics".to_owned()),
                port: METRICS_PORT,
                target_port: Some(IntOrString::String("metrics".to_owned())),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// The Deployment: two replicas electing a leader, probes on [`PROBE_PORT`], metrics on
/// [`METRICS_PORT`], small resource requests and a non-root, read-only container.
pub fn deployment(settings: &Settings) -> Deployment {
    let probe = |path: &str| Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port: IntOrString::String("probes".to_owned()),
            ..HTTPGetAction::default()
        }),
        initial_delay_seconds: Some(5),
        period_seconds: Some(10),
        ..Probe::default()
    };
    let quantities = |cpu: &str, memory: &str| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
        ])
    };
    let port = |name: &str, port: i32| ContainerPort {
        name: Some(name.to_owned()),
        container_port: port,
        protocol: Some("TCP".to_owned()),
        ..ContainerPort::default()
    };
    let container = Container {
        name: "manager".to_owned(),
        image: Some(settings.image.clone()),
        args: Some(vec![
            "--leader-elect".to_owned(),
            format!("--health-probe-bind-address=0.0.0.0:{PROBE_PORT}"),
            format!("--metrics-bind-address=0.0.0.0:{METRICS_PORT}"),
        ]),
        env: Some(vec![EnvVar {
            name: "POD_NAMESPACE".to_owned(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "metadata.namespace".to_owned(),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }]),
        ports: Some(vec![
            port("metrics", METRICS_PORT),
            port("probes", PROBE_PORT),
        ]),
        liveness_probe: Some(probe("/healthz")),
        readiness_probe: Some(probe("/readyz")),
        resources: Some(ResourceRequirements {
            requests: Some(quantities("10m", "64Mi")),
            limits: Some(quantities("500m", "256Mi")),
            ..ResourceRequirements::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_owned()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    };
    Deployment {
        metadata: settings.meta(&settings.name, true),
        spec: Some(DeploymentSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: Some(settings.labels()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(settings.labels()),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(settings.name.clone()),
                    termination_grace_period_seconds: Some(30),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".to_owned(),
                            ..SeccompProfile::default()
                        }),
                        ..PodSecurityContext::default()
                    }),
                    containers: vec![container],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: "rbac.authorization.k8s.io".to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
    }
}

fn subject(settings: &Settings) -> Subject {
    Subject {
        kind: "ServiceAccount".to_owned(),
        name: settings.name.clone(),
        namespace: Some(settings.namespace.clone()),
        ..Subject::default()
    }
}

/// What the controller reads and writes, cluster-wide: the Backups (with their status and
/// finalizers), the ConfigMaps and CronJobs it owns, and Events.
pub fn cluster_rules() -> Vec<PolicyRule> {
    let all = [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    vec![
        rule(
            GROUP,
            &["backups"],
            &["get", "list", "watch", "update", "patch"],
        ),
        rule(GROUP, &["backups/status"], &["get", "update", "patch"]),
        rule(GROUP, &["backups/finalizers"], &["update"]),
        rule("", &["configmaps"], &all),
        rule("batch", &["cronjobs"], &all),
        rule("events.k8s.io", &["events"], &["create", "patch"]),
    ]
}

/// What leader election needs in the operator's namespace: its Lease.
pub fn namespaced_rules() -> Vec<PolicyRule> {
    vec![rule(
        "coordination.k8s.io",
        &["leases"],
        &["get", "create", "update"],
    )]
}

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(strings(resources)),
        verbs: strings(verbs),
        ..PolicyRule::default()
    }
}
