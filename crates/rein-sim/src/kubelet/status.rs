//! The Pod status the simulated kubelet writes for a [`Snapshot`]: phase, IPs, start time,
//! QoS class, the container statuses and the conditions as the kubelet's
//! `pkg/kubelet/status/generate.go` words them (`PodReadyToStartContainers`, `Initialized`,
//! `Ready`, `ContainersReady`, `PodScheduled`; `ContainersNotReady`, `PodCompleted`, …).
//!
//! The status starts from the stored one, so fields the simulation does not own survive and
//! an unchanged moment produces an identical status (no write); every time is whole seconds,
//! as the API stores them.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container as ContainerSpec, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::timeline::{Container, Exited, Phase, Snapshot, State};
use crate::nodes::stable_hex;
use crate::scheduler::resources;

/// What, besides the snapshot, goes into one status.
#[derive(Debug)]
pub(crate) struct Inputs<'a> {
    pub(crate) pod: &'a Pod,
    pub(crate) snapshot: &'a Snapshot,
    /// When the kubelet accepted the Pod (offsets count from here).
    pub(crate) accepted: Timestamp,
    pub(crate) now: Timestamp,
    pub(crate) host_ip: &'a str,
    pub(crate) pod_ip: Option<&'a str>,
    /// A NotReady node's containers are not ready.
    pub(crate) node_ready: bool,
}

/// `t`, cut to whole seconds.
pub(crate) fn seconds(t: Timestamp) -> Time {
    Time(Timestamp::from_second(t.as_second()).unwrap_or(t))
}

impl Inputs<'_> {
    fn at(&self, offset: Duration) -> Time {
        let offset = SignedDuration::try_from(offset).unwrap_or(SignedDuration::MAX);
        seconds(self.accepted.checked_add(offset).unwrap_or(self.accepted))
    }

    fn pod_id(&self) -> String {
        let m = &self.pod.metadata;
        format!(
            "{}_{}({})",
            m.name.as_deref().unwrap_or_default(),
            m.namespace.as_deref().unwrap_or_default(),
            m.uid.as_deref().unwrap_or_default()
        )
    }

    fn container_id(&self, name: &str, run: i32) -> String {
        let uid = self.pod.metadata.uid.as_deref().unwrap_or_default();
        format!(
            "containerd://{}",
            stable_hex(&format!("{uid}/{name}/{run}"), 4)
        )
    }
}

/// `image` as the runtime reports it: `nginx` → `docker.io/library/nginx:latest`.
pub(crate) fn normalize_image(image: &str) -> String {
    let (first, _) = image.split_once('/').unwrap_or(("", image));
    let domain_given =
        image.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let mut full = if domain_given {
        image.to_owned()
    } else if image.contains('/') {
        format!("docker.io/{image}")
    } else {
        format!("docker.io/library/{image}")
    };
    let last = full.rsplit('/').next().unwrap_or_default();
    if !last.contains(':') && !last.contains('@') {
        full.push_str(":latest");
    }
    full
}

/// The image's digest reference, `repo@sha256:…` (made up, stable per image).
fn image_id(image: &str) -> String {
    let full = normalize_image(image);
    if full.contains('@') {
        return full;
    }
    let repo = match full.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => full.as_str(),
    };
    format!("{repo}@sha256:{}", stable_hex(&full, 4))
}

/// Go's `time.Duration.String()` for the durations back-off messages show.
fn go_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    let frac = d.subsec_millis();
    let s = if frac == 0 {
        format!("{}s", secs % 60)
    } else {
        let text = format!("{}.{frac:03}", secs % 60);
        format!("{}s", text.trim_end_matches('0'))
    };
    match (secs / 3600, secs / 60 % 60) {
        (0, 0) => s,
        (0, m) => format!("{m}m{s}"),
        (h, m) => format!("{h}h{m}m{s}"),
    }
}

