//! A custom resource from `#[derive(CustomResource)]` in two versions (v1 stored and the conversion hub, v2 a spoke with `size` for `replicas`; spec, status subresource, printer columns, a CEL rule and a schema default), its CRD installed and awaited with `rein::client::crd::install`, and the manager's own webhook server (HTTPS) serving a defaulting webhook, a validating webhook and the v1↔v2 conversion webhook — registered with the API server by a MutatingWebhookConfiguration, a ValidatingWebhookConfiguration and the CRD's `spec.conversion`, so the API server calls them: a widget defaulted, one denied with the webhook's message, one refused by the CEL rule, v2 reads and applies converted, a controller setting status; with `--kubectl` also a `kubectl apply` of a bad widget denied with the webhook's message (Go original: kubebuilder API types with `+kubebuilder:validation` markers, a `Hub` and a `Convertible` spoke, SetupWebhookWithManager's CustomDefaulter/CustomValidator and `config/webhook` manifests, and a reconciler).
//!
//! Without `--kubeconfig` it runs against an embedded rein-testenv. Against a real cluster:
//! `cargo run -p rein-examples --example custom_resource -- --kubeconfig ~/.kube/config
//! --webhook-bind 0.0.0.0:9443 --webhook-host <name the API server reaches this machine by>
//! --cert-dir <dir with tls.crt, tls.key and ca.crt valid for that name>` — it applies the CRD and
//! both webhook configurations (named `custom-resource-example`) pointing at
//! `https://<host>:<port>/…` with the CA as `caBundle`. In-cluster deployments point
//! `clientConfig.service` at the manager's Service instead.
// smoke-args: --quick
// smoke-expect: webhooks serving at https://localhost:
// smoke-expect: CRD widgets.demo.rein.dev established: v1 stored, v2 converted by the webhook
// smoke-expect: webhook configurations applied: mwidget.demo.rein.dev, vwidget.demo.rein.dev
// smoke-expect: defaulted widget default/demo: replicas=1 image=nginx:1.27
// smoke-expect: denied widget default/latest: admission webhook "vwidget.demo.rein.dev" denied the request: spec.image must name a tag other than latest, got "nginx:latest"
// smoke-expect: server rejected widget default/too-big: 422 Invalid
// smoke-expect: widget default/demo read as demo.rein.dev/v2: size=1
// smoke-expect: widget default/from-v2 applied as v2, read as v1: replicas=3
// smoke-expect: widget default/demo status: Ready (1 replicas)
// smoke-expect: custom_resource finished
// smoke-timeout: 60

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use clap::Parser;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{ListParams, Patch, PatchParams, PostParams};
use kube_client::{Api, Client as KubeClient};
use rein::client::Client;
use rein::controller::ControllerManagedBy;
use rein::controller::{Action, Context, Reconciler, Request};
use rein::core::crd::merge_crds;
use rein::manager::config::{self, ConfigSources};
use rein::manager::webhook::{
    AdmissionError, CertSource, Conversion, ConversionError, Convertible, CustomDefaulter,
    CustomValidator, GeneratedCertificates, Hub, Warnings, WebhookServerOptions,
};
use rein::manager::{Manager, Options, signals};
use rein::scheme::ObjectKey;
use rein::scheme::Scheme;
use rein::{CustomResource, CustomResourceExt, KubeSchema};
use rein_testenv::TestEnv;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The name of the webhook configurations this example applies.
const CONFIGURATION: &str = "custom-resource-example";
/// The field manager of everything this example applies.
const MANAGER: &str = "custom-resource-example";

/// The desired state of a Widget; `#[derive(CustomResource)]` generates the `Widget` type
/// (`demo.rein.dev/v1`, namespaced) around it, with a `status` and the CRD. v1 is the storage
/// version and the conversion hub.
#[rein::resource]
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "demo.rein.dev", version = "v1", kind = "Widget", namespaced)]
#[kube(
    status = "WidgetStatus",
    shortname = "wg",
    doc = "A Widget: a demo workload."
)]
#[kube(derive = "Default", derive = "PartialEq")]
#[kube(printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#)]
#[kube(printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#)]
#[serde(rename_all = "camelCase")]
struct WidgetSpec {
    /// How many replicas; the server refuses more than 10 (a CEL rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self <= 10").message("replicas must be at most 10"))]
    replicas: Option<i32>,
    /// The container image; empty means the webhook's default.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    image: String,
    /// The service tier; the server fills in `standard` (a schema default).
    #[serde(default = "default_tier")]
    tier: String,
}

