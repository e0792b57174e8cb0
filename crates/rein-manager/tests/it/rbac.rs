//! `Manager::permissions`: the RBAC a manager's setup declares, asked of a manager that never
//! starts (built on `config::unreachable`), then granted to a ServiceAccount on a server that
//! enforces RBAC — and the same setup, run as that ServiceAccount, does its work with no
//! request refused.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::Api;
use kube_client::api::PostParams;
use rein_client::Client;
use rein_client::controllerutil::{create_or_update, set_controller_reference};
use rein_controller::handler::EnqueueRequestForObject;
use rein_controller::recorder::EventRecorder;
use rein_controller::{Action, Context, ControllerManagedBy, Reconciler, Request};
use rein_manager::rbac::Permissions;
use rein_manager::{CancellationToken, LeaderElectionOptions, Manager, Options, config};
use rein_testenv::{TestEnv, User};

const NAMESPACE: &str = "ops";
const ACCOUNT: &str = "copier";

/// Copies each ConfigMap into a Secret it owns, keeps a finalizer on it, and says so in an
/// Event.
struct Copier {
    client: Client,
    recorder: EventRecorder,
}

#[async_trait::async_trait]
impl Reconciler for Copier {
    type Error = rein_client::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Self::Error> {
        let Some(cm) = self
            .client
            .get::<ConfigMap>(&req.key)
            .await
            .map(Some)
            .or_else(|e| if e.is_not_found() { Ok(None) } else { Err(e) })?
        else {
            return Ok(Action::done());
        };
        let mut cm = (*cm).clone();
        let finalizers = cm.metadata.finalizers.get_or_insert_with(Vec::new);
        if !finalizers.iter().any(|f| f == "copier.rein.dev/cleanup") {
            finalizers.push("copier.rein.dev/cleanup".to_owned());
            cm = self.client.update(&cm, &PostParams::default()).await?;
        }
        let mut secret = Secret {
            metadata: ObjectMeta {
                name: cm.metadata.name.clone(),
                namespace: cm.metadata.namespace.clone(),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        };
        let scheme = self.client.scheme().clone();
        create_or_update(&self.client, &mut secret, |s: &mut Secret| {
            s.string_data = cm.data.clone();
            set_controller_reference(&cm, s, scheme.as_ref()).expect("not owned by another");
        })
        .await?;
        self.recorder.normal(&cm, "Copied", "copied into a Secret");
        Ok(Action::done())
    }
}

/// The setup `main` would run: options and the one controller.
async fn setup(config: kube_client::Config) -> Manager {
    let options = Options::default()
        .leader_election(LeaderElectionOptions::new("copier-leader").namespace(NAMESPACE));
    let mgr = Manager::builder(config)
        .options(options)
        .build()
        .await
        .expect("the manager builds");
    ControllerManagedBy::new(&mgr)
        .for_::<ConfigMap>()
        .owns::<Secret>()
        .watches::<Namespace>(EnqueueRequestForObject)
        .named("copier")
        .complete(Copier {
            client: mgr.client(),
            recorder: mgr.event_recorder("copier"),
        })
        .expect("the controller builds");
    mgr
}

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..PolicyRule::default()
    }
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

