//! The StatefulSet controller: Pods created in ordinal order with stable names, labels and
//! claims, ControllerRevisions and the status `kubectl rollout status` reads, partitioned
//! rolling updates from the highest ordinal, and `Parallel` scaling with claims deleted as
//! the retention policy says.

use std::cell::Cell;
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    ControllerRevision, RollingUpdateStatefulSetStrategy, StatefulSet,
    StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec, StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::PersistentVolume;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod, VolumeResourceRequirements,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::Api;
use kube_client::api::{ListParams, Patch, PatchParams, PostParams};

use crate::support::{Sim, events, eventually, labels, live, meta, selector, template};

fn stateful_set(name: &str, replicas: i32, image: &str) -> StatefulSet {
    let l = labels(&[("app", name)]);
    StatefulSet {
        metadata: meta(name),
        spec: Some(StatefulSetSpec {
            replicas: Some(replicas),
            service_name: Some(name.into()),
            selector: selector(&l),
            template: template(&l, image),
            volume_claim_templates: Some(vec![PersistentVolumeClaim {
                metadata: ObjectMeta {
                    name: Some("data".into()),
                    ..ObjectMeta::default()
                },
                spec: Some(PersistentVolumeClaimSpec {
                    access_modes: Some(vec!["ReadWriteOnce".into()]),
                    resources: Some(VolumeResourceRequirements {
                        requests: Some(BTreeMap::from([(
                            "storage".to_owned(),
                            Quantity("1Gi".into()),
                        )])),
                        ..VolumeResourceRequirements::default()
                    }),
                    ..PersistentVolumeClaimSpec::default()
                }),
                status: None,
            }]),
            ..StatefulSetSpec::default()
        }),
        status: None,
    }
}

/// What `kubectl rollout status statefulset/<name>` waits for (`StatefulSetStatusViewer`):
/// the generation observed and every replica ready; then, with a `rollingUpdate` (the API
/// server defaults one, partition 0), the Pods from the partition updated, else the current
/// revision being the update revision.
fn rolled_out(set: &StatefulSet) -> bool {
    let Some(status) = set.status.as_ref() else {
        return false;
    };
    let spec = set.spec.clone().unwrap_or_default();
    let replicas = spec.replicas.unwrap_or(1);
    if status.observed_generation.unwrap_or(0) == 0
        || set.metadata.generation > status.observed_generation
        || status.ready_replicas.unwrap_or(0) < replicas
    {
        return false;
    }
    match spec.update_strategy.and_then(|s| s.rolling_update) {
        Some(rolling) => {
            status.updated_replicas.unwrap_or(0) >= replicas - rolling.partition.unwrap_or(0)
        }
        None => status.update_revision == status.current_revision,
    }
}

async fn wait_for(
    sim: &Sim,
    name: &str,
    what: &str,
    check: impl Fn(&StatefulSet) -> bool,
) -> StatefulSet {
    eventually(what, || async {
        let set = sim
            .api::<StatefulSet>()
            .get(name)
            .await
            .map_err(|e| e.to_string())?;
        if check(&set) {
            Ok(set)
        } else {
            Err(format!("{:?}", set.status))
        }
    })
    .await
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

fn image_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

/// The set's live Pods by name.
async fn pods_of(sim: &Sim, name: &str) -> BTreeMap<String, Pod> {
    live(sim.pods(&format!("app={name}")).await)
        .into_iter()
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), p))
        .collect()
}

