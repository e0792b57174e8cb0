//! kube's `RealPodControl`: creating Pods from a template and deleting them on behalf of a
//! controller, recording `SuccessfulCreate`/`FailedCreate`/`SuccessfulDelete`/`FailedDelete`
//! events on the controller's object; and `slowStartBatch`.

use std::future::Future;

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use rein_client::controllerutil::set_controller_reference;
use rein_client::{Client, DeleteParams, PostParams};
use rein_controller::recorder::EventRecorder;
use rein_scheme::{Object, ObjectKey};

use super::Error;
use super::claim::describe;
use super::pods::{controller_of, from_template};

/// `SlowStartInitialBatchSize`: the first batch of creates has one Pod.
pub(crate) const SLOW_START_INITIAL_BATCH_SIZE: usize = 1;

/// Creates and deletes Pods for a controller, with its events.
#[derive(Clone, Debug)]
pub(crate) struct PodControl {
    /// The manager's client.
    pub(crate) client: Client,
    /// The controller's recorder.
    pub(crate) recorder: EventRecorder,
}

impl PodControl {
    /// `CreatePodsWithGenerateName`: a Pod from `template`, controlled by `owner`, named from
    /// `prefix`. A namespace being deleted is not an error (nothing can be created there).
    pub(crate) async fn create<O: Object>(
        &self,
        template: &PodTemplateSpec,
        owner: &O,
        prefix: String,
    ) -> Result<(), Error> {
        let namespace = owner.meta().namespace.clone().unwrap_or_default();
        let mut probe = Pod::default();
        probe.metadata.namespace = Some(namespace.clone());
        set_controller_reference(owner, &mut probe, self.client.scheme())?;
        let Some(reference) = controller_of(&probe.metadata).cloned() else {
            return Err(Error::Invalid {
                object: describe(owner),
                problem: "no controller reference could be made".into(),
            });
        };
        let pod = from_template(template, &namespace, prefix, reference);
        if pod.metadata.labels.as_ref().is_none_or(|l| l.is_empty()) {
            return Err(Error::Invalid {
                object: describe(owner),
                problem: "unable to create pods, no labels".into(),
            });
        }
        match self.client.create(&pod, &PostParams::default()).await {
            Ok(created) => {
                let name = created.metadata.name.unwrap_or_default();
                self.recorder
                    .normal(owner, "SuccessfulCreate", &format!("Created pod: {name}"));
                Ok(())
            }
            Err(err) if namespace_terminating(&err) => Ok(()),
            Err(err) => {
                self.recorder
                    .warning(owner, "FailedCreate", &format!("Error creating: {err}"));
                Err(err.into())
            }
        }
    }

    /// `DeletePod`: deletes the Pod `name` of `owner`'s namespace. Not found is an error the
    /// caller may ignore (no event).
    pub(crate) async fn delete<O: Object>(
        &self,
        name: &str,
        owner: &O,
    ) -> Result<(), rein_client::Error> {
        let namespace = owner.meta().namespace.clone().unwrap_or_default();
        let key = ObjectKey::new(namespace, name);
        match self
            .client
            .delete::<Pod>(&key, &DeleteParams::default())
            .await
        {
            Ok(()) => {
                self.recorder
                    .normal(owner, "SuccessfulDelete", &format!("Deleted pod: {name}"));
                Ok(())
            }
            Err(err) if err.is_not_found() => Err(err),
            Err(err) => {
                self.recorder
                    .warning(owner, "FailedDelete", &format!("Error deleting: {err}"));
                Err(err)
            }
        }
    }
}

/// Whether the create failed because the namespace is being deleted
/// (`NamespaceTerminatingCause`).
fn namespace_terminating(err: &rein_client::Error) -> bool {
    err.status().is_some_and(|s| {
        s.details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
            || s.message.contains("because it is being terminated")
    })
}

/// `slowStartBatch`: calls `f` `count` times in batches of 1, 2, 4, … run concurrently,
/// stopping after the first batch with a failure. Returns the successes and the first error.
pub(crate) async fn slow_start_batch<F, Fut>(
    count: usize,
    initial: usize,
    f: F,
) -> (usize, Option<Error>)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), Error>>,
{
    let mut remaining = count;
    let mut successes = 0;
    let mut batch = remaining.min(initial);
    while batch > 0 {
        let results = futures::future::join_all((0..batch).map(|_| f())).await;
        let mut first_error = None;
        for result in results {
            match result {
                Ok(()) => successes += 1,
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        if first_error.is_some() {
            return (successes, first_error);
        }
        remaining -= batch;
        batch = remaining.min(2 * batch);
    }
    (successes, None)
}