fn terminated(inputs: &Inputs<'_>, name: &str, run: i32, e: &Exited) -> ContainerState {
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            container_id: Some(inputs.container_id(name, run)),
            exit_code: e.code,
            finished_at: Some(inputs.at(e.finished)),
            reason: Some(e.reason().to_owned()),
            started_at: Some(inputs.at(e.started)),
            message: None,
            signal: None,
        }),
        ..ContainerState::default()
    }
}

/// One container's status, over the stored one (`old`).
fn container_status(
    inputs: &Inputs<'_>,
    spec: &ContainerSpec,
    view: &Container,
    old: Option<&ContainerStatus>,
    ready: bool,
) -> ContainerStatus {
    let name = spec.name.as_str();
    let image = spec.image.clone().unwrap_or_default();
    let mut status = old.cloned().unwrap_or_default();
    status.name = name.to_owned();
    status.image = normalize_image(&image);
    status.restart_count = view.restart_count;
    status.ready = ready;
    status.started = Some(view.started);
    let created = !matches!(view.state, State::Waiting { .. }) || view.last.is_some();
    status.image_id = if created {
        image_id(&image)
    } else {
        String::new()
    };
    let (state, container_id) = match view.state {
        State::Waiting { reason, backoff } => {
            let message = match (reason, backoff) {
                ("CrashLoopBackOff", Some(b)) => Some(format!(
                    "back-off {} restarting failed container={name} pod={}",
                    go_duration(b),
                    inputs.pod_id()
                )),
                ("ErrImagePull", _) => Some(format!(
                    "failed to pull and unpack image \"{}\": not found (simulated)",
                    normalize_image(&image)
                )),
                ("ImagePullBackOff", _) => Some(format!("Back-off pulling image \"{image}\"")),
                _ => None,
            };
            let state = ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(reason.to_owned()),
                    message,
                }),
                ..ContainerState::default()
            };
            let id = view
                .last
                .map(|_| inputs.container_id(name, view.restart_count));
            (state, id)
        }
        State::Running { since } => (
            ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(inputs.at(since)),
                }),
                ..ContainerState::default()
            },
            Some(inputs.container_id(name, view.restart_count)),
        ),
        State::Terminated(e) => (
            terminated(inputs, name, view.restart_count, &e),
            Some(inputs.container_id(name, view.restart_count)),
        ),
    };
    status.state = Some(state);
    status.container_id = container_id;
    status.last_state = Some(match &view.last {
        Some(e) => terminated(inputs, name, view.restart_count - 1, e),
        None => ContainerState::default(),
    });
    status
}

/// The statuses of `specs`, in their order.
fn statuses(
    inputs: &Inputs<'_>,
    specs: &[ContainerSpec],
    views: &[Container],
    old: Option<&Vec<ContainerStatus>>,
    regular: bool,
) -> Vec<ContainerStatus> {
    specs
        .iter()
        .zip(views)
        .map(|(spec, view)| {
            let previous = old.and_then(|o| o.iter().find(|s| s.name == spec.name));
            let ready = view.ready && (!regular || inputs.node_ready);
            container_status(inputs, spec, view, previous, ready)
        })
        .collect()
}

