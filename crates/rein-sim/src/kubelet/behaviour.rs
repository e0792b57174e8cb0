//! What a Pod's containers do in the simulation: the [`KubeletConfig`](super::KubeletConfig)
//! defaults, overridden per Pod by `sim.rein.dev/...` annotations (see the constants), turned
//! into a [`Plan`] the timeline plays.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use super::KubeletConfig;
use super::timeline::{Plan, RestartPolicy, Run};

/// How long the sandbox and the images take before the first container starts (a Go
/// duration: `500ms`, `2s`, `1m30s`). Default [`KubeletConfig::start_latency`].
pub const START_LATENCY: &str = "sim.rein.dev/start-latency";
/// How long each init container runs before it exits 0. Default
/// [`KubeletConfig::init_container_duration`].
pub const INIT_DURATION: &str = "sim.rein.dev/init-duration";
/// The containers exit this long after they start (a Go duration). Default: they run until
/// the Pod is deleted, or [`KubeletConfig::job_pod_duration`] for Pods owned by a Job.
pub const RUN_FOR: &str = "sim.rein.dev/run-for";
/// The exit code of the containers when they exit (default 0, or 1 with [`CRASH_LOOP`]).
/// With `restartPolicy: Never` a zero code makes the Pod `Succeeded`, any other `Failed`.
pub const EXIT_CODE: &str = "sim.rein.dev/exit-code";
/// `"true"`: the containers crash (exit code 1 unless [`EXIT_CODE`] says otherwise) after
/// [`RUN_FOR`] (default [`KubeletConfig::crash_after`]) each time they start; the Pod's
/// `restartPolicy` decides whether they are restarted, with the kubelet's doubling back-off
/// (`CrashLoopBackOff`).
pub const CRASH_LOOP: &str = "sim.rein.dev/crash-loop";
/// `"true"`: the images never pull; the containers wait with `ErrImagePull`, then
/// `ImagePullBackOff`, and the Pod stays `Pending`.
pub const IMAGE_PULL_ERROR: &str = "sim.rein.dev/image-pull-error";
/// `"true"`: the containers run but never become ready.
pub const NEVER_READY: &str = "sim.rein.dev/never-ready";
/// How long the containers take to stop once the Pod is deleted (a Go duration), at most its
/// grace period. Default: the whole grace period (containers that ignore `SIGTERM`).
pub const TERMINATION_DELAY: &str = "sim.rein.dev/termination-delay";

/// A Pod's plan, and the annotations that could not be read (name, value).
#[derive(Debug)]
pub(crate) struct Planned {
    pub(crate) plan: Plan,
    pub(crate) termination_delay: Option<Duration>,
    pub(crate) invalid: Vec<(String, String)>,
}

/// Parses a Go duration (`time.ParseDuration`): a sequence of decimal numbers, each with a
/// unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`); `0` alone needs none. Negative durations are
/// refused.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(number_end);
        if number.is_empty() || number == "." {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * seconds;
        rest = tail;
    }
    Duration::try_from_secs_f64(total).ok()
}

