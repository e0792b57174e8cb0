//! kube-apiserver's built-in admission plugins that operators feel, and the
//! kube-controller-manager controllers they rely on.
//!
//! Admission, in kube-apiserver's order: the mutating half ([`mutate`]: LimitRanger defaults,
//! ServiceAccount, Priority, DefaultTolerationSeconds) runs on a create before the mutating
//! webhooks and before validation; the validating half ([`validate`]: LimitRanger limits,
//! Priority's PriorityClass checks, then ResourceQuota) runs inside the transaction that
//! stores the object, so a quota is charged atomically with the write it admits.
//!
//! Controllers ([`Controllers`], a [`WriteHook`] of the store): every namespace gets the
//! `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap, and every ResourceQuota's
//! `status` is recomputed in the transaction of each write that changes what it counts, as is
//! every PodDisruptionBudget's ([`disruption`]).

mod controllers;
pub(crate) mod disruption;
mod limits;
mod priority;
mod quota;
mod service_account;
mod tolerations;

use serde_json::Value;

use crate::resources::{ResKey, ResourceDef};
use crate::status::ApiError;
use crate::store::Txn;

pub(crate) use controllers::Controllers;
pub(crate) use limits::default_limit_range;

/// A built-in admission plugin of kube-apiserver that rein-testenv runs; all are on by
/// default, as in a real cluster's default plugin set. Turn one off with
/// [`TestEnvBuilder::admission_plugin`](crate::TestEnvBuilder::admission_plugin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AdmissionPlugin {
    /// `ResourceQuota`: object-count and compute quotas enforced on create and update (403
    /// `exceeded quota: …`); usage is kept in each quota's `status` either way.
    ResourceQuota,
    /// `LimitRanger`: `default`/`defaultRequest` applied to a new Pod's containers and
    /// `min`/`max`/`maxLimitRequestRatio` enforced for Containers, Pods and
    /// PersistentVolumeClaims.
    LimitRanger,
    /// `ServiceAccount`: Pods get `serviceAccountName: default` and the projected
    /// `kube-api-access-*` token volume; a Pod naming a missing ServiceAccount is refused.
    ServiceAccount,
    /// `Priority`: `priorityClassName` resolved into `spec.priority` (the global default, or
    /// 0, without one); unknown classes refused; PriorityClasses checked.
    Priority,
    /// `DefaultTolerationSeconds`: Pods tolerate `not-ready` and `unreachable` for 300 s.
    DefaultTolerationSeconds,
}

/// Which built-in plugins are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plugins {
    quota: bool,
    limits: bool,
    service_account: bool,
    priority: bool,
    tolerations: bool,
}

/// None: internal writes (seeding, garbage collection) are not admitted.
impl Default for Plugins {
    fn default() -> Plugins {
        Plugins::none()
    }
}

impl Plugins {
    /// Every plugin on.
    pub(crate) fn all() -> Plugins {
        Plugins {
            quota: true,
            limits: true,
            service_account: true,
            priority: true,
            tolerations: true,
        }
    }

    /// Every plugin off.
    pub(crate) fn none() -> Plugins {
        Plugins {
            quota: false,
            limits: false,
            service_account: false,
            priority: false,
            tolerations: false,
        }
    }

    /// Turns `plugin` on or off.
    pub(crate) fn set(&mut self, plugin: AdmissionPlugin, on: bool) {
        match plugin {
            AdmissionPlugin::ResourceQuota => self.quota = on,
            AdmissionPlugin::LimitRanger => self.limits = on,
            AdmissionPlugin::ServiceAccount => self.service_account = on,
            AdmissionPlugin::Priority => self.priority = on,
            AdmissionPlugin::DefaultTolerationSeconds => self.tolerations = on,
        }
    }

    /// The same set without ResourceQuota (the dry run before the validating webhooks, which
    /// kube-apiserver calls before charging quota).
    pub(crate) fn without_quota(mut self) -> Plugins {
        self.quota = false;
        self
    }

    /// Whether [`mutate`] has anything to do for a create of `def`.
    pub(crate) fn mutates(self, def: &ResourceDef) -> bool {
        is_core(def, "pods")
            && (self.limits || self.service_account || self.priority || self.tolerations)
    }
}

/// The operation a write performs, as the plugins tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// A create.
    Create,
    /// An update of the main resource.
    Update,
}

/// The mutating plugins on a create of `obj` in `namespace`, in kube-apiserver's order:
/// LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds.
pub(crate) fn mutate(
    txn: &Txn<'_>,
    plugins: Plugins,
    def: &ResourceDef,
    namespace: Option<&str>,
    obj: &mut Value,
) -> Result<(), ApiError> {
    // A body whose shape is wrong is left to validation, which words the error.
    if !plugins.mutates(def) || !obj.is_object() || !obj.get("spec").is_none_or(Value::is_object) {
        return Ok(());
    }
    let namespace = namespace.unwrap_or_default();
    // NamespaceLifecycle comes first: a write into a namespace that is missing or
    // terminating is refused by it (when the object is stored), not by these plugins.
    let ns = txn.get(
        &ResKey {
            group: String::new(),
            plural: "namespaces".into(),
        },
        &(String::new(), namespace.to_string()),
    );
    if ns.is_none_or(|ns| crate::ops::meta::is_deleting(&ns)) {
        return Ok(());
    }
    let name = obj_name(obj);
    let refuse = |why: String| forbidden(def, name.clone(), why);
    if plugins.limits {
        limits::default_pod(txn, namespace, obj);
    }
    if plugins.service_account {
        service_account::admit(txn, namespace, obj).map_err(&refuse)?;
    }
    if plugins.priority {
        priority::admit_pod(txn, obj).map_err(&refuse)?;
    }
    if plugins.tolerations {
        tolerations::admit(obj);
    }
    Ok(())
}

/// The validating plugins on a write of `obj` (over `old` on update), inside the transaction
/// that stores it: LimitRanger, Priority (PriorityClasses), then ResourceQuota.
pub(crate) fn validate(
    txn: &Txn<'_>,
    plugins: Plugins,
    def: &ResourceDef,
    op: Op,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let refuse = |why: String| forbidden(def, obj_name(obj), why);
    if plugins.limits {
        limits::validate(txn, def, op, obj).map_err(refuse)?;
    }
    if plugins.priority && def.group == "scheduling.k8s.io" && def.plural == "priorityclasses" {
        priority::validate_class(txn, op, obj).map_err(refuse)?;
    }
    if plugins.quota {
        quota::admit(txn, def, op, obj, old).map_err(refuse)?;
    }
    Ok(())
}

/// Whether `def` is the core resource `plural`.
fn is_core(def: &ResourceDef, plural: &str) -> bool {
    !def.custom && def.group.is_empty() && def.plural == plural
}

/// The name admission errors quote: the name, else `generateName` (admission runs before
/// names are generated), else `Unknown`, as apiserver's `admission.NewForbidden`.
fn obj_name(obj: &Value) -> String {
    let meta = |f: &str| {
        obj.pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    meta("name")
        .or_else(|| meta("generateName"))
        .unwrap_or_else(|| "Unknown".to_string())
}

/// 403 Forbidden as `admission.NewForbidden` words it: `<resource> "<name>" is forbidden: …`.
fn forbidden(def: &ResourceDef, name: String, why: String) -> ApiError {
    ApiError::forbidden(format!(
        "{} \"{name}\" is forbidden: {why}",
        def.qualified()
    ))
    .with_details(if def.group.is_empty() {
        serde_json::json!({"name": name, "kind": def.plural})
    } else {
        serde_json::json!({"name": name, "group": def.group, "kind": def.plural})
    })
}
