//! The CronJob controller on a manual clock: a due schedule creates its Job, which runs
//! through the Job controller and the kubelet, and the CronJob records it; history limits
//! delete old Jobs; `Forbid` skips a schedule while a Job is active and `Replace` replaces it;
//! of many missed schedules only the most recent runs; and, on the default cluster's system
//! clock, `kubectl create job --from=cronjob/…`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, Job, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube_client::Api;
use kube_client::api::{ListParams, Patch, PatchParams, PostParams};
use rein_sim::cluster::{SimCluster, SimConfig};
use rein_sim::kubelet::RUN_FOR;
use rein_sim::workloads::cronjob::{
    self, CronJobOptions, ManualClock, SCHEDULED_TIMESTAMP_ANNOTATION,
};
use rein_sim::workloads::job;
use rein_testenv::TestEnv;
use serde_json::json;

use crate::support::{Sim, eventually, labels, meta, template};

/// An API server, a simulated cluster with only the Job and CronJob controllers, and the
/// CronJob controller's clock.
struct CronSim {
    kube: kube_client::Client,
    clock: ManualClock,
    cluster: Option<SimCluster>,
    _env: TestEnv,
}

impl CronSim {
    async fn start() -> CronSim {
        let env = TestEnv::start().await.expect("rein-testenv starts");
        let mut config = SimConfig::with_nodes(2);
        config.workload_controllers = false;
        config.heartbeat.lease_renew_interval = Duration::from_millis(300);
        config.heartbeat.status_report_interval = Duration::from_millis(500);
        config.kubelet.job_pod_duration = Duration::from_millis(200);
        let cluster = SimCluster::start(env.config(), config)
            .await
            .expect("the simulated cluster starts");
        let clock = ManualClock::new(Timestamp::now());
        let mgr = cluster.manager();
        job::add(mgr).expect("the Job controller is added");
        cronjob::add_with(
            mgr,
            CronJobOptions {
                clock: Arc::new(clock.clone()),
                ..CronJobOptions::default()
            },
        )
        .expect("the CronJob controller is added");
        CronSim {
            kube: env.client(),
            clock,
            cluster: Some(cluster),
            _env: env,
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube_client::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube_client::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.kube.clone(), "default")
    }

    async fn stop(mut self) {
        if let Some(cluster) = self.cluster.take() {
            let _ = cluster.shutdown().await;
        }
    }
}

/// A CronJob running `* * * * *` whose Pods finish after `run_for`.
fn cron_job(name: &str, run_for: &str) -> CronJob {
    let mut template = template(&labels(&[("cron", name)]), "busybox:1");
    if let Some(meta) = template.metadata.as_mut() {
        meta.annotations
            .get_or_insert_with(Default::default)
            .insert(RUN_FOR.into(), run_for.into());
    }
    if let Some(spec) = template.spec.as_mut() {
        spec.restart_policy = Some("Never".into());
    }
    CronJob {
        metadata: meta(name),
        spec: Some(CronJobSpec {
            schedule: "* * * * *".into(),
            job_template: JobTemplateSpec {
                metadata: None,
                spec: Some(JobSpec {
                    template,
                    ..JobSpec::default()
                }),
            },
            ..CronJobSpec::default()
        }),
        status: None,
    }
}

async fn create(api: &Api<CronJob>, cj: &CronJob) -> CronJob {
    api.create(&PostParams::default(), cj)
        .await
        .expect("the CronJob is created")
}

/// The first whole minute after the CronJob's creation: its first schedule time.
fn first_schedule(cj: &CronJob) -> Timestamp {
    let created = cj
        .metadata
        .creation_timestamp
        .as_ref()
        .expect("a creation timestamp")
        .0
        .as_second();
    Timestamp::from_second(created.div_euclid(60) * 60 + 60).expect("a time")
}

/// `<cronjob>-<minutes>`.
fn job_name(cron_job: &str, scheduled: Timestamp) -> String {
    format!("{cron_job}-{}", scheduled.as_second() / 60)
}

fn minutes(n: i64) -> SignedDuration {
    SignedDuration::from_mins(n)
}

