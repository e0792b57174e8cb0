//! A Pod's life in the simulated kubelet as a pure function of the time since the kubelet
//! accepted it: sandbox and image pulls (`start_latency`), the init containers one after the
//! other (sidecars keep running), then the containers, which run until deleted or exit after
//! a while; exits are restarted per `restartPolicy` with the kubelet's back-off (the first
//! restart at once, then `backoff` doubling up to `max_backoff`). [`snapshot`] says what every
//! container is doing at a given moment and when that next changes, so a reconcile can write
//! the status and come back exactly then.

use std::time::Duration;

/// What the containers do once started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    /// Run until the Pod is deleted.
    Forever,
    /// Exit with `code` this long after each start.
    Exit {
        /// How long each run lasts.
        after: Duration,
        /// The exit code.
        code: i32,
    },
}

/// The Pod's `restartPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestartPolicy {
    /// Restart on any exit.
    Always,
    /// Restart on a non-zero exit.
    OnFailure,
    /// Never restart.
    Never,
}

impl RestartPolicy {
    fn restarts(self, code: i32) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => code != 0,
            RestartPolicy::Never => false,
        }
    }
}

/// Everything the timeline needs to know about a Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) start_latency: Duration,
    pub(crate) init_duration: Duration,
    pub(crate) run: Run,
    pub(crate) image_pull_error: bool,
    pub(crate) never_ready: bool,
    pub(crate) restart_policy: RestartPolicy,
    pub(crate) backoff: Duration,
    pub(crate) max_backoff: Duration,
}

/// A finished run, as offsets from acceptance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exited {
    pub(crate) code: i32,
    pub(crate) started: Duration,
    pub(crate) finished: Duration,
}

impl Exited {
    /// The kubelet's reason for the exit.
    pub(crate) fn reason(&self) -> &'static str {
        if self.code == 0 { "Completed" } else { "Error" }
    }
}

/// A container's state at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Not running; `backoff` is set for `CrashLoopBackOff`.
    Waiting {
        reason: &'static str,
        backoff: Option<Duration>,
    },
    /// Running since this offset.
    Running { since: Duration },
    /// Finished.
    Terminated(Exited),
}

/// One container at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Container {
    pub(crate) state: State,
    /// The previous run, once restarted.
    pub(crate) last: Option<Exited>,
    pub(crate) restart_count: i32,
    pub(crate) ready: bool,
    pub(crate) started: bool,
}

impl Container {
    fn waiting(reason: &'static str) -> Container {
        Container {
            state: State::Waiting {
                reason,
                backoff: None,
            },
            last: None,
            restart_count: 0,
            ready: false,
            started: false,
        }
    }

    fn running(since: Duration, ready: bool) -> Container {
        Container {
            state: State::Running { since },
            last: None,
            restart_count: 0,
            ready,
            started: true,
        }
    }

    fn terminated(exited: Exited) -> Container {
        Container {
            state: State::Terminated(exited),
            last: None,
            restart_count: 0,
            ready: false,
            started: false,
        }
    }
}

/// The Pod's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl Phase {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
        }
    }
}

/// Everything at one moment, and when it next changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) phase: Phase,
    /// The sandbox exists: the Pod has its IP (`PodReadyToStartContainers`).
    pub(crate) sandbox: bool,
    /// Every regular init container has succeeded.
    pub(crate) initialized: bool,
    pub(crate) init: Vec<Container>,
    pub(crate) containers: Vec<Container>,
    /// The offset of the next change, if any.
    pub(crate) next: Option<Duration>,
}

/// The back-off before the restart after run `run` (0-based): none after the first, then
/// `base` doubling, capped.
fn backoff(plan: &Plan, run: u32) -> Duration {
    if run == 0 {
        return Duration::ZERO;
    }
    let factor = 1u32.checked_shl(run - 1).unwrap_or(u32::MAX);
    plan.backoff
        .checked_mul(factor)
        .unwrap_or(plan.max_backoff)
        .min(plan.max_backoff)
}