/// The QoS class (`qos.GetPodQOS`): `Guaranteed` when every container limits CPU and memory
/// and requests (if given) equal the limits, `BestEffort` when none requests or limits either,
/// else `Burstable`.
pub(crate) fn qos_class(pod: &Pod) -> &'static str {
    let Some(spec) = &pod.spec else {
        return "BestEffort";
    };
    let all: Vec<&ContainerSpec> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .collect();
    let value = |list: Option<&BTreeMap<_, _>>, name: &str| -> Option<i64> {
        let q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity =
            list.and_then(|l: &BTreeMap<String, _>| l.get(name))?;
        resources::parse(&q.0)
            .map(|p| p.milli_value())
            .filter(|v| *v > 0)
    };
    let mut any = false;
    let mut guaranteed = true;
    for c in all {
        let r = c.resources.as_ref();
        let requests = r.and_then(|r| r.requests.as_ref());
        let limits = r.and_then(|r| r.limits.as_ref());
        for name in ["cpu", "memory"] {
            let request = value(requests, name);
            let limit = value(limits, name);
            any |= request.is_some() || limit.is_some();
            match (request, limit) {
                (_, None) => guaranteed = false,
                (Some(req), Some(lim)) if req != lim => guaranteed = false,
                _ => {}
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// `containers with <what> status: [a b]` for the names, Go's `%s` of a `[]string`.
fn names_message(what: &str, names: &[&str]) -> String {
    format!("containers with {what} status: [{}]", names.join(" "))
}

/// The kubelet's conditions, each keeping its `lastTransitionTime` while its status stays.
fn conditions(
    inputs: &Inputs<'_>,
    old: &[PodCondition],
    ready: &[(&str, bool)],
    init_incomplete: &[&str],
) -> Vec<PodCondition> {
    let snap = inputs.snapshot;
    let now = seconds(inputs.now);
    let make = |type_: &str, status: bool, reason: Option<&str>, message: Option<String>| {
        let status = if status { "True" } else { "False" };
        let since = old
            .iter()
            .find(|c| c.type_ == type_ && c.status == status)
            .and_then(|c| c.last_transition_time.clone())
            .unwrap_or_else(|| now.clone());
        PodCondition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.map(str::to_owned),
            message,
            last_transition_time: Some(since),
            last_probe_time: None,
            observed_generation: None,
        }
    };
    let terminal = match snap.phase {
        Phase::Succeeded => Some("PodCompleted"),
        Phase::Failed => Some("PodFailed"),
        _ => None,
    };
    let unready: Vec<&str> = ready.iter().filter(|(_, r)| !r).map(|(n, _)| *n).collect();
    let containers_ready = match terminal {
        Some(reason) => make("ContainersReady", false, Some(reason), None),
        None if unready.is_empty() => make("ContainersReady", true, None, None),
        None => make(
            "ContainersReady",
            false,
            Some("ContainersNotReady"),
            Some(names_message("unready", &unready)),
        ),
    };
    let gates = inputs
        .pod
        .spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .into_iter()
        .flatten();
    let unmet: Vec<String> = gates
        .filter_map(|g| {
            let t = &g.condition_type;
            match old.iter().find(|c| &c.type_ == t) {
                None => Some(format!(
                    "corresponding condition of pod readiness gate \"{t}\" does not exist."
                )),
                Some(c) if c.status != "True" => Some(format!(
                    "the status of pod readiness gate \"{t}\" is not \"True\", but {}",
                    c.status
                )),
                Some(_) => None,
            }
        })
        .collect();
    let pod_ready = if containers_ready.status == "True" && !unmet.is_empty() {
        make(
            "Ready",
            false,
            Some("ReadinessGatesNotReady"),
            Some(unmet.join(", ")),
        )
    } else {
        make(
            "Ready",
            containers_ready.status == "True",
            containers_ready.reason.as_deref(),
            containers_ready.message.clone(),
        )
    };
    let initialized = if snap.phase == Phase::Succeeded {
        make("Initialized", true, Some("PodCompleted"), None)
    } else if snap.initialized || init_incomplete.is_empty() {
        make("Initialized", true, None, None)
    } else {
        make(
            "Initialized",
            false,
            Some("ContainersNotInitialized"),
            Some(names_message("incomplete", init_incomplete)),
        )
    };
    let scheduled = make("PodScheduled", true, None, None);
    let mut all = vec![
        make("PodReadyToStartContainers", snap.sandbox, None, None),
        initialized,
        pod_ready,
        containers_ready,
        scheduled,
    ];
    const OWN: [&str; 5] = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ];
    all.extend(
        old.iter()
            .filter(|c| !OWN.contains(&c.type_.as_str()))
            .cloned(),
    );
    all
}

/// The whole status for `inputs`, over the stored one.
pub(crate) fn build(inputs: &Inputs<'_>) -> PodStatus {
    let pod = inputs.pod;
    let snap = inputs.snapshot;
    let mut status = pod.status.clone().unwrap_or_default();
    let spec = pod.spec.clone().unwrap_or_default();
    let init_specs = spec.init_containers.clone().unwrap_or_default();

    status.phase = Some(snap.phase.as_str().to_owned());
    status.host_ip = Some(inputs.host_ip.to_owned());
    status.host_ips = Some(vec![HostIP {
        ip: inputs.host_ip.to_owned(),
    }]);
    if let (true, Some(ip)) = (snap.sandbox, inputs.pod_ip) {
        status.pod_ip = Some(ip.to_owned());
        status.pod_ips = Some(vec![PodIP { ip: ip.to_owned() }]);
    }
    status.start_time = Some(seconds(inputs.accepted));
    if status.qos_class.is_none() {
        status.qos_class = Some(qos_class(pod).to_owned());
    }
    let containers = statuses(
        inputs,
        &spec.containers,
        &snap.containers,
        status.container_statuses.as_ref(),
        true,
    );
    let init = statuses(
        inputs,
        &init_specs,
        &snap.init,
        status.init_container_statuses.as_ref(),
        false,
    );
    let ready: Vec<(&str, bool)> = containers
        .iter()
        .map(|c| (c.name.as_str(), c.ready))
        .chain(
            init_specs
                .iter()
                .zip(&init)
                .filter(|(s, _)| resources::is_sidecar(s))
                .map(|(_, c)| (c.name.as_str(), c.ready)),
        )
        .collect();
    let init_incomplete: Vec<&str> = init_specs
        .iter()
        .zip(&init)
        .filter(|(s, c)| {
            if resources::is_sidecar(s) {
                c.started != Some(true)
            } else {
                !c.ready
            }
        })
        .map(|(s, _)| s.name.as_str())
        .collect();
    let old_conditions = status.conditions.clone().unwrap_or_default();
    status.conditions = Some(conditions(
        inputs,
        &old_conditions,
        &ready,
        &init_incomplete,
    ));
    status.container_statuses = Some(containers);
    status.init_container_statuses = (!init.is_empty()).then_some(init);
    status
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use kube_client::core::ObjectMeta;

    use super::super::timeline::{Plan, RestartPolicy, Run, snapshot};
    use super::*;

    #[test]
    fn images_are_normalized_as_the_runtime_reports_them() {
        assert_eq!(normalize_image("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(
            normalize_image("nginx:1.27"),
            "docker.io/library/nginx:1.27"
        );
        assert_eq!(
            normalize_image("bitnami/redis"),
            "docker.io/bitnami/redis:latest"
        );
        assert_eq!(
            normalize_image("registry.k8s.io/pause:3.10"),
            "registry.k8s.io/pause:3.10"
        );
        assert_eq!(
            normalize_image("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert!(image_id("nginx:1.27").starts_with("docker.io/library/nginx@sha256:"));
        assert_eq!(
            image_id("nginx:1.27").len(),
            "docker.io/library/nginx@sha256:".len() + 64
        );
    }

    #[test]
    fn go_durations_print_as_go_does() {
        assert_eq!(go_duration(Duration::from_millis(100)), "100ms");
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_secs(80)), "1m20s");
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(go_duration(Duration::from_secs(3660)), "1h1m0s");
    }

    fn with_resources(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Pod {
        let list = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
                    .collect(),
            )
        };
        Pod {
            spec: Some(PodSpec {
                containers: vec![ContainerSpec {
                    name: "app".into(),
                    resources: Some(ResourceRequirements {
                        requests: list(requests),
                        limits: list(limits),
                        ..ResourceRequirements::default()
                    }),
                    ..ContainerSpec::default()
                }],
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn qos_classes() {
        assert_eq!(qos_class(&with_resources(&[], &[])), "BestEffort");
        assert_eq!(
            qos_class(&with_resources(&[("cpu", "100m")], &[])),
            "Burstable"
        );
        assert_eq!(
            qos_class(&with_resources(&[], &[("cpu", "1"), ("memory", "1Gi")])),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&with_resources(
                &[("cpu", "1000m"), ("memory", "1Gi")],
                &[("cpu", "1"), ("memory", "1Gi")]
            )),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&with_resources(
                &[("cpu", "500m")],
                &[("cpu", "1"), ("memory", "1Gi")]
            )),
            "Burstable"
        );
    }

    #[test]
    fn a_running_pod_has_every_condition_and_a_stable_status() {
        let mut pod = with_resources(&[], &[]);
        pod.metadata = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("uid-1".into()),
            ..ObjectMeta::default()
        };
        if let Some(spec) = pod.spec.as_mut() {
            spec.containers[0].image = Some("nginx".into());
        }
        let plan = Plan {
            start_latency: Duration::ZERO,
            init_duration: Duration::ZERO,
            run: Run::Forever,
            image_pull_error: false,
            never_ready: false,
            restart_policy: RestartPolicy::Always,
            backoff: Duration::from_secs(10),
            max_backoff: Duration::from_secs(300),
        };
        let snap = snapshot(&plan, &[], 1, Duration::from_secs(1));
        let accepted = Timestamp::from_second(1_700_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        let inputs = Inputs {
            pod: &pod,
            snapshot: &snap,
            accepted,
            now: accepted,
            host_ip: "172.18.0.2",
            pod_ip: Some("10.244.0.2"),
            node_ready: true,
        };
        let status = build(&inputs);
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(status.pod_ip.as_deref(), Some("10.244.0.2"));
        assert_eq!(status.qos_class.as_deref(), Some("BestEffort"));
        let types: Vec<(&str, &str)> = status
            .conditions
            .iter()
            .flatten()
            .map(|c| (c.type_.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(
            types,
            [
                ("PodReadyToStartContainers", "True"),
                ("Initialized", "True"),
                ("Ready", "True"),
                ("ContainersReady", "True"),
                ("PodScheduled", "True"),
            ]
        );
        let c = &status.container_statuses.as_ref().expect("statuses")[0];
        assert_eq!(c.image, "docker.io/library/nginx:latest");
        assert!(
            c.container_id
                .as_deref()
                .is_some_and(|id| id.starts_with("containerd://"))
        );
        assert!(c.ready);
        // Later, with the written status stored: nothing changes.
        pod.status = Some(status.clone());
        let later = Inputs {
            pod: &pod,
            snapshot: &snap,
            accepted,
            now: accepted
                .checked_add(SignedDuration::from_secs(30))
                .unwrap_or(accepted),
            host_ip: "172.18.0.2",
            pod_ip: Some("10.244.0.2"),
            node_ready: true,
        };
        assert_eq!(build(&later), status);
        // The node goes NotReady: the Pod is not Ready any more.
        let unready = build(&Inputs {
            node_ready: false,
            ..later
        });
        let ready = unready
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Ready")
            .expect("Ready");
        assert_eq!(ready.status, "False");
        assert_eq!(
            ready.message.as_deref(),
            Some("containers with unready status: [app]")
        );

        // A readiness gate nobody has set keeps the Pod unready.
        if let Some(spec) = pod.spec.as_mut() {
            spec.readiness_gates = Some(vec![k8s_openapi::api::core::v1::PodReadinessGate {
                condition_type: "example.com/lb".into(),
            }]);
        }
        let gated = build(&Inputs {
            pod: &pod,
            snapshot: &snap,
            accepted,
            now: accepted,
            host_ip: "172.18.0.2",
            pod_ip: Some("10.244.0.2"),
            node_ready: true,
        });
        let ready = gated
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Ready")
            .expect("Ready");
        assert_eq!(ready.reason.as_deref(), Some("ReadinessGatesNotReady"));
        assert_eq!(
            ready.message.as_deref(),
            Some(
                "corresponding condition of pod readiness gate \"example.com/lb\" does not exist."
            )
        );
    }
}
