//! Two replicas of a hub manager spread the fleet's members across them (`FleetSharding`):
//! each member is engaged by exactly one replica, which holds its fence Lease; the hub's own
//! reconciles run on one replica only; when a replica stops, the other takes its members and
//! keeps propagating.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::ListParams;
use rein_client::{Client, PostParams};
use rein_controller::Action;
use rein_manager::{CancellationToken, Manager};
use rein_multicluster::{
    ClusterName, FLEET_CLUSTER_ANNOTATION, FLEET_LEASE_ROLE_LABEL, Fleet, FleetControllerBuilder,
    FleetSharding, On, StaticProvider, cluster_reconciler_fn,
};
use rein_scheme::ObjectKey;
use rein_testenv::TestEnv;

use crate::support::{PROPAGATE, add_propagation, config_map, quick_options, value_of, wait_for};

/// One replica: a manager on the shared hub with a sharded fleet, the propagation controller
/// and a hub-only controller counting its reconciles of `default/settings`.
struct Replica {
    stop: CancellationToken,
    run: tokio::task::JoinHandle<Result<(), rein_manager::Error>>,
    fleet: Fleet,
    hub_reconciles: Arc<AtomicUsize>,
}

impl Replica {
    /// Stops the manager gracefully and waits for it.
    async fn stop(self) {
        self.stop.cancel();
        self.run
            .await
            .expect("join")
            .expect("manager stopped cleanly");
    }
}

