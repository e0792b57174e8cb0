//! Admission webhooks: kube-apiserver's MutatingAdmissionWebhook and
//! ValidatingAdmissionWebhook plugins, calling the webhooks that the stored
//! `MutatingWebhookConfiguration`s and `ValidatingWebhookConfiguration`s name.
//!
//! A write calls [`admit`] once, with the object it is about to store (and the stored one):
//! mutating webhooks run first, one after another, their JSON Patches applied in turn (and
//! those with `reinvocationPolicy: IfNeeded` called once more when a later webhook changed
//! the object); then validating webhooks run in parallel. Any denial or failing call (under
//! `failurePolicy: Fail`) fails the write before anything is stored.

pub(crate) mod call;
mod conditions;
mod dispatch;
pub(crate) mod hook;
mod matching;
mod review;
mod selector;

use std::collections::HashMap;
use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::resources::{ResKey, ResourceDef};
use crate::status::ApiError;
use crate::store::Store;

/// Local addresses standing in for in-cluster services that webhook configurations name in
/// `clientConfig.service` (there is no cluster network to resolve them).
#[derive(Debug, Clone, Default)]
pub(crate) struct Services {
    map: HashMap<(String, String, u16), SocketAddr>,
}

impl Services {
    /// Maps the service `namespace/name`, port `port`, to `addr`.
    pub(crate) fn insert(&mut self, namespace: &str, name: &str, port: u16, addr: SocketAddr) {
        self.map
            .insert((namespace.to_string(), name.to_string(), port), addr);
    }

    /// The address of `namespace/name:port`, when mapped.
    pub(crate) fn get(&self, namespace: &str, name: &str, port: u16) -> Option<SocketAddr> {
        self.map
            .get(&(namespace.to_string(), name.to_string(), port))
            .copied()
    }
}

/// The operation a write performs, as webhook rules name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
}

impl Operation {
    /// The name in rules and AdmissionReviews.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        }
    }
}

/// What a write is about, as admission sees it.
#[derive(Debug, Clone)]
pub(crate) struct Attributes {
    operation: Operation,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    kind: String,
    served_versions: Vec<String>,
    namespaced: bool,
    is_namespace: bool,
    /// The request's namespace (a Namespace's own name for a Namespace).
    namespace: String,
    name: String,
    dry_run: bool,
    options: Value,
}

impl Attributes {
    /// A write of `operation` on `name` of `def` in `version` (through `subresource`).
    pub(crate) fn new(
        def: &ResourceDef,
        version: &str,
        subresource: Option<&str>,
        operation: Operation,
        namespace: Option<&str>,
        name: &str,
        dry_run: bool,
    ) -> Attributes {
        let is_namespace = def.group.is_empty() && def.plural == "namespaces";
        let namespace = if is_namespace {
            name.to_string()
        } else if def.namespaced {
            namespace.unwrap_or_default().to_string()
        } else {
            String::new()
        };
        let mut options = json!({"kind": operation.options_kind(), "apiVersion": "meta.k8s.io/v1"});
        if dry_run {
            options["dryRun"] = json!(["All"]);
        }
        Attributes {
            operation,
            group: def.group.clone(),
            version: version.to_string(),
            resource: def.plural.clone(),
            subresource: subresource.unwrap_or_default().to_string(),
            kind: def.kind.clone(),
            served_versions: def.versions.clone(),
            namespaced: def.namespaced,
            is_namespace,
            namespace,
            name: name.to_string(),
            dry_run,
            options,
        }
    }

    /// The kind of the objects sent when the resource is called in `version`.
    fn kind_in(&self, version: &str) -> (String, String, String) {
        match self.subresource.as_str() {
            "scale" => return ("autoscaling".into(), "v1".into(), "Scale".into()),
            "eviction" => return ("policy".into(), "v1".into(), "Eviction".into()),
            "binding" => return (String::new(), "v1".into(), "Binding".into()),
            _ => {}
        }
        (self.group.clone(), version.to_string(), self.kind.clone())
    }

    /// `obj` as a webhook called in `version` sees it.
    fn object_in(&self, obj: &Value, version: &str) -> Value {
        let (group, version, _) = self.kind_in(version);
        let api_version = if group.is_empty() {
            version
        } else {
            format!("{group}/{version}")
        };
        crate::ops::as_version(obj, &api_version).unwrap_or_else(|| obj.clone())
    }
}

