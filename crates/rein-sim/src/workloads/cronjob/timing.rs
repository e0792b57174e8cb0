//! kube's `utils.go` on time: the most recent schedule a CronJob missed
//! (`mostRecentScheduleTime`), the one to run now (`nextScheduleTime`, within
//! `startingDeadlineSeconds`), and when to look again (`nextScheduleTimeDuration`).

use std::time::Duration;

use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::schedule::Schedule;

/// `nextScheduleDelta`: requeues land this long after the schedule, against clock skew.
pub(super) const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

/// How many schedules were missed since the last one (`missedSchedulesType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Missed {
    /// None, or only the one about to run.
    None,
    /// Some.
    Few,
    /// More than 100: kube warns `TooManyMissedTimes`.
    Many,
}

/// What [`most_recent_schedule_time`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MostRecent {
    /// The last schedule time, else the CronJob's creation (moved up to the starting
    /// deadline when asked).
    pub(super) earliest: Timestamp,
    /// The latest schedule time not after now, if any came since `earliest`.
    pub(super) most_recent: Option<Timestamp>,
    /// How many were missed.
    pub(super) missed: Missed,
}

/// A schedule whose times come less than a second apart (or never): robfig parses
/// `59 23 31 2 *`, but it never fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TooClose;

impl std::fmt::Display for TooClose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("time difference between two schedules is less than 1 second")
    }
}

impl std::error::Error for TooClose {}

/// `mostRecentScheduleTime`: from the last schedule time (or the creation time, or with
/// `with_deadline` the start of the `startingDeadlineSeconds` window if later), the most
/// recent time a Job should have been created by `now`.
pub(super) fn most_recent_schedule_time(
    cj: &CronJob,
    now: Timestamp,
    schedule: &Schedule,
    with_deadline: bool,
) -> Result<MostRecent, TooClose> {
    let mut earliest = cj
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    if let Some(last) = cj
        .status
        .as_ref()
        .and_then(|s| s.last_schedule_time.as_ref())
    {
        earliest = last.0;
    }
    if with_deadline
        && let Some(deadline) = cj.spec.as_ref().and_then(|s| s.starting_deadline_seconds)
    {
        let window = shift(now, deadline.saturating_neg());
        if window > earliest {
            earliest = window;
        }
    }
    let none = |missed| MostRecent {
        earliest,
        most_recent: None,
        missed,
    };
    let Some(t1) = schedule.next(earliest) else {
        return Err(TooClose);
    };
    if now < t1 {
        return Ok(none(Missed::None));
    }
    let Some(t2) = schedule.next(t1) else {
        return Err(TooClose);
    };
    if now < t2 {
        return Ok(MostRecent {
            earliest,
            most_recent: Some(t1),
            missed: Missed::None,
        });
    }
    // Go's `Round(time.Second)`: half a second rounds up.
    let between = i64::try_from((t2.duration_since(t1).as_nanos() + 500_000_000) / 1_000_000_000)
        .unwrap_or(i64::MAX);
    if between < 1 {
        return Err(TooClose);
    }
    // A rough count of the missed schedules, as kube makes it: how many intervals fit
    // between the first missed one and now.
    let elapsed = now.duration_since(t1).as_secs();
    let missed = elapsed / between + 1;
    // Start a little before the estimate of the latest, so irregular schedules
    // (`30 6-16/4 * * 1-5`) and `@every` land on their own times.
    let potential_earliest = shift(t1, (missed - 2).saturating_mul(between));
    let mut most_recent = None;
    let mut t = schedule.next(potential_earliest);
    while let Some(at) = t.filter(|at| *at <= now) {
        most_recent = Some(at);
        t = schedule.next(at);
    }
    let missed = if missed > 100 {
        Missed::Many
    } else if missed > 0 {
        Missed::Few
    } else {
        Missed::None
    };
    Ok(MostRecent {
        earliest,
        most_recent,
        missed,
    })
}

/// `nextScheduleTime`: the schedule time to run now, if one came and is not after `now`,
/// and how many were missed (kube warns when many); the starting deadline applies.
pub(super) fn next_schedule_time(
    cj: &CronJob,
    now: Timestamp,
    schedule: &Schedule,
) -> Result<Option<(Timestamp, Missed)>, TooClose> {
    let found = most_recent_schedule_time(cj, now, schedule, true)?;
    Ok(found
        .most_recent
        .filter(|t| *t <= now)
        .map(|t| (t, found.missed)))
}

/// `nextScheduleTimeDuration`: how long until the schedule after the most recent one (plus
/// [`NEXT_SCHEDULE_DELTA`]). `None` when the schedule never fires again (kube would spin).
pub(super) fn next_schedule_time_duration(
    cj: &CronJob,
    now: Timestamp,
    schedule: &Schedule,
) -> Option<Duration> {
    let from = match most_recent_schedule_time(cj, now, schedule, false) {
        Err(TooClose) => now,
        Ok(MostRecent {
            most_recent: Some(t),
            ..
        }) => t,
        Ok(MostRecent {
            earliest,
            missed: Missed::None,
            ..
        }) => earliest,
        // Missed schedules since `earliest` but none found: from now.
        Ok(_) => now,
    };
    let next = schedule.next(from)?;
    let wait = next.duration_since(now) + SignedDuration::try_from(NEXT_SCHEDULE_DELTA).ok()?;
    Some(Duration::try_from(wait).unwrap_or_default())
}

