//! A complete operator: a `WebApp` custom resource owning a Deployment and a Service, with a
//! finalizer, a `Ready` condition that follows the Deployment's `Available` condition, Events,
//! health probes, metrics, leader election and graceful shutdown (Go original: a kubebuilder
//! operator's `main.go` and controller). By default it runs against the embedded API server
//! with a simulated cluster (rein-sim: nodes, scheduler, kubelet, Deployment and ReplicaSet
//! controllers), so the Deployment it creates really becomes Available: it creates a WebApp,
//! waits until it is Ready, scales it, rolls a new image out, shows its probes, metrics and
//! Events, and deletes it through the finalizer. Its tests (`cargo test -p rein-examples
//! --example operator`) wait the same way, on a Deployment that becomes Available.
//!
//! ```sh
//! cargo run --example operator                      # embedded server + simulated cluster
//! cargo run --example operator -- --kubeconfig ~/.kube/config   # a real cluster, until Ctrl-C
//! ```
//!
//! Against a real cluster it installs the CRD and runs until SIGINT/SIGTERM with leader
//! election (`--leader-election-namespace`, default `default`), probes on
//! `--health-probe-bind-address` (default 127.0.0.1:8081) and metrics on
//! `--metrics-bind-address` (default 127.0.0.1:8080).
// smoke-args: --quick
// smoke-expect: CRD webapps.demo.rein.dev established
// smoke-expect: simulated cluster: 3 nodes
// smoke-expect: leading; probes at http://127.0.0.1:
// smoke-expect: webapp default/hello: Ready=False (Progressing)
// smoke-expect: webapp default/hello: Ready=True (Available): 2 of 2 replicas available
// smoke-expect: scaled to 4: Ready=True (Available): 4 of 4 replicas available
// smoke-expect: image nginx:1.28 rolled out: Ready=True (Available): 4 of 4 replicas available
// smoke-expect: /readyz: 200
// smoke-expect: metrics: controller_runtime_reconcile_total{controller="webapp",result="success"}
// smoke-expect: events: Available, DeploymentCreated, DeploymentUpdated, ServiceCreated
// smoke-expect: deleted: finalizer ran (CleanedUp), WebApp gone, Deployment and Service collected
// smoke-expect: operator finished
// smoke-timeout: 90

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Event, PodSpec, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use rein::client::controllerutil::{
    OperationResult, set_controller_reference, try_create_or_update,
};
use rein::client::{Client, PostParams, ignore_not_found};
use rein::controller::finalizer::{FinalizerEvent, finalizer};
use rein::controller::recorder::EventRecorder;
use rein::controller::{Action, Context, ControllerManagedBy, Reconciler, Request};
use rein::manager::healthz::HealthProbeOptions;
use rein::manager::metrics::MetricsServerOptions;
use rein::manager::{CancellationToken, LeaderElectionOptions, Manager, Options, signals};
use rein::scheme::{ObjectKey, Scheme, conditions};
use rein::{CustomResource, CustomResourceExt, KubeSchema};
use serde::{Deserialize, Serialize};

/// The controller's name: in its metrics, logs and Events.
const CONTROLLER: &str = "webapp";
/// The finalizer kept on every live WebApp.
const FINALIZER: &str = "demo.rein.dev/cleanup";
/// The condition the controller maintains.
const READY: &str = "Ready";

/// A web application: `replicas` Pods of `image` behind a Service on `port`.
#[rein::resource]
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "demo.rein.dev", version = "v1", kind = "WebApp", namespaced)]
#[kube(status = "WebAppStatus", shortname = "wa", doc = "A web application.")]
#[kube(derive = "Default")]
#[kube(
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#
)]
#[kube(
    printcolumn = r#"{"name":"Available","type":"integer","jsonPath":".status.availableReplicas"}"#
)]
#[serde(rename_all = "camelCase")]
struct WebAppSpec {
    /// The container image.
    image: String,
    /// How many Pods.
    #[schemars(range(min = 0, max = 100))]
    replicas: i32,
    /// The port the container and the Service listen on.
    #[schemars(range(min = 1, max = 65535))]
    port: i32,
}