/// Reads the annotations of `pod` over the defaults of `config`.
pub(crate) fn plan(pod: &Pod, config: &KubeletConfig) -> Planned {
    let empty = BTreeMap::new();
    let annotations = pod.metadata.annotations.as_ref().unwrap_or(&empty);
    let mut invalid = Vec::new();
    let mut duration = |name: &str| -> Option<Duration> {
        let raw = annotations.get(name)?;
        let parsed = parse_duration(raw);
        if parsed.is_none() {
            invalid.push((name.to_owned(), raw.clone()));
        }
        parsed
    };
    let start_latency = duration(START_LATENCY).unwrap_or(config.start_latency);
    let init_duration = duration(INIT_DURATION).unwrap_or(config.init_container_duration);
    let run_for = duration(RUN_FOR);
    let termination_delay = duration(TERMINATION_DELAY);
    let mut flag = |name: &str| -> bool {
        match annotations.get(name).map(String::as_str) {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                invalid.push((name.to_owned(), other.to_owned()));
                false
            }
        }
    };
    let crash_loop = flag(CRASH_LOOP);
    let image_pull_error = flag(IMAGE_PULL_ERROR);
    let never_ready = flag(NEVER_READY);
    let exit_code = match annotations.get(EXIT_CODE) {
        None => None,
        Some(raw) => match raw.trim().parse::<i32>() {
            Ok(code) => Some(code),
            Err(_) => {
                invalid.push((EXIT_CODE.to_owned(), raw.clone()));
                None
            }
        },
    };
    let owned_by_job = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "Job" && o.api_version.starts_with("batch/"));
    let run = if crash_loop {
        Run::Exit {
            after: run_for.unwrap_or(config.crash_after),
            code: exit_code.unwrap_or(1),
        }
    } else if let Some(after) = run_for {
        Run::Exit {
            after,
            code: exit_code.unwrap_or(0),
        }
    } else if owned_by_job {
        Run::Exit {
            after: config.job_pod_duration,
            code: exit_code.unwrap_or(0),
        }
    } else if let Some(code) = exit_code {
        // An exit code alone: exit at once with it.
        Run::Exit {
            after: Duration::ZERO,
            code,
        }
    } else {
        Run::Forever
    };
    let restart_policy = match pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) {
        Some("Never") => RestartPolicy::Never,
        Some("OnFailure") => RestartPolicy::OnFailure,
        _ => RestartPolicy::Always,
    };
    Planned {
        plan: Plan {
            start_latency,
            init_duration,
            run,
            image_pull_error,
            never_ready,
            restart_policy,
            backoff: config.restart_backoff,
            max_backoff: config.max_restart_backoff,
        },
        termination_delay,
        invalid,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube_client::core::ObjectMeta;

    use super::*;

    #[test]
    fn go_durations() {
        let ms = Duration::from_millis;
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_duration("500ms"), Some(ms(500)));
        assert_eq!(parse_duration("2s"), Some(ms(2000)));
        assert_eq!(parse_duration("1.5s"), Some(ms(1500)));
        assert_eq!(parse_duration("1m30s"), Some(ms(90_000)));
        assert_eq!(parse_duration("1h"), Some(ms(3_600_000)));
        assert_eq!(parse_duration("250us"), Some(Duration::from_micros(250)));
        for bad in ["", "5", "s", "-1s", "1x", "1..5s", "1s2", " "] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }

    fn pod(annotations: &[(&str, &str)], restart: Option<&str>, job: bool) -> Pod {
        Pod {
            metadata: ObjectMeta {
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                owner_references: job.then(|| {
                    vec![OwnerReference {
                        api_version: "batch/v1".into(),
                        kind: "Job".into(),
                        name: "j".into(),
                        uid: "u".into(),
                        ..OwnerReference::default()
                    }]
                }),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                restart_policy: restart.map(str::to_owned),
                ..PodSpec::default()
            }),
            status: None,
        }
    }

    #[test]
    fn annotations_override_the_defaults() {
        let config = KubeletConfig::default();
        let plain = plan(&pod(&[], None, false), &config);
        assert_eq!(plain.plan.run, Run::Forever);
        assert_eq!(plain.plan.restart_policy, RestartPolicy::Always);
        let job = plan(&pod(&[], Some("Never"), true), &config);
        assert_eq!(
            job.plan.run,
            Run::Exit {
                after: config.job_pod_duration,
                code: 0
            }
        );
        let failing = plan(
            &pod(&[(RUN_FOR, "2s"), (EXIT_CODE, "3")], Some("Never"), false),
            &config,
        );
        assert_eq!(
            failing.plan.run,
            Run::Exit {
                after: Duration::from_secs(2),
                code: 3
            }
        );
        let crash = plan(&pod(&[(CRASH_LOOP, "true")], None, false), &config);
        assert_eq!(
            crash.plan.run,
            Run::Exit {
                after: config.crash_after,
                code: 1
            }
        );
        let bad = plan(
            &pod(
                &[(START_LATENCY, "soon"), (NEVER_READY, "yes")],
                None,
                false,
            ),
            &config,
        );
        assert_eq!(bad.plan.start_latency, config.start_latency);
        assert!(!bad.plan.never_ready);
        assert_eq!(bad.invalid.len(), 2);
    }
}
