//! Printers of workloads: `apps`, `batch` and `autoscaling`.

use super::*;

/// The printer for `group`/`plural` in this area, if any.
pub(super) fn printer(group: &str, plural: &str) -> Option<Printer> {
    let (columns, row): (Vec<Column>, RowFn) = match (group, plural) {
        ("apps", "deployments") => (deployment_columns(), deployment_row),
        ("apps", "replicasets") => (replica_columns("apps.v1.ReplicaSet"), |o, now| {
            replica_row(o, now, label_selector)
        }),
        ("apps", "statefulsets") => (
            workload(
                vec![
                    name(),
                    col("Ready", "string", "Number of the pod with ready state"),
                    age(),
                ],
                None,
            ),
            |o, now| {
                let ready = format!("{}/{}", int(o, "/status/readyReplicas"), replicas(o));
                let mut c = vec![n(o), s(&ready), a(o, now)];
                template_cells(&mut c, o, "/spec/template/spec");
                cells(c)
            },
        ),
        ("apps", "daemonsets") => (daemonset_columns(), daemonset_row),
        ("apps", "controllerrevisions") => (
            vec![
                name(),
                col("Controller", "string", "Controller of the object"),
                col(
                    "Revision",
                    "string",
                    doc("apps.v1.ControllerRevision", "revision"),
                ),
                age(),
            ],
            |o, now| {
                let controller = list(o, "/metadata/ownerReferences")
                    .iter()
                    .find(|r| r.get("controller") == Some(&json!(true)))
                    .map_or("<none>".to_string(), |r| {
                        let api_version = text(r, "/apiVersion");
                        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
                        let kind = text(r, "/kind").to_lowercase();
                        let gk = if group.is_empty() {
                            kind
                        } else {
                            format!("{kind}.{group}")
                        };
                        format!("{gk}/{}", text(r, "/name"))
                    });
                cells(vec![n(o), s(&controller), num(o, "/revision"), a(o, now)])
            },
        ),
        ("batch", "jobs") => (job_columns(), job_row),
        ("batch", "cronjobs") => (cronjob_columns(), cronjob_row),
        ("autoscaling", "horizontalpodautoscalers") => (
            vec![
                name(),
                col(
                    "Reference",
                    "string",
                    doc(
                        "autoscaling.v2.HorizontalPodAutoscalerSpec",
                        "scaleTargetRef",
                    ),
                ),
                col(
                    "Targets",
                    "string",
                    doc("autoscaling.v2.HorizontalPodAutoscalerSpec", "metrics"),
                ),
                col(
                    "MinPods",
                    "string",
                    doc("autoscaling.v2.HorizontalPodAutoscalerSpec", "minReplicas"),
                ),
                col(
                    "MaxPods",
                    "string",
                    doc("autoscaling.v2.HorizontalPodAutoscalerSpec", "maxReplicas"),
                ),
                col(
                    "Replicas",
                    "string",
                    doc(
                        "autoscaling.v2.HorizontalPodAutoscalerStatus",
                        "currentReplicas",
                    ),
                ),
                age(),
            ],
            hpa_row,
        ),
        _ => return None,
    };
    Some(Printer { columns, row })
}

fn deployment_columns() -> Vec<Column> {
    workload(
        vec![
            name(),
            col("Ready", "string", "Number of the pod with ready state"),
            int_col("Up-to-date", "apps.v1.DeploymentStatus", "updatedReplicas"),
            int_col("Available", "apps.v1.DeploymentStatus", "availableReplicas"),
            age(),
        ],
        Some(doc("apps.v1.DeploymentSpec", "selector")),
    )
}

fn deployment_row(o: &Value, now: jiff::Timestamp) -> Row {
    let mut c = vec![
        n(o),
        s(&format!(
            "{}/{}",
            int(o, "/status/readyReplicas"),
            replicas(o)
        )),
        num(o, "/status/updatedReplicas"),
        num(o, "/status/availableReplicas"),
        a(o, now),
    ];
    template_cells(&mut c, o, "/spec/template/spec");
    c.push(s(&selector(o.pointer("/spec/selector"))));
    cells(c)
}