/// The containers at `t`, having started at `start`.
fn main_containers(
    plan: &Plan,
    start: Duration,
    t: Duration,
) -> (Container, Phase, Option<Duration>) {
    let (after, code) = match plan.run {
        Run::Forever => {
            return (
                Container::running(start, !plan.never_ready),
                Phase::Running,
                None,
            );
        }
        Run::Exit { after, code } => (after, code),
    };
    let restarts = plan.restart_policy.restarts(code);
    let mut run: u32 = 0;
    let mut run_start = start;
    let mut last: Option<Exited> = None;
    let mut steps = 0;
    loop {
        let end = run_start.saturating_add(after);
        if t < end {
            let mut c = Container::running(run_start, !plan.never_ready);
            c.last = last;
            c.restart_count = i32::try_from(run).unwrap_or(i32::MAX);
            return (c, Phase::Running, Some(end));
        }
        let exited = Exited {
            code,
            started: run_start,
            finished: end,
        };
        if !restarts {
            let mut c = Container::terminated(exited);
            c.last = last;
            c.restart_count = i32::try_from(run).unwrap_or(i32::MAX);
            let phase = if code == 0 {
                Phase::Succeeded
            } else {
                Phase::Failed
            };
            return (c, phase, None);
        }
        let wait = backoff(plan, run);
        let next_start = end.saturating_add(wait);
        if t < next_start {
            let c = Container {
                state: State::Waiting {
                    reason: "CrashLoopBackOff",
                    backoff: Some(wait),
                },
                last: Some(exited),
                restart_count: i32::try_from(run).unwrap_or(i32::MAX),
                ready: false,
                started: false,
            };
            return (c, Phase::Running, Some(next_start));
        }
        last = Some(exited);
        run = run.saturating_add(1);
        run_start = next_start;
        // Once the back-off is capped every cycle is the same length: jump over whole ones.
        if wait == plan.max_backoff && !wait.is_zero() {
            let period = after.saturating_add(wait);
            let ahead = t.saturating_sub(run_start);
            let skip = (ahead.as_nanos() / period.as_nanos().max(1)).saturating_sub(1);
            let skip = u32::try_from(skip).unwrap_or(u32::MAX / 2);
            if skip > 0 {
                run_start = run_start.saturating_add(period.saturating_mul(skip));
                run = run.saturating_add(skip);
                last = Some(Exited {
                    code,
                    started: run_start.saturating_sub(period),
                    finished: run_start.saturating_sub(wait),
                });
            }
        }
        steps += 1;
        if steps > MAX_STEPS {
            // Only a zero back-off gets here (the configuration refuses one): stop counting.
            let mut c = Container::running(run_start, !plan.never_ready);
            c.last = last;
            c.restart_count = i32::try_from(run).unwrap_or(i32::MAX);
            return (c, Phase::Running, None);
        }
    }
}

/// More restarts than the back-off needs to reach its cap (it doubles) plus the jump over
/// capped cycles.
const MAX_STEPS: u32 = 256;