async fn replica(
    hub_env: &TestEnv,
    id: &str,
    members: &[(ClusterName, kube_client::Config)],
) -> Replica {
    let mgr = Manager::builder(hub_env.config())
        .build()
        .await
        .expect("manager");
    let mut provider = StaticProvider::new();
    for (name, config) in members {
        provider = provider.cluster(name.clone(), config.clone());
    }
    let mut options = quick_options();
    options.sharding = Some(
        FleetSharding::new("fleet")
            .peer_id(id)
            .timing(Duration::from_secs(3), Duration::from_millis(200)),
    );
    let fleet = Fleet::builder(&mgr, provider)
        .options(options)
        .build()
        .expect("fleet");
    add_propagation(&fleet);
    let hub_reconciles = Arc::new(AtomicUsize::new(0));
    let counter = hub_reconciles.clone();
    FleetControllerBuilder::new(&fleet)
        .named("hub-count")
        .for_::<ConfigMap>(On::hub())
        .complete(cluster_reconciler_fn(move |_ctx, req| {
            let counter = counter.clone();
            async move {
                if req.name() == "settings" {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
                Ok::<_, rein_client::Error>(Action::done())
            }
        }))
        .expect("hub controller");
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    Replica {
        stop,
        run,
        fleet,
        hub_reconciles,
    }
}

async fn set_value(hub: &Client, value: &str) {
    let key = ObjectKey::new("default", "settings");
    match hub.get::<ConfigMap>(&key).await {
        Ok(cm) => {
            let mut cm = Arc::unwrap_or_clone(cm);
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

/// The holder of each member's fence Lease in the hub, by cluster name.
async fn fence_holders(hub: &TestEnv) -> Vec<(String, String)> {
    let leases: Api<Lease> = Api::namespaced(hub.client(), "default");
    let list = leases
        .list(&ListParams::default().labels(&format!("{FLEET_LEASE_ROLE_LABEL}=fence")))
        .await
        .expect("fence leases");
    let mut holders: Vec<(String, String)> = list
        .items
        .iter()
        .filter_map(|l| {
            let cluster = l
                .metadata
                .annotations
                .as_ref()?
                .get(FLEET_CLUSTER_ANNOTATION)?;
            let holder = l.spec.as_ref()?.holder_identity.clone()?;
            Some((cluster.clone(), holder))
        })
        .collect();
    holders.sort();
    holders
}

fn names(fleet: &Fleet) -> BTreeSet<String> {
    fleet
        .member_names()
        .iter()
        .map(|n| n.as_str().to_owned())
        .collect()
}

#[tokio::test]
async fn replicas_spread_the_members_and_one_takes_over_when_the_other_stops() {
    let hub_env = TestEnv::start().await.expect("hub");
    let mut member_envs = Vec::new();
    let mut members = Vec::new();
    for i in 0..4 {
        let env = TestEnv::start().await.expect("member");
        members.push((
            ClusterName::new(format!("member-{i}")).expect("name"),
            env.config(),
        ));
        member_envs.push(env);
    }
    // What the ring will decide: both replicas get some members.
    let expected_a: BTreeSet<String> = members
        .iter()
        .map(|(n, _)| n.as_str().to_owned())
        .filter(|n| rein_sharding::assign(&format!("member/{n}"), ["a", "b"]) == Some("a"))
        .collect();
    assert!(
        !expected_a.is_empty() && expected_a.len() < members.len(),
        "the test's names must split across two replicas: {expected_a:?}"
    );
    let all: BTreeSet<String> = members.iter().map(|(n, _)| n.as_str().to_owned()).collect();
    let expected_b: BTreeSet<String> = all.difference(&expected_a).cloned().collect();

    let a = replica(&hub_env, "a", &members).await;
    let b = replica(&hub_env, "b", &members).await;
    let hub_client = Client::new(hub_env.client());
    set_value(&hub_client, "v1").await;

    wait_for("each replica engaging its share", || async {
        names(&a.fleet) == expected_a && names(&b.fleet) == expected_b
    })
    .await;
    let member_clients: Vec<Client> = member_envs
        .iter()
        .map(|e| Client::new(e.client()))
        .collect();
    wait_for("v1 in every member", || async {
        for client in &member_clients {
            if value_of(client, "settings").await.as_deref() != Some("v1") {
                return false;
            }
        }
        true
    })
    .await;
    // Each member's fence is held by the replica that engaged it.
    let expected_holders: Vec<(String, String)> = all
        .iter()
        .map(|n| {
            let holder = if expected_a.contains(n) { "a" } else { "b" };
            (n.clone(), holder.to_owned())
        })
        .collect();
    wait_for("the fences held by the owners", || async {
        let holders: Vec<_> = fence_holders(&hub_env)
            .await
            .into_iter()
            .filter(|(c, _)| c != "(hub)")
            .collect();
        holders == expected_holders
    })
    .await;
    assert_eq!(a.fleet.live_peers(), ["a", "b"]);

    // The hub's reconciles run on one replica only.
    wait_for("one replica owning the hub", || async {
        a.fleet.owns_hub() != b.fleet.owns_hub()
    })
    .await;
    let (owner, other) = if a.fleet.owns_hub() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    let before = owner.hub_reconciles.load(Ordering::SeqCst);
    other.hub_reconciles.store(0, Ordering::SeqCst);
    set_value(&hub_client, "v2").await;
    wait_for("the hub owner reconciling the change", || async {
        owner.hub_reconciles.load(Ordering::SeqCst) > before
    })
    .await;
    wait_for("v2 in every member", || async {
        for client in &member_clients {
            if value_of(client, "settings").await.as_deref() != Some("v2") {
                return false;
            }
        }
        true
    })
    .await;
    assert_eq!(
        other.hub_reconciles.load(Ordering::SeqCst),
        0,
        "the replica that does not own the hub reconciled a hub object"
    );

    // Replica b stops (its peer Lease is deleted, its fences released): a takes everything.
    b.stop().await;
    wait_for("replica a engaging every member and the hub", || async {
        names(&a.fleet) == all && a.fleet.owns_hub()
    })
    .await;
    set_value(&hub_client, "v3").await;
    wait_for("v3 in every member", || async {
        for client in &member_clients {
            if value_of(client, "settings").await.as_deref() != Some("v3") {
                return false;
            }
        }
        true
    })
    .await;
    let holders = fence_holders(&hub_env).await;
    assert!(
        holders.iter().all(|(_, h)| h == "a"),
        "replica a holds every fence: {holders:?}"
    );
    a.stop().await;
}

#[tokio::test]
async fn bad_sharding_settings_are_typed_errors() {
    let hub_env = TestEnv::start().await.expect("hub");
    let mgr = Manager::builder(hub_env.config())
        .build()
        .await
        .expect("manager");
    let mut options = quick_options();
    options.sharding = Some(FleetSharding::new("Fleet_Ring"));
    let err = Fleet::builder(&mgr, StaticProvider::new())
        .options(options)
        .build()
        .expect_err("an invalid ring name");
    assert!(err.to_string().contains("FleetSharding::ring"), "{err}");
}
