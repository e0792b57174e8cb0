//! `max_concurrent_reconciles` runs that many reconciles at once, never two for the same key (Go original: controller-runtime controller.Options.MaxConcurrentReconciles and its worker loop).
// smoke-args: --quick
// smoke-expect: most reconciles at once: 3
// smoke-expect: two reconciles of one key at once: never
// smoke-expect: max_concurrent_reconciles finished

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rein::controller::{Action, Controller, ControllerOptions, Request, reconciler_fn};
use rein::manager::Manager;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

const WORKERS: usize = 3;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let quick = rein_examples::quick_mode();
    let (_env, config) = rein_examples::cluster_config(quick).await?;
    let mgr = Manager::builder(config).build().await?;

    let running: Arc<Mutex<HashSet<Request>>> = Arc::default();
    let most = Arc::new(AtomicUsize::new(0));
    let clash = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let (r, m, c, d) = (running.clone(), most.clone(), clash.clone(), done.clone());
    let reconciler = reconciler_fn(move |_ctx, req: Request| {
        let (r, m, c, d) = (r.clone(), m.clone(), c.clone(), d.clone());
        async move {
            {
                let mut set = r.lock().expect("not poisoned");
                if !set.insert(req.clone()) {
                    c.store(true, Ordering::SeqCst);
                }
                m.fetch_max(set.len(), Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            r.lock().expect("not poisoned").remove(&req);
            d.fetch_add(1, Ordering::SeqCst);
            Ok::<_, anyhow::Error>(Action::done())
        }
    });
    let controller = Controller::new(
        "concurrent",
        reconciler,
        ControllerOptions {
            max_concurrent_reconciles: WORKERS,
            ..ControllerOptions::default()
        },
    )?;
    let queue = controller.queue().clone();
    mgr.add(Arc::new(controller))?;

    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    // Three rounds of six keys; each round re-adds keys that may still be reconciling.
    for _round in 0..3 {
        for i in 0..6 {
            queue.add(Request::new("default", format!("item-{i}")));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::timeout(Duration::from_secs(30), async {
        while !(queue.is_empty() && queue.in_flight() == 0 && done.load(Ordering::SeqCst) >= 6) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await?;
    println!("reconciles: {}", done.load(Ordering::SeqCst));
    println!("most reconciles at once: {}", most.load(Ordering::SeqCst));
    println!(
        "two reconciles of one key at once: {}",
        if clash.load(Ordering::SeqCst) {
            "seen"
        } else {
            "never"
        }
    );
    stop.cancel();
    run.await??;
    println!("max_concurrent_reconciles finished");
    Ok(())
}