/// What the controller observed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WebAppStatus {
    /// `Ready`: True once the Deployment is Available with every replica.
    #[serde(default)]
    conditions: Vec<Condition>,
    /// The Deployment's available replicas.
    #[serde(default)]
    available_replicas: i32,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
}

/// Reconciles one WebApp: its Deployment, its Service and its status.
struct WebAppReconciler {
    client: Client,
    recorder: EventRecorder,
}

#[async_trait::async_trait]
impl Reconciler for WebAppReconciler {
    type Error = anyhow::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> anyhow::Result<Action> {
        let Some(app) = ignore_not_found(self.client.get::<WebApp>(&req.key).await)? else {
            return Ok(Action::done());
        };
        let action = finalizer(&self.client, FINALIZER, app, |event| async move {
            match event {
                FinalizerEvent::Apply(app) => self.apply(&app).await,
                FinalizerEvent::Cleanup(app) => {
                    // The Deployment and Service are owned: the garbage collector deletes
                    // them. Clean up anything outside the cluster here.
                    self.recorder.normal(
                        &*app,
                        "CleanedUp",
                        "the WebApp is being deleted; its Deployment and Service go with it",
                    );
                    Ok(Action::done())
                }
            }
        })
        .await?;
        Ok(action)
    }
}

impl WebAppReconciler {
    async fn apply(&self, app: &WebApp) -> anyhow::Result<Action> {
        let name = app.metadata.name.clone().unwrap_or_default();
        let labels = BTreeMap::from([("app.kubernetes.io/name".to_owned(), name.clone())]);
        let scheme = self.client.scheme();

        let mut deployment = Deployment {
            metadata: owned_meta(app, &name),
            ..Deployment::default()
        };
        let deployed = try_create_or_update(&self.client, &mut deployment, |d| {
            mutate_deployment(app, &labels, d);
            set_controller_reference(app, d, scheme)?;
            Ok::<_, anyhow::Error>(())
        })
        .await?;
        match deployed {
            OperationResult::Created => {
                self.recorder.normal(
                    app,
                    "DeploymentCreated",
                    &format!("created Deployment {name}"),
                );
            }
            OperationResult::Updated => {
                self.recorder.normal(
                    app,
                    "DeploymentUpdated",
                    &format!("updated Deployment {name}"),
                );
            }
            _ => {}
        }

        let mut service = Service {
            metadata: owned_meta(app, &name),
            ..Service::default()
        };
        let served = try_create_or_update(&self.client, &mut service, |s| {
            let spec = s.spec.get_or_insert_with(ServiceSpec::default);
            spec.selector = Some(labels.clone());
            spec.ports = Some(vec![ServicePort {
                name: Some("http".to_owned()),
                port: app.spec.port,
                protocol: Some("TCP".to_owned()),
                target_port: Some(IntOrString::Int(app.spec.port)),
                ..ServicePort::default()
            }]);
            set_controller_reference(app, s, scheme)?;
            Ok::<_, anyhow::Error>(())
        })
        .await?;
        if served == OperationResult::Created {
            self.recorder
                .normal(app, "ServiceCreated", &format!("created Service {name}"));
        }

        self.update_status(app, &deployment).await?;
        Ok(Action::done())
    }

