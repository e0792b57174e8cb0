//! The whole admission path: a rein manager serves a `CustomDefaulter` and a
//! `CustomValidator` from `Options::webhook`, and rein-testenv, as the API server, calls them
//! through webhook configurations whose `caBundle` is the manager's CA — a created object is
//! defaulted by the webhook, a bad one is denied with the webhook's message.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use kube_client::Api;
use kube_client::api::{Patch, PatchParams, PostParams};
use rein::manager::webhook::{
    AdmissionError, CustomDefaulter, CustomValidator, GeneratedCertificates, Warnings,
    WebhookServerOptions,
};
use rein::manager::{Manager, Options};
use rein::scheme::Scheme;
use rein::{CustomResource, CustomResourceExt, KubeSchema};
use rein_testenv::TestEnv;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A Gadget's desired state.
#[rein::resource]
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "test.rein.dev", version = "v1", kind = "Gadget", namespaced)]
#[kube(derive = "Default", derive = "PartialEq")]
#[serde(rename_all = "camelCase")]
struct GadgetSpec {
    /// How many; the validator refuses more than 10, the defaulter fills in 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicas: Option<i32>,
    /// The image; the defaulter fills in `nginx:1.27`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    image: String,
}

struct Defaulter;

#[async_trait]
impl CustomDefaulter<Gadget> for Defaulter {
    async fn default(&self, g: &mut Gadget) -> Result<(), AdmissionError> {
        g.spec.replicas.get_or_insert(1);
        if g.spec.image.is_empty() {
            g.spec.image = "nginx:1.27".into();
        }
        g.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("defaulted-by".into(), "rein".into());
        Ok(())
    }
}

struct Validator;

impl Validator {
    fn check(g: &Gadget) -> Result<Warnings, AdmissionError> {
        let replicas = g.spec.replicas.unwrap_or(1);
        if replicas > 10 {
            return Err(AdmissionError::denied(format!(
                "spec.replicas must be at most 10, got {replicas}"
            )));
        }
        if g.spec.image.contains(':') {
            Ok(Vec::new())
        } else {
            Ok(vec![format!("spec.image {:?} has no tag", g.spec.image)])
        }
    }
}

#[async_trait]
impl CustomValidator<Gadget> for Validator {
    async fn validate_create(&self, g: &Gadget) -> Result<Warnings, AdmissionError> {
        Self::check(g)
    }
    async fn validate_update(
        &self,
        _old: &Gadget,
        new: &Gadget,
    ) -> Result<Warnings, AdmissionError> {
        Self::check(new)
    }
}

fn gadget(name: &str, spec: GadgetSpec) -> Gadget {
    let mut g = Gadget::new(name, spec);
    g.metadata.namespace = Some("default".into());
    g
}

#[tokio::test]
async fn testenv_calls_the_managers_webhooks_and_denies_with_their_message() {
    let env = TestEnv::start().await.expect("testenv starts");
    let kube = env.client();
    rein::client::crd::install(
        &rein::client::Client::new(kube.clone()),
        &Gadget::crd(),
        Duration::from_secs(30),
    )
    .await
    .expect("the CRD is established");

    let certs = GeneratedCertificates::generate(&["localhost", "127.0.0.1"]).expect("certificates");
    let mut scheme = Scheme::with_builtins();
    scheme.register::<Gadget>();
    let webhook = WebhookServerOptions {
        bind_address: "127.0.0.1:0".parse().expect("an address"),
        cert: certs.cert_source(),
        ..WebhookServerOptions::default()
    };
    let mgr = Manager::builder(env.config())
        .options(Options::default().scheme(Arc::new(scheme)).webhook(webhook))
        .build()
        .await
        .expect("the manager builds");
    let server = mgr.webhook_server().expect("a webhook server");
    let mutate = server
        .register_defaulter::<Gadget, _>(Defaulter)
        .expect("registers the defaulter");
    let validate = server
        .register_validator::<Gadget, _>(Validator)
        .expect("registers the validator");
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;

    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&certs.ca_pem);
    let addr = server.local_addr();
    let rules = json!([{
        "operations": ["CREATE", "UPDATE"], "apiGroups": ["test.rein.dev"],
        "apiVersions": ["v1"], "resources": ["gadgets"],
    }]);
    let hook = |name: &str, path: &str| {
        json!({
            "name": name,
            "clientConfig": {"url": format!("https://{addr}{path}"), "caBundle": ca_bundle},
            "rules": rules,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })
    };
    let configurations = [
        (
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            hook("mgadget.test.rein.dev", &mutate),
        ),
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            hook("vgadget.test.rein.dev", &validate),
        ),
    ];
    for (kind, plural, webhook) in configurations {
        let api: Api<kube_client::core::DynamicObject> = Api::all_with(
            kube.clone(),
            &kube_client::discovery::ApiResource {
                group: "admissionregistration.k8s.io".into(),
                version: "v1".into(),
                api_version: "admissionregistration.k8s.io/v1".into(),
                kind: kind.into(),
                plural: plural.into(),
            },
        );
        let object = serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": "gadgets"},
            "webhooks": [webhook],
        }))
        .expect("a configuration");
        api.create(&PostParams::default(), &object)
            .await
            .expect("the configuration is created");
    }

    let gadgets: Api<Gadget> = Api::namespaced(kube.clone(), "default");
    let created = gadgets
        .create(
            &PostParams::default(),
            &gadget("plain", GadgetSpec::default()),
        )
        .await
        .expect("a plain gadget is admitted");
    assert_eq!(created.spec.replicas, Some(1));
    assert_eq!(created.spec.image, "nginx:1.27");
    let labels = created.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("defaulted-by").map(String::as_str), Some("rein"));
    let stored = gadgets.get("plain").await.expect("stored");
    assert_eq!(stored.spec, created.spec);

    let too_big = GadgetSpec {
        replicas: Some(100),
        image: "busybox".into(),
    };
    let err = gadgets
        .create(&PostParams::default(), &gadget("too-big", too_big))
        .await
        .expect_err("a gadget with 100 replicas is denied");
    let kube_client::Error::Api(status) = err else {
        panic!("not an API error: {err}");
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "admission webhook \"vgadget.test.rein.dev\" denied the request: spec.replicas must be \
         at most 10, got 100"
    );
    assert!(gadgets.get_opt("too-big").await.expect("a read").is_none());

    // An update goes through the webhooks too.
    let err = gadgets
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 11}})),
        )
        .await
        .expect_err("scaling past 10 is denied");
    assert!(err.to_string().contains("got 11"), "{err}");
    assert_eq!(
        gadgets.get("plain").await.expect("stored").spec.replicas,
        Some(1)
    );

    stop.cancel();
    running
        .await
        .expect("the manager task")
        .expect("the manager stops cleanly");
}
