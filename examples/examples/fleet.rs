//! A fleet: one manager in a hub cluster copies ConfigMaps labelled
//! `fleet.rein.dev/propagate=true` into every member cluster (rein-multicluster; Go original:
//! kubernetes-sigs/multicluster-runtime's examples). By default it runs against four embedded
//! API servers — a hub and three members whose kubeconfigs sit in a watched directory — and
//! shows the copy converging, a member added at run time, a member partitioned while the
//! others keep converging, and a member removed and no longer touched.
//!
//! ```sh
//! cargo run --example fleet                                       # embedded clusters, demo, exit
//! cargo run --example fleet -- --hub ~/.kube/hub.yaml east.yaml west.yaml   # real clusters
//! ```
//!
//! With kubeconfig paths, the hub is `--hub` (or `KUBECONFIG`, in-cluster, `~/.kube/config`)
//! and each path is a member named after its file; it runs until Ctrl-C.
// smoke-args: --quick
// smoke-expect: engaged member-1, member-2
// smoke-expect: settings=v1 in member-1, member-2
// smoke-expect: member-3 added: settings=v1 in member-1, member-2, member-3
// smoke-expect: member-2 partitioned: settings=v2 in member-1, member-3; member-2 unreachable
// smoke-expect: member-2 healed: settings=v2 in member-1, member-2, member-3
// smoke-expect: member-1 removed: settings=v3 in member-2, member-3; member-1 keeps v2
// smoke-expect: fleet finished
// smoke-timeout: 90

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::core::v1::ConfigMap;
use rein::client::{Client, PostParams};
use rein::controller::{Action, BoxError, Request, predicate};
use rein::manager::{CancellationToken, Manager, signals};
use rein::scheme::ObjectKey;
use rein_multicluster::{
    ClusterContext, ClusterName, ClusterOptions, ClusterReconciler, ClusterRequest, Fleet,
    FleetControllerBuilder, FleetOptions, Health, KubeconfigDirProvider, MapToClusters, On,
    StaticProvider,
};
use rein_testenv::TestEnv;

const PROPAGATE: &str = "fleet.rein.dev/propagate";
const COPIED: &str = "fleet.rein.dev/copied-from-hub";

#[derive(Parser, Debug)]
struct Args {
    /// The hub's kubeconfig (with member paths; default: KUBECONFIG, in-cluster, ~/.kube/config).
    #[arg(long)]
    hub: Option<PathBuf>,
    /// Member kubeconfigs, each a member named after its file. None: embedded clusters.
    members: Vec<PathBuf>,
    /// Embedded clusters, demo, exit (the default without member paths).
    #[arg(long)]
    quick: bool,
}

/// Copies hub ConfigMaps labelled `PROPAGATE` into the request's member; deletes copies whose
/// source is gone.
struct Propagate;

fn labelled(cm: &ConfigMap, label: &str) -> bool {
    cm.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(label))
        .map(String::as_str)
        == Some("true")
}

#[async_trait::async_trait]
impl ClusterReconciler for Propagate {
    type Error = BoxError;

    async fn reconcile(
        &self,
        ctx: ClusterContext,
        req: ClusterRequest,
    ) -> Result<Action, BoxError> {
        let source =
            rein::client::ignore_not_found(ctx.hub_client().get::<ConfigMap>(&req.key).await)?
                .filter(|cm| labelled(cm, PROPAGATE));
        let copy = rein::client::ignore_not_found(ctx.client().get::<ConfigMap>(&req.key).await)?;
        match (source, copy) {
            (None, Some(copy)) if labelled(&copy, COPIED) => {
                rein::client::ignore_not_found(
                    ctx.client()
                        .delete::<ConfigMap>(&req.key, &Default::default())
                        .await,
                )?;
            }
            (Some(source), None) => {
                let mut cm = ConfigMap {
                    data: source.data.clone(),
                    ..Default::default()
                };
                cm.metadata.name = Some(req.name().to_owned());
                cm.metadata.namespace = req.namespace().map(str::to_owned);
                cm.metadata.labels = Some(BTreeMap::from([(COPIED.to_owned(), "true".to_owned())]));
                rein::client::ignore_already_exists(
                    ctx.client().create(&cm, &PostParams::default()).await,
                )?;
            }
            (Some(source), Some(copy)) if copy.data != source.data => {
                let mut cm = Arc::unwrap_or_clone(copy);
                cm.data = source.data.clone();
                ctx.client().update(&cm, &PostParams::default()).await?;
            }
            _ => {}
        }
        Ok(Action::done())
    }
}

fn add_propagation(fleet: &Fleet) -> anyhow::Result<()> {
    FleetControllerBuilder::new(fleet)
        .named("propagate")
        // A copy changed or deleted in a member is repaired.
        .for_::<ConfigMap>(
            On::members().with_predicate(predicate::filter(|cm: &ConfigMap| labelled(cm, COPIED))),
        )
        // A hub source's change is reconciled in every member.
        .watches_across::<ConfigMap>(
            On::hub().with_predicate(predicate::filter(|cm: &ConfigMap| labelled(cm, PROPAGATE))),
            MapToClusters::to_every_member(|cm: &ConfigMap| vec![Request::from_object(cm)]),
        )
        .complete(Propagate)?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    if args.members.is_empty() || args.quick {
        return demo().await;
    }
    let hub = match &args.hub {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            rein_multicluster::config_from_kubeconfig(&path.display().to_string(), &text).await?
        }
        None => rein::manager::config::get_config().await?,
    };
    let mut provider = StaticProvider::new();
    for path in &args.members {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let config =
            rein_multicluster::config_from_kubeconfig(&path.display().to_string(), &text).await?;
        provider = provider.cluster(ClusterName::new(stem)?, config);
    }
    let mgr = Manager::builder(hub).build().await?;
    let fleet = Fleet::builder(&mgr, provider).build()?;
    add_propagation(&fleet)?;
    println!(
        "copying ConfigMaps labelled {PROPAGATE}=true into {} members; Ctrl-C stops",
        args.members.len()
    );
    mgr.start(signals::shutdown_signal()).await?;
    Ok(())
}