    /// `Ready` follows the Deployment: True once it is Available with every replica of the
    /// current generation, Progressing otherwise.
    async fn update_status(&self, app: &WebApp, deployment: &Deployment) -> anyhow::Result<()> {
        let status = deployment.status.clone().unwrap_or_default();
        let available_condition = status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .any(|c| c.type_ == "Available" && c.status == "True");
        let observed = status.observed_generation >= deployment.metadata.generation;
        let available = status.available_replicas.unwrap_or(0);
        let updated = status.updated_replicas.unwrap_or(0);
        let wanted = app.spec.replicas;
        let ready = observed
            && available_condition
            && available == wanted
            && updated == wanted
            && status.replicas.unwrap_or(0) == wanted;
        let (state, reason) = if ready {
            ("True", "Available")
        } else {
            ("False", "Progressing")
        };
        let mut new = app.status.clone().unwrap_or_default();
        let was_ready = conditions::is_status_condition_true(&new.conditions, READY);
        let changed = conditions::set_status_condition(
            &mut new.conditions,
            Condition {
                type_: READY.to_owned(),
                status: state.to_owned(),
                reason: reason.to_owned(),
                message: format!("{available} of {wanted} replicas available"),
                observed_generation: app.metadata.generation,
                // The zero time: set_status_condition stamps now when the status changes.
                last_transition_time: Time(Timestamp::UNIX_EPOCH),
            },
        );
        if ready && !was_ready {
            self.recorder.normal(
                app,
                "Available",
                &format!("{available} of {wanted} replicas available"),
            );
        }
        if !changed
            && new.available_replicas == available
            && new.observed_generation == app.metadata.generation
        {
            return Ok(());
        }
        new.available_replicas = available;
        new.observed_generation = app.metadata.generation;
        let with_status = WebApp {
            status: Some(new),
            ..app.clone()
        };
        self.client
            .status()
            .update(&with_status, &PostParams::default())
            .await?;
        Ok(())
    }
}

/// The metadata of an object named `name` beside `app`.
fn owned_meta(app: &WebApp, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: app.metadata.namespace.clone(),
        ..ObjectMeta::default()
    }
}

