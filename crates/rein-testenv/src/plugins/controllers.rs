//! The kube-controller-manager controllers the admission plugins rely on, run inside the
//! transaction of each write they react to (so their result is visible as soon as the write
//! is): the ServiceAccount controller's `default` account and the root CA publisher's
//! `kube-root-ca.crt` ConfigMap in every live namespace, the quota controller's usage, the
//! disruption controller's PodDisruptionBudget status, and (when asked) a kubelet finishing
//! graceful Pod deletions.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::priority::{SYSTEM_CLASSES, classes};
use super::service_account::DEFAULT_ACCOUNT;
use crate::ops::meta;
use crate::resources::ResKey;
use crate::store::{Txn, WriteHook};

/// The ConfigMap the root CA publisher writes into every namespace.
const ROOT_CA: &str = "kube-root-ca.crt";

/// The controllers, with the CA bundle they publish.
#[derive(Debug)]
pub(crate) struct Controllers {
    ca_pem: String,
    /// What finishes graceful Pod deletions.
    kubelet: crate::Kubelet,
    /// Set while a hook runs: the controllers' own writes do not trigger them again.
    busy: AtomicBool,
}

impl Controllers {
    /// Controllers publishing `ca_pem` as the cluster's CA, with `kubelet` standing in for
    /// the nodes' kubelets.
    pub(crate) fn new(ca_pem: String, kubelet: crate::Kubelet) -> Controllers {
        Controllers {
            ca_pem,
            kubelet,
            busy: AtomicBool::new(false),
        }
    }

    /// What kube-apiserver creates on start besides namespaces: the system PriorityClasses.
    pub(crate) fn seed(txn: &mut Txn<'_>) {
        for (name, value, description) in SYSTEM_CLASSES {
            let key = (String::new(), name.to_string());
            if txn.get(&classes(), &key).is_some() {
                continue;
            }
            let class = json!({
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": new_meta(name, None),
                "value": value,
                "description": description,
                "preemptionPolicy": "PreemptLowerPriority",
            });
            txn.insert(&classes(), key, class);
        }
    }

    /// The namespace's `default` ServiceAccount and `kube-root-ca.crt` ConfigMap, where
    /// missing and the namespace is live.
    fn namespace_defaults(&self, txn: &mut Txn<'_>, namespace: &str) {
        let ns = txn.get(&core("namespaces"), &(String::new(), namespace.to_string()));
        if ns.is_none_or(|ns| meta::is_deleting(&ns)) {
            return;
        }
        let key = (namespace.to_string(), DEFAULT_ACCOUNT.to_string());
        if txn.get(&core("serviceaccounts"), &key).is_none() {
            let account = json!({
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": new_meta(DEFAULT_ACCOUNT, Some(namespace)),
            });
            txn.insert(&core("serviceaccounts"), key, account);
        }
        let key = (namespace.to_string(), ROOT_CA.to_string());
        if txn.get(&core("configmaps"), &key).is_none() {
            let mut metadata = new_meta(ROOT_CA, Some(namespace));
            metadata["annotations"] = json!({
                "kubernetes.io/description": "Contains a CA bundle that can be used to verify \
                    the kube-apiserver when using internal endpoints such as the internal \
                    service IP or kubernetes.default.svc. No other usage is guaranteed across \
                    distributions of Kubernetes clusters.",
            });
            let config_map = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": metadata,
                "data": {"ca.crt": self.ca_pem},
            });
            txn.insert(&core("configmaps"), key, config_map);
        }
    }
}

impl WriteHook for Controllers {
    fn written(&self, txn: &mut Txn<'_>, res: &ResKey, old: Option<&Value>, new: Option<&Value>) {
        if self.busy.swap(true, Ordering::AcqRel) {
            return;
        }
        let _reset = Reset(&self.busy);
        let Some(obj) = new.or(old) else {
            return;
        };
        let name = meta::meta_str(obj, "name").unwrap_or_default();
        let namespace = meta::meta_str(obj, "namespace").unwrap_or_default();
        if res.group.is_empty() {
            match res.plural.as_str() {
                "namespaces" if old.is_none() => self.namespace_defaults(txn, name),
                "serviceaccounts" if new.is_none() && name == DEFAULT_ACCOUNT => {
                    self.namespace_defaults(txn, namespace)
                }
                "configmaps" if new.is_none() && name == ROOT_CA => {
                    self.namespace_defaults(txn, namespace)
                }
                _ => {}
            }
        }
        if self.kubelet == crate::Kubelet::StopsAtOnce
            && res.group.is_empty()
            && res.plural == "pods"
            && let Some(pod) = new
        {
            crate::ops::graceful::finish_by_kubelet(txn, res, pod);
        }
        if !namespace.is_empty() {
            super::quota::refresh(txn, res, namespace);
            super::disruption::refresh(txn, res, namespace);
        }
    }
}

/// Clears the busy flag when a hook ends, however it ends.
struct Reset<'a>(&'a AtomicBool);

impl Drop for Reset<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

fn core(plural: &str) -> ResKey {
    ResKey {
        group: String::new(),
        plural: plural.into(),
    }
}

/// Metadata of an object a controller creates.
fn new_meta(name: &str, namespace: Option<&str>) -> Value {
    let mut m = json!({
        "name": name,
        "uid": meta::new_uid(),
        "creationTimestamp": meta::now(),
    });
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m
}
