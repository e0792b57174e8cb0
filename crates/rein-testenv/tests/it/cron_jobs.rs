//! CronJob `spec.timeZone` validated as kube-apiserver's `validateTimeZone`, over real HTTP.

use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::admission_support::send;

const CRON_JOBS: &str = "/apis/batch/v1/namespaces/default/cronjobs";

fn cron_job(name: &str, time_zone: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {
            "schedule": "0 3 * * *",
            "timeZone": time_zone,
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "c", "image": "busybox"}],
            }}}},
        },
    })
}

/// The 422 kube-apiserver answers for `spec.timeZone` with `details`.
fn invalid(name: &str, zone: &str, details: &[&str]) -> Value {
    let causes: Vec<Value> = details
        .iter()
        .map(|d| {
            json!({
                "reason": "FieldValueInvalid",
                "message": format!("Invalid value: \"{zone}\": {d}"),
                "field": "spec.timeZone",
            })
        })
        .collect();
    let listed: Vec<String> = details
        .iter()
        .map(|d| format!("spec.timeZone: Invalid value: \"{zone}\": {d}"))
        .collect();
    let message = if listed.len() == 1 {
        listed[0].clone()
    } else {
        format!("[{}]", listed.join(", "))
    };
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("CronJob.batch \"{name}\" is invalid: {message}"),
        "reason": "Invalid",
        "details": {"name": name, "group": "batch", "kind": "CronJob", "causes": causes},
        "code": 422,
    })
}

#[tokio::test]
async fn a_time_zone_must_be_one_the_tz_database_knows() {
    let env = TestEnv::start().await.expect("starts");
    for zone in ["America/New_York", "UTC", "Etc/GMT+5", "Local"] {
        let name = format!("ok-{}", zone.len());
        let sent = send(&env, "POST", CRON_JOBS, Some(&cron_job(&name, zone))).await;
        if zone == "Local" {
            assert_eq!(
                sent.body,
                invalid(
                    &name,
                    zone,
                    &[
                        "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
                    ]
                )
            );
        } else {
            assert_eq!(sent.code, 201, "{zone}: {}", sent.body);
        }
    }
    let sent = send(
        &env,
        "POST",
        CRON_JOBS,
        Some(&cron_job("mars", "Mars/Olympus")),
    )
    .await;
    assert_eq!(
        sent.body,
        invalid("mars", "Mars/Olympus", &["unknown time zone Mars/Olympus"])
    );
    // The name rules are checked before the database: a part longer than 14 characters.
    let sent = send(
        &env,
        "POST",
        CRON_JOBS,
        Some(&cron_job("long", "America/Argentina_Buenos")),
    )
    .await;
    assert_eq!(
        sent.body,
        invalid(
            "long",
            "America/Argentina_Buenos",
            &["unknown time zone America/Argentina_Buenos"]
        )
    );
    let sent = send(&env, "POST", CRON_JOBS, Some(&cron_job("lower", "local"))).await;
    assert_eq!(
        sent.body,
        invalid(
            "lower",
            "local",
            &[
                "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
                "unknown time zone local"
            ]
        )
    );
}
