//! Read-your-own-writes through a manager, the entry point users use: a controller that
//! writes an object's status and reconciles it again at once sees its own status write, even
//! while the cache's watch is held back (fault injection); with the option off it does not.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube_client::core::ObjectMeta;
use rein::client::{Client, ClientOptions, Patch, PatchParams, PostParams, ReadYourWrites};
use rein::controller::{Action, Context, ControllerManagedBy, Reconciler, Request};
use rein::manager::{Manager, Options};
use rein::scheme::ObjectKey;
use rein_testenv::{Fault, Faults, TestEnv};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long any one wait in these tests may take.
const WAIT: Duration = Duration::from_secs(30);

/// What the reconciler reports to the test.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// The second reconcile is about to read the pod.
    ReadingAgain,
    /// What the second reconcile read in the pod's status message.
    Saw(Option<String>),
}

/// First reconcile: holds the cache's pod watch back, writes `status.message = "written"`,
/// asks to run again. Second reconcile: reads the pod and reports its status message.
struct WritesThenReads {
    client: Client,
    faults: Faults,
    calls: AtomicUsize,
    steps: mpsc::UnboundedSender<Step>,
}

#[async_trait]
impl Reconciler for WritesThenReads {
    type Error = rein::client::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Self::Error> {
        match self.calls.fetch_add(1, Ordering::SeqCst) {
            0 => {
                self.client.get::<Pod>(&req.key).await?;
                // From here the cache sees no pod change until the test lets it.
                self.faults
                    .inject(Fault::server_error(100_000).matching("/api/v1/pods"));
                self.faults.close_watches();
                let patch = Patch::Merge(serde_json::json!({"status": {"message": "written"}}));
                self.client
                    .status()
                    .patch::<Pod, _>(&req.key, &patch, &PatchParams::default())
                    .await?;
                Ok(Action::requeue())
            }
            1 => {
                let _ = self.steps.send(Step::ReadingAgain);
                let pod = self.client.get::<Pod>(&req.key).await?;
                let message = pod.status.as_ref().and_then(|s| s.message.clone());
                let _ = self.steps.send(Step::Saw(message));
                Ok(Action::done())
            }
            _ => Ok(Action::done()),
        }
    }
}

/// Runs the controller with `ryow` and returns what its second reconcile saw. The watch is
/// released when the second reconcile starts reading (`release_early`) or after it has read.
async fn second_reconcile_sees(
    name: &str,
    ryow: ReadYourWrites,
    release_early: bool,
) -> Option<String> {
    let env = TestEnv::start().await.unwrap();
    let mgr = Manager::builder(env.config())
        .options(Options::default().client(ClientOptions::default().read_your_writes(ryow)))
        .build()
        .await
        .unwrap();
    let (tx, mut steps) = mpsc::unbounded_channel();
    ControllerManagedBy::new(&mgr)
        .named(name)
        .for_::<Pod>()
        .complete(WritesThenReads {
            client: mgr.client(),
            faults: env.faults(),
            calls: AtomicUsize::new(0),
            steps: tx,
        })
        .unwrap();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    let pod = Pod {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some("p".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    Client::new(env.client())
        .create(&pod, &PostParams::default())
        .await
        .unwrap();

    let next = async |steps: &mut mpsc::UnboundedReceiver<Step>| {
        tokio::time::timeout(WAIT, steps.recv())
            .await
            .expect("the controller reports in time")
            .expect("the controller runs")
    };
    assert_eq!(next(&mut steps).await, Step::ReadingAgain);
    if release_early {
        env.faults().clear();
    }
    let Step::Saw(message) = next(&mut steps).await else {
        panic!("expected what the second reconcile saw");
    };
    env.faults().clear();
    // The write itself reached the server either way.
    let stored: Arc<Pod> = Client::new(env.client())
        .get(&ObjectKey::new("default", "p"))
        .await
        .unwrap();
    assert_eq!(
        stored
            .status
            .as_ref()
            .and_then(|s| s.message.clone())
            .as_deref(),
        Some("written")
    );
    stop.cancel();
    running.await.unwrap().unwrap();
    message
}

#[tokio::test]
async fn a_controller_reconciling_again_sees_its_own_status_write() {
    let seen =
        second_reconcile_sees("ryow-on", ReadYourWrites::default().timeout(WAIT), true).await;
    assert_eq!(seen.as_deref(), Some("written"));
}

#[tokio::test]
async fn without_read_your_writes_the_second_reconcile_reads_stale() {
    let seen = second_reconcile_sees("ryow-off", ReadYourWrites::disabled(), false).await;
    assert_eq!(seen, None, "the cache had not seen the status write");
}