/// The outcome of admission: the object to store (mutated) and the webhooks' warnings.
#[derive(Debug)]
pub(crate) struct Admitted {
    /// The object after every mutating webhook (`None` for a delete).
    pub(crate) object: Option<Value>,
    /// `Warning` texts, in order, without repeats.
    pub(crate) warnings: Vec<String>,
    /// A mutating webhook changed the object: kube-apiserver then runs the built-in mutating
    /// plugins once more (its reinvocation), so they see what the webhooks added.
    pub(crate) changed: bool,
}

/// Whether some stored webhook's rules match the write, so the write must be admitted
/// (selectors are looked at later, against the object the write builds).
pub(crate) fn wanted(store: &Store, attrs: &Attributes) -> bool {
    if matching::exempt(&attrs.group, &attrs.resource) {
        return false;
    }
    let (mutating, validating) = configurations(store);
    mutating
        .iter()
        .chain(validating.iter())
        .any(|h| matching::matched_version(h, attrs).is_some())
}

/// Runs the mutating and then the validating webhooks that match the write of `new` over
/// `old`; answers the object to store, or the error kube-apiserver would answer.
pub(crate) async fn admit(
    store: &Store,
    services: &Services,
    attrs: &Attributes,
    old: Option<&Value>,
    new: Option<Value>,
) -> Result<Admitted, ApiError> {
    if matching::exempt(&attrs.group, &attrs.resource) {
        return Ok(Admitted {
            object: new,
            warnings: Vec::new(),
            changed: false,
        });
    }
    let (mutating, validating) = configurations(store);
    let namespace_labels = if attrs.namespaced && !attrs.namespace.is_empty() {
        let ns = store.lock().get(
            &ResKey {
                group: String::new(),
                plural: "namespaces".into(),
            },
            &(String::new(), attrs.namespace.clone()),
        );
        ns.map(|ns| selector::labels_of(&ns))
    } else {
        None
    };
    let call = dispatch::Call {
        services,
        attrs,
        namespace_labels: namespace_labels.as_ref(),
        old,
    };
    let mut warnings = Vec::new();
    let mut new = new;
    let assigned = match (&mut new, attrs.operation) {
        (Some(obj), Operation::Create) => before_create(obj, attrs.name.is_empty()),
        _ => Vec::new(),
    };
    let (mut object, changed) = dispatch::mutate(&call, &mutating, new, &mut warnings).await?;
    if let Some(Value::Object(meta)) = object.as_mut().and_then(|o| o.get_mut("metadata")) {
        meta.extend(assigned);
    }
    dispatch::validate(&call, &validating, object.as_ref(), &mut warnings).await?;
    let mut seen = std::collections::HashSet::new();
    warnings.retain(|w| seen.insert(w.clone()));
    Ok(Admitted {
        object,
        warnings,
        changed,
    })
}

/// Takes from a create's object what kube-apiserver's `BeforeCreate` assigns between mutating
/// and validating admission (the uid, the creation time, and a name made from
/// `generateName` when the request named none): mutating webhooks see the object without
/// them, validating webhooks with them. Answers the fields taken, to put back.
fn before_create(obj: &mut Value, name_generated: bool) -> Vec<(String, Value)> {
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else {
        return Vec::new();
    };
    let mut keys = vec!["uid", "creationTimestamp"];
    if name_generated && meta.contains_key("generateName") {
        keys.push("name");
    }
    keys.into_iter()
        .filter_map(|key| Some((key.to_string(), meta.remove(key)?)))
        .collect()
}

/// The stored mutating and validating webhooks, in kube-apiserver's order.
fn configurations(store: &Store) -> (Vec<hook::Hook>, Vec<hook::Hook>) {
    let res = |plural: &str| ResKey {
        group: "admissionregistration.k8s.io".into(),
        plural: plural.into(),
    };
    let txn = store.lock();
    let mutating = txn.list(&res("mutatingwebhookconfigurations"), None);
    let validating = txn.list(&res("validatingwebhookconfigurations"), None);
    drop(txn);
    (hook::hooks_of(mutating), hook::hooks_of(validating))
}