async fn wait_cron_job(
    api: &Api<CronJob>,
    name: &str,
    what: &str,
    check: impl Fn(&CronJob) -> bool,
) -> CronJob {
    eventually(what, || async {
        let cj = api.get(name).await.map_err(|e| e.to_string())?;
        if check(&cj) {
            Ok(cj)
        } else {
            Err(format!("{:?}", cj.status))
        }
    })
    .await
}

/// The names of the Jobs of the default namespace, sorted.
async fn job_names(api: &Api<Job>) -> Vec<String> {
    let mut names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .filter_map(|j| j.metadata.name)
        .collect();
    names.sort();
    names
}

/// The `(reason, message)` of every Event about the CronJob `name`.
async fn cron_events(kube: &kube_client::Client, name: &str) -> Vec<(String, String)> {
    let api: Api<Event> = Api::namespaced(kube.clone(), "default");
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            e.involved_object.kind.as_deref() == Some("CronJob")
                && e.involved_object.name.as_deref() == Some(name)
        })
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

async fn wait_event(kube: &kube_client::Client, name: &str, reason: &str, message: &str) {
    eventually(&format!("the {reason} event of {name}"), || async {
        let events = cron_events(kube, name).await;
        if events.iter().any(|(r, m)| r == reason && m == message) {
            Ok(())
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
}

fn is_complete(job: &Job) -> bool {
    job.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == "Complete" && c.status == "True")
}

#[tokio::test]
async fn a_due_schedule_runs_its_job_to_completion_and_old_jobs_are_cleaned_up() {
    let sim = CronSim::start().await;
    let cron_jobs = sim.api::<CronJob>();
    let jobs = sim.api::<Job>();
    let mut cj = cron_job("report", "100ms");
    if let Some(spec) = cj.spec.as_mut() {
        spec.successful_jobs_history_limit = Some(1);
    }
    let cj = create(&cron_jobs, &cj).await;

    // A second after the first schedule time: its Job is created.
    let first = first_schedule(&cj);
    sim.clock.set(first + SignedDuration::from_secs(1));
    let first_job = job_name("report", first);
    let job = eventually("the first Job", || async {
        jobs.get(&first_job).await.map_err(|e| e.to_string())
    })
    .await;
    let annotations = job.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get(SCHEDULED_TIMESTAMP_ANNOTATION)
            .map(String::as_str),
        Some(first.to_string().as_str()),
        "the scheduled time, in RFC 3339"
    );
    let owner = job.metadata.owner_references.clone().unwrap_or_default();
    assert!(
        owner.iter().any(|o| o.kind == "CronJob"
            && o.controller == Some(true)
            && Some(&o.uid) == cj.metadata.uid.as_ref()),
        "{owner:?}"
    );
    wait_event(
        &sim.kube,
        "report",
        "SuccessfulCreate",
        &format!("Created job {first_job}"),
    )
    .await;

    // The Job runs through the Job controller and the kubelet; the CronJob sees it complete.
    let done = wait_cron_job(&cron_jobs, "report", "lastSuccessfulTime", |cj| {
        cj.status.as_ref().is_some_and(|s| {
            s.last_successful_time.is_some() && s.active.as_ref().is_none_or(|a| a.is_empty())
        })
    })
    .await;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.last_schedule_time.map(|t| t.0), Some(first));
    let completed = jobs.get(&first_job).await.expect("the first Job");
    assert!(is_complete(&completed), "{:?}", completed.status);
    assert_eq!(
        status.last_successful_time,
        completed.status.and_then(|s| s.completion_time)
    );
    wait_event(
        &sim.kube,
        "report",
        "SawCompletedJob",
        &format!("Saw completed job: {first_job}, condition: Complete"),
    )
    .await;

    // A minute later the next Job runs; with a history of one, the first is deleted.
    let second = first + minutes(1);
    sim.clock.set(second + SignedDuration::from_secs(1));
    let second_job = job_name("report", second);
    eventually("the second Job completes", || async {
        let job = jobs.get(&second_job).await.map_err(|e| e.to_string())?;
        if is_complete(&job) {
            Ok(())
        } else {
            Err(format!("{:?}", job.status))
        }
    })
    .await;
    wait_event(
        &sim.kube,
        "report",
        "SuccessfulDelete",
        &format!("Deleted job {first_job}"),
    )
    .await;
    eventually("only the second Job is left", || async {
        let names = job_names(&jobs).await;
        if names == [second_job.clone()] {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    })
    .await;
    sim.stop().await;
}

#[tokio::test]
async fn forbid_skips_a_schedule_while_a_job_runs_and_replace_replaces_it() {
    let sim = CronSim::start().await;
    let cron_jobs = sim.api::<CronJob>();
    let jobs = sim.api::<Job>();
    let mut cj = cron_job("exclusive", "1h");
    if let Some(spec) = cj.spec.as_mut() {
        spec.concurrency_policy = Some("Forbid".into());
    }
    let cj = create(&cron_jobs, &cj).await;
    let first = first_schedule(&cj);
    sim.clock.set(first + SignedDuration::from_secs(1));
    let first_job = job_name("exclusive", first);
    wait_cron_job(&cron_jobs, "exclusive", "the first Job active", |cj| {
        cj.status
            .as_ref()
            .and_then(|s| s.active.as_ref())
            .is_some_and(|a| a.iter().any(|r| r.name.as_deref() == Some(&first_job)))
    })
    .await;

    // The next schedule comes while the first Job still runs: skipped.
    let second = first + minutes(1);
    sim.clock.set(second + SignedDuration::from_secs(1));
    wait_event(
        &sim.kube,
        "exclusive",
        "JobAlreadyActive",
        "Not starting job because prior execution is running and concurrency policy is Forbid",
    )
    .await;
    assert_eq!(job_names(&jobs).await, std::slice::from_ref(&first_job));
    let status = cron_jobs
        .get("exclusive")
        .await
        .expect("the CronJob")
        .status
        .unwrap_or_default();
    assert_eq!(status.last_schedule_time.map(|t| t.0), Some(first));

    // With Replace, the same (still unmet) schedule deletes the running Job and starts its own.
    cron_jobs
        .patch(
            "exclusive",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"concurrencyPolicy": "Replace"}})),
        )
        .await
        .expect("the policy is changed");
    let second_job = job_name("exclusive", second);
    wait_event(
        &sim.kube,
        "exclusive",
        "SuccessfulDelete",
        &format!("Deleted job {first_job}"),
    )
    .await;
    let replaced = wait_cron_job(&cron_jobs, "exclusive", "the second Job active", |cj| {
        cj.status
            .as_ref()
            .and_then(|s| s.active.as_ref())
            .is_some_and(|a| a.iter().any(|r| r.name.as_deref() == Some(&second_job)))
    })
    .await;
    let status = replaced.status.unwrap_or_default();
    assert_eq!(status.active.map(|a| a.len()), Some(1));
    assert_eq!(status.last_schedule_time.map(|t| t.0), Some(second));
    eventually("the first Job is gone", || async {
        let names = job_names(&jobs).await;
        if names == [second_job.clone()] {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    })
    .await;
    sim.stop().await;
}