fn daemonset_columns() -> Vec<Column> {
    workload(
        vec![
            name(),
            int_col(
                "Desired",
                "apps.v1.DaemonSetStatus",
                "desiredNumberScheduled",
            ),
            int_col(
                "Current",
                "apps.v1.DaemonSetStatus",
                "currentNumberScheduled",
            ),
            int_col("Ready", "apps.v1.DaemonSetStatus", "numberReady"),
            int_col(
                "Up-to-date",
                "apps.v1.DaemonSetStatus",
                "updatedNumberScheduled",
            ),
            int_col("Available", "apps.v1.DaemonSetStatus", "numberAvailable"),
            col(
                "Node Selector",
                "string",
                doc("core.v1.PodSpec", "nodeSelector"),
            ),
            age(),
        ],
        Some(doc("apps.v1.DaemonSetSpec", "selector")),
    )
}

fn daemonset_row(o: &Value, now: jiff::Timestamp) -> Row {
    let mut c = vec![
        n(o),
        num(o, "/status/desiredNumberScheduled"),
        num(o, "/status/currentNumberScheduled"),
        num(o, "/status/numberReady"),
        num(o, "/status/updatedNumberScheduled"),
        num(o, "/status/numberAvailable"),
        s(&labels(o.pointer("/spec/template/spec/nodeSelector"))),
        a(o, now),
    ];
    template_cells(&mut c, o, "/spec/template/spec");
    c.push(s(&label_selector(o.pointer("/spec/selector"))));
    cells(c)
}

fn job_columns() -> Vec<Column> {
    workload(
        vec![
            name(),
            col("Status", "string", "Status of the job."),
            col(
                "Completions",
                "string",
                doc("batch.v1.JobStatus", "succeeded"),
            ),
            col("Duration", "string", "Time required to complete the job."),
            age(),
        ],
        Some(doc("batch.v1.JobSpec", "selector")),
    )
}

fn job_row(o: &Value, now: jiff::Timestamp) -> Row {
    let succeeded = int(o, "/status/succeeded");
    let completions = match o.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(total) => format!("{succeeded}/{total}"),
        None => match int(o, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (
        time(o, "/status/startTime"),
        time(o, "/status/completionTime"),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.as_second() - start.as_second()),
        (Some(start), Some(end)) => human_duration(end.as_second() - start.as_second()),
    };
    let conditions = list(o, "/status/conditions");
    let has = |kind: &str| {
        conditions
            .iter()
            .find(|c| text(c, "/type") == kind)
            .is_some_and(|c| text(c, "/status") == "True")
    };
    let status = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if o.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let mut c = vec![n(o), s(status), s(&completions), s(&duration), a(o, now)];
    template_cells(&mut c, o, "/spec/template/spec");
    c.push(s(&label_selector(o.pointer("/spec/selector"))));
    cells(c)
}

fn cronjob_columns() -> Vec<Column> {
    workload(
        vec![
            name(),
            col(
                "Schedule",
                "string",
                doc("batch.v1.CronJobSpec", "schedule"),
            ),
            col(
                "Timezone",
                "string",
                doc("batch.v1.CronJobSpec", "timeZone"),
            ),
            col("Suspend", "boolean", doc("batch.v1.CronJobSpec", "suspend")),
            int_col("Active", "batch.v1.CronJobStatus", "active"),
            col(
                "Last Schedule",
                "string",
                doc("batch.v1.CronJobStatus", "lastScheduleTime"),
            ),
            age(),
        ],
        Some(doc("batch.v1.JobSpec", "selector")),
    )
}

fn cronjob_row(o: &Value, now: jiff::Timestamp) -> Row {
    let last = if o.pointer("/status/lastScheduleTime").is_some() {
        since(o, "/status/lastScheduleTime", now)
    } else {
        "<none>".to_string()
    };
    let suspend = match o.pointer("/spec/suspend").and_then(Value::as_bool) {
        Some(b) => json!(b),
        None => json!("<unset>"),
    };
    let mut c = vec![
        n(o),
        s(text(o, "/spec/schedule")),
        s(or(text(o, "/spec/timeZone"), "<none>")),
        suspend,
        json!(list(o, "/status/active").len()),
        s(&last),
        a(o, now),
    ];
    template_cells(&mut c, o, "/spec/jobTemplate/spec/template/spec");
    c.push(s(&label_selector(
        o.pointer("/spec/jobTemplate/spec/selector"),
    )));
    cells(c)
}