/// Brings the Deployment's fields the operator owns in line with `app`: replicas, selector,
/// the Pod template's labels and `sim.rein.dev/*` annotations (rein-sim's per-Pod
/// behaviour, copied from the WebApp), and the `web` container's image and port. Only these:
/// the server defaults the rest (strategy, restart policy, pull policy, …), and rewriting the
/// whole spec would differ from what is stored on every reconcile and update it each time.
fn mutate_deployment(app: &WebApp, labels: &BTreeMap<String, String>, d: &mut Deployment) {
    let spec = d.spec.get_or_insert_with(DeploymentSpec::default);
    spec.replicas = Some(app.spec.replicas);
    spec.selector = LabelSelector {
        match_labels: Some(labels.clone()),
        ..LabelSelector::default()
    };
    let meta = spec
        .template
        .metadata
        .get_or_insert_with(ObjectMeta::default);
    meta.labels = Some(labels.clone());
    let wanted: BTreeMap<String, String> = app
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("sim.rein.dev/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
    annotations.retain(|k, _| !k.starts_with("sim.rein.dev/") || wanted.contains_key(k));
    annotations.extend(wanted);
    if annotations.is_empty() {
        meta.annotations = None;
    }
    let pod = spec.template.spec.get_or_insert_with(PodSpec::default);
    let port = ContainerPort {
        name: Some("http".to_owned()),
        container_port: app.spec.port,
        protocol: Some("TCP".to_owned()),
        ..ContainerPort::default()
    };
    match pod.containers.iter_mut().find(|c| c.name == "web") {
        Some(web) => {
            web.image = Some(app.spec.image.clone());
            web.ports = Some(vec![port]);
        }
        None => pod.containers.push(Container {
            name: "web".to_owned(),
            image: Some(app.spec.image.clone()),
            ports: Some(vec![port]),
            ..Container::default()
        }),
    }
}

/// Adds the WebApp controller to `mgr`.
fn setup(mgr: &Manager) -> anyhow::Result<()> {
    ControllerManagedBy::new(mgr)
        .named(CONTROLLER)
        .for_::<WebApp>()
        .owns::<Deployment>()
        .owns::<Service>()
        .complete(WebAppReconciler {
            client: mgr.client(),
            recorder: mgr.event_recorder(CONTROLLER),
        })?;
    Ok(())
}

/// The operator's run settings.
#[derive(Debug, Clone)]
struct RunOptions {
    health_probe_bind_address: SocketAddr,
    metrics_bind_address: SocketAddr,
    leader_election_namespace: String,
}

/// The manager with probes, metrics, leader election and the controller.
async fn manager(config: kube_client::Config, run: &RunOptions) -> anyhow::Result<Manager> {
    let mut leader_election = LeaderElectionOptions::new("webapp-operator")
        .namespace(run.leader_election_namespace.clone());
    leader_election.config.release_on_cancel = true;
    // The scheme knows every built-in kind plus demo.rein.dev/v1 WebApp (for owner
    // references and the cache).
    let mut scheme = Scheme::with_builtins();
    scheme.register::<WebApp>();
    let options = Options {
        scheme: Some(Arc::new(scheme)),
        leader_election: Some(leader_election),
        health_probes: Some(HealthProbeOptions {
            bind_address: run.health_probe_bind_address,
            ..HealthProbeOptions::default()
        }),
        metrics: Some(MetricsServerOptions {
            bind_address: run.metrics_bind_address,
            ..MetricsServerOptions::default()
        }),
        ..Options::default()
    };
    let mgr = Manager::builder(config).options(options).build().await?;
    setup(&mgr)?;
    Ok(mgr)
}

/// Installs the WebApp CRD and waits until it is established.
async fn install_crd(kube: &kube_client::Client) -> anyhow::Result<()> {
    let crd = rein::client::crd::install(
        &Client::new(kube.clone()),
        &WebApp::crd(),
        Duration::from_secs(30),
    )
    .await?;
    println!(
        "CRD {} established",
        crd.metadata.name.as_deref().unwrap_or_default()
    );
    Ok(())
}

#[derive(Parser, Debug)]
struct Args {
    /// A kubeconfig: run the operator against that cluster until Ctrl-C.
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Embedded server and simulated cluster, demo, exit (the default without --kubeconfig).
    #[arg(long)]
    quick: bool,
    /// Where the health probes listen (with --kubeconfig).
    #[arg(long, default_value = "127.0.0.1:8081")]
    health_probe_bind_address: SocketAddr,
    /// Where the metrics listen (with --kubeconfig).
    #[arg(long, default_value = "127.0.0.1:8080")]
    metrics_bind_address: SocketAddr,
    /// The leader election Lease's namespace.
    #[arg(long, default_value = "default")]
    leader_election_namespace: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).init();

    if let Some(path) = &args.kubeconfig {
        let kubeconfig = kube_client::config::Kubeconfig::read_from(path)?;
        let config = kube_client::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube_client::config::KubeConfigOptions::default(),
        )
        .await?;
        install_crd(&kube_client::Client::try_from(config.clone())?).await?;
        let run = RunOptions {
            health_probe_bind_address: args.health_probe_bind_address,
            metrics_bind_address: args.metrics_bind_address,
            leader_election_namespace: args.leader_election_namespace,
        };
        let mgr = manager(config, &run).await?;
        println!(
            "probes at {:?}, metrics at {:?}; waiting to lead",
            mgr.health_probe_address(),
            mgr.metrics_address()
        );
        mgr.start(signals::shutdown_signal()).await?;
        println!("operator finished");
        return Ok(());
    }
    demo().await
}

