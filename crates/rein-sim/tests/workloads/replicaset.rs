//! The ReplicaSet controller: scaling up and down, status, adoption and release, the order of
//! deletion, events.

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{Patch, PatchParams, PostParams};

use crate::support::{Sim, events, eventually, labels, live, meta, names, selector, template};

fn replica_set(name: &str, replicas: i32) -> ReplicaSet {
    let l = labels(&[("app", name)]);
    ReplicaSet {
        metadata: meta(name),
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: selector(&l),
            template: Some(template(&l, "nginx")),
            ..ReplicaSetSpec::default()
        }),
        status: None,
    }
}

async fn scale(sim: &Sim, name: &str, replicas: i32) {
    let patch = serde_json::json!({ "spec": { "replicas": replicas } });
    sim.api::<ReplicaSet>()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the ReplicaSet is scaled");
}

/// Waits until `name` has exactly `n` Pods not being deleted; returns them.
async fn wait_pods(sim: &Sim, name: &str, n: usize) -> Vec<Pod> {
    eventually(&format!("{n} pods of {name}"), || async {
        let pods = live(sim.pods(&format!("app={name}")).await);
        if pods.len() == n {
            Ok(pods)
        } else {
            Err(format!("{:?}", names(&pods)))
        }
    })
    .await
}

/// Waits until the ReplicaSet's status satisfies `check`.
async fn wait_status(
    sim: &Sim,
    name: &str,
    what: &str,
    check: impl Fn(&ReplicaSet) -> bool,
) -> ReplicaSet {
    eventually(what, || async {
        let rs = sim
            .api::<ReplicaSet>()
            .get(name)
            .await
            .map_err(|e| e.to_string())?;
        if check(&rs) {
            Ok(rs)
        } else {
            Err(format!("{:?}", rs.status))
        }
    })
    .await
}