/// The value of `default/settings` in `client`'s cluster.
async fn value(client: &Client) -> Option<String> {
    let cm = client
        .get::<ConfigMap>(&ObjectKey::new("default", "settings"))
        .await
        .ok()?;
    cm.data.as_ref()?.get("value").cloned()
}

/// Waits (at most 30 s) until every named member has `settings=want`.
async fn converge(members: &[(&str, &Client)], want: &str) -> anyhow::Result<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mut all = true;
        for (_, client) in members {
            all &= value(client).await.as_deref() == Some(want);
        }
        if all {
            let names: Vec<&str> = members.iter().map(|(n, _)| *n).collect();
            return Ok(format!("settings={want} in {}", names.join(", ")));
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "settings={want} did not converge"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn until(what: &str, mut check: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(())
}

async fn set_settings(hub: &Client, value: &str) -> anyhow::Result<()> {
    let key = ObjectKey::new("default", "settings");
    let data = Some(BTreeMap::from([("value".to_owned(), value.to_owned())]));
    match rein::client::ignore_not_found(hub.get::<ConfigMap>(&key).await)? {
        Some(cm) => {
            let mut cm = Arc::unwrap_or_clone(cm);
            cm.data = data;
            hub.update(&cm, &PostParams::default()).await?;
        }
        None => {
            let mut cm = ConfigMap {
                data,
                ..Default::default()
            };
            cm.metadata.name = Some("settings".into());
            cm.metadata.namespace = Some("default".into());
            cm.metadata.labels = Some(BTreeMap::from([(PROPAGATE.to_owned(), "true".to_owned())]));
            hub.create(&cm, &PostParams::default()).await?;
        }
    }
    Ok(())
}

async fn demo() -> anyhow::Result<()> {
    let hub_env = TestEnv::start().await?;
    let members = [
        TestEnv::start().await?,
        TestEnv::start().await?,
        TestEnv::start().await?,
    ];
    let clients: Vec<Client> = members.iter().map(|m| Client::new(m.client())).collect();
    let names = ["member-1", "member-2", "member-3"];
    let dir = std::env::temp_dir().join(format!("rein-fleet-example-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = |i: usize| dir.join(format!("{}.yaml", names[i]));
    members[0].write_kubeconfig(&kubeconfig(0))?;
    members[1].write_kubeconfig(&kubeconfig(1))?;

    let mgr = Manager::builder(hub_env.config()).build().await?;
    let options = FleetOptions {
        cluster: ClusterOptions {
            request_timeouts: rein::client::timeout::RequestTimeouts {
                request: Some(Duration::from_secs(1)),
                ..Default::default()
            },
            health_interval: Duration::from_millis(200),
            health_timeout: Duration::from_millis(500),
            ..ClusterOptions::default()
        },
        ..FleetOptions::default()
    };
    let provider = KubeconfigDirProvider::new(&dir).interval(Duration::from_millis(100));
    let fleet = Fleet::builder(&mgr, provider).options(options).build()?;
    add_propagation(&fleet)?;
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    let hub = Client::new(hub_env.client());
    let member = |i: usize| (names[i], &clients[i]);

    until("two members engaged", || fleet.member_names().len() == 2).await?;
    let engaged: Vec<String> = fleet
        .member_names()
        .iter()
        .map(ToString::to_string)
        .collect();
    println!("engaged {}", engaged.join(", "));
    set_settings(&hub, "v1").await?;
    println!("{}", converge(&[member(0), member(1)], "v1").await?);

    members[2].write_kubeconfig(&kubeconfig(2))?;
    println!(
        "member-3 added: {}",
        converge(&[member(0), member(1), member(2)], "v1").await?
    );

    members[1].faults().pause();
    members[1].faults().close_watches();
    set_settings(&hub, "v2").await?;
    let line = converge(&[member(0), member(2)], "v2").await?;
    let m2 = ClusterName::new("member-2")?;
    until("member-2 reported unreachable", || {
        matches!(
            fleet.cluster(&m2).map(|c| c.health()),
            Some(Health::Unreachable { .. })
        )
    })
    .await?;
    println!("member-2 partitioned: {line}; member-2 unreachable");
    members[1].faults().resume();
    println!(
        "member-2 healed: {}",
        converge(&[member(0), member(1), member(2)], "v2").await?
    );

    std::fs::remove_file(kubeconfig(0))?;
    let m1 = ClusterName::new("member-1")?;
    until("member-1 disengaged", || fleet.cluster(&m1).is_none()).await?;
    set_settings(&hub, "v3").await?;
    let line = converge(&[member(1), member(2)], "v3").await?;
    let kept = value(&clients[0]).await.unwrap_or_default();
    println!("member-1 removed: {line}; member-1 keeps {kept}");

    stop.cancel();
    run.await??;
    let _ = std::fs::remove_dir_all(&dir);
    println!("fleet finished");
    Ok(())
}
