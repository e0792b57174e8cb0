//! kube's orphan-Pod worker of the Job controller (`syncOrphanPod`): a Pod holding the
//! tracking finalizer without a Job that still runs it — no controller, a Job that is gone or
//! finished — has the finalizer removed, so it can be deleted. As kube's `deleteJob` handler
//! does, a Job's deletion enqueues every Pod it controls that still holds the finalizer: the
//! Pods' own events may have been seen while the Job was still in the cache.

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use rein_client::{Client, ListOptions, ignore_not_found};
use rein_controller::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;
use rein_controller::predicate::Predicate;
use rein_controller::{Action, BuildError, Context, ControllerManagedBy, Reconciler, Request};
use rein_manager::Manager;
use rein_scheme::ObjectKey;

use super::{JOB_CONTROLLER_NAME, has_tracking_finalizer, is_finished, remove_tracking_finalizer};
use crate::workloads::Error;
use crate::workloads::pods::controller_of;

/// The cleaner's name.
const NAME: &str = "job-orphan-pod";

/// Adds the orphan Pod cleaner to `mgr`.
pub(super) fn add(mgr: &Manager) -> Result<(), BuildError> {
    let client = mgr.client();
    let pods_of_deleted_job = EnqueueRequestsFromAsyncMapFunc::new(move |job: Arc<Job>| {
        let client = client.clone();
        async move { tracked_pods_of(&client, &job).await }
    });
    ControllerManagedBy::new(mgr)
        .for_with::<Pod>(vec![Arc::new(HoldsTrackingFinalizer)])
        .watches_with::<Job>(pods_of_deleted_job, vec![Arc::new(OnlyDeletes)])
        .named(NAME)
        .with_options(crate::workloads::controller_options())
        .complete(OrphanPods {
            client: mgr.client(),
        })
        .map(|_| ())
}

/// Passes Pods that hold the tracking finalizer.
struct HoldsTrackingFinalizer;

impl Predicate<Pod> for HoldsTrackingFinalizer {
    fn create(&self, e: &CreateEvent<Pod>) -> bool {
        has_tracking_finalizer(&e.object)
    }
    fn update(&self, e: &UpdateEvent<Pod>) -> bool {
        has_tracking_finalizer(&e.object_new)
    }
    fn delete(&self, _: &DeleteEvent<Pod>) -> bool {
        false
    }
}

/// Passes deletions only.
struct OnlyDeletes;

impl Predicate<Job> for OnlyDeletes {
    fn create(&self, _: &CreateEvent<Job>) -> bool {
        false
    }
    fn update(&self, _: &UpdateEvent<Job>) -> bool {
        false
    }
    fn delete(&self, _: &DeleteEvent<Job>) -> bool {
        true
    }
    fn generic(&self, _: &GenericEvent<Job>) -> bool {
        false
    }
}

/// The Pods `job` controls that still hold the tracking finalizer.
async fn tracked_pods_of(client: &Client, job: &Job) -> Vec<Request> {
    let (Some(namespace), Some(uid)) = (
        job.metadata.namespace.as_deref(),
        job.metadata.uid.as_deref(),
    ) else {
        return Vec::new();
    };
    let Ok(list) = client
        .list::<Pod>(&ListOptions::default().namespace(namespace))
        .await
    else {
        return Vec::new();
    };
    list.items
        .iter()
        .filter(|pod| {
            has_tracking_finalizer(pod)
                && controller_of(&pod.metadata).is_some_and(|owner| owner.uid == uid)
        })
        .map(|pod| Request::from_object(&**pod))
        .collect()
}

struct OrphanPods {
    client: Client,
}

#[async_trait]
impl Reconciler for OrphanPods {
    type Error = Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Error> {
        let Some(pod) = ignore_not_found(self.client.get::<Pod>(&req.key).await)? else {
            return Ok(Action::done());
        };
        if !has_tracking_finalizer(&pod) {
            return Ok(Action::done());
        }
        if let Some(owner) = controller_of(&pod.metadata) {
            if owner.kind != "Job" || owner.api_version != "batch/v1" {
                // Someone else's Pod: not ours to touch.
                return Ok(Action::done());
            }
            let key = ObjectKey::new(req.namespace().unwrap_or_default(), owner.name.clone());
            let job = ignore_not_found(self.client.get::<Job>(&key).await)?
                .filter(|job| job.metadata.uid.as_deref() == Some(owner.uid.as_str()));
            if let Some(job) = job {
                let managed_elsewhere = job
                    .spec
                    .as_ref()
                    .and_then(|s| s.managed_by.as_deref())
                    .is_some_and(|m| m != JOB_CONTROLLER_NAME);
                if managed_elsewhere || !is_finished(&job) {
                    return Ok(Action::done());
                }
            }
        }
        remove_tracking_finalizer(&self.client, &pod).await?;
        Ok(Action::done())
    }
}
