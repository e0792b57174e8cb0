//! A channel source fed by a timer (never blocking when full), a predicate that keeps only generic events (with_event_filter), watches(Channel{buffer: 1}, EnqueueRequestForObject), and the setup_with_manager pattern (Go original: controller-runtime pkg/source example_test.go ExampleChannel with predicate.Funcs).
// smoke-args: --quick
// smoke-expect: generic event reconciled: default/tick
// smoke-expect: channel_source finished

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube_client::api::ObjectMeta;
use rein::controller::event::GenericEvent;
use rein::controller::handler::EnqueueRequestForObject;
use rein::controller::predicate::MetaFuncs;
use rein::controller::source::Channel;
use rein::controller::{Action, Context, Controller, ControllerManagedBy, Reconciler, Request};
use rein::manager::Manager;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Reconciles whatever the ticker asks for.
struct TickReconciler {
    reconciled: Arc<Notify>,
}

#[async_trait::async_trait]
impl Reconciler for TickReconciler {
    type Error = anyhow::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, anyhow::Error> {
        println!("generic event reconciled: {req}");
        self.reconciled.notify_one();
        Ok(Action::done())
    }
}

impl TickReconciler {
    /// The setup_with_manager pattern: the reconciler wires its own watches.
    fn setup_with_manager(
        self,
        mgr: &Manager,
        ticks: mpsc::Receiver<GenericEvent<Pod>>,
    ) -> anyhow::Result<Controller> {
        Ok(ControllerManagedBy::new(mgr)
            .named("ticker")
            .watches_source(Channel::new(ticks).buffer_size(1), EnqueueRequestForObject)
            // Drop create/update/delete, keep generic events.
            .with_event_filter(MetaFuncs::generic_only())
            .complete(self)?)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let quick = rein_examples::quick_mode();
    let (_env, config) = rein_examples::cluster_config(quick).await?;
    let mgr = Manager::builder(config).build().await?;

    let (tx, rx) = mpsc::channel(1);
    let reconciled = Arc::new(Notify::new());
    TickReconciler {
        reconciled: reconciled.clone(),
    }
    .setup_with_manager(&mgr, rx)?;

    let stop = if quick {
        CancellationToken::new()
    } else {
        rein::manager::signals::shutdown_signal()
    };
    // The timer: one generic event per interval; when the channel is full the tick is skipped.
    let ticker_stop = stop.clone();
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                _ = ticker_stop.cancelled() => return,
                _ = interval.tick() => {}
            }
            let tick = Pod {
                metadata: ObjectMeta {
                    name: Some("tick".into()),
                    namespace: Some("default".into()),
                    ..ObjectMeta::default()
                },
                ..Pod::default()
            };
            let _ = tx.try_send(GenericEvent::new(tick));
        }
    });
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    if quick {
        tokio::time::timeout(Duration::from_secs(30), reconciled.notified()).await?;
        stop.cancel();
    }
    running.await??;
    println!("channel_source finished");
    Ok(())
}
