//! A custom resource from `#[derive(CustomResource)]` (spec, status subresource, printer columns, a CEL rule and a schema default), its CRD installed and awaited with `rein::client::crd::install`, the server rejecting an object that breaks the CEL rule, defaulting and validating webhooks served by the manager's webhook server over TLS, and a controller that sets its status (Go original: a kubebuilder API type with `+kubebuilder:validation` markers + SetupWebhookWithManager's CustomDefaulter/CustomValidator + its reconciler).
// smoke-args: --quick
// smoke-expect: CRD widgets.demo.rein.dev established
// smoke-expect: defaulted widget default/demo: replicas=1 image=nginx:1.27
// smoke-expect: denied widget default/too-big: spec.replicas must be at most 10, got 100
// smoke-expect: server rejected widget default/too-big: 422 Invalid
// smoke-expect: widget default/demo status: Ready (1 replicas)
// smoke-expect: custom_resource finished
// smoke-timeout: 60

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clap::Parser;
use kube_client::api::{ListParams, PostParams};
use kube_client::{Api, Client as KubeClient};
use rein::client::{Client, ObjectKey};
use rein::controller::ControllerManagedBy;
use rein::controller::{Action, Context, Reconciler, Request};
use rein::manager::config::{self, ConfigSources};
use rein::manager::webhook::{
    AdmissionClient, AdmissionError, CertSource, CustomDefaulter, CustomValidator,
    GeneratedCertificates, Operation, Warnings, WebhookServerOptions, review_request,
};
use rein::manager::{Manager, Options, signals};
use rein::scheme::Scheme;
use rein::{CustomResource, CustomResourceExt, KubeSchema};
use rein_testenv::TestEnv;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

const MAX_REPLICAS: i32 = 10;

/// The desired state of a Widget; `#[derive(CustomResource)]` generates the `Widget` type
/// (`demo.rein.dev/v1`, namespaced) around it, with a `status` and the CRD.
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
// The expansion names kube-core, k8s-openapi and serde_json: take them from rein.
#[kube(crates(
    kube_core = "::rein::core",
    k8s_openapi = "::rein::k8s_openapi",
    serde_json = "::rein::serde_json"
))]
#[x_kube(crates(kube_core = "::rein::core"))]
#[serde(rename_all = "camelCase")]
struct WidgetSpec {
    /// How many replicas; the server refuses more than 10 (a CEL rule), the webhook too.
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

/// Bounds replicas and warns about untagged images (kubebuilder's `ValidateCreate/Update`).
struct WidgetValidator;

impl WidgetValidator {
    fn check(w: &Widget) -> Result<Warnings, AdmissionError> {
        let replicas = w.spec.replicas.unwrap_or(1);
        if !(0..=MAX_REPLICAS).contains(&replicas) {
            return Err(AdmissionError::denied(format!(
                "spec.replicas must be at most {MAX_REPLICAS}, got {replicas}"
            )));
        }
        let mut warnings = Vec::new();
        if !w.spec.image.contains(':') {
            warnings.push(format!("spec.image {:?} has no tag", w.spec.image));
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
    /// Exit after the demonstration instead of running until Ctrl-C.
    #[arg(long)]
    quick: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let quick = args.quick || rein_examples::quick_mode();

    let (_env, config) = match &args.kubeconfig {
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

    // The CRD comes from the derive; install it and wait until the server serves Widgets.
    let crd = rein::client::crd::install(
        &Client::new(kube.clone()),
        &Widget::crd(),
        Duration::from_secs(30),
    )
    .await?;
    println!(
        "CRD {} established",
        crd.metadata.name.as_deref().unwrap_or_default()
    );

    // The scheme knows every built-in kind plus demo.rein.dev/v1 Widget.
    let mut scheme = Scheme::with_builtins();
    scheme.register::<Widget>();

    // The webhook server: HTTPS only, one path per handler, bound when the manager is built
    // and run by it (with a `webhook` readiness check).
    let (cert, ca_pem) = match &args.cert_dir {
        Some(dir) => (
            CertSource::from_dir(dir),
            std::fs::read_to_string(dir.join("ca.crt"))?,
        ),
        None => {
            let certs = GeneratedCertificates::generate(&["localhost", "127.0.0.1"])?;
            (certs.cert_source(), certs.ca_pem)
        }
    };
    let options = Options::default()
        .scheme(Arc::new(scheme))
        .webhook(WebhookServerOptions {
            bind_address: "127.0.0.1:0".parse()?,
            cert,
            ..WebhookServerOptions::default()
        });
    let mgr = Manager::builder(config).options(options).build().await?;
    let webhooks = mgr
        .webhook_server()
        .ok_or_else(|| anyhow::anyhow!("Options::webhook gives the manager a webhook server"))?;
    let mutate = webhooks.register_defaulter::<Widget, _>(WidgetDefaulter)?;
    let validate = webhooks.register_validator::<Widget, _>(WidgetValidator)?;
    println!(
        "webhooks at https://{}{{{mutate},{validate}}}",
        webhooks.local_addr()
    );

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

    // Play the API server's admission chain: mutate, then validate, then persist.
    let admission = AdmissionClient::new(webhooks.local_addr(), "localhost", &ca_pem)?;
    let widgets: Api<Widget> = Api::namespaced(kube.clone(), "default");
    let demo = widget("default", "demo", WidgetSpec::default());
    match admit(&admission, &mutate, &validate, demo).await? {
        Ok(widget) => {
            println!(
                "defaulted widget default/demo: replicas={} image={}",
                widget.spec.replicas.unwrap_or_default(),
                widget.spec.image
            );
            widgets.create(&PostParams::default(), &widget).await?;
        }
        Err(message) => anyhow::bail!("demo widget unexpectedly denied: {message}"),
    }
    let too_big = widget(
        "default",
        "too-big",
        WidgetSpec {
            replicas: Some(100),
            image: "busybox".into(),
            ..WidgetSpec::default()
        },
    );
    match admit(&admission, &mutate, &validate, too_big.clone()).await? {
        Ok(_) => anyhow::bail!("too-big widget unexpectedly allowed"),
        Err(message) => println!("denied widget default/too-big: {message}"),
    }
    // Sent straight to the server (no webhook in the way), the CRD's CEL rule refuses it.
    reject_on_server(&mgr.api_reader(), &too_big).await?;

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

/// Sends `widget` through the mutating webhook (applying its JSON patch) and then the
/// validating one; `Err(message)` when denied.
async fn admit(
    admission: &AdmissionClient,
    mutate: &str,
    validate: &str,
    widget: Widget,
) -> anyhow::Result<Result<Widget, String>> {
    let review = review_request(Operation::Create, Some(&widget), None)?;
    let resp = admission.review(mutate, &review).await?;
    if !resp.allowed {
        return Ok(Err(resp.result.message));
    }
    let mut object = serde_json::to_value(&widget)?;
    if let Some(patch) = &resp.patch {
        let patch: json_patch::Patch = serde_json::from_slice(patch)?;
        json_patch::patch(&mut object, &patch)?;
    }
    let defaulted: Widget = serde_json::from_value(object)?;
    let review = review_request(Operation::Create, Some(&defaulted), None)?;
    let resp = admission.review(validate, &review).await?;
    for warning in resp.warnings.iter().flatten() {
        println!("warning: {warning}");
    }
    if resp.allowed {
        Ok(Ok(defaulted))
    } else {
        Ok(Err(resp.result.message))
    }
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