/// The embedded demo: a server, a simulated cluster, the operator and a WebApp's life.
async fn demo() -> anyhow::Result<()> {
    let env = rein_testenv::TestEnv::start().await?;
    let kube = env.client();
    install_crd(&kube).await?;
    let sim = rein_sim::cluster::SimCluster::start(
        env.config(),
        rein_sim::cluster::SimConfig::with_nodes(3),
    )
    .await?;
    println!("simulated cluster: {} nodes", sim.node_names().len());

    let run = RunOptions {
        health_probe_bind_address: "127.0.0.1:0".parse()?,
        metrics_bind_address: "127.0.0.1:0".parse()?,
        leader_election_namespace: "default".to_owned(),
    };
    let mgr = manager(env.config(), &run).await?;
    let probes = mgr
        .health_probe_address()
        .context("the probe server is bound when the manager is built")?;
    let metrics = mgr
        .metrics_address()
        .context("the metrics server is bound when the manager is built")?;
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    println!("leading; probes at http://{probes}, metrics at http://{metrics}");

    let client = Client::new(kube.clone());
    let key = ObjectKey::new("default", "hello");
    let mut app = WebApp::new(
        "hello",
        WebAppSpec {
            image: "nginx:1.27".to_owned(),
            replicas: 2,
            port: 8080,
        },
    );
    app.metadata.namespace = Some("default".to_owned());
    // rein-sim's kubelet starts these Pods' containers half a second after they are bound
    // (the operator copies `sim.rein.dev/*` annotations onto its Pods), so the WebApp is
    // seen Progressing first.
    app.metadata.annotations = Some(BTreeMap::from([(
        rein_sim::kubelet::START_LATENCY.to_owned(),
        "500ms".to_owned(),
    )]));
    client.create(&app, &PostParams::default()).await?;
    let first = wait_for_status(&client, &key, |_| true).await?;
    println!(
        "webapp default/hello: {}",
        describe(&first).split(':').next().unwrap_or_default()
    );
    let ready = wait_ready(&client, &key, 2).await?;
    println!("webapp default/hello: {}", describe(&ready));

    let mut scaled = Arc::unwrap_or_clone(client.get::<WebApp>(&key).await?);
    scaled.spec.replicas = 4;
    client.update(&scaled, &PostParams::default()).await?;
    println!(
        "scaled to 4: {}",
        describe(&wait_ready(&client, &key, 4).await?)
    );

    let mut new_image = Arc::unwrap_or_clone(client.get::<WebApp>(&key).await?);
    new_image.spec.image = "nginx:1.28".to_owned();
    client.update(&new_image, &PostParams::default()).await?;
    let rolled = wait_until(&client, &key, |app| {
        ready_for(app, 4)
            && app.status.as_ref().and_then(|s| s.observed_generation) == app.metadata.generation
    })
    .await?;
    let deployment = client.get::<Deployment>(&key).await?;
    let image = deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    println!("image {image} rolled out: {}", describe(&rolled));

    println!("/readyz: {}", http_get(probes, "/readyz").await?.0);
    let (_, body) = http_get(metrics, "/metrics").await?;
    let line = body
        .lines()
        .find(|l| {
            l.starts_with("controller_runtime_reconcile_total")
                && l.contains("controller=\"webapp\"")
                && l.contains("result=\"success\"")
        })
        .unwrap_or_default();
    println!(
        "metrics: {}",
        line.split_whitespace().next().unwrap_or_default()
    );
    let reasons: std::collections::BTreeSet<String> =
        event_reasons(&kube).await?.into_iter().collect();
    println!(
        "events: {}",
        reasons.into_iter().collect::<Vec<_>>().join(", ")
    );

    client.delete::<WebApp>(&key, &Default::default()).await?;
    wait_gone::<WebApp>(&client, &key).await?;
    wait_gone::<Deployment>(&client, &key).await?;
    wait_gone::<Service>(&client, &key).await?;
    // The recorder writes Events in the background: wait for the finalizer's.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !event_reasons(&kube).await?.iter().any(|r| r == "CleanedUp") {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no CleanedUp event from the finalizer"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("deleted: finalizer ran (CleanedUp), WebApp gone, Deployment and Service collected");

    stop.cancel();
    running.await??;
    sim.shutdown().await?;
    println!("operator finished");
    Ok(())
}

