//! Create, update, list and delete a Deployment with the dynamic client (no Rust type), resolved by resource name through discovery; first asks the discovery client what the server serves (Go original: client-go examples/dynamic-create-update-delete-deployment, discovery.DiscoveryClient ServerGroups and ServerResourcesForGroupVersion).
// smoke-args: --quick
// smoke-expect: discovery: apps/v1 is served
// smoke-expect: discovery: apps/v1 deployments (kind Deployment, namespaced)
// smoke-expect: Created deployment "demo-deployment"
// smoke-expect: Updated deployment
// smoke-expect: * demo-deployment (1 replicas)
// smoke-expect: Deleted deployment.

use std::io::BufRead;
use std::path::PathBuf;

use clap::Parser;
use rein::client::{Client, DeleteParams, ListOptions, PostParams, PropagationPolicy};
use rein::scheme::ObjectKey;
use rein::scheme::{GroupVersion, GroupVersionResource};
use serde_json::json;

#[derive(Parser, Debug)]
struct Args {
    /// Path to a kubeconfig (default: $KUBECONFIG, else in-cluster, else an embedded test server).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Do not pause for Enter between steps.
    #[arg(long)]
    yes: bool,
    /// Smoke-test mode: no pauses, finish quickly.
    #[arg(long)]
    quick: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let interactive = !(args.yes || args.quick || rein_examples::quick_mode());
    let (kube, _env) = connect(args.kubeconfig).await?;
    let client = Client::new(kube);
    let namespace = "default";

    // Discovery: which group/versions the server serves, and the resources of one of them.
    let discovery = client.discovery();
    let apps_v1 = GroupVersion::new("apps", "v1");
    let served = discovery.server_group_versions().await?;
    if served.contains(&apps_v1) {
        println!("discovery: apps/v1 is served");
    }
    for r in discovery.server_resources_for(&apps_v1).await? {
        let scope = if r.mapping.is_namespaced() {
            "namespaced"
        } else {
            "cluster-scoped"
        };
        println!(
            "discovery: apps/v1 {} (kind {}, {scope}), verbs: {}",
            r.mapping.gvr.resource,
            r.mapping.gvk.kind,
            r.verbs.join(", ")
        );
    }

    let gvr = GroupVersionResource::new("apps", "v1", "deployments");
    let deployments = client.dynamic().resource_by_gvr(&gvr).await?;
    println!("{gvr} serves kind {}", deployments.mapping().gvk);

    let key = ObjectKey::new(namespace, "demo-deployment");
    let deployment = deployments.new_object(&key).data(json!({
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "demo"}},
            "template": {
                "metadata": {"labels": {"app": "demo"}},
                "spec": {"containers": [{
                    "name": "web",
                    "image": "nginx:1.12",
                    "ports": [{"name": "http", "protocol": "TCP", "containerPort": 80}],
                }]},
            },
        },
    }));

    println!("Creating deployment...");
    let created = deployments
        .create(&deployment, &PostParams::default())
        .await?;
    println!(
        "Created deployment {:?}.",
        created.metadata.name.as_deref().unwrap_or_default()
    );

    prompt(interactive);
    println!("Updating deployment...");
    loop {
        let mut latest = deployments.get(&key).await?;
        latest.data["spec"]["replicas"] = json!(1);
        latest.data["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.13");
        match deployments.update(&latest, &PostParams::default()).await {
            Ok(_) => break,
            Err(e) if e.is_conflict() => continue,
            Err(e) => return Err(e.into()),
        }
    }
    println!("Updated deployment...");

    prompt(interactive);
    println!("Listing deployments in namespace {namespace:?}:");
    let list = deployments
        .list(&ListOptions::default().namespace(namespace))
        .await?;
    for d in &list.items {
        println!(
            " * {} ({} replicas)",
            d.metadata.name.as_deref().unwrap_or_default(),
            d.data["spec"]["replicas"]
        );
    }

    prompt(interactive);
    println!("Deleting deployment...");
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    deployments.delete(&key, &dp).await?;
    println!("Deleted deployment.");
    Ok(())
}

fn prompt(interactive: bool) {
    if !interactive {
        return;
    }
    println!("-> Press Return key to continue.");
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
}

/// Out-of-cluster (`--kubeconfig`, then `$KUBECONFIG`), in-cluster (service account), else an
/// embedded rein-testenv server.
async fn connect(
    kubeconfig: Option<PathBuf>,
) -> anyhow::Result<(kube_client::Client, Option<rein_testenv::TestEnv>)> {
    let path = kubeconfig.or_else(|| std::env::var_os("KUBECONFIG").map(PathBuf::from));
    if let Some(path) = path {
        let kc = kube_client::config::Kubeconfig::read_from(&path)?;
        let config = kube_client::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
        println!("Using kubeconfig {}", path.display());
        return Ok((kube_client::Client::try_from(config)?, None));
    }
    if let Ok(config) = kube_client::Config::incluster() {
        println!("Using in-cluster configuration");
        return Ok((kube_client::Client::try_from(config)?, None));
    }
    let env = rein_testenv::TestEnv::start().await?;
    println!("Using an embedded test API server at {}", env.base_url());
    Ok((env.client(), Some(env)))
}