/// Grants `permissions` to the ServiceAccount, as a manifest would.
async fn grant(env: &TestEnv, permissions: &Permissions) {
    let admin = env.client();
    let pp = PostParams::default();
    let subject = Subject {
        kind: "ServiceAccount".to_owned(),
        name: ACCOUNT.to_owned(),
        namespace: Some(NAMESPACE.to_owned()),
        ..Subject::default()
    };
    let role_ref = |kind: &str| RoleRef {
        api_group: "rbac.authorization.k8s.io".to_owned(),
        kind: kind.to_owned(),
        name: ACCOUNT.to_owned(),
    };
    Api::<Namespace>::all(admin.clone())
        .create(
            &pp,
            &Namespace {
                metadata: meta(NAMESPACE, None),
                ..Namespace::default()
            },
        )
        .await
        .unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), NAMESPACE)
        .create(
            &pp,
            &ServiceAccount {
                metadata: meta(ACCOUNT, Some(NAMESPACE)),
                ..ServiceAccount::default()
            },
        )
        .await
        .unwrap();
    Api::<ClusterRole>::all(admin.clone())
        .create(
            &pp,
            &ClusterRole {
                metadata: meta(ACCOUNT, None),
                rules: Some(permissions.cluster_rules()),
                ..ClusterRole::default()
            },
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(
            &pp,
            &ClusterRoleBinding {
                metadata: meta(ACCOUNT, None),
                role_ref: role_ref("ClusterRole"),
                subjects: Some(vec![subject.clone()]),
            },
        )
        .await
        .unwrap();
    Api::<Role>::namespaced(admin.clone(), NAMESPACE)
        .create(
            &pp,
            &Role {
                metadata: meta(ACCOUNT, Some(NAMESPACE)),
                rules: Some(permissions.namespaced_rules()),
            },
        )
        .await
        .unwrap();
    Api::<RoleBinding>::namespaced(admin, NAMESPACE)
        .create(
            &pp,
            &RoleBinding {
                metadata: meta(ACCOUNT, Some(NAMESPACE)),
                role_ref: role_ref("Role"),
                subjects: Some(vec![subject]),
            },
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn the_permissions_a_setup_declares_are_what_it_needs_to_run_under_rbac() {
    // Asked of a manager that never starts and needs no server.
    let permissions = setup(config::unreachable()).await.permissions();
    let cluster = permissions.cluster_rules();
    for expected in [
        rule(
            "",
            &["configmaps"],
            &["get", "list", "watch", "update", "patch"],
        ),
        rule("", &["configmaps/finalizers"], &["update"]),
        rule("", &["configmaps/status"], &["get", "update", "patch"]),
        rule(
            "",
            &["secrets"],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        ),
        rule("", &["events"], &["create", "patch"]),
        rule("events.k8s.io", &["events"], &["create", "patch"]),
    ] {
        assert!(
            cluster.contains(&expected),
            "{expected:?} not in {cluster:#?}"
        );
    }
    assert!(
        cluster.iter().any(|r| r
            .resources
            .as_ref()
            .is_some_and(|rs| rs.contains(&"namespaces".to_owned()))
            && r.verbs == ["get", "list", "watch"]),
        "namespaces are only read: {cluster:#?}"
    );
    assert_eq!(permissions.namespace(), Some(NAMESPACE));
    assert!(permissions.namespaced_rules().contains(&rule(
        "coordination.k8s.io",
        &["leases"],
        &["get", "create", "update"]
    )));

    // The same setup, as the ServiceAccount granted exactly those rules.
    let user = User::new(format!("system:serviceaccount:{NAMESPACE}:{ACCOUNT}"))
        .group("system:serviceaccounts")
        .group(format!("system:serviceaccounts:{NAMESPACE}"))
        .token("copier-token");
    let env = TestEnv::builder()
        .enforce_rbac(true)
        .user(user.clone())
        .start()
        .await
        .unwrap();
    grant(&env, &permissions).await;
    let mgr = setup(env.config_for(&user).await.unwrap()).await;
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    let cm = ConfigMap {
        metadata: meta("settings", Some("default")),
        data: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(env.client(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let secrets = Api::<Secret>::namespaced(env.client(), "default");
    let events = Api::<Event>::namespaced(env.client(), "default");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let copied = secrets.get_opt("settings").await.unwrap().is_some();
        let told = events
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("Copied"));
        if copied && told {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the copier did not copy (secret {copied}, event {told})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.cancel();
    task.await.unwrap().unwrap();
    let refused: Vec<String> = env
        .requests()
        .iter()
        .filter(|r| r.status == 403)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(refused.is_empty(), "requests refused by RBAC: {refused:#?}");
    env.shutdown().await;
}