#[tokio::test]
async fn of_many_missed_schedules_only_the_most_recent_runs() {
    let sim = CronSim::start().await;
    let cron_jobs = sim.api::<CronJob>();
    let jobs = sim.api::<Job>();
    let many = create(&cron_jobs, &cron_job("many", "1h")).await;
    let mut windowed = cron_job("windowed", "1h");
    if let Some(spec) = windowed.spec.as_mut() {
        spec.starting_deadline_seconds = Some(200);
    }
    create(&cron_jobs, &windowed).await;
    let mut paused = cron_job("paused", "1h");
    if let Some(spec) = paused.spec.as_mut() {
        spec.suspend = Some(true);
    }
    create(&cron_jobs, &paused).await;

    // Three hours on: 180 schedules were missed.
    let latest = first_schedule(&many) + minutes(180);
    sim.clock.set(latest + SignedDuration::from_secs(5));
    for name in ["many", "windowed"] {
        let job = job_name(name, latest);
        wait_cron_job(&cron_jobs, name, "the latest schedule's Job", |cj| {
            cj.status
                .as_ref()
                .and_then(|s| s.active.as_ref())
                .is_some_and(|a| a.iter().any(|r| r.name.as_deref() == Some(&job)))
        })
        .await;
    }
    wait_event(
        &sim.kube,
        "many",
        "TooManyMissedTimes",
        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
    )
    .await;
    // Within its 200 s deadline the other missed only three: no warning.
    let windowed_events = cron_events(&sim.kube, "windowed").await;
    assert!(
        !windowed_events
            .iter()
            .any(|(r, _)| r == "TooManyMissedTimes"),
        "{windowed_events:?}"
    );
    assert_eq!(
        job_names(&jobs).await,
        [job_name("many", latest), job_name("windowed", latest)]
    );
    let paused = cron_jobs
        .get("paused")
        .await
        .expect("the suspended CronJob");
    assert_eq!(
        paused.status.and_then(|s| s.last_schedule_time),
        None,
        "a suspended CronJob schedules nothing"
    );
    sim.stop().await;
}

