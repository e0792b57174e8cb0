//! The list semantics of the built-in types: which lists merge by which key, which are sets.
//!
//! One table serves strategic merge patch (`patchMergeKey`/`patchStrategy`), server-side apply
//! (`listType=map` with `listMapKeys`) and the OpenAPI `x-kubernetes-*` extensions. Lists not
//! in the table are atomic. Custom resources take their semantics from their schema instead
//! (`schema.rs`: `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type`), except inside `metadata`, which is ObjectMeta's.

use serde_json::Value;

use super::Gvk;
use super::schema;

/// How a list field merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// Replaced as a whole.
    Atomic,
    /// A set of scalars: merged by union (`patchStrategy: merge` on a primitive list).
    Set,
    /// A list of objects keyed by fields: merged element by element.
    Map {
        /// The strategic-merge-patch key (`x-kubernetes-patch-merge-key`); empty for custom
        /// resources, which have no strategic merge patch.
        merge_key: &'static str,
        /// The server-side-apply keys (`x-kubernetes-list-map-keys`).
        keys: Vec<String>,
        /// Key fields the schema defaults (a port's `protocol: TCP`): an element that leaves
        /// one out is identified with the default, as structured-merge-diff does.
        key_defaults: Vec<(String, Value)>,
    },
}

/// A row's list semantics, in a form a `const` table can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    Set,
    Map {
        merge_key: &'static str,
        keys: &'static [&'static str],
    },
}

/// Where a list lives, which decides what its name means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    ObjectMeta,
    PodSpec,
    Container,
    ServiceSpec,
    NodeSpec,
    NodeStatus,
    Status,
    Other,
}

const NAME: &[&str] = &["name"];

/// `(context, field, kind)` rows: the merge keys of the built-in types that matter.
const TABLE: &[(Context, &str, Row)] = &[
    (Context::ObjectMeta, "finalizers", Row::Set),
    (
        Context::ObjectMeta,
        "ownerReferences",
        Row::Map {
            merge_key: "uid",
            keys: &["uid"],
        },
    ),
    (
        Context::PodSpec,
        "containers",
        Row::Map {
            merge_key: "name",
            keys: NAME,
        },
    ),
    (
        Context::PodSpec,
        "initContainers",
        Row::Map {
            merge_key: "name",
            keys: NAME,
        },
    ),
    (
        Context::PodSpec,
        "ephemeralContainers",
        Row::Map {
            merge_key: "name",
            keys: NAME,
        },
    ),
    (
        Context::PodSpec,
        "volumes",
        Row::Map {
            merge_key: "name",
            keys: NAME,
        },
    ),
    (
        Context::PodSpec,
        "imagePullSecrets",
        Row::Map {
            merge_key: "name",
            keys: NAME,
        },
    ),
    (
        Context::PodSpec,
        "resourceClaims",
        Row::Map {
            merge_key: "name",
            keys: NAME,
        },
    ),
    (
        Context::PodSpec,
        "hostAliases",
        Row::Map {
            merge_key: "ip",
            keys: &["ip"],
        },
    ),
    (
        Context::PodSpec,
        "topologySpreadConstraints",
        Row::Map {
            merge_key: "topologyKey",
            keys: &["topologyKey", "whenUnsatisfiable"],
        },
    ),
    (
        Context::Container,
        "env",
        Row::Map {
            merge_key: "name",
            keys: NAME,
        },
    ),
    (
        Context::Container,
        "ports",
        Row::Map {
            merge_key: "containerPort",
            keys: &["containerPort", "protocol"],
        },
    ),
    (
        Context::Container,
        "volumeMounts",
        Row::Map {
            merge_key: "mountPath",
            keys: &["mountPath"],
        },
    ),
    (
        Context::Container,
        "volumeDevices",
        Row::Map {
            merge_key: "devicePath",
            keys: &["devicePath"],
        },
    ),
    (
        Context::ServiceSpec,
        "ports",
        Row::Map {
            merge_key: "port",
            keys: &["port", "protocol"],
        },
    ),
    (
        Context::NodeSpec,
        "taints",
        Row::Map {
            merge_key: "key",
            keys: &["key", "effect"],
        },
    ),
    (
        Context::NodeStatus,
        "addresses",
        Row::Map {
            merge_key: "type",
            keys: &["type"],
        },
    ),
    (
        Context::NodeStatus,
        "conditions",
        Row::Map {
            merge_key: "type",
            keys: &["type"],
        },
    ),
    (
        Context::Status,
        "conditions",
        Row::Map {
            merge_key: "type",
            keys: &["type"],
        },
    ),
];

