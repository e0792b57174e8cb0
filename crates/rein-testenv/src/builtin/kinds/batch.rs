//! Jobs and CronJobs (`ValidateJob`, `ValidateCronJob`): counts not negative, pods that
//! restart `OnFailure` or `Never`, a schedule that parses, a template that does not change.

use serde_json::Value;

use super::{non_negative, pod};
use crate::builtin::field::{FieldError, Path};

/// `ValidateJob` / `ValidateJobUpdate`.
pub(crate) fn job(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    job_spec(
        obj.get("spec").unwrap_or(&Value::Null),
        &Path::new("spec"),
        errs,
    );
    if let Some(old) = old {
        let suspended = old.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        let template = obj.pointer("/spec/template").unwrap_or(&Value::Null);
        if !suspended && Some(template) != old.pointer("/spec/template") {
            errs.push(FieldError::immutable("spec.template", template));
        }
    }
}

/// `ValidateCronJobCreate` / `Update`: the schedule (robfig/cron's standard syntax; `TZ=` in
/// it only where the old schedule had it), the concurrency policy and the job template.
pub(crate) fn cron_job(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let spec = Path::new("spec");
    let schedule = super::text(obj, "/spec/schedule");
    if schedule.is_empty() {
        errs.push(FieldError::required(spec.child("schedule"), ""));
    } else {
        if let Some(problem) = super::cron::schedule_problem(schedule) {
            errs.push(FieldError::invalid_str(
                spec.child("schedule"),
                schedule,
                problem,
            ));
        }
        let time_zone = obj.pointer("/spec/timeZone").is_some_and(|z| !z.is_null());
        let allow_tz = old.is_some_and(|o| super::text(o, "/spec/schedule").contains("TZ"));
        if schedule.contains("TZ") {
            let problem = if !allow_tz {
                Some("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
            } else if time_zone {
                Some("cannot use both timeZone field and TZ or CRON_TZ in schedule")
            } else {
                None
            };
            if let Some(problem) = problem {
                errs.push(FieldError::invalid_str(
                    spec.child("schedule"),
                    schedule,
                    problem,
                ));
            }
        }
    }
    non_negative(
        obj,
        "/spec/startingDeadlineSeconds",
        "spec.startingDeadlineSeconds",
        errs,
    );
    // Checked on create, and on update only when it changes.
    let time_zone = obj.pointer("/spec/timeZone").and_then(Value::as_str);
    if old.is_none_or(|o| o.pointer("/spec/timeZone").and_then(Value::as_str) != time_zone)
        && let Some(zone) = time_zone
    {
        for problem in time_zone_problems(zone) {
            errs.push(FieldError::invalid_str(
                spec.child("timeZone"),
                zone,
                problem,
            ));
        }
    }
    let policy = super::text(obj, "/spec/concurrencyPolicy");
    let policies = ["Allow", "Forbid", "Replace"];
    if !policy.is_empty() && !policies.contains(&policy) {
        errs.push(FieldError::not_supported(
            spec.child("concurrencyPolicy"),
            policy,
            &policies,
        ));
    }
    let job_spec_value = obj
        .pointer("/spec/jobTemplate/spec")
        .unwrap_or(&Value::Null);
    job_spec(
        job_spec_value,
        &spec.child("jobTemplate").child("spec"),
        errs,
    );
    for limit in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        non_negative(
            obj,
            &format!("/spec/{limit}"),
            &format!("spec.{limit}"),
            errs,
        );
    }
}

/// `validateTimeZone`: each `/`-separated part of the name as the tz database names them
/// (1 to 14 of `A-Za-z0-9.-_+`, not `.`, `..` or starting with `-`), not `Local` in any case,
/// and a zone Go's `time.LoadLocation` loads (the tz database, here chrono-tz's copy; it
/// loads `Local` spelled so).
fn time_zone_problems(zone: &str) -> Vec<String> {
    if zone.is_empty() {
        return vec!["timeZone must be nil or non-empty string".to_string()];
    }
    let part_ok = |part: &str| {
        (1..=14).contains(&part.len())
            && part != "."
            && part != ".."
            && !part.starts_with('-')
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
    };
    if !zone.split('/').all(part_ok) {
        return vec![format!("unknown time zone {zone}")];
    }
    let mut problems = Vec::new();
    if zone.eq_ignore_ascii_case("Local") {
        problems.push(
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
                .to_string(),
        );
    }
    if zone != "Local" && zone.parse::<chrono_tz::Tz>().is_err() {
        problems.push(format!("unknown time zone {zone}"));
    }
    problems
}

fn job_spec(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
    ] {
        if let Some(n) = spec.get(field).and_then(Value::as_i64)
            && n < 0
        {
            errs.push(FieldError::invalid(
                path.child(field),
                &Value::from(n),
                "must be greater than or equal to 0",
            ));
        }
    }
    let template = spec.get("template").unwrap_or(&Value::Null);
    pod::template(template, &path.child("template"), errs);
    let restart_path = path.child("template").child("spec").child("restartPolicy");
    match super::text(template, "/spec/restartPolicy") {
        "OnFailure" | "Never" => {}
        "" => errs.push(FieldError::required(
            restart_path,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        other => errs.push(FieldError::not_supported(
            restart_path,
            other,
            &["OnFailure", "Never"],
        )),
    }
}