/// `Ready=<status> (<reason>): <message>`.
fn describe(app: &WebApp) -> String {
    let conditions = app
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    match conditions::find_status_condition(conditions, READY) {
        Some(c) => format!("Ready={} ({}): {}", c.status, c.reason, c.message),
        None => "no Ready condition".to_owned(),
    }
}

/// Whether `app` is Ready with `replicas` available.
fn ready_for(app: &WebApp, replicas: i32) -> bool {
    app.status.as_ref().is_some_and(|s| {
        conditions::is_status_condition_true(&s.conditions, READY)
            && s.available_replicas == replicas
    })
}

async fn wait_ready(client: &Client, key: &ObjectKey, replicas: i32) -> anyhow::Result<WebApp> {
    wait_until(client, key, |app| ready_for(app, replicas)).await
}

/// Waits for a WebApp with a Ready condition that satisfies `check`.
async fn wait_for_status(
    client: &Client,
    key: &ObjectKey,
    check: impl Fn(&Condition) -> bool,
) -> anyhow::Result<WebApp> {
    wait_until(client, key, |app| {
        app.status
            .as_ref()
            .and_then(|s| conditions::find_status_condition(&s.conditions, READY))
            .is_some_and(&check)
    })
    .await
}

/// Polls the WebApp every 20 ms until `check` holds (at most 30 s).
async fn wait_until(
    client: &Client,
    key: &ObjectKey,
    check: impl Fn(&WebApp) -> bool,
) -> anyhow::Result<WebApp> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(app) = ignore_not_found(client.get::<WebApp>(key).await)?
            && check(&app)
        {
            return Ok(Arc::unwrap_or_clone(app));
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting on webapp {key}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `key` of kind `K` is gone (at most 30 s).
async fn wait_gone<K: rein::scheme::Object>(
    client: &Client,
    key: &ObjectKey,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while ignore_not_found(client.get::<K>(key).await)?.is_some() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {key} to go"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// The reasons of the Events about WebApps in `default`, oldest first.
async fn event_reasons(kube: &kube_client::Client) -> anyhow::Result<Vec<String>> {
    let events: kube_client::Api<Event> = kube_client::Api::namespaced(kube.clone(), "default");
    let mut list: Vec<Event> = events
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.involved_object.kind.as_deref() == Some("WebApp"))
        .collect();
    list.sort_by_key(|e| e.metadata.creation_timestamp.clone().map(|t| t.0));
    Ok(list.into_iter().filter_map(|e| e.reason).collect())
}

/// A plain HTTP/1.1 GET: the status code and the body.
async fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("an HTTP status line")?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((code, body))
}

#[cfg(test)]
mod tests {
    //! The operator against the embedded server and a simulated cluster: what it waits on is a
    //! Deployment that really becomes Available (or never does), not a status faked by hand.

    use super::*;

    struct Setup {
        _env: rein_testenv::TestEnv,
        client: Client,
        sim: rein_sim::cluster::SimCluster,
        stop: CancellationToken,
        running: tokio::task::JoinHandle<Result<(), rein::manager::Error>>,
    }

    async fn setup() -> Setup {
        let env = rein_testenv::TestEnv::start().await.expect("server");
        install_crd(&env.client()).await.expect("CRD");
        let sim = rein_sim::cluster::SimCluster::start(
            env.config(),
            rein_sim::cluster::SimConfig::with_nodes(2),
        )
        .await
        .expect("simulated cluster");
        let run = RunOptions {
            health_probe_bind_address: "127.0.0.1:0".parse().expect("address"),
            metrics_bind_address: "127.0.0.1:0".parse().expect("address"),
            leader_election_namespace: "default".to_owned(),
        };
        let mgr = manager(env.config(), &run).await.expect("manager");
        let stop = CancellationToken::new();
        let running = tokio::spawn({
            let (mgr, stop) = (mgr.clone(), stop.clone());
            async move { mgr.start(stop).await }
        });
        Setup {
            client: Client::new(env.client()),
            _env: env,
            sim,
            stop,
            running,
        }
    }

