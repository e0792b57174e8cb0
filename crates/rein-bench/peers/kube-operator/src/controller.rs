//! The Backup controller on kube-runtime: for each Backup, a ConfigMap holding its settings and
//! a CronJob running it, both owned by the Backup; a finalizer so the operator sees every
//! deletion; a `Ready` condition; Events. What the scaffold's `controller.rs` does on rein.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, PodSpec, PodTemplateSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube_client::Client;
use kube_client::api::{Api, Patch, PatchParams, PostParams};
use kube_core::{Resource, ResourceExt as _};
use kube_runtime::controller::{Action, Controller};
use kube_runtime::events::{Event, EventType, Recorder, Reporter};
use kube_runtime::finalizer::{self, Event as FinalizerEvent, finalizer};
use kube_runtime::watcher;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::Backup;
use crate::metrics::Metrics;

/// The controller's name: in its metrics, logs and Events.
pub const CONTROLLER_NAME: &str = "backup";

/// The finalizer the controller keeps on every live Backup.
pub const FINALIZER: &str = "kube-operator-peer.example.com/cleanup";

/// The condition type the controller maintains.
pub const READY: &str = "Ready";

/// What a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube_client::Error),
    /// An object would not serialise.
    #[error("serialising: {0}")]
    Json(#[from] serde_json::Error),
    /// Adding or removing the finalizer failed, or the reconcile inside it did.
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),
    /// The Backup came without a namespace or a uid.
    #[error("the Backup has no {0}")]
    Incomplete(&'static str),
    /// The child object is controlled by something else.
    #[error("{kind} {name} is already controlled by {owner}")]
    AlreadyOwned {
        /// The child's kind.
        kind: &'static str,
        /// The child's name.
        name: String,
        /// The name of the other controller.
        owner: String,
    },
}

/// What every reconcile shares.
pub struct Context {
    client: Client,
    recorder: Recorder,
    metrics: Arc<Metrics>,
}

/// How a create-or-update went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationResult {
    /// The object did not exist and was created.
    Created,
    /// The object existed and differed; it was replaced.
    Updated,
    /// The object was already as wanted.
    Unchanged,
}