#[tokio::test]
async fn pods_are_created_in_order_each_with_its_claim() {
    let sim = Sim::start().await;
    sim.api::<StatefulSet>()
        .create(&PostParams::default(), &stateful_set("web", 3, "nginx"))
        .await
        .expect("the StatefulSet is created");

    // OrderedReady: web-<n> never exists before web-<n-1> is Running and Ready.
    let out_of_order = Cell::new(None::<String>);
    let set = eventually("3 ready replicas, rolled out", || async {
        let pods = pods_of(&sim, "web").await;
        for n in 1..3 {
            if pods.contains_key(&format!("web-{n}"))
                && !pods.get(&format!("web-{}", n - 1)).is_some_and(is_ready)
            {
                out_of_order.set(Some(format!("web-{n} before web-{} was ready", n - 1)));
            }
        }
        let set = sim
            .api::<StatefulSet>()
            .get("web")
            .await
            .map_err(|e| e.to_string())?;
        if rolled_out(&set) && set.status.as_ref().is_some_and(|s| s.replicas == 3) {
            Ok(set)
        } else {
            Err(format!("{:?} {:?}", pods.keys(), set.status))
        }
    })
    .await;
    assert_eq!(out_of_order.take(), None);

    let status = set.status.clone().unwrap_or_default();
    assert_eq!(status.ready_replicas, Some(3));
    assert_eq!(status.current_replicas, Some(3));
    assert_eq!(status.updated_replicas, Some(3));
    assert_eq!(status.available_replicas, Some(3));
    assert_eq!(status.observed_generation, set.metadata.generation);
    assert_eq!(status.collision_count, Some(0));
    let revision = status.update_revision.clone().expect("an update revision");
    assert_eq!(status.current_revision.as_ref(), Some(&revision));
    assert!(revision.starts_with("web-"), "{revision}");
    let history = sim
        .api::<ControllerRevision>()
        .get(&revision)
        .await
        .expect("the revision exists");
    assert_eq!(history.revision, 1);
    assert!(
        history
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("controller.kubernetes.io/hash"))
    );

    let pods = pods_of(&sim, "web").await;
    assert_eq!(
        pods.keys().cloned().collect::<Vec<_>>(),
        ["web-0", "web-1", "web-2"]
    );
    for (n, (name, pod)) in pods.iter().enumerate() {
        assert_eq!(
            label(pod, "statefulset.kubernetes.io/pod-name"),
            Some(name.as_str())
        );
        assert_eq!(
            label(pod, "apps.kubernetes.io/pod-index"),
            Some(n.to_string().as_str())
        );
        assert_eq!(
            label(pod, "controller-revision-hash"),
            Some(revision.as_str())
        );
        let spec = pod.spec.clone().unwrap_or_default();
        assert_eq!(spec.hostname.as_deref(), Some(name.as_str()));
        assert_eq!(spec.subdomain.as_deref(), Some("web"));
        let claim = spec
            .volumes
            .unwrap_or_default()
            .into_iter()
            .find(|v| v.name == "data")
            .and_then(|v| v.persistent_volume_claim)
            .map(|c| c.claim_name);
        assert_eq!(claim, Some(format!("data-{name}")));
    }
    // Ready one after the other: each Pod was created once the one before it was ready.
    let ready_at = |pod: &Pod| {
        pod.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .and_then(|c| c.last_transition_time.clone())
    };
    for n in 1..3 {
        let created = pods[&format!("web-{n}")]
            .metadata
            .creation_timestamp
            .clone();
        let before = ready_at(&pods[&format!("web-{}", n - 1)]);
        assert!(created.map(|t| t.0) >= before.map(|t| t.0), "web-{n}");
    }

    // The claims exist, belong to nobody (Retain/Retain), and the simulated provisioner
    // bound each to a volume of the default class.
    let claims = eventually("3 bound claims", || async {
        let claims = sim
            .api::<PersistentVolumeClaim>()
            .list(&ListParams::default().labels("app=web"))
            .await
            .map_err(|e| e.to_string())?
            .items;
        let bound = claims.iter().filter(|c| phase(c) == Some("Bound")).count();
        if bound == 3 && claims.len() == 3 {
            Ok(claims)
        } else {
            Err(format!(
                "{:?}",
                claims.iter().map(phase).collect::<Vec<_>>()
            ))
        }
    })
    .await;
    let mut claim_names: Vec<String> = claims
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    claim_names.sort();
    assert_eq!(claim_names, ["data-web-0", "data-web-1", "data-web-2"]);
    let volumes: Api<PersistentVolume> = Api::all(sim.kube.clone());
    for claim in &claims {
        assert!(
            claim
                .metadata
                .owner_references
                .as_ref()
                .is_none_or(|r| r.is_empty())
        );
        let annotations = claim.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            annotations
                .get("pv.kubernetes.io/bind-completed")
                .map(String::as_str),
            Some("yes")
        );
        assert_eq!(
            annotations
                .get("volume.kubernetes.io/storage-provisioner")
                .map(String::as_str),
            Some(rein_sim::workloads::persistentvolume::PROVISIONER)
        );
        let spec = claim.spec.clone().unwrap_or_default();
        assert_eq!(spec.storage_class_name.as_deref(), Some("standard"));
        let volume_name = spec.volume_name.expect("a bound volume");
        assert_eq!(
            Some(volume_name.clone()),
            claim.metadata.uid.as_ref().map(|u| format!("pvc-{u}"))
        );
        let status = claim.status.clone().unwrap_or_default();
        assert_eq!(
            status.capacity.and_then(|c| c.get("storage").cloned()),
            Some(Quantity("1Gi".into()))
        );
        let volume = volumes.get(&volume_name).await.expect("the volume exists");
        assert_eq!(
            volume.status.and_then(|s| s.phase).as_deref(),
            Some("Bound")
        );
        let claim_ref = volume.spec.and_then(|s| s.claim_ref).expect("a claimRef");
        assert_eq!(claim_ref.name, claim.metadata.name);
        assert_eq!(claim_ref.uid, claim.metadata.uid);
    }
    let class = Api::<StorageClass>::all(sim.kube.clone())
        .get("standard")
        .await
        .expect("the default StorageClass");
    assert_eq!(
        class
            .metadata
            .annotations
            .and_then(|a| a
                .get("storageclass.kubernetes.io/is-default-class")
                .cloned())
            .as_deref(),
        Some("true")
    );

    let events = events(&sim, "StatefulSet", "web").await;
    for expected in [
        "create Claim data-web-0 Pod web-0 in StatefulSet web success",
        "create Pod web-0 in StatefulSet web successful",
        "create Pod web-2 in StatefulSet web successful",
    ] {
        assert!(
            events
                .iter()
                .any(|(r, m)| r == "SuccessfulCreate" && m == expected),
            "{expected:?} in {events:?}"
        );
    }
    sim.stop().await;
}

