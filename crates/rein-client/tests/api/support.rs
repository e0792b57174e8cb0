//! Shared helpers: object builders and a started test environment.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use kube_client::core::ObjectMeta;
use rein_client::Client;
use rein_testenv::TestEnv;

pub(crate) async fn env() -> (TestEnv, Client) {
    let env = TestEnv::start().await.expect("test environment starts");
    let client = Client::new(env.client());
    (env, client)
}

pub(crate) fn meta(ns: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: (!ns.is_empty()).then(|| ns.to_owned()),
        name: Some(name.to_owned()),
        ..Default::default()
    }
}

pub(crate) fn pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Pod {
    let mut metadata = meta(ns, name);
    if !labels.is_empty() {
        metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
    }
    Pod {
        metadata,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(crate) fn config_map(ns: &str, name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: meta(ns, name),
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Default::default()
    }
}