    impl Setup {
        async fn stop(self) {
            self.stop.cancel();
            self.running
                .await
                .expect("join")
                .expect("the manager stops cleanly");
            self.sim.shutdown().await.expect("the simulation stops");
        }
    }

    fn web_app(name: &str, replicas: i32) -> WebApp {
        let mut app = WebApp::new(
            name,
            WebAppSpec {
                image: "nginx:1.27".to_owned(),
                replicas,
                port: 8080,
            },
        );
        app.metadata.namespace = Some("default".to_owned());
        app
    }

    #[tokio::test]
    async fn a_web_app_is_ready_once_the_deployment_it_created_is_available() {
        let setup = setup().await;
        let key = ObjectKey::new("default", "shop");
        setup
            .client
            .create(&web_app("shop", 3), &PostParams::default())
            .await
            .expect("create");
        let ready = wait_ready(&setup.client, &key, 3).await.expect("Ready");
        assert_eq!(
            describe(&ready),
            "Ready=True (Available): 3 of 3 replicas available"
        );
        // Ready because the Deployment the operator created is Available, as rein-sim's
        // Deployment controller reports it.
        let deployment = setup
            .client
            .get::<Deployment>(&key)
            .await
            .expect("Deployment");
        let status = deployment.status.clone().expect("status");
        let available = status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "Available")
            .expect("an Available condition");
        assert_eq!(
            (available.status.as_str(), available.reason.as_deref()),
            ("True", Some("MinimumReplicasAvailable"))
        );
        assert_eq!(status.ready_replicas, Some(3));
        let owner = deployment
            .metadata
            .owner_references
            .clone()
            .unwrap_or_default();
        assert!(
            owner
                .iter()
                .any(|o| o.kind == "WebApp" && o.controller == Some(true))
        );
        let service = setup.client.get::<Service>(&key).await.expect("Service");
        assert_eq!(
            service
                .spec
                .as_ref()
                .and_then(|s| s.ports.clone())
                .unwrap_or_default()[0]
                .port,
            8080
        );
        let reasons = event_reasons(&setup.client.kube().clone())
            .await
            .expect("events");
        for reason in ["DeploymentCreated", "ServiceCreated", "Available"] {
            assert!(
                reasons.iter().any(|r| r == reason),
                "{reason} in {reasons:?}"
            );
        }
        setup.stop().await;
    }

    #[tokio::test]
    async fn a_web_app_whose_pods_never_become_ready_stays_progressing() {
        let setup = setup().await;
        let key = ObjectKey::new("default", "stuck");
        let mut app = web_app("stuck", 2);
        app.metadata.annotations = Some(BTreeMap::from([(
            rein_sim::kubelet::NEVER_READY.to_owned(),
            "true".to_owned(),
        )]));
        setup
            .client
            .create(&app, &PostParams::default())
            .await
            .expect("create");
        // The Pods run but never pass readiness: the Deployment is not Available.
        let pods_running = || async {
            let pods: kube_client::Api<k8s_openapi::api::core::v1::Pod> =
                kube_client::Api::namespaced(setup.client.kube().clone(), "default");
            let list = pods.list(&Default::default()).await.expect("pods").items;
            list.len() == 2
                && list
                    .iter()
                    .all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !pods_running().await {
            assert!(tokio::time::Instant::now() < deadline, "the Pods never ran");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let app = wait_for_status(&setup.client, &key, |c| c.reason == "Progressing")
            .await
            .expect("status");
        assert_eq!(
            describe(&app),
            "Ready=False (Progressing): 0 of 2 replicas available"
        );
        setup.stop().await;
    }
}
