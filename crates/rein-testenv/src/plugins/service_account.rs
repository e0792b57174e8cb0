//! ServiceAccount: a new Pod runs as `default` unless it names an account, the account must
//! exist, and (unless automounting is turned off) every container gets the projected API
//! access volume `kube-api-access-<random>` at `/var/run/secrets/kubernetes.io/serviceaccount`.

use serde_json::{Value, json};

use crate::resources::ResKey;
use crate::store::Txn;

/// Where the token, the CA bundle and the namespace are mounted.
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The prefix of the projected volume's name.
const VOLUME_PREFIX: &str = "kube-api-access-";

/// The ServiceAccount a Pod runs as when it names none.
pub(super) const DEFAULT_ACCOUNT: &str = "default";

/// kube's mirror Pod annotation: the kubelet's static Pods are left alone.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The plugin on a Pod create in `namespace`; answers the reason when refused.
pub(super) fn admit(txn: &Txn<'_>, namespace: &str, pod: &mut Value) -> Result<(), String> {
    if pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION))
    {
        return Ok(());
    }
    if !pod.get("spec").is_some_and(Value::is_object) {
        pod["spec"] = json!({});
    }
    let name = match pod
        .pointer("/spec/serviceAccountName")
        .and_then(Value::as_str)
    {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => {
            pod["spec"]["serviceAccountName"] = json!(DEFAULT_ACCOUNT);
            DEFAULT_ACCOUNT.to_string()
        }
    };
    let res = ResKey {
        group: String::new(),
        plural: "serviceaccounts".into(),
    };
    let Some(account) = txn.get(&res, &(namespace.to_string(), name.clone())) else {
        return Err(format!(
            "error looking up service account {namespace}/{name}: serviceaccount \"{name}\" \
             not found"
        ));
    };
    if automount(&account, pod) {
        mount_token(pod);
    }
    let pull_secrets = pod
        .pointer("/spec/imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty());
    if !pull_secrets
        && let Some(secrets) = account
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .filter(|s| !s.is_empty())
    {
        pod["spec"]["imagePullSecrets"] = Value::Array(secrets.clone());
    }
    Ok(())
}

/// The Pod's `automountServiceAccountToken`, else the account's, else true.
fn automount(account: &Value, pod: &Value) -> bool {
    pod.pointer("/spec/automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            account
                .get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true)
}

/// Mounts the projected volume into every container, init container and ephemeral
/// container that has nothing mounted at [`MOUNT_PATH`]; adds the volume when one needs it.
fn mount_token(pod: &mut Value) {
    let existing = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .find(|n| n.starts_with(VOLUME_PREFIX))
                .map(str::to_string)
        });
    let volume = existing
        .clone()
        .unwrap_or_else(|| crate::ops::meta::generate_name(VOLUME_PREFIX));
    let mount = json!({"name": volume, "readOnly": true, "mountPath": MOUNT_PATH});
    let mut needed = false;
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let Some(cs) = pod
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in cs.iter_mut().filter(|c| c.is_object()) {
            let mounted = c
                .get("volumeMounts")
                .and_then(Value::as_array)
                .is_some_and(|ms| {
                    ms.iter()
                        .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH))
                });
            if mounted {
                continue;
            }
            if !c.get("volumeMounts").is_some_and(Value::is_array) {
                c["volumeMounts"] = json!([]);
            }
            if let Some(ms) = c["volumeMounts"].as_array_mut() {
                ms.push(mount.clone());
            }
            needed = true;
        }
    }
    if existing.is_some() || !needed {
        return;
    }
    if !pod["spec"].get("volumes").is_some_and(Value::is_array) {
        pod["spec"]["volumes"] = json!([]);
    }
    if let Some(vs) = pod["spec"]["volumes"].as_array_mut() {
        vs.push(token_volume(&volume));
    }
}

/// The projected volume kube's `TokenVolumeSource` describes.
fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {
                    "name": "kube-root-ca.crt",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }},
                {"downwardAPI": {"items": [{
                    "path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                }]}},
            ],
        },
    })
}
