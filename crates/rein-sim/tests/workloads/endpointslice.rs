//! The EndpointSlice controller: a Service's slice lists its ready Pods with their IPs and the
//! resolved target port, follows scaling, and keeps a placeholder when nothing is selected.

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{ContainerPort, Pod, Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube_client::api::{ListParams, Patch, PatchParams, PostParams};
use rein_sim::workloads::endpointslice::{CONTROLLER_NAME, MANAGED_BY_LABEL, SERVICE_NAME_LABEL};

use crate::support::{Sim, eventually, labels, live, meta, selector, template};

fn service(name: &str, app: &str) -> Service {
    Service {
        metadata: meta(name),
        spec: Some(ServiceSpec {
            selector: Some(labels(&[("app", app)])),
            ports: Some(vec![ServicePort {
                name: Some("web".into()),
                port: 80,
                target_port: Some(IntOrString::String("http".into())),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

async fn slices(sim: &Sim, service: &str) -> Vec<EndpointSlice> {
    sim.api::<EndpointSlice>()
        .list(&ListParams::default().labels(&format!("{SERVICE_NAME_LABEL}={service}")))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

/// The addresses of the ready endpoints of the Service's slices, sorted.
async fn ready_addresses(sim: &Sim, service: &str) -> Vec<String> {
    let mut addresses: Vec<String> = slices(sim, service)
        .await
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
        .flat_map(|e| e.addresses.clone())
        .collect();
    addresses.sort();
    addresses
}

async fn pod_ips(sim: &Sim, app: &str) -> Vec<String> {
    let mut ips: Vec<String> = live(sim.pods(&format!("app={app}")).await)
        .iter()
        .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
        .collect();
    ips.sort();
    ips
}

#[tokio::test]
async fn a_service_slice_lists_its_ready_pods() {
    let sim = Sim::start().await;
    sim.api::<Service>()
        .create(&PostParams::default(), &service("front", "front"))
        .await
        .expect("the Service is created");
    // Nothing selected yet: one empty placeholder slice.
    let placeholder = eventually("the placeholder slice", || async {
        let list = slices(&sim, "front").await;
        match list.as_slice() {
            [one] if one.endpoints.is_empty() => Ok(one.clone()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(placeholder.address_type, "IPv4");

    let l = labels(&[("app", "front")]);
    let mut tpl = template(&l, "nginx");
    if let Some(spec) = tpl.spec.as_mut() {
        spec.containers[0].ports = Some(vec![ContainerPort {
            name: Some("http".into()),
            container_port: 8080,
            ..ContainerPort::default()
        }]);
    }
    let rs = ReplicaSet {
        metadata: meta("front"),
        spec: Some(ReplicaSetSpec {
            replicas: Some(2),
            selector: selector(&l),
            template: Some(tpl),
            ..ReplicaSetSpec::default()
        }),
        status: None,
    };
    sim.api::<ReplicaSet>()
        .create(&PostParams::default(), &rs)
        .await
        .expect("the ReplicaSet is created");

    let addresses = eventually("two ready endpoints", || async {
        let ips = pod_ips(&sim, "front").await;
        let ready = ready_addresses(&sim, "front").await;
        if ips.len() == 2 && ready == ips {
            Ok(ready)
        } else {
            Err(format!("pods {ips:?}, endpoints {ready:?}"))
        }
    })
    .await;
    let list = slices(&sim, "front").await;
    assert_eq!(list.len(), 1, "the placeholder was reused");
    let slice = &list[0];
    assert_eq!(slice.metadata.name, placeholder.metadata.name);
    assert!(
        slice
            .metadata
            .generate_name
            .as_deref()
            .is_some_and(|g| g == "front-")
    );
    let slice_labels = slice.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        slice_labels.get(MANAGED_BY_LABEL).map(String::as_str),
        Some(CONTROLLER_NAME)
    );
    let ports = slice.ports.clone().unwrap_or_default();
    assert_eq!(ports.len(), 1);
    assert_eq!(
        ports[0].port,
        Some(8080),
        "the named target port is resolved"
    );
    assert_eq!(ports[0].name.as_deref(), Some("web"));
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
    let owner = slice
        .metadata
        .owner_references
        .as_ref()
        .and_then(|r| r.first())
        .expect("an owner");
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Service", Some(true))
    );
    for endpoint in &slice.endpoints {
        let conditions = endpoint.conditions.clone().unwrap_or_default();
        assert_eq!(conditions.serving, Some(true));
        assert_eq!(conditions.terminating, Some(false));
        assert!(endpoint.node_name.is_some());
        let target = endpoint.target_ref.clone().unwrap_or_default();
        assert_eq!(target.kind.as_deref(), Some("Pod"));
    }
    assert_eq!(addresses.len(), 2);

    let scale = serde_json::json!({ "spec": { "replicas": 3 } });
    sim.api::<ReplicaSet>()
        .patch("front", &PatchParams::default(), &Patch::Merge(&scale))
        .await
        .expect("scaled");
    eventually("three ready endpoints", || async {
        let ips = pod_ips(&sim, "front").await;
        let ready = ready_addresses(&sim, "front").await;
        if ips.len() == 3 && ready == ips {
            Ok(())
        } else {
            Err(format!("pods {ips:?}, endpoints {ready:?}"))
        }
    })
    .await;

    // A deleted Pod leaves the slice.
    let gone = live(sim.pods("app=front").await)[0]
        .metadata
        .name
        .clone()
        .unwrap_or_default();
    sim.api::<Pod>()
        .delete(&gone, &Default::default())
        .await
        .expect("the Pod is deleted");
    eventually("the deleted Pod's endpoint to go", || async {
        let names: Vec<String> = slices(&sim, "front")
            .await
            .iter()
            .flat_map(|s| s.endpoints.iter())
            .filter_map(|e| e.target_ref.as_ref()?.name.clone())
            .collect();
        if names.contains(&gone) {
            Err(format!("{names:?}"))
        } else {
            Ok(())
        }
    })
    .await;
    sim.stop().await;
}