#[tokio::test]
async fn a_replica_set_scales_up_and_down() {
    let sim = Sim::start().await;
    let created = sim
        .api::<ReplicaSet>()
        .create(&PostParams::default(), &replica_set("web", 3))
        .await
        .expect("the ReplicaSet is created");

    let pods = wait_pods(&sim, "web", 3).await;
    for pod in &pods {
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
        let owner = pod
            .metadata
            .owner_references
            .as_ref()
            .and_then(|r| r.first())
            .expect("an owner reference");
        assert_eq!(owner.kind, "ReplicaSet");
        assert_eq!(owner.api_version, "apps/v1");
        assert_eq!(Some(&owner.uid), created.metadata.uid.as_ref());
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
    }
    wait_status(&sim, "web", "status.replicas 3", |rs| {
        rs.status.as_ref().is_some_and(|s| {
            s.replicas == 3
                && s.fully_labeled_replicas == Some(3)
                && s.observed_generation == rs.metadata.generation
        })
    })
    .await;
    // The kubelet starts them.
    wait_status(&sim, "web", "3 ready and available", |rs| {
        rs.status
            .as_ref()
            .is_some_and(|s| s.ready_replicas == Some(3) && s.available_replicas == Some(3))
    })
    .await;

    scale(&sim, "web", 1).await;
    wait_pods(&sim, "web", 1).await;
    wait_status(
        &sim,
        "web",
        "status.replicas 1 at the new generation",
        |rs| {
            rs.status
                .as_ref()
                .is_some_and(|s| s.replicas == 1 && s.observed_generation == rs.metadata.generation)
        },
    )
    .await;

    scale(&sim, "web", 4).await;
    wait_pods(&sim, "web", 4).await;

    let reasons = eventually("the ReplicaSet's events", || async {
        let events = events(&sim, "ReplicaSet", "web").await;
        let creates = events
            .iter()
            .filter(|(r, _)| r == "SuccessfulCreate")
            .count();
        let deletes = events
            .iter()
            .filter(|(r, _)| r == "SuccessfulDelete")
            .count();
        if creates >= 1 && deletes >= 1 {
            Ok(events)
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
    assert!(
        reasons
            .iter()
            .any(|(r, m)| r == "SuccessfulCreate" && m.starts_with("Created pod: web-")),
        "{reasons:?}"
    );
    sim.stop().await;
}

/// A Pod labelled `app: <app>` outside any ReplicaSet, never ready if asked.
fn loose_pod(name: &str, app: &str, never_ready: bool) -> Pod {
    let mut pod = Pod {
        metadata: kube_client::api::ObjectMeta {
            labels: Some(labels(&[("app", app)])),
            ..meta(name)
        },
        spec: template(&labels(&[]), "redis").spec,
        status: None,
    };
    let mut annotations = labels(&[(rein_sim::kubelet::TERMINATION_DELAY, "0")]);
    if never_ready {
        annotations.insert(rein_sim::kubelet::NEVER_READY.into(), "true".into());
    }
    pod.metadata.annotations = Some(annotations);
    pod
}

#[tokio::test]
async fn scaling_down_deletes_the_pods_that_are_not_ready_first() {
    let sim = Sim::start().await;
    for (name, never_ready) in [("db-a", false), ("db-b", true), ("db-c", false)] {
        sim.api::<Pod>()
            .create(&PostParams::default(), &loose_pod(name, "db", never_ready))
            .await
            .expect("the Pod is created");
    }
    // Once the kubelet (on the manager's cache) runs them, the controllers' cache has them.
    eventually("the loose Pods to run", || async {
        let running = sim
            .pods("app=db")
            .await
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        if running == 3 {
            Ok(())
        } else {
            Err(format!("{running} running"))
        }
    })
    .await;
    sim.api::<ReplicaSet>()
        .create(&PostParams::default(), &replica_set("db", 3))
        .await
        .expect("the ReplicaSet is created");
    wait_status(&sim, "db", "3 adopted, 2 ready", |rs| {
        rs.status
            .as_ref()
            .is_some_and(|s| s.replicas == 3 && s.ready_replicas == Some(2))
    })
    .await;
    assert_eq!(
        names(&live(sim.pods("app=db").await)).len(),
        3,
        "the ReplicaSet adopted the three Pods and made none"
    );

    scale(&sim, "db", 2).await;
    let left = wait_pods(&sim, "db", 2).await;
    let mut left = names(&left);
    left.sort();
    assert_eq!(
        left,
        ["db-a", "db-c"],
        "the Pod that was not ready is the one deleted"
    );
    sim.stop().await;
}

#[tokio::test]
async fn a_replica_set_adopts_orphans_and_releases_pods_that_stop_matching() {
    let sim = Sim::start().await;
    // An orphan that matches the selector, created first.
    sim.api::<Pod>()
        .create(&PostParams::default(), &loose_pod("orphan", "cache", false))
        .await
        .expect("the orphan is created");
    eventually("the orphan to run", || async {
        let pod = sim
            .api::<Pod>()
            .get("orphan")
            .await
            .map_err(|e| e.to_string())?;
        match pod.status.and_then(|s| s.phase) {
            Some(phase) if phase == "Running" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let rs = sim
        .api::<ReplicaSet>()
        .create(&PostParams::default(), &replica_set("cache", 2))
        .await
        .expect("the ReplicaSet is created");

    let pods = wait_pods(&sim, "cache", 2).await;
    assert!(
        names(&pods).contains(&"orphan".to_owned()),
        "{:?}",
        names(&pods)
    );
    let adopted = sim.api::<Pod>().get("orphan").await.expect("the orphan");
    let owner = adopted
        .metadata
        .owner_references
        .as_ref()
        .and_then(|r| r.first())
        .expect("the adopted Pod has an owner");
    assert_eq!(Some(&owner.uid), rs.metadata.uid.as_ref());
    assert_eq!(owner.controller, Some(true));

    // Relabelled, the Pod no longer matches: it is released and replaced.
    let relabel = serde_json::json!({ "metadata": { "labels": { "app": "elsewhere" } } });
    sim.api::<Pod>()
        .patch("orphan", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .expect("the Pod is relabelled");
    eventually("the relabelled Pod to be released", || async {
        let pod = sim
            .api::<Pod>()
            .get("orphan")
            .await
            .map_err(|e| e.to_string())?;
        if pod
            .metadata
            .owner_references
            .as_ref()
            .is_none_or(|r| r.is_empty())
        {
            Ok(())
        } else {
            Err(format!("{:?}", pod.metadata.owner_references))
        }
    })
    .await;
    wait_pods(&sim, "cache", 2).await;
    sim.stop().await;
}

#[tokio::test]
async fn pods_count_as_available_after_min_ready_seconds() {
    let sim = Sim::start().await;
    let mut rs = replica_set("slow", 2);
    if let Some(spec) = rs.spec.as_mut() {
        spec.min_ready_seconds = Some(1);
    }
    sim.api::<ReplicaSet>()
        .create(&PostParams::default(), &rs)
        .await
        .expect("the ReplicaSet is created");
    let ready = wait_status(&sim, "slow", "2 ready", |rs| {
        rs.status
            .as_ref()
            .is_some_and(|s| s.ready_replicas == Some(2))
    })
    .await;
    let started = std::time::Instant::now();
    assert_ne!(
        ready.status.as_ref().and_then(|s| s.available_replicas),
        Some(2),
        "not available as soon as ready"
    );
    wait_status(&sim, "slow", "2 available", |rs| {
        rs.status
            .as_ref()
            .is_some_and(|s| s.available_replicas == Some(2))
    })
    .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    sim.stop().await;
}