/// The API groups compiled into kube-apiserver (strategic merge patch works only for these).
const BUILTIN_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// Whether `gvk` is a built-in type (not a custom resource).
pub(crate) fn is_builtin(gvk: &Gvk) -> bool {
    is_builtin_group(&gvk.group)
}

/// Whether `group` is compiled into kube-apiserver (served by its go-restful container).
pub(crate) fn is_builtin_group(group: &str) -> bool {
    BUILTIN_GROUPS.contains(&group)
}

impl ListKind {
    /// The value of key field `key` of a list-map element: its own, else the key's default.
    pub(crate) fn key_value<'a>(&'a self, item: &'a Value, key: &str) -> Option<&'a Value> {
        item.get(key)
            .filter(|v| !v.is_null())
            .or_else(|| match self {
                ListKind::Map { key_defaults, .. } => {
                    key_defaults.iter().find(|(k, _)| k == key).map(|(_, v)| v)
                }
                _ => None,
            })
    }
}

/// The semantics of the list at `path` (field names from the object root, no indexes).
pub(crate) fn list_kind(gvk: &Gvk, path: &[&str]) -> ListKind {
    let Some((field, parents)) = path.split_last() else {
        return ListKind::Atomic;
    };
    let context = path_context(gvk, parents);
    if context != Context::ObjectMeta && !is_builtin(gvk) {
        return match gvk.schema() {
            Some(root) => schema::list_kind(root, path),
            None => ListKind::Atomic,
        };
    }
    lookup(context, field)
}

/// Whether the object (map or struct) at `path` is atomic (`x-kubernetes-map-type: atomic`):
/// replaced as a whole by apply and owned as one field. Only custom resources' schemas say
/// so here; built-in objects are granular.
pub(crate) fn map_is_atomic(gvk: &Gvk, path: &[&str]) -> bool {
    let Some(root) = gvk.schema() else {
        return false;
    };
    path.first() != Some(&"metadata") && !is_builtin(gvk) && schema::map_is_atomic(root, path)
}

/// The semantics of `property` of the OpenAPI definition `definition`
/// (e.g. `io.k8s.api.core.v1.PodSpec`, `containers`).
pub(crate) fn definition_list_kind(definition: &str, property: &str) -> ListKind {
    let short = definition.rsplit('.').next().unwrap_or(definition);
    let context = match short {
        "ObjectMeta" => Context::ObjectMeta,
        "PodSpec" => Context::PodSpec,
        "Container" | "EphemeralContainer" => Context::Container,
        "ServiceSpec" => Context::ServiceSpec,
        "NodeSpec" => Context::NodeSpec,
        "NodeStatus" => Context::NodeStatus,
        s if s.ends_with("Status") && definition.starts_with("io.k8s.api.") => Context::Status,
        _ => Context::Other,
    };
    lookup(context, property)
}

fn lookup(context: Context, field: &str) -> ListKind {
    TABLE
        .iter()
        .find(|(c, f, _)| *c == context && *f == field)
        .map(|(_, _, row)| match *row {
            Row::Set => ListKind::Set,
            Row::Map { merge_key, keys } => ListKind::Map {
                merge_key,
                keys: keys.iter().map(|k| (*k).to_string()).collect(),
                // The only defaulted key field of the built-in list maps: ContainerPort's and
                // ServicePort's `protocol` (`default: TCP` in kube's OpenAPI).
                key_defaults: keys
                    .iter()
                    .filter(|k| **k == "protocol")
                    .map(|k| ((*k).to_string(), Value::from("TCP")))
                    .collect(),
            },
        })
        .unwrap_or(ListKind::Atomic)
}

fn path_context(gvk: &Gvk, parents: &[&str]) -> Context {
    let kind = gvk.kind.as_str();
    match parents {
        [.., "metadata"] if parents.len() == 1 || parents.ends_with(&["template", "metadata"]) => {
            Context::ObjectMeta
        }
        ["spec"] if kind == "Pod" => Context::PodSpec,
        [.., "template", "spec"] => Context::PodSpec,
        [
            "spec",
            "ephemeralContainers" | "containers" | "initContainers",
        ] if kind == "Pod" => Context::Container,
        [
            ..,
            "template",
            "spec",
            "ephemeralContainers" | "containers" | "initContainers",
        ] => Context::Container,
        ["spec"] if kind == "Service" => Context::ServiceSpec,
        ["spec"] if kind == "Node" => Context::NodeSpec,
        ["status"] if kind == "Node" => Context::NodeStatus,
        ["status"] => Context::Status,
        _ => Context::Other,
    }
}
