//! The "done when": a hub-to-member ConfigMap propagation controller converges in all
//! members, follows a member added at run time, keeps reconciling the healthy members while
//! one is partitioned, and stops touching a removed one, whose caches and watches are torn
//! down.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use rein_client::{Client, PostParams};
use rein_controller::{Action, Request};
use rein_manager::CancellationToken;
use rein_manager::healthz::Checker;
use rein_multicluster::{
    ClusterName, Fleet, FleetControllerBuilder, Health, KubeconfigDirProvider, MapToClusters, On,
    cluster_reconciler_fn, metrics,
};
use rein_scheme::ObjectKey;
use rein_testenv::TestEnv;

use crate::support::{
    Hub, PROPAGATE, add_propagation, config_map, quick_options, value_of, wait_for,
};

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rein-fleet-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Sets the hub's `settings` ConfigMap's `value`.
async fn set_value(hub: &Client, value: &str) {
    let key = ObjectKey::new("default", "settings");
    match hub.get::<ConfigMap>(&key).await {
        Ok(cm) => {
            let mut cm = std::sync::Arc::unwrap_or_clone(cm);
            cm.data = Some([("value".to_owned(), value.to_owned())].into());
            hub.update(&cm, &PostParams::default())
                .await
                .expect("update");
        }
        Err(_) => {
            let cm = config_map("settings", &[(PROPAGATE, "true")], &[("value", value)]);
            hub.create(&cm, &PostParams::default())
                .await
                .expect("create");
        }
    }
}