/// `printHorizontalPodAutoscaler`, for `autoscaling/v2` objects and `v1` ones (whose CPU
/// target reads as a Resource metric, as the internal version holds it).
fn hpa_row(o: &Value, now: jiff::Timestamp) -> Row {
    let reference = format!(
        "{}/{}",
        text(o, "/spec/scaleTargetRef/kind"),
        text(o, "/spec/scaleTargetRef/name")
    );
    let targets = if let Some(cpu) = o.pointer("/spec/targetCPUUtilizationPercentage") {
        let current = o
            .pointer("/status/currentCPUUtilizationPercentage")
            .and_then(Value::as_i64)
            .map_or("<unknown>".to_string(), |c| format!("{c}%"));
        format!("cpu: {current}/{}%", cpu.as_i64().unwrap_or(0))
    } else {
        hpa_metrics(list(o, "/spec/metrics"), list(o, "/status/currentMetrics"))
    };
    let min = o
        .pointer("/spec/minReplicas")
        .and_then(Value::as_i64)
        .map_or("<unset>".to_string(), |m| m.to_string());
    cells(vec![
        n(o),
        s(&reference),
        s(&targets),
        s(&min),
        num(o, "/spec/maxReplicas"),
        num(o, "/status/currentReplicas"),
        a(o, now),
    ])
}

/// `formatHPAMetrics`: `current/target` per metric, at most two then `+ N more...`.
fn hpa_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let unknown = || "<unknown>".to_string();
    let quantity = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let mut shown = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i);
        let kind = text(spec, "/type");
        let source = match kind {
            "External" => "external",
            "Pods" => "pods",
            "Object" => "object",
            "Resource" => "resource",
            "ContainerResource" => "containerResource",
            _ => {
                shown.push("<unknown type>".to_string());
                continue;
            }
        };
        let target = spec
            .pointer(&format!("/{source}/target"))
            .cloned()
            .unwrap_or_default();
        let current = status.and_then(|s| s.pointer(&format!("/{source}/current")).cloned());
        let entry = match kind {
            "Pods" => format!(
                "{}/{}",
                quantity(current.as_ref().and_then(|c| c.get("averageValue")))
                    .unwrap_or_else(unknown),
                text(&target, "/averageValue")
            ),
            "External" | "Object" => match target.get("averageValue") {
                Some(avg) => format!(
                    "{}/{} (avg)",
                    quantity(current.as_ref().and_then(|c| c.get("averageValue")))
                        .unwrap_or_else(unknown),
                    avg.as_str().unwrap_or("")
                ),
                None => format!(
                    "{}/{}",
                    quantity(current.as_ref().and_then(|c| c.get("value"))).unwrap_or_else(unknown),
                    text(&target, "/value")
                ),
            },
            _ => {
                let name = text(spec, &format!("/{source}/name"));
                match target.get("averageValue") {
                    Some(avg) => format!(
                        "{name}: {}/{}",
                        quantity(current.as_ref().and_then(|c| c.get("averageValue")))
                            .unwrap_or_else(unknown),
                        avg.as_str().unwrap_or("")
                    ),
                    None => {
                        let current = current
                            .as_ref()
                            .and_then(|c| c.get("averageUtilization"))
                            .and_then(Value::as_i64)
                            .map_or_else(unknown, |u| format!("{u}%"));
                        let target = target
                            .get("averageUtilization")
                            .and_then(Value::as_i64)
                            .map_or("<auto>".to_string(), |u| format!("{u}%"));
                        format!("{name}: {current}/{target}")
                    }
                }
            }
        };
        shown.push(entry);
    }
    let count = shown.len();
    if count > 2 {
        format!("{} + {} more...", shown[..2].join(", "), count - 2)
    } else {
        shown.join(", ")
    }
}
