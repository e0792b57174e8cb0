//! Shared helpers for the integration tests: ConfigMap fixtures, event recording, polling.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, DeleteParams, ListParams, PostParams};
use kube_client::core::ObjectMeta;
use parking_lot::Mutex;
use rein_informer::{
    BackoffOptions, DeletedObject, InformerOptions, ListWatchOptions, QueueKind, ReflectorOptions,
    ResourceEventHandler, meta_namespace_key,
};

pub(crate) fn configmap(name: &str, value: &str) -> ConfigMap {
    let mut data = BTreeMap::new();
    data.insert("v".to_string(), value.to_string());
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([("app".to_string(), "demo".to_string())])),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

pub(crate) async fn create(api: &Api<ConfigMap>, name: &str) -> ConfigMap {
    api.create(&PostParams::default(), &configmap(name, "0"))
        .await
        .expect("create")
}

pub(crate) async fn update(api: &Api<ConfigMap>, name: &str, value: &str) {
    let mut cm = api.get(name).await.expect("get");
    cm.data = Some(BTreeMap::from([("v".to_string(), value.to_string())]));
    api.replace(name, &PostParams::default(), &cm)
        .await
        .expect("replace");
}

pub(crate) async fn delete(api: &Api<ConfigMap>, name: &str) {
    api.delete(name, &DeleteParams::default())
        .await
        .expect("delete");
}

/// Fast retries so tests spend their time on behaviour, not on waiting.
pub(crate) fn options(queue: QueueKind) -> InformerOptions {
    InformerOptions {
        resync_period: Duration::ZERO,
        queue,
        reflector: ReflectorOptions {
            backoff: BackoffOptions {
                initial: Duration::from_millis(20),
                max: Duration::from_millis(200),
                ..Default::default()
            },
            ..Default::default()
        },
    }
}

/// Polls `cond` every 10 ms until it holds; panics after `secs` seconds.
pub(crate) async fn eventually(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Only the tests' own ConfigMaps (labelled `app=demo`): every namespace also has the root CA
/// ConfigMap `kube-root-ca.crt`, as on a real cluster.
pub(crate) fn demo_objects() -> ListWatchOptions {
    ListWatchOptions {
        label_selector: Some("app=demo".into()),
        ..Default::default()
    }
}

/// The server's state of the tests' own ConfigMaps: key → resourceVersion.
pub(crate) async fn server_state(api: &Api<ConfigMap>) -> HashMap<String, String> {
    api.list(&ListParams::default().labels("app=demo"))
        .await
        .expect("list")
        .items
        .iter()
        .map(|o| {
            (
                meta_namespace_key(o),
                o.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// One recorded notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    Add {
        key: String,
        rv: String,
        initial: bool,
    },
    Update {
        key: String,
        old_rv: String,
        new_rv: String,
    },
    Delete {
        key: String,
        tombstone: bool,
    },
}

/// A handler that records everything and mirrors the cache it implies.
#[derive(Debug, Default, Clone)]
pub(crate) struct Recorder {
    pub(crate) events: Arc<Mutex<Vec<Seen>>>,
    pub(crate) mirror: Arc<Mutex<HashMap<String, String>>>,
}

fn rv(o: &ConfigMap) -> String {
    o.metadata.resource_version.clone().unwrap_or_default()
}

impl ResourceEventHandler<ConfigMap> for Recorder {
    fn on_add(&self, obj: &Arc<ConfigMap>, is_in_initial_list: bool) {
        let key = meta_namespace_key(obj.as_ref());
        self.mirror.lock().insert(key.clone(), rv(obj));
        self.events.lock().push(Seen::Add {
            key,
            rv: rv(obj),
            initial: is_in_initial_list,
        });
    }
    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let key = meta_namespace_key(new.as_ref());
        self.mirror.lock().insert(key.clone(), rv(new));
        self.events.lock().push(Seen::Update {
            key,
            old_rv: rv(old),
            new_rv: rv(new),
        });
    }
    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        let key = rein_informer::deletion_handling_key(obj);
        self.mirror.lock().remove(&key);
        self.events.lock().push(Seen::Delete {
            key,
            tombstone: obj.is_tombstone(),
        });
    }
}

impl Recorder {
    pub(crate) fn events(&self) -> Vec<Seen> {
        self.events.lock().clone()
    }
    pub(crate) fn mirror(&self) -> HashMap<String, String> {
        self.mirror.lock().clone()
    }
    /// Checks that, per object, the resource versions delivered never go backwards.
    pub(crate) fn assert_ordered(&self) {
        let mut last: HashMap<String, u64> = HashMap::new();
        for e in self.events() {
            let (key, rv) = match &e {
                Seen::Add { key, rv, .. } => (key, rv),
                Seen::Update { key, new_rv, .. } => (key, new_rv),
                Seen::Delete { key, .. } => {
                    last.remove(key);
                    continue;
                }
            };
            let n: u64 = rv.parse().unwrap_or(0);
            if let Some(prev) = last.get(key) {
                assert!(
                    n >= *prev,
                    "events for {key} went backwards: {prev} then {n}"
                );
            }
            last.insert(key.clone(), n);
        }
    }
}