async fn converged(clients: Vec<Client>, value: &'static str) -> bool {
    for client in &clients {
        if value_of(client, "settings").await.as_deref() != Some(value) {
            return false;
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn propagation_follows_members_added_removed_and_partitioned() {
    let dir = temp_dir("propagation");
    let mut hub = Hub::new().await;
    let (a, b, c) = (
        TestEnv::start().await.unwrap(),
        TestEnv::start().await.unwrap(),
        TestEnv::start().await.unwrap(),
    );
    let (ca, cb, cc) = (
        Client::new(a.client()),
        Client::new(b.client()),
        Client::new(c.client()),
    );
    let [na, nb, nc] = ["member-a", "member-b", "member-c"].map(|n| ClusterName::new(n).unwrap());
    a.write_kubeconfig(&dir.join("member-a.yaml")).unwrap();
    b.write_kubeconfig(&dir.join("member-b.yaml")).unwrap();
    // Not a cluster: hidden files are skipped, bad kubeconfigs logged and ignored.
    std::fs::write(dir.join(".swap"), "x").unwrap();
    std::fs::write(dir.join("broken.yaml"), "{not: [a kubeconfig").unwrap();

    let provider = KubeconfigDirProvider::new(&dir).interval(Duration::from_millis(50));
    let fleet = Fleet::builder(&hub.mgr, provider)
        .options(quick_options())
        .build()
        .unwrap();
    add_propagation(&fleet);
    hub.start();
    let hub_client = Client::new(hub.env.client());
    set_value(&hub_client, "v1").await;

    // Converges in every member.
    wait_for("v1 in a and b", || {
        converged(vec![ca.clone(), cb.clone()], "v1")
    })
    .await;
    assert_eq!(fleet.member_names(), [na.clone(), nb.clone()]);
    // A copy deleted in a member is put back (the member-side source).
    ca.delete::<ConfigMap>(&ObjectKey::new("default", "settings"), &Default::default())
        .await
        .unwrap();
    wait_for("the copy in a restored", || {
        converged(vec![ca.clone()], "v1")
    })
    .await;

    // Follows a member added at run time: it gets what the hub already holds.
    c.write_kubeconfig(&dir.join("member-c.yaml")).unwrap();
    wait_for("v1 in c", || converged(vec![cc.clone()], "v1")).await;
    assert_eq!(metrics::cluster_healthy_gauge(&nc), Some(1));

    // One member partitioned: its watches end and every new request hangs.
    b.faults().pause();
    b.faults().close_watches();
    set_value(&hub_client, "v2").await;
    wait_for("v2 in a and c while b is partitioned", || {
        converged(vec![ca.clone(), cc.clone()], "v2")
    })
    .await;
    wait_for("b reported unreachable", || async {
        matches!(
            fleet.cluster(&nb).map(|c| c.health()),
            Some(Health::Unreachable { .. })
        ) && metrics::cluster_healthy_gauge(&nb) == Some(0)
    })
    .await;
    let readiness = fleet.readiness_checker().check().await;
    let detail = readiness
        .expect_err("not ready while b is unreachable")
        .to_string();
    assert!(detail.contains("member-b unreachable"), "{detail}");
    assert!(!detail.contains("member-a"), "{detail}");
    // The healthy members keep being reconciled meanwhile.
    set_value(&hub_client, "v3").await;
    wait_for("v3 in a and c while b is partitioned", || {
        converged(vec![ca.clone(), cc.clone()], "v3")
    })
    .await;

    // Healed: b catches up.
    b.faults().resume();
    wait_for("v3 in b after the partition", || {
        converged(vec![cb.clone()], "v3")
    })
    .await;
    wait_for("b healthy again", || async {
        fleet.cluster(&nb).is_some_and(|c| c.health().is_healthy())
    })
    .await;
    fleet.readiness_checker().check().await.expect("ready");

    // Removed: its caches and watches are torn down, and it is not touched again.
    let cluster_a = fleet.cluster(&na).expect("a engaged");
    std::fs::remove_file(dir.join("member-a.yaml")).unwrap();
    wait_for("a disengaged", || async { fleet.cluster(&na).is_none() }).await;
    wait_for("a's cache stopped", || async {
        !cluster_a.cache().is_started()
    })
    .await;
    assert_eq!(metrics::cluster_healthy_gauge(&na), None);
    wait_for("no watch open on a", || async {
        a.requests_in_flight().iter().all(|r| {
            !r.path.contains("watch") && !r.query.as_deref().unwrap_or("").contains("watch")
        })
    })
    .await;
    a.clear_requests();
    set_value(&hub_client, "v4").await;
    wait_for("v4 in b and c", || {
        converged(vec![cb.clone(), cc.clone()], "v4")
    })
    .await;
    assert_eq!(value_of(&ca, "settings").await.as_deref(), Some("v3"));
    let from_fleet: Vec<_> = a
        .requests()
        .into_iter()
        .filter(|r| {
            !r.path
                .starts_with("/api/v1/namespaces/default/configmaps/settings")
                || r.method != "GET"
        })
        .collect();
    assert!(
        from_fleet.is_empty(),
        "requests to a removed member: {from_fleet:?}"
    );
    assert_eq!(fleet.member_names(), [nb.clone(), nc.clone()]);

    hub.stop().await;
    assert!(
        fleet.member_names().is_empty(),
        "stopping the hub disengages every member"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Removing a member whose reconcile hangs does not hold up the fleet: the member leaves at
/// once, a member added in the same breath is engaged and reconciled while the removed one's
/// teardown still waits for its reconcile (`disengage_timeout` is far longer than the wait).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_slow_to_stop_does_not_hold_up_the_others() {
    let dir = temp_dir("slow-teardown");
    let mut hub = Hub::new().await;
    let (stuck, late) = (
        TestEnv::start().await.unwrap(),
        TestEnv::start().await.unwrap(),
    );
    stuck.write_kubeconfig(&dir.join("stuck.yaml")).unwrap();
    let provider = KubeconfigDirProvider::new(&dir).interval(Duration::from_millis(50));
    let mut options = quick_options();
    options.disengage_timeout = Duration::from_secs(120);
    let fleet = Fleet::builder(&hub.mgr, provider)
        .options(options)
        .build()
        .unwrap();
    let release = CancellationToken::new();
    let entered = Arc::new(AtomicBool::new(false));
    let reconciled: Arc<Mutex<Vec<String>>> = Arc::default();
    {
        let (release, entered, reconciled) = (release.clone(), entered.clone(), reconciled.clone());
        FleetControllerBuilder::new(&fleet)
            .named("slow")
            .watches_across::<ConfigMap>(
                On::hub(),
                MapToClusters::to_every_member(|cm: &ConfigMap| vec![Request::from_object(cm)]),
            )
            .complete(cluster_reconciler_fn(move |_ctx, req| {
                let (release, entered, reconciled) =
                    (release.clone(), entered.clone(), reconciled.clone());
                async move {
                    if req.cluster.as_str() == "stuck" {
                        entered.store(true, Ordering::SeqCst);
                        release.cancelled().await;
                    } else {
                        reconciled.lock().push(req.cluster.as_str().to_owned());
                    }
                    Ok::<_, rein_client::Error>(Action::done())
                }
            }))
            .unwrap();
    }
    hub.start();
    let hub_client = Client::new(hub.env.client());
    set_value(&hub_client, "v1").await;
    wait_for("the stuck member's reconcile to hang", || async {
        entered.load(Ordering::SeqCst)
    })
    .await;

    std::fs::remove_file(dir.join("stuck.yaml")).unwrap();
    late.write_kubeconfig(&dir.join("late.yaml")).unwrap();
    let late_name = ClusterName::new("late").unwrap();
    wait_for("the late member engaged and reconciled", || async {
        fleet.member_names() == [late_name.clone()] && reconciled.lock().iter().any(|c| c == "late")
    })
    .await;

    release.cancel();
    hub.stop().await;
    assert!(fleet.member_names().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each member's client reads its own writes: a reconcile that creates a ConfigMap in its
/// member and reads it back at once through the member's cache-backed client finds it
/// (rein-client's read-your-writes, on by default in `ClusterOptions::client`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_client_reads_its_own_writes() {
    let mut hub = Hub::new().await;
    let member = TestEnv::start().await.unwrap();
    let name = ClusterName::new("member").unwrap();
    let provider = rein_multicluster::StaticProvider::new().cluster(name, member.config());
    let fleet = Fleet::builder(&hub.mgr, provider)
        .options(quick_options())
        .build()
        .unwrap();
    let seen: Arc<Mutex<Vec<bool>>> = Arc::default();
    {
        let seen = seen.clone();
        FleetControllerBuilder::new(&fleet)
            .named("ryw")
            .watches_across::<ConfigMap>(
                On::hub(),
                MapToClusters::to_every_member(|cm: &ConfigMap| vec![Request::from_object(cm)]),
            )
            .complete(cluster_reconciler_fn(move |ctx, req| {
                let seen = seen.clone();
                async move {
                    let name = format!("{}-copy", req.name());
                    let copy = crate::support::config_map(&name, &[], &[("v", "1")]);
                    rein_client::ignore_already_exists(
                        ctx.client().create(&copy, &PostParams::default()).await,
                    )?;
                    let read = ctx
                        .client()
                        .get::<ConfigMap>(&ObjectKey::new("default", &name))
                        .await;
                    seen.lock().push(read.is_ok());
                    Ok::<_, rein_client::Error>(Action::done())
                }
            }))
            .unwrap();
    }
    hub.start();
    let hub_client = Client::new(hub.env.client());
    for i in 0..5 {
        let cm = crate::support::config_map(&format!("source-{i}"), &[], &[]);
        hub_client
            .create(&cm, &PostParams::default())
            .await
            .unwrap();
    }
    wait_for("five reconciles in the member", || async {
        seen.lock().len() >= 5
    })
    .await;
    assert!(
        seen.lock().iter().all(|found| *found),
        "a cached read missed the reconcile's own write: {:?}",
        seen.lock()
    );
    hub.stop().await;
}