/// What the Pod looks like `t` after acceptance; `sidecars[i]` says whether init container
/// `i` is a sidecar (`restartPolicy: Always`); `containers` is how many regular ones it has.
pub(crate) fn snapshot(plan: &Plan, sidecars: &[bool], containers: usize, t: Duration) -> Snapshot {
    let has_init = !sidecars.is_empty();
    let default_wait = if has_init {
        "PodInitializing"
    } else {
        "ContainerCreating"
    };
    let pending = |init: Vec<Container>, next: Option<Duration>, sandbox: bool| Snapshot {
        phase: Phase::Pending,
        sandbox,
        initialized: !has_init,
        init,
        containers: vec![Container::waiting(default_wait); containers],
        next,
    };
    let start = plan.start_latency;
    if t < start {
        return pending(
            vec![Container::waiting(default_wait); sidecars.len()],
            Some(start),
            false,
        );
    }
    if plan.image_pull_error {
        let pull_failed = start.saturating_add(plan.backoff);
        let (reason, next) = if t < pull_failed {
            ("ErrImagePull", Some(pull_failed))
        } else {
            ("ImagePullBackOff", None)
        };
        let mut snap = pending(
            vec![Container::waiting(default_wait); sidecars.len()],
            next,
            true,
        );
        match snap.init.first_mut() {
            Some(first) => *first = Container::waiting(reason),
            None => snap.containers = vec![Container::waiting(reason); containers],
        }
        return snap;
    }

    // Init containers, one after the other.
    let mut init = Vec::with_capacity(sidecars.len());
    let mut at = start;
    let mut next = None;
    for &sidecar in sidecars {
        if t < at {
            init.push(Container::waiting("PodInitializing"));
            continue;
        }
        if sidecar {
            init.push(Container::running(at, true));
            continue;
        }
        let end = at.saturating_add(plan.init_duration);
        if t < end {
            init.push(Container::running(at, false));
            next.get_or_insert(end);
        } else {
            let mut done = Container::terminated(Exited {
                code: 0,
                started: at,
                finished: end,
            });
            done.ready = true;
            init.push(done);
        }
        at = end;
    }
    if t < at {
        return pending(init, next, true);
    }

    let (container, phase, next) = main_containers(plan, at, t);
    if matches!(phase, Phase::Succeeded | Phase::Failed) {
        // The kubelet stops the sidecars once the regular containers are done.
        let finished = match container.state {
            State::Terminated(e) => e.finished,
            _ => t,
        };
        for c in init.iter_mut() {
            if let State::Running { since } = c.state {
                *c = Container::terminated(Exited {
                    code: 0,
                    started: since,
                    finished,
                });
            }
        }
    }
    Snapshot {
        phase,
        sandbox: true,
        initialized: true,
        init,
        containers: vec![container; containers],
        next,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn plan(run: Run, restart_policy: RestartPolicy) -> Plan {
        Plan {
            start_latency: s(1),
            init_duration: s(2),
            run,
            image_pull_error: false,
            never_ready: false,
            restart_policy,
            backoff: s(10),
            max_backoff: s(40),
        }
    }

    #[test]
    fn init_containers_run_first_then_the_containers() {
        let p = plan(Run::Forever, RestartPolicy::Always);
        let at = |t| snapshot(&p, &[false, false], 1, t);
        let before = at(Duration::ZERO);
        assert_eq!(before.phase, Phase::Pending);
        assert!(!before.sandbox);
        assert_eq!(before.next, Some(s(1)));
        assert_eq!(
            before.containers[0].state,
            State::Waiting {
                reason: "PodInitializing",
                backoff: None
            }
        );
        let first = at(s(2));
        assert_eq!(first.init[0].state, State::Running { since: s(1) });
        assert!(matches!(first.init[1].state, State::Waiting { .. }));
        assert_eq!(first.next, Some(s(3)));
        let second = at(s(4));
        assert!(matches!(second.init[0].state, State::Terminated(e) if e.reason() == "Completed"));
        assert!(second.init[0].ready);
        assert_eq!(second.init[1].state, State::Running { since: s(3) });
        assert!(!second.initialized);
        let running = at(s(6));
        assert_eq!(running.phase, Phase::Running);
        assert!(running.initialized);
        assert_eq!(running.containers[0].state, State::Running { since: s(5) });
        assert!(running.containers[0].ready);
        assert_eq!(running.next, None);
    }

    #[test]
    fn an_exit_without_restart_ends_the_pod() {
        let p = plan(
            Run::Exit {
                after: s(3),
                code: 2,
            },
            RestartPolicy::Never,
        );
        let done = snapshot(&p, &[], 2, s(10));
        assert_eq!(done.phase, Phase::Failed);
        assert_eq!(
            done.containers[1].state,
            State::Terminated(Exited {
                code: 2,
                started: s(1),
                finished: s(4)
            })
        );
        let ok = plan(
            Run::Exit {
                after: s(3),
                code: 0,
            },
            RestartPolicy::OnFailure,
        );
        assert_eq!(snapshot(&ok, &[], 1, s(10)).phase, Phase::Succeeded);
    }

    #[test]
    fn crashes_back_off_doubling() {
        // Runs of 1 s starting at 1 s: run 0 [1,2), restart at once: run 1 [2,3), back-off
        // 10 s: run 2 [13,14), back-off 20 s: run 3 [34,35), then 40 s each.
        let p = plan(
            Run::Exit {
                after: s(1),
                code: 1,
            },
            RestartPolicy::Always,
        );
        let at = |t| snapshot(&p, &[], 1, t).containers[0];
        assert_eq!(at(Duration::from_millis(1500)).restart_count, 0);
        let second = at(Duration::from_millis(2500));
        assert_eq!(second.restart_count, 1);
        assert_eq!(second.state, State::Running { since: s(2) });
        assert_eq!(second.last.map(|l| l.finished), Some(s(2)));
        let backing_off = at(s(5));
        assert_eq!(
            backing_off.state,
            State::Waiting {
                reason: "CrashLoopBackOff",
                backoff: Some(s(10))
            }
        );
        assert_eq!(backing_off.restart_count, 1);
        assert!(!backing_off.ready);
        assert_eq!(snapshot(&p, &[], 1, s(5)).next, Some(s(13)));
        assert_eq!(snapshot(&p, &[], 1, s(5)).phase, Phase::Running);
        assert_eq!(at(Duration::from_millis(13_500)).restart_count, 2);
        assert_eq!(
            at(s(20)).state,
            State::Waiting {
                reason: "CrashLoopBackOff",
                backoff: Some(s(20))
            }
        );
        // Capped: run 4 starts at 75, run 5 at 116, run n at 75 + 41 (n - 4).
        let late = at(s(75 + 41 * 100) + Duration::from_millis(500));
        assert_eq!(late.restart_count, 104);
        assert_eq!(
            late.state,
            State::Running {
                since: s(75 + 41 * 100)
            }
        );
        assert_eq!(late.last.map(|l| l.finished), Some(s(75 + 41 * 99 + 1)));
    }

    #[test]
    fn image_pulls_fail_then_back_off() {
        let mut p = plan(Run::Forever, RestartPolicy::Always);
        p.image_pull_error = true;
        let early = snapshot(&p, &[], 1, s(2));
        assert_eq!(early.phase, Phase::Pending);
        assert_eq!(
            early.containers[0].state,
            State::Waiting {
                reason: "ErrImagePull",
                backoff: None
            }
        );
        let late = snapshot(&p, &[false], 1, s(20));
        assert_eq!(
            late.init[0].state,
            State::Waiting {
                reason: "ImagePullBackOff",
                backoff: None
            }
        );
        assert_eq!(late.next, None);
    }

    #[test]
    fn sidecars_keep_running_until_the_pod_ends() {
        let p = plan(
            Run::Exit {
                after: s(1),
                code: 0,
            },
            RestartPolicy::Never,
        );
        let running = snapshot(&p, &[true, false], 1, s(3));
        assert_eq!(running.init[0].state, State::Running { since: s(1) });
        assert!(running.init[0].ready);
        let done = snapshot(&p, &[true, false], 1, s(10));
        assert_eq!(done.phase, Phase::Succeeded);
        assert!(matches!(done.init[0].state, State::Terminated(_)));
    }
}