fn phase(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim.status.as_ref().and_then(|s| s.phase.as_deref())
}

fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

#[tokio::test]
async fn a_partitioned_rolling_update_updates_only_the_ordinals_from_the_partition() {
    let sim = Sim::start().await;
    sim.api::<StatefulSet>()
        .create(
            &PostParams::default(),
            &stateful_set("db", 3, "postgres:15"),
        )
        .await
        .expect("the StatefulSet is created");
    let first = wait_for(&sim, "db", "3 ready", rolled_out).await;
    let old_revision = first
        .status
        .as_ref()
        .and_then(|s| s.current_revision.clone())
        .expect("a current revision");
    let before = pods_of(&sim, "db").await;

    let patch = serde_json::json!({ "spec": {
        "updateStrategy": { "type": "RollingUpdate", "rollingUpdate": { "partition": 1 } },
        "template": { "spec": { "containers": [{ "name": "app", "image": "postgres:16" }] } },
    }});
    sim.api::<StatefulSet>()
        .patch("db", &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .expect("the StatefulSet is updated");
    let set = eventually("ordinals 1 and 2 updated and ready", || async {
        let set = sim
            .api::<StatefulSet>()
            .get("db")
            .await
            .map_err(|e| e.to_string())?;
        let pods = pods_of(&sim, "db").await;
        let updated = pods
            .values()
            .filter(|p| image_of(p) == "postgres:16" && is_ready(p))
            .count();
        if rolled_out(&set) && updated == 2 && pods.len() == 3 {
            Ok(set)
        } else {
            Err(format!("{updated} updated; {:?}", set.status))
        }
    })
    .await;
    let status = set.status.clone().unwrap_or_default();
    let new_revision = status.update_revision.clone().expect("an update revision");
    assert_ne!(new_revision, old_revision);
    assert_eq!(status.current_revision.as_ref(), Some(&old_revision));
    assert_eq!(status.updated_replicas, Some(2));
    assert_eq!(status.current_replicas, Some(1));

    let after = pods_of(&sim, "db").await;
    // Below the partition: the same Pod at the old revision.
    assert_eq!(uid(&after["db-0"]), uid(&before["db-0"]));
    assert_eq!(image_of(&after["db-0"]), "postgres:15");
    assert_eq!(
        label(&after["db-0"], "controller-revision-hash"),
        Some(old_revision.as_str())
    );
    for name in ["db-1", "db-2"] {
        assert_ne!(uid(&after[name]), uid(&before[name]), "{name} was replaced");
        assert_eq!(image_of(&after[name]), "postgres:16");
        assert_eq!(
            label(&after[name], "controller-revision-hash"),
            Some(new_revision.as_str())
        );
    }
    // From the highest ordinal down.
    let created = |name: &str| after[name].metadata.creation_timestamp.clone().map(|t| t.0);
    assert!(created("db-2") <= created("db-1"));

    // Partition 0: the last Pod follows and the update completes.
    let patch = serde_json::json!({ "spec": {
        "updateStrategy": { "rollingUpdate": { "partition": 0 } } } });
    sim.api::<StatefulSet>()
        .patch("db", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the partition is lowered");
    let done = wait_for(&sim, "db", "the update completed", |set| {
        rolled_out(set)
            && set
                .status
                .as_ref()
                .is_some_and(|s| s.updated_replicas == Some(3))
    })
    .await;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.current_revision.as_ref(), Some(&new_revision));
    assert_eq!(status.current_replicas, Some(3));
    let last = pods_of(&sim, "db").await;
    assert_eq!(image_of(&last["db-0"]), "postgres:16");
    sim.stop().await;
}

#[tokio::test]
async fn parallel_scaling_deletes_the_claims_of_removed_pods_when_asked() {
    let sim = Sim::start().await;
    let mut set = stateful_set("cache", 3, "redis");
    if let Some(spec) = set.spec.as_mut() {
        spec.pod_management_policy = Some("Parallel".into());
        spec.persistent_volume_claim_retention_policy =
            Some(StatefulSetPersistentVolumeClaimRetentionPolicy {
                when_scaled: Some("Delete".into()),
                when_deleted: Some("Retain".into()),
            });
        spec.update_strategy = Some(StatefulSetUpdateStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: Some(RollingUpdateStatefulSetStrategy {
                partition: Some(0),
                max_unavailable: None,
            }),
        });
    }
    sim.api::<StatefulSet>()
        .create(&PostParams::default(), &set)
        .await
        .expect("the StatefulSet is created");
    wait_for(&sim, "cache", "3 ready", rolled_out).await;

    let patch = serde_json::json!({ "spec": { "replicas": 1 } });
    sim.api::<StatefulSet>()
        .patch("cache", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the StatefulSet is scaled down");
    eventually("one Pod and one claim left", || async {
        let pods = pods_of(&sim, "cache").await;
        let claims: Vec<String> = sim
            .api::<PersistentVolumeClaim>()
            .list(&ListParams::default().labels("app=cache"))
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .filter_map(|c| c.metadata.name)
            .collect();
        if pods.keys().eq(["cache-0"].iter()) && claims == ["data-cache-0"] {
            Ok(())
        } else {
            Err(format!("{:?} {claims:?}", pods.keys()))
        }
    })
    .await;
    // Their volumes (reclaim policy Delete) go with them.
    eventually("one volume left", || async {
        let volumes: Vec<String> = Api::<PersistentVolume>::all(sim.kube.clone())
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter(|v| {
                v.spec
                    .as_ref()
                    .and_then(|s| s.claim_ref.as_ref())
                    .and_then(|r| r.name.as_deref())
                    .is_some_and(|n| n.starts_with("data-cache-"))
            })
            .filter_map(|v| v.metadata.name)
            .collect();
        if volumes.len() == 1 {
            Ok(())
        } else {
            Err(format!("{volumes:?}"))
        }
    })
    .await;
    sim.stop().await;
}

/// Runs kubectl against the simulated cluster: `None` when kubectl is not on the PATH, else
/// whether it succeeded and what it printed.
async fn kubectl(sim: &Sim, args: &[&str]) -> Option<(bool, String)> {
    let available = tokio::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .await
        .is_ok_and(|o| o.status.success());
    if !available {
        return None;
    }
    let dir = std::env::temp_dir().join(format!("rein-sim-statefulset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let kubeconfig = dir.join("kubeconfig");
    sim.env
        .write_kubeconfig(&kubeconfig)
        .expect("writing the kubeconfig");
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(args)
        .output()
        .await
        .expect("running kubectl");
    let _ = std::fs::remove_dir_all(&dir);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.success(), printed))
}

#[tokio::test]
async fn kubectl_rollout_status_follows_a_stateful_set() {
    let sim = Sim::start().await;
    sim.api::<StatefulSet>()
        .create(&PostParams::default(), &stateful_set("kv", 2, "etcd:3.5"))
        .await
        .expect("the StatefulSet is created");
    let args = ["rollout", "status", "statefulset/kv", "--timeout=30s"];
    let Some((ok, printed)) = kubectl(&sim, &args).await else {
        eprintln!("skipping: kubectl is not on PATH");
        return;
    };
    assert!(ok, "kubectl rollout status: {printed}");
    // The API server gave it `rollingUpdate: {partition: 0}`: kubectl reports a partitioned
    // roll out.
    assert!(
        printed.contains("partitioned roll out complete: 2 new pods have been updated"),
        "{printed}"
    );
    // A partitioned update: kubectl reports it complete once the Pods from the partition are.
    let patch = serde_json::json!({ "spec": {
        "updateStrategy": { "type": "RollingUpdate", "rollingUpdate": { "partition": 1 } },
        "template": { "spec": { "containers": [{ "name": "app", "image": "etcd:3.6" }] } },
    }});
    sim.api::<StatefulSet>()
        .patch("kv", &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .expect("the StatefulSet is updated");
    let (ok, printed) = kubectl(&sim, &args).await.unwrap_or_default();
    assert!(ok, "kubectl rollout status: {printed}");
    assert!(
        printed.contains("partitioned roll out complete: 1 new pods have been updated"),
        "{printed}"
    );
    let pods = pods_of(&sim, "kv").await;
    assert_eq!(image_of(&pods["kv-0"]), "etcd:3.5");
    assert_eq!(image_of(&pods["kv-1"]), "etcd:3.6");
    sim.stop().await;
}