/// Runs the Backup controller until `shutdown` resolves and the reconciles in flight finish.
pub async fn run(
    client: Client,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let reporter = Reporter {
        controller: CONTROLLER_NAME.to_owned(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let context = Arc::new(Context {
        recorder: Recorder::new(client.clone(), reporter),
        client: client.clone(),
        metrics,
    });
    Controller::new(
        Api::<Backup>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(
        Api::<ConfigMap>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(Api::<CronJob>::all(client), watcher::Config::default())
    .graceful_shutdown_on(shutdown)
    .run(reconcile, error_policy, context)
    .for_each(|result| async move {
        match result {
            Ok((object, _)) => tracing::debug!(%object, "reconciled"),
            // A child's event for a Backup already gone: nothing to do.
            Err(kube_runtime::controller::Error::ObjectNotFound(object)) => {
                tracing::debug!(%object, "the Backup is gone")
            }
            Err(error) => tracing::warn!(%error, "reconcile failed"),
        }
    })
    .await;
}

/// Reconciles one Backup and counts it in the metrics.
async fn reconcile(backup: Arc<Backup>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = reconcile_with_finalizer(backup, &ctx).await;
    ctx.metrics
        .observe_reconcile(CONTROLLER_NAME, result.is_ok(), started.elapsed());
    result
}

async fn reconcile_with_finalizer(backup: Arc<Backup>, ctx: &Context) -> Result<Action, Error> {
    let namespace = backup.namespace().ok_or(Error::Incomplete("namespace"))?;
    let backups: Api<Backup> = Api::namespaced(ctx.client.clone(), &namespace);
    finalizer(&backups, FINALIZER, backup, |event| async move {
        match event {
            FinalizerEvent::Apply(backup) => apply(&backup, ctx).await,
            FinalizerEvent::Cleanup(backup) => cleanup(&backup, ctx).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

/// Retries a failed reconcile after a pause.
fn error_policy(backup: Arc<Backup>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(backup = %backup.name_any(), %error, "requeueing");
    Action::requeue(Duration::from_secs(5))
}

/// Brings the ConfigMap, the CronJob and the status in line with the Backup.
async fn apply(backup: &Backup, ctx: &Context) -> Result<Action, Error> {
    let name = backup.name_any();
    let namespace = backup.namespace().ok_or(Error::Incomplete("namespace"))?;
    let owner = backup
        .controller_owner_ref(&())
        .ok_or(Error::Incomplete("uid"))?;
    let config_name = format!("{name}-config");

    let configs: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let config = ConfigMap {
        metadata: owned_meta(backup, &config_name),
        ..ConfigMap::default()
    };
    let config_result = create_or_update(&configs, config, |cm| {
        cm.data = Some(BTreeMap::from([
            ("schedule".to_owned(), backup.spec.schedule.clone()),
            ("paths".to_owned(), backup.spec.paths.join("\n")),
        ]));
        set_controller_reference("ConfigMap", &mut cm.metadata, &owner)
    })
    .await?;

    let crons: Api<CronJob> = Api::namespaced(ctx.client.clone(), &namespace);
    let cron = CronJob {
        metadata: owned_meta(backup, &name),
        ..CronJob::default()
    };
    let cron_result = create_or_update(&crons, cron, |cj| {
        cj.spec = Some(cron_spec(backup, &config_name));
        set_controller_reference("CronJob", &mut cj.metadata, &owner)
    })
    .await?;

    if config_result != OperationResult::Unchanged || cron_result != OperationResult::Unchanged {
        publish(
            ctx,
            backup,
            "Reconciled",
            format!("ConfigMap {config_result:?}, CronJob {cron_result:?}"),
        )
        .await;
    }
    set_ready(backup, ctx).await?;
    Ok(Action::await_change())
}

/// Runs before the Backup goes: its ConfigMap and CronJob go with it (they are owned), so only
/// the Event is left to write.
async fn cleanup(backup: &Backup, ctx: &Context) -> Result<Action, Error> {
    publish(
        ctx,
        backup,
        "CleanedUp",
        "the Backup is being deleted; its CronJob and ConfigMap go with it".to_owned(),
    )
    .await;
    Ok(Action::await_change())
}

/// Records a Normal Event about `backup`; a failure is logged, not returned.
async fn publish(ctx: &Context, backup: &Backup, reason: &str, note: String) {
    let event = Event {
        type_: EventType::Normal,
        reason: reason.to_owned(),
        note: Some(note),
        action: "Reconcile".to_owned(),
        secondary: None,
    };
    if let Err(error) = ctx.recorder.publish(&event, &backup.object_ref(&())).await {
        tracing::warn!(%error, reason, "recording an Event failed");
    }
}

/// Sets `Ready=True` for the Backup's generation, patching the status only if it changed.
async fn set_ready(backup: &Backup, ctx: &Context) -> Result<(), Error> {
    let mut status = backup.status.clone().unwrap_or_default();
    let changed = set_condition(
        &mut status.conditions,
        Condition {
            type_: READY.to_owned(),
            status: "True".to_owned(),
            reason: "Reconciled".to_owned(),
            message: "the CronJob and its ConfigMap are in place".to_owned(),
            observed_generation: backup.metadata.generation,
            last_transition_time: Time(Timestamp::now()),
        },
    );
    if !changed && status.observed_generation == backup.metadata.generation {
        return Ok(());
    }
    status.observed_generation = backup.metadata.generation;
    let namespace = backup.namespace().ok_or(Error::Incomplete("namespace"))?;
    let backups: Api<Backup> = Api::namespaced(ctx.client.clone(), &namespace);
    let patch = serde_json::json!({ "status": status });
    backups
        .patch_status(
            &backup.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

/// Puts `wanted` into `conditions` (by type); the transition time moves only when the status
/// does. Answers whether anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, wanted: Condition) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == wanted.type_) else {
        conditions.push(wanted);
        return true;
    };
    let mut changed = false;
    if existing.status != wanted.status {
        existing.status = wanted.status;
        existing.last_transition_time = wanted.last_transition_time;
        changed = true;
    }
    if existing.reason != wanted.reason {
        existing.reason = wanted.reason;
        changed = true;
    }
    if existing.message != wanted.message {
        existing.message = wanted.message;
        changed = true;
    }
    if existing.observed_generation != wanted.observed_generation {
        existing.observed_generation = wanted.observed_generation;
        changed = true;
    }
    changed
}

/// Creates `fresh` (after `mutate`) if no object of its name exists; otherwise applies
/// `mutate` to the live object and replaces it if that changed anything.
async fn create_or_update<K>(
    api: &Api<K>,
    fresh: K,
    mutate: impl FnOnce(&mut K) -> Result<(), Error>,
) -> Result<OperationResult, Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    let name = fresh.name_any();
    match api.get_opt(&name).await? {
        None => {
            let mut object = fresh;
            mutate(&mut object)?;
            api.create(&PostParams::default(), &object).await?;
            Ok(OperationResult::Created)
        }
        Some(mut object) => {
            let before = serde_json::to_value(&object)?;
            mutate(&mut object)?;
            if serde_json::to_value(&object)? == before {
                return Ok(OperationResult::Unchanged);
            }
            api.replace(&name, &PostParams::default(), &object).await?;
            Ok(OperationResult::Updated)
        }
    }
}

/// Makes `owner` the controller of the object `meta` belongs to, unless another is.
fn set_controller_reference(
    kind: &'static str,
    meta: &mut ObjectMeta,
    owner: &OwnerReference,
) -> Result<(), Error> {
    let name = meta.name.clone().unwrap_or_default();
    let references = meta.owner_references.get_or_insert_with(Vec::new);
    if let Some(other) = references
        .iter()
        .find(|r| r.controller == Some(true) && r.uid != owner.uid)
    {
        return Err(Error::AlreadyOwned {
            kind,
            name,
            owner: other.name.clone(),
        });
    }
    match references.iter_mut().find(|r| r.uid == owner.uid) {
        Some(existing) => *existing = owner.clone(),
        None => references.push(owner.clone()),
    }
    Ok(())
}

/// The metadata of an object named `name` beside `backup`.
fn owned_meta(backup: &Backup, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: backup.metadata.namespace.clone(),
        ..ObjectMeta::default()
    }
}

/// The CronJob a Backup runs as: the backup image with the ConfigMap mounted at `/config`.
fn cron_spec(backup: &Backup, config_name: &str) -> CronJobSpec {
    let container = Container {
        name: "backup".to_owned(),
        image: Some(backup.spec.image.clone()),
        command: Some(vec![
            "sh".to_owned(),
            "-c".to_owned(),
            "cat /config/paths".to_owned(),
        ]),
        volume_mounts: Some(vec![VolumeMount {
            name: "config".to_owned(),
            mount_path: "/config".to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    };
    let pod = PodSpec {
        containers: vec![container],
        restart_policy: Some("OnFailure".to_owned()),
        volumes: Some(vec![Volume {
            name: "config".to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: config_name.to_owned(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        }]),
        ..PodSpec::default()
    };
    CronJobSpec {
        schedule: backup.spec.schedule.clone(),
        job_template: JobTemplateSpec {
            spec: Some(JobSpec {
                template: PodTemplateSpec {
                    spec: Some(pod),
                    ..PodTemplateSpec::default()
                },
                ..JobSpec::default()
            }),
            ..JobTemplateSpec::default()
        },
        ..CronJobSpec::default()
    }
}