fn default_tier() -> String {
    "standard".into()
}

/// What the controller observed (written through the status subresource).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WidgetStatus {
    phase: String,
    ready_replicas: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
}

/// `demo.rein.dev/v2`: `replicas` is called `size`. A spoke: it converts to and from v1.
mod v2 {
    use super::*;

    /// The desired state of a v2 Widget.
    #[rein::resource]
    #[derive(
        CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize,
    )]
    #[kube(group = "demo.rein.dev", version = "v2", kind = "Widget", namespaced)]
    #[kube(status = "WidgetStatus", shortname = "wg")]
    #[kube(derive = "Default", derive = "PartialEq")]
    #[kube(printcolumn = r#"{"name":"Size","type":"integer","jsonPath":".spec.size"}"#)]
    #[kube(printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct WidgetSpec {
        /// v1's `replicas`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[x_kube(validation = Rule::new("self <= 10").message("size must be at most 10"))]
        pub(super) size: Option<i32>,
        /// The container image.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub(super) image: String,
        /// The service tier.
        #[serde(default = "default_tier")]
        pub(super) tier: String,
    }
}

impl Hub for Widget {}

impl Convertible<Widget> for v2::Widget {
    fn convert_to(&self) -> Result<Widget, ConversionError> {
        Ok(Widget {
            metadata: self.metadata.clone(),
            spec: WidgetSpec {
                replicas: self.spec.size,
                image: self.spec.image.clone(),
                tier: self.spec.tier.clone(),
            },
            status: self.status.clone(),
        })
    }

    fn convert_from(hub: &Widget) -> Result<Self, ConversionError> {
        Ok(v2::Widget {
            metadata: hub.metadata.clone(),
            spec: v2::WidgetSpec {
                size: hub.spec.replicas,
                image: hub.spec.image.clone(),
                tier: hub.spec.tier.clone(),
            },
            status: hub.status.clone(),
        })
    }
}

/// A Widget in `namespace` (the derive gives `Widget::new(name, spec)`, without one).
fn widget(namespace: &str, name: &str, spec: WidgetSpec) -> Widget {
    let mut widget = Widget::new(name, spec);
    widget.metadata.namespace = Some(namespace.into());
    widget
}

/// Fills in replicas, image and a label (kubebuilder's `Default`).
struct WidgetDefaulter;

#[async_trait]
impl CustomDefaulter<Widget> for WidgetDefaulter {
    async fn default(&self, w: &mut Widget) -> Result<(), AdmissionError> {
        w.spec.replicas.get_or_insert(1);
        if w.spec.image.is_empty() {
            w.spec.image = "nginx:1.27".into();
        }
        w.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .entry("app.kubernetes.io/managed-by".into())
            .or_insert_with(|| "rein-custom-resource".into());
        Ok(())
    }
}

/// Refuses images on the `latest` tag and warns about untagged ones (kubebuilder's
/// `ValidateCreate/Update`); the replica bound is the CRD's CEL rule.
struct WidgetValidator;

impl WidgetValidator {
    fn check(w: &Widget) -> Result<Warnings, AdmissionError> {
        let image = &w.spec.image;
        if image.ends_with(":latest") {
            return Err(AdmissionError::denied(format!(
                "spec.image must name a tag other than latest, got {image:?}"
            )));
        }
        let mut warnings = Vec::new();
        if !image.contains(':') {
            warnings.push(format!("spec.image {image:?} has no tag"));
        }
        Ok(warnings)
    }
}

#[async_trait]
impl CustomValidator<Widget> for WidgetValidator {
    async fn validate_create(&self, w: &Widget) -> Result<Warnings, AdmissionError> {
        Self::check(w)
    }
    async fn validate_update(
        &self,
        _old: &Widget,
        new: &Widget,
    ) -> Result<Warnings, AdmissionError> {
        Self::check(new)
    }
}

/// Marks each Widget Ready with its replica count.
struct WidgetReconciler {
    client: Client,
}

