//! The Job controller: completions within parallelism, the tracking finalizer and
//! `uncountedTerminatedPods`, the Complete and Failed conditions, Indexed Jobs, suspension,
//! and `kubectl wait --for=condition=complete`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{ListParams, Patch, PatchParams, PostParams};
use rein_sim::workloads::job::JOB_TRACKING_FINALIZER;

use crate::support::{Sim, events, eventually, labels, meta, template};

fn job(name: &str, completions: i32, parallelism: i32) -> Job {
    let mut template = template(&labels(&[("suite", "jobs")]), "busybox:1");
    if let Some(spec) = template.spec.as_mut() {
        spec.restart_policy = Some("Never".into());
    }
    Job {
        metadata: meta(name),
        spec: Some(JobSpec {
            completions: Some(completions),
            parallelism: Some(parallelism),
            template,
            ..JobSpec::default()
        }),
        status: None,
    }
}

async fn create(sim: &Sim, job: &Job) -> Job {
    sim.api::<Job>()
        .create(&PostParams::default(), job)
        .await
        .expect("the Job is created")
}

fn condition(job: &Job, type_: &str) -> Option<(String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

async fn wait_job(sim: &Sim, name: &str, what: &str, check: impl Fn(&Job) -> bool) -> Job {
    eventually(what, || async {
        let job = sim
            .api::<Job>()
            .get(name)
            .await
            .map_err(|e| e.to_string())?;
        if check(&job) {
            Ok(job)
        } else {
            Err(format!("{:?}", job.status))
        }
    })
    .await
}

async fn job_pods(sim: &Sim, name: &str) -> Vec<Pod> {
    sim.api::<Pod>()
        .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={name}")))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_job_runs_its_completions_within_its_parallelism_and_completes() {
    let sim = Sim::start().await;
    let stop = Arc::new(AtomicBool::new(false));
    let most_active = {
        let pods = sim.api::<Pod>();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut most = 0;
            while !stop.load(Ordering::SeqCst) {
                let list = ListParams::default().labels("batch.kubernetes.io/job-name=pi");
                if let Ok(list) = pods.list(&list).await {
                    let running = list
                        .items
                        .iter()
                        .filter(|p| {
                            p.metadata.deletion_timestamp.is_none()
                                && !matches!(
                                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                                    Some("Succeeded" | "Failed")
                                )
                        })
                        .count();
                    most = most.max(running);
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            most
        })
    };
    let created = create(&sim, &job("pi", 4, 2)).await;
    let done = wait_job(&sim, "pi", "the Job to complete", |j| {
        condition(j, "Complete") == Some(("True".into(), "CompletionsReached".into()))
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    assert!(
        most_active.await.expect("the watcher") <= 2,
        "parallelism exceeded"
    );

    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.succeeded, Some(4));
    assert_eq!(status.failed, None);
    assert_eq!(status.active, None);
    assert_eq!(status.ready, Some(0));
    assert_eq!(status.terminating, Some(0));
    assert!(status.start_time.is_some());
    assert!(status.completion_time.is_some());
    let uncounted = status.uncounted_terminated_pods.unwrap_or_default();
    assert!(uncounted.succeeded.unwrap_or_default().is_empty());
    assert!(uncounted.failed.unwrap_or_default().is_empty());
    assert_eq!(
        condition(&done, "SuccessCriteriaMet"),
        Some(("True".into(), "CompletionsReached".into()))
    );

    let pods = job_pods(&sim, "pi").await;
    assert_eq!(pods.len(), 4);
    let uid = created.metadata.uid.clone().unwrap_or_default();
    for pod in &pods {
        let l = pod.metadata.labels.clone().unwrap_or_default();
        assert_eq!(l.get("job-name").map(String::as_str), Some("pi"));
        assert_eq!(l.get("controller-uid"), Some(&uid));
        assert_eq!(l.get("batch.kubernetes.io/controller-uid"), Some(&uid));
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("pi-"));
        assert!(
            !pod.metadata
                .finalizers
                .iter()
                .flatten()
                .any(|f| f == JOB_TRACKING_FINALIZER),
            "the tracking finalizer is removed once counted"
        );
        let owner = pod
            .metadata
            .owner_references
            .as_ref()
            .and_then(|r| r.first())
            .expect("an owner");
        assert_eq!((owner.kind.as_str(), owner.controller), ("Job", Some(true)));
    }
    let events = eventually("the Completed event", || async {
        let events = events(&sim, "Job", "pi").await;
        if events
            .iter()
            .any(|(r, m)| r == "Completed" && m == "Job completed")
        {
            Ok(events)
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
    assert_eq!(
        events
            .iter()
            .filter(|(r, _)| r == "SuccessfulCreate")
            .count(),
        4,
        "{events:?}"
    );
    sim.stop().await;
}

#[tokio::test]
async fn a_job_whose_pods_fail_past_its_backoff_limit_fails() {
    let sim = Sim::start().await;
    let mut j = job("crash", 1, 1);
    if let Some(spec) = j.spec.as_mut() {
        spec.backoff_limit = Some(0);
        let meta = spec.template.metadata.get_or_insert_with(Default::default);
        meta.annotations
            .get_or_insert_with(Default::default)
            .insert(rein_sim::kubelet::EXIT_CODE.into(), "1".into());
    }
    create(&sim, &j).await;
    let failed = wait_job(&sim, "crash", "the Job to fail", |j| {
        condition(j, "Failed") == Some(("True".into(), "BackoffLimitExceeded".into()))
    })
    .await;
    assert_eq!(
        condition(&failed, "FailureTarget"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
    assert_eq!(condition(&failed, "Complete"), None);
    let status = failed.status.unwrap_or_default();
    assert_eq!(status.failed, Some(1));
    assert_eq!(status.succeeded, None);
    assert!(status.completion_time.is_none());
    let events = eventually("the BackoffLimitExceeded event", || async {
        let events = events(&sim, "Job", "crash").await;
        if events.iter().any(|(r, _)| r == "BackoffLimitExceeded") {
            Ok(events)
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
    assert!(
        events
            .iter()
            .any(|(_, m)| m == "Job has reached the specified backoff limit"),
        "{events:?}"
    );
    sim.stop().await;
}

#[tokio::test]
async fn an_indexed_job_completes_every_index() {
    let sim = Sim::start().await;
    let mut j = job("shards", 3, 3);
    if let Some(spec) = j.spec.as_mut() {
        spec.completion_mode = Some("Indexed".into());
    }
    create(&sim, &j).await;
    let done = wait_job(&sim, "shards", "the Indexed Job to complete", |j| {
        condition(j, "Complete").is_some_and(|c| c.0 == "True")
    })
    .await;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.completed_indexes.as_deref(), Some("0-2"));
    assert_eq!(status.succeeded, Some(3));
    let pods = job_pods(&sim, "shards").await;
    let mut indexes: Vec<String> = pods
        .iter()
        .filter_map(|p| {
            p.metadata
                .annotations
                .as_ref()?
                .get("batch.kubernetes.io/job-completion-index")
                .cloned()
        })
        .collect();
    indexes.sort();
    assert_eq!(indexes, ["0", "1", "2"]);
    for pod in &pods {
        let index = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("batch.kubernetes.io/job-completion-index"))
            .cloned()
            .unwrap_or_default();
        let spec = pod.spec.clone().unwrap_or_default();
        assert_eq!(spec.hostname, Some(format!("shards-{index}")));
        assert!(
            pod.metadata
                .generate_name
                .as_deref()
                .is_some_and(|g| g == format!("shards-{index}-"))
        );
        assert!(
            spec.containers[0]
                .env
                .iter()
                .flatten()
                .any(|e| e.name == "JOB_COMPLETION_INDEX")
        );
    }
    sim.stop().await;
}

#[tokio::test]
async fn a_suspended_job_runs_nothing_until_resumed() {
    let sim = Sim::start().await;
    let mut j = job("later", 1, 1);
    if let Some(spec) = j.spec.as_mut() {
        spec.suspend = Some(true);
    }
    create(&sim, &j).await;
    let suspended = wait_job(&sim, "later", "the Suspended condition", |j| {
        condition(j, "Suspended") == Some(("True".into(), "JobSuspended".into()))
    })
    .await;
    assert!(suspended.status.and_then(|s| s.start_time).is_none());
    assert!(job_pods(&sim, "later").await.is_empty());

    let resume = serde_json::json!({ "spec": { "suspend": false } });
    sim.api::<Job>()
        .patch("later", &PatchParams::default(), &Patch::Merge(&resume))
        .await
        .expect("resumed");
    let done = wait_job(&sim, "later", "the resumed Job to complete", |j| {
        condition(j, "Complete").is_some_and(|c| c.0 == "True")
    })
    .await;
    assert_eq!(
        condition(&done, "Suspended"),
        Some(("False".into(), "JobResumed".into()))
    );
    sim.stop().await;
}

#[tokio::test]
async fn kubectl_wait_for_condition_complete_returns() {
    let available = tokio::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .await
        .is_ok_and(|o| o.status.success());
    if !available {
        eprintln!("skipping: kubectl is not on PATH");
        return;
    }
    let sim = Sim::start().await;
    let dir = std::env::temp_dir().join(format!("rein-sim-workloads-wait-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let kubeconfig = dir.join("kubeconfig");
    sim.env
        .write_kubeconfig(&kubeconfig)
        .expect("writing the kubeconfig");
    create(&sim, &job("report", 2, 1)).await;
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "wait",
            "--for=condition=complete",
            "job/report",
            "--timeout=30s",
        ])
        .output()
        .await
        .expect("running kubectl");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl wait: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.trim(), "job.batch/report condition met");
    let _ = std::fs::remove_dir_all(&dir);
    sim.stop().await;
}

/// A Job whose Pods run for a minute.
fn long_job(name: &str, parallelism: i32) -> Job {
    let mut j = job(name, parallelism, parallelism);
    if let Some(spec) = j.spec.as_mut() {
        let meta = spec.template.metadata.get_or_insert_with(Default::default);
        meta.annotations
            .get_or_insert_with(Default::default)
            .insert(rein_sim::kubelet::RUN_FOR.into(), "60s".into());
    }
    j
}

#[tokio::test]
async fn a_job_past_its_active_deadline_fails_and_its_pods_go() {
    let sim = Sim::start().await;
    let mut j = long_job("slow", 2);
    if let Some(spec) = j.spec.as_mut() {
        spec.active_deadline_seconds = Some(1);
    }
    create(&sim, &j).await;
    let failed = wait_job(&sim, "slow", "the Job to fail on its deadline", |j| {
        condition(j, "Failed") == Some(("True".into(), "DeadlineExceeded".into()))
    })
    .await;
    let status = failed.status.unwrap_or_default();
    assert_eq!(status.active, None);
    assert_eq!(
        status.failed,
        Some(2),
        "the deleted running Pods count as failed"
    );
    eventually("the Job's Pods to be gone", || async {
        let pods = job_pods(&sim, "slow").await;
        if pods.is_empty() {
            Ok(())
        } else {
            Err(format!("{} left", pods.len()))
        }
    })
    .await;
    sim.stop().await;
}

#[tokio::test]
async fn the_pods_of_a_deleted_job_lose_their_finalizer_and_go() {
    let sim = Sim::start().await;
    create(&sim, &long_job("gone", 2)).await;
    eventually("two running Pods holding the finalizer", || async {
        let pods = job_pods(&sim, "gone").await;
        let held = pods
            .iter()
            .filter(|p| {
                p.metadata
                    .finalizers
                    .iter()
                    .flatten()
                    .any(|f| f == JOB_TRACKING_FINALIZER)
            })
            .count();
        if held == 2 {
            Ok(())
        } else {
            Err(format!("{held} of {}", pods.len()))
        }
    })
    .await;
    let background = kube_client::api::DeleteParams::background();
    sim.api::<Job>()
        .delete("gone", &background)
        .await
        .expect("the Job is deleted");
    eventually("the orphaned Pods to be gone", || async {
        let pods = job_pods(&sim, "gone").await;
        if pods.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{:?}",
                pods.iter()
                    .map(|p| &p.metadata.finalizers)
                    .collect::<Vec<_>>()
            ))
        }
    })
    .await;
    sim.stop().await;
}
