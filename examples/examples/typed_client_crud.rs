//! Create, update, list and delete a Deployment with the typed client, step by step, in- or out-of-cluster (Go original: client-go examples/create-update-delete-deployment).
// smoke-args: --quick
// smoke-expect: Created deployment "demo-deployment"
// smoke-expect: Updated deployment
// smoke-expect: * demo-deployment (1 replicas)
// smoke-expect: Deleted deployment.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_client::core::ObjectMeta;
use rein::client::{Client, DeleteParams, ListOptions, PostParams, PropagationPolicy};
use rein::scheme::ObjectKey;

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

    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some("demo-deployment".into()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: Some(labels()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels()),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "web".into(),
                        image: Some("nginx:1.12".into()),
                        ports: Some(vec![ContainerPort {
                            name: Some("http".into()),
                            container_port: 80,
                            protocol: Some("TCP".into()),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    };

    println!("Creating deployment...");
    let created = client.create(&deployment, &PostParams::default()).await?;
    println!(
        "Created deployment {:?}.",
        created.metadata.name.as_deref().unwrap_or_default()
    );

    prompt(interactive);
    println!("Updating deployment...");
    // Retry on conflict: re-read the latest version before each attempt (client-go's
    // retry.RetryOnConflict).
    let key = ObjectKey::new(namespace, "demo-deployment");
    loop {
        let mut latest: Deployment = Arc::unwrap_or_clone(client.get(&key).await?);
        if let Some(spec) = latest.spec.as_mut() {
            spec.replicas = Some(1);
            if let Some(c) = spec
                .template
                .spec
                .as_mut()
                .and_then(|s| s.containers.first_mut())
            {
                c.image = Some("nginx:1.13".into());
            }
        }
        match client.update(&latest, &PostParams::default()).await {
            Ok(_) => break,
            Err(e) if e.is_conflict() => continue,
            Err(e) => return Err(e.into()),
        }
    }
    println!("Updated deployment...");

    prompt(interactive);
    println!("Listing deployments in namespace {namespace:?}:");
    let list = client
        .list::<Deployment>(&ListOptions::default().namespace(namespace))
        .await?;
    for d in &list.items {
        println!(
            " * {} ({} replicas)",
            d.metadata.name.as_deref().unwrap_or_default(),
            d.spec.as_ref().and_then(|s| s.replicas).unwrap_or_default()
        );
    }

    prompt(interactive);
    println!("Deleting deployment...");
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    client.delete::<Deployment>(&key, &dp).await?;
    println!("Deleted deployment.");
    Ok(())
}

fn labels() -> BTreeMap<String, String> {
    [("app".to_string(), "demo".to_string())].into()
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