#[async_trait]
impl Reconciler for WidgetReconciler {
    type Error = anyhow::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, anyhow::Error> {
        let key: &ObjectKey = &req.key;
        // The cache lends its object (`Arc<Widget>`); take an owned copy to modify it.
        let mut widget = match self.client.get::<Widget>(key).await {
            Ok(w) => Arc::unwrap_or_clone(w),
            Err(err) if err.is_not_found() => return Ok(Action::done()),
            Err(err) => return Err(err.into()),
        };
        let want = WidgetStatus {
            phase: "Ready".into(),
            ready_replicas: widget.spec.replicas.unwrap_or(1),
            observed_generation: widget.metadata.generation,
        };
        if widget.status.as_ref() != Some(&want) {
            widget.status = Some(want);
            self.client
                .status()
                .update(&widget, &PostParams::default())
                .await?;
            tracing::info!(%key, "widget status updated");
        }
        Ok(Action::done())
    }
}

#[derive(Parser, Debug)]
struct Args {
    /// A kubeconfig file; without one an embedded API server is started.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// A directory holding the webhook's tls.crt, tls.key and ca.crt; generated when absent.
    #[arg(long)]
    cert_dir: Option<PathBuf>,
    /// Where the webhook server listens.
    #[arg(long, default_value = "127.0.0.1:0")]
    webhook_bind: std::net::SocketAddr,
    /// The host name the API server calls the webhooks at (the certificate must be valid for
    /// it).
    #[arg(long, default_value = "localhost")]
    webhook_host: String,
    /// A kubectl binary: `kubectl apply` a bad widget and show the webhook's denial.
    #[arg(long)]
    kubectl: Option<PathBuf>,
    /// Exit after the demonstration instead of running until Ctrl-C.
    #[arg(long)]
    quick: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let quick = args.quick || rein_examples::quick_mode();

    let (env, config) = match &args.kubeconfig {
        Some(path) => (
            None,
            config::load(&ConfigSources::empty().kubeconfig(path)).await?,
        ),
        None => {
            let env = TestEnv::start().await?;
            let config = env.config();
            (Some(env), config)
        }
    };
    let kube = KubeClient::try_from(config.clone())?;

    // The scheme knows every built-in kind plus demo.rein.dev/v1 Widget.
    let mut scheme = Scheme::with_builtins();
    scheme.register::<Widget>();

    // The webhook server: HTTPS only, bound when the manager is built and run by it (with a
    // `webhook` readiness check).
    let (cert, ca_pem) = match &args.cert_dir {
        Some(dir) => (
            CertSource::from_dir(dir),
            std::fs::read_to_string(dir.join("ca.crt"))?,
        ),
        None => {
            let certs = GeneratedCertificates::generate(&[
                args.webhook_host.as_str(),
                "localhost",
                "127.0.0.1",
            ])?;
            (certs.cert_source(), certs.ca_pem)
        }
    };
    let options = Options::default()
        .scheme(Arc::new(scheme))
        .webhook(WebhookServerOptions {
            bind_address: args.webhook_bind,
            cert,
            ..WebhookServerOptions::default()
        });
    let mgr = Manager::builder(config).options(options).build().await?;
    let webhooks = mgr
        .webhook_server()
        .ok_or_else(|| anyhow::anyhow!("Options::webhook gives the manager a webhook server"))?;
    let mutate = webhooks.register_defaulter::<Widget, _>(WidgetDefaulter)?;
    let validate = webhooks.register_validator::<Widget, _>(WidgetValidator)?;
    let convert =
        webhooks.register_conversion(Conversion::<Widget>::hub().spoke::<v2::Widget>())?;
    let base = format!(
        "https://{}:{}",
        args.webhook_host,
        webhooks.local_addr().port()
    );
    println!("webhooks serving at {base}: {mutate}, {validate}, {convert}");