/// `t` moved by `secs` seconds, saturating at the ends of time.
fn shift(t: Timestamp, secs: i64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs(secs))
        .unwrap_or(if secs < 0 {
            Timestamp::MIN
        } else {
            Timestamp::MAX
        })
}

/// `getJobName`: `<cronjob>-<scheduled time in minutes since the epoch>`, the same for every
/// try at one schedule time, so a Job is never created twice for it.
pub(super) fn job_name(cron_job: &str, scheduled: Timestamp) -> String {
    format!("{cron_job}-{}", scheduled.as_second().div_euclid(60))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::{CronJobSpec, CronJobStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use k8s_openapi::jiff::tz::TimeZone;

    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("a timestamp")
    }

    fn cron_job(created: &str, last: Option<&str>, deadline: Option<i64>) -> CronJob {
        CronJob {
            metadata: ObjectMeta {
                name: Some("nightly".into()),
                creation_timestamp: Some(Time(ts(created))),
                ..ObjectMeta::default()
            },
            spec: Some(CronJobSpec {
                starting_deadline_seconds: deadline,
                ..CronJobSpec::default()
            }),
            status: Some(CronJobStatus {
                last_schedule_time: last.map(|t| Time(ts(t))),
                ..CronJobStatus::default()
            }),
        }
    }

    fn every_minute() -> Schedule {
        Schedule::parse("* * * * *", &TimeZone::UTC).expect("parses")
    }

    #[test]
    fn nothing_is_due_before_the_first_schedule() {
        let cj = cron_job("2024-05-01T10:00:10Z", None, None);
        let now = ts("2024-05-01T10:00:50Z");
        let found = most_recent_schedule_time(&cj, now, &every_minute(), true).expect("ok");
        assert_eq!(found.most_recent, None);
        assert_eq!(found.missed, Missed::None);
        assert_eq!(next_schedule_time(&cj, now, &every_minute()), Ok(None));
        // Requeued 10 s (and the delta) later, at 10:01:00.1.
        assert_eq!(
            next_schedule_time_duration(&cj, now, &every_minute()),
            Some(Duration::from_millis(10_100))
        );
    }

    #[test]
    fn the_one_due_schedule_is_run() {
        let cj = cron_job("2024-05-01T10:00:10Z", None, None);
        let now = ts("2024-05-01T10:01:00.1Z");
        assert_eq!(
            next_schedule_time(&cj, now, &every_minute()),
            Ok(Some((ts("2024-05-01T10:01:00Z"), Missed::None)))
        );
        assert_eq!(
            job_name("nightly", ts("2024-05-01T10:01:00Z")),
            "nightly-28575961"
        );
    }

    #[test]
    fn of_many_missed_schedules_only_the_most_recent_runs() {
        let cj = cron_job("2024-05-01T10:00:10Z", Some("2024-05-01T10:01:00Z"), None);
        let now = ts("2024-05-01T10:31:30Z");
        assert_eq!(
            next_schedule_time(&cj, now, &every_minute()),
            Ok(Some((ts("2024-05-01T10:31:00Z"), Missed::Few)))
        );
        assert_eq!(
            next_schedule_time_duration(&cj, now, &every_minute()),
            Some(Duration::from_millis(30_100))
        );
        // Irregular schedules land on their own times.
        let odd = Schedule::parse("30 6-16/4 * * 1-5", &TimeZone::UTC).expect("parses");
        let cj = cron_job("2024-04-29T00:00:00Z", None, None);
        let found = next_schedule_time(&cj, ts("2024-05-02T12:00:00Z"), &odd).expect("ok");
        assert_eq!(found, Some((ts("2024-05-02T10:30:00Z"), Missed::Few)));
    }

    #[test]
    fn more_than_a_hundred_missed_is_many() {
        let cj = cron_job("2024-05-01T00:00:10Z", None, None);
        let now = ts("2024-05-01T12:00:30Z");
        assert_eq!(
            next_schedule_time(&cj, now, &every_minute()),
            Ok(Some((ts("2024-05-01T12:00:00Z"), Missed::Many)))
        );
    }

    #[test]
    fn the_starting_deadline_moves_the_window_up() {
        // Created at midnight; twelve hours later, with a 200 s deadline, only the last
        // three minutes count: a few missed, not many.
        let cj = cron_job("2024-05-01T00:00:10Z", None, Some(200));
        let now = ts("2024-05-01T12:00:30Z");
        assert_eq!(
            next_schedule_time(&cj, now, &every_minute()),
            Ok(Some((ts("2024-05-01T12:00:00Z"), Missed::Few)))
        );
        // Hourly with a 10 s deadline, 40 s late: nothing lies in the window.
        let hourly = Schedule::parse("@hourly", &TimeZone::UTC).expect("parses");
        let cj = cron_job("2024-05-01T09:30:00Z", None, Some(10));
        assert_eq!(
            next_schedule_time(&cj, ts("2024-05-01T10:00:40Z"), &hourly),
            Ok(None)
        );
    }

    #[test]
    fn a_schedule_that_never_fires_is_too_close() {
        let never = Schedule::parse("59 23 31 2 *", &TimeZone::UTC).expect("parses");
        let cj = cron_job("2024-05-01T00:00:10Z", None, None);
        assert_eq!(
            next_schedule_time(&cj, ts("2024-05-02T00:00:00Z"), &never),
            Err(TooClose)
        );
        assert_eq!(
            next_schedule_time_duration(&cj, ts("2024-05-02T00:00:00Z"), &never),
            None
        );
    }
}