/// Runs kubectl with `kubeconfig`.
async fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--request-timeout=30s")
        .args(args)
        .output()
        .await
        .expect("running kubectl")
}

#[tokio::test]
async fn kubectl_create_job_from_a_cron_job_runs_it_and_the_cron_job_records_it() {
    let available = tokio::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .await
        .is_ok_and(|o| o.status.success());
    if !available {
        eprintln!("skipping: kubectl is not on PATH");
        return;
    }
    // The default cluster: every workload controller, the CronJob one on the system clock.
    let sim = Sim::start().await;
    let cron_jobs = sim.api::<CronJob>();
    let mut cj = cron_job("yearly", "100ms");
    if let Some(spec) = cj.spec.as_mut() {
        spec.schedule = "@yearly".into();
    }
    let cj = create(&cron_jobs, &cj).await;
    let dir = std::env::temp_dir().join(format!("rein-sim-cronjob-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let kubeconfig = dir.join("kubeconfig");
    sim.env
        .write_kubeconfig(&kubeconfig)
        .expect("writing the kubeconfig");

    let created = kubectl(
        &kubeconfig,
        &["create", "job", "by-hand", "--from=cronjob/yearly"],
    )
    .await;
    assert!(
        created.status.success(),
        "kubectl create job: {}{}",
        String::from_utf8_lossy(&created.stdout),
        String::from_utf8_lossy(&created.stderr)
    );
    let waited = kubectl(
        &kubeconfig,
        &[
            "wait",
            "--for=condition=complete",
            "job/by-hand",
            "--timeout=30s",
        ],
    )
    .await;
    assert!(
        waited.status.success(),
        "kubectl wait: {}{}",
        String::from_utf8_lossy(&waited.stdout),
        String::from_utf8_lossy(&waited.stderr)
    );
    let job = sim.api::<Job>().get("by-hand").await.expect("the Job");
    let owner = job.metadata.owner_references.clone().unwrap_or_default();
    assert!(
        owner
            .iter()
            .any(|o| Some(&o.uid) == cj.metadata.uid.as_ref()),
        "{owner:?}"
    );
    // As kube's controller does, it warns of a Job it did not create, then records its success.
    wait_event(
        &sim.kube,
        "yearly",
        "UnexpectedJob",
        "Saw a job that the controller did not create or forgot: by-hand",
    )
    .await;
    let recorded = wait_cron_job(&cron_jobs, "yearly", "lastSuccessfulTime", |cj| {
        cj.status
            .as_ref()
            .is_some_and(|s| s.last_successful_time.is_some())
    })
    .await;
    let status = recorded.status.unwrap_or_default();
    assert_eq!(
        status.last_successful_time,
        job.status.and_then(|s| s.completion_time)
    );
    assert_eq!(status.last_schedule_time, None, "nothing was scheduled");
    let _ = std::fs::remove_dir_all(&dir);
    sim.stop().await;
}