    // The CRD: both versions from the derive, v1 stored, conversion by the webhook.
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ca_pem);
    let crd = rein::client::crd::install(
        &Client::new(kube.clone()),
        &widget_crd(&format!("{base}{convert}"), &ca_bundle)?,
        Duration::from_secs(30),
    )
    .await?;
    println!(
        "CRD {} established: v1 stored, v2 converted by the webhook",
        crd.metadata.name.as_deref().unwrap_or_default()
    );
    apply_webhook_configurations(&kube, &base, &mutate, &validate, &ca_pem).await?;
    println!("webhook configurations applied: mwidget.demo.rein.dev, vwidget.demo.rein.dev");

    ControllerManagedBy::new(&mgr)
        .for_::<Widget>()
        .complete(WidgetReconciler {
            client: mgr.client(),
        })?;

    let stop = if quick {
        CancellationToken::new()
    } else {
        signals::shutdown_signal()
    };
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    let started = webhooks.started_checker();
    tokio::time::timeout(Duration::from_secs(30), async {
        while !started.is_started() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await?;

    // From here on the API server calls the webhooks: every write below is admitted by them.
    let widgets: Api<Widget> = Api::namespaced(kube.clone(), "default");
    let demo = widgets
        .create(
            &PostParams::default(),
            &widget("default", "demo", WidgetSpec::default()),
        )
        .await?;
    println!(
        "defaulted widget default/demo: replicas={} image={}",
        demo.spec.replicas.unwrap_or_default(),
        demo.spec.image
    );
    let latest = widget(
        "default",
        "latest",
        WidgetSpec {
            image: "nginx:latest".into(),
            ..WidgetSpec::default()
        },
    );
    match widgets.create(&PostParams::default(), &latest).await {
        Err(kube_client::Error::Api(status)) => {
            println!("denied widget default/latest: {}", status.message);
        }
        Err(err) => return Err(err.into()),
        Ok(_) => anyhow::bail!("the widget on the latest tag was admitted"),
    }
    // The CRD's CEL rule refuses 100 replicas, whatever the webhooks say.
    let too_big = widget(
        "default",
        "too-big",
        WidgetSpec {
            replicas: Some(100),
            image: "busybox".into(),
            ..WidgetSpec::default()
        },
    );
    reject_on_server(&mgr.api_reader(), &too_big).await?;

    // v2 clients see the same widgets, converted by the webhook.
    let widgets_v2: Api<v2::Widget> = Api::namespaced(kube.clone(), "default");
    let demo_v2 = widgets_v2.get("demo").await?;
    println!(
        "widget default/demo read as demo.rein.dev/v2: size={}",
        demo_v2.spec.size.unwrap_or_default()
    );
    let from_v2 = json!({
        "apiVersion": "demo.rein.dev/v2", "kind": "Widget",
        "metadata": {"name": "from-v2", "namespace": "default"},
        "spec": {"size": 3, "image": "nginx:1.27"},
    });
    widgets_v2
        .patch(
            "from-v2",
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&from_v2),
        )
        .await?;
    println!(
        "widget default/from-v2 applied as v2, read as v1: replicas={}",
        widgets
            .get("from-v2")
            .await?
            .spec
            .replicas
            .unwrap_or_default()
    );

    if let Some(kubectl) = &args.kubectl {
        let kubeconfig = match (&env, &args.kubeconfig) {
            (_, Some(path)) => path.clone(),
            (Some(env), None) => {
                let path = std::env::temp_dir().join(format!(
                    "rein-custom-resource-{}.kubeconfig",
                    std::process::id()
                ));
                env.write_kubeconfig(&path)?;
                path
            }
            (None, None) => anyhow::bail!("no kubeconfig to give kubectl"),
        };
        kubectl_apply_bad_widget(kubectl, &kubeconfig)?;
    }

    // The controller marks the admitted widget Ready.
    let status = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(status) = widgets.get("demo").await?.status
                && status.phase == "Ready"
            {
                return anyhow::Ok(status);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await??;
    println!(
        "widget default/demo status: {} ({} replicas)",
        status.phase, status.ready_replicas
    );
    let list = widgets.list(&ListParams::default()).await?;
    println!("{} widget(s) stored", list.items.len());

    if !quick {
        println!("running until Ctrl-C");
        stop.cancelled().await;
    }
    stop.cancel();
    running.await??;
    println!("custom_resource finished");
    Ok(())
}

/// The Widget CRD with v1 and v2 (v1 stored), converted by the webhook at `url`.
fn widget_crd(url: &str, ca_bundle: &str) -> anyhow::Result<CustomResourceDefinition> {
    let mut crd = serde_json::to_value(merge_crds(vec![Widget::crd(), v2::Widget::crd()], "v1")?)?;
    crd["spec"]["conversion"] = json!({
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"url": url, "caBundle": ca_bundle},
            "conversionReviewVersions": ["v1"],
        },
    });
    Ok(serde_json::from_value(crd)?)
}

