//! The soak's watchdog: an overall deadline and a stall timeout (no write, round or check
//! finished for that long). When either passes, the soak stops and reports what everything is
//! waiting on: the writer's writes in flight, the requests the server holds, each informer's
//! step and each controller's queue.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rein::manager::Manager;

use super::Queues;
use super::controllers::lock;
use super::server::Server;

/// What the soak is doing, for the watchdog and its report.
#[derive(Debug)]
pub(crate) struct Progress {
    started: Instant,
    state: Mutex<State>,
    next_op: AtomicU64,
    /// The writer's writes in flight: id → (the write, when it started, attempts so far).
    writes: Mutex<BTreeMap<u64, (String, Instant, usize)>>,
    /// Set once built, for the report.
    manager: Mutex<Option<(Manager, Queues)>>,
}

#[derive(Debug)]
struct State {
    phase: String,
    last_progress: Instant,
}

impl Default for Progress {
    fn default() -> Self {
        let now = Instant::now();
        Progress {
            started: now,
            state: Mutex::new(State {
                phase: "starting".into(),
                last_progress: now,
            }),
            next_op: AtomicU64::new(0),
            writes: Mutex::new(BTreeMap::new()),
            manager: Mutex::new(None),
        }
    }
}

impl Progress {
    /// Enters a new phase (counts as progress).
    pub(crate) fn phase(&self, phase: impl Into<String>) {
        let mut s = lock(&self.state);
        s.phase = phase.into();
        s.last_progress = Instant::now();
    }

    /// Something finished: a write, a round, a check.
    pub(crate) fn tick(&self) {
        lock(&self.state).last_progress = Instant::now();
    }

    /// Records the manager and its controllers' queues for the report.
    pub(crate) fn manager(&self, mgr: &Manager, queues: &Queues) {
        *lock(&self.manager) = Some((mgr.clone(), queues.clone()));
    }

    /// Forgets the manager (so it can stop and drop).
    pub(crate) fn forget_manager(&self) {
        lock(&self.manager).take();
    }

    /// Records a write in flight until the returned guard drops.
    pub(crate) fn write(self: &Arc<Self>, op: String) -> WriteInFlight {
        let id = self.next_op.fetch_add(1, Ordering::Relaxed);
        lock(&self.writes).insert(id, (op, Instant::now(), 0));
        WriteInFlight {
            progress: self.clone(),
            id,
        }
    }

    /// Waits until the deadline passes or nothing progressed for `stall`; answers why.
    pub(crate) async fn watch(&self, deadline: Duration, stall: Duration) -> String {
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let (phase, idle) = {
                let s = lock(&self.state);
                (s.phase.clone(), s.last_progress.elapsed())
            };
            if self.started.elapsed() >= deadline {
                return format!("the soak's deadline of {deadline:?} passed during {phase}");
            }
            if idle >= stall {
                return format!("nothing progressed for {idle:.1?} during {phase}");
            }
        }
    }

    /// What everything is waiting on now.
    pub(crate) fn report(&self, server: &Server, manager_tasks: usize) -> String {
        let mut out = String::new();
        let now = Instant::now();
        let writes = lock(&self.writes);
        let _ = writeln!(out, "  writer: {} write(s) in flight", writes.len());
        for (op, since, attempts) in writes.values().take(12) {
            let _ = writeln!(
                out,
                "    {op}: {:.1?} since it started, {attempts} failed attempt(s)",
                now.saturating_duration_since(*since)
            );
        }
        drop(writes);
        let held = server.requests_in_flight();
        let _ = writeln!(
            out,
            "  server: {} request(s) received and not answered; {} injected error answer(s) \
             pending",
            held.len(),
            server.faults().pending()
        );
        for r in held.iter().take(12) {
            let _ = writeln!(out, "    {r}");
        }
        match &*lock(&self.manager) {
            None => {
                let _ = writeln!(out, "  manager: not built yet");
            }
            Some((mgr, queues)) => {
                let _ = writeln!(out, "  manager: {manager_tasks} task(s) alive");
                for (kind, status) in mgr.cache().informer_statuses() {
                    let _ = writeln!(out, "    informer {kind}: {status}");
                }
                for (name, queue) in queues {
                    let _ = writeln!(
                        out,
                        "    controller {name}: {} queued, {} in flight",
                        queue.len(),
                        queue.in_flight()
                    );
                }
            }
        }
        out
    }
}

/// One write in flight; dropping it (done, or given up) removes it.
#[derive(Debug)]
pub(crate) struct WriteInFlight {
    progress: Arc<Progress>,
    id: u64,
}

impl WriteInFlight {
    /// Counts a failed attempt.
    pub(crate) fn failed_attempt(&self) {
        if let Some(w) = lock(&self.progress.writes).get_mut(&self.id) {
            w.2 += 1;
        }
    }
}

impl Drop for WriteInFlight {
    fn drop(&mut self) {
        lock(&self.progress.writes).remove(&self.id);
        self.progress.tick();
    }
}