/// Applies (server-side, so a rerun against a real cluster updates them) the mutating and
/// validating webhook configurations calling `base` + the registered paths.
async fn apply_webhook_configurations(
    kube: &KubeClient,
    base: &str,
    mutate: &str,
    validate: &str,
    ca_pem: &str,
) -> anyhow::Result<()> {
    let client_config = |path: &str| WebhookClientConfig {
        url: Some(format!("{base}{path}")),
        ca_bundle: Some(k8s_openapi::ByteString(ca_pem.as_bytes().to_vec())),
        service: None,
    };
    let rules = Some(vec![RuleWithOperations {
        operations: Some(vec!["CREATE".into(), "UPDATE".into()]),
        api_groups: Some(vec!["demo.rein.dev".into()]),
        api_versions: Some(vec!["v1".into()]),
        resources: Some(vec!["widgets".into()]),
        scope: Some("Namespaced".into()),
    }]);
    let mutating = MutatingWebhookConfiguration {
        metadata: kube_client::api::ObjectMeta {
            name: Some(CONFIGURATION.into()),
            ..Default::default()
        },
        webhooks: Some(vec![MutatingWebhook {
            name: "mwidget.demo.rein.dev".into(),
            client_config: client_config(mutate),
            rules: rules.clone(),
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            failure_policy: Some("Fail".into()),
            ..Default::default()
        }]),
    };
    let validating = ValidatingWebhookConfiguration {
        metadata: kube_client::api::ObjectMeta {
            name: Some(CONFIGURATION.into()),
            ..Default::default()
        },
        webhooks: Some(vec![ValidatingWebhook {
            name: "vwidget.demo.rein.dev".into(),
            client_config: client_config(validate),
            rules,
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            failure_policy: Some("Fail".into()),
            ..Default::default()
        }]),
    };
    let apply = PatchParams::apply(MANAGER).force();
    Api::<MutatingWebhookConfiguration>::all(kube.clone())
        .patch(CONFIGURATION, &apply, &Patch::Apply(&mutating))
        .await?;
    Api::<ValidatingWebhookConfiguration>::all(kube.clone())
        .patch(CONFIGURATION, &apply, &Patch::Apply(&validating))
        .await?;
    Ok(())
}

/// `kubectl apply`s a v2 widget on the `latest` tag: the API server converts it, the
/// validating webhook denies it, and kubectl prints the webhook's message; then `kubectl get`s
/// the widgets as v2.
fn kubectl_apply_bad_widget(
    kubectl: &std::path::Path,
    kubeconfig: &std::path::Path,
) -> anyhow::Result<()> {
    let manifest = "apiVersion: demo.rein.dev/v2\nkind: Widget\nmetadata:\n  name: kubectl-latest\n  \
                    namespace: default\nspec:\n  size: 2\n  image: nginx:latest\n";
    let mut child = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("kubectl's stdin"))?
        .write_all(manifest.as_bytes())?;
    let output = child.wait_with_output()?;
    anyhow::ensure!(
        !output.status.success(),
        "kubectl applied a widget on the latest tag: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    println!(
        "kubectl apply of widget default/kubectl-latest: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    // The v2 table: the server converts each stored v1 widget for v2's printer columns.
    let output = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["get", "widgets.v2.demo.rein.dev", "-n", "default"])
        .output()?;
    anyhow::ensure!(
        output.status.success(),
        "kubectl get failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    println!(
        "kubectl get widgets.v2.demo.rein.dev:\n{}",
        String::from_utf8_lossy(&output.stdout).trim_end()
    );
    Ok(())
}

/// Creates `widget` directly on the server, which checks it against the CRD's schema and CEL
/// rules: a 422 Invalid is the expected answer.
async fn reject_on_server(client: &Client, widget: &Widget) -> anyhow::Result<()> {
    let key = ObjectKey::from_object(widget);
    match client.create(widget, &PostParams::default()).await {
        Err(err) if err.is_invalid() => {
            let message = match &err {
                rein::client::Error::Api { status, .. } => status.message.clone(),
                other => other.to_string(),
            };
            println!("server rejected widget {key}: 422 Invalid: {message}");
            Ok(())
        }
        Err(err) => Err(err.into()),
        Ok(_) => anyhow::bail!("the server stored widget {key}, which breaks the CEL rule"),
    }
}
