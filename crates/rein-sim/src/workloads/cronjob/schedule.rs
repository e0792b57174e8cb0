//! CronJob schedules as robfig/cron v3 (the library kube-controller-manager uses) reads and
//! runs them: `ParseStandard` (five fields or a descriptor, an optional `TZ=`/`CRON_TZ=`
//! prefix) and its schedules' `Next` (a day matches on day of month *or* day of week unless
//! either field starts with `*`; `@every` counts from the given time).

use std::fmt;
use std::time::Duration;

use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{Timestamp, ToSpan, Zoned, civil};

/// Set on a field's bits when it was written `*` or `?` (robfig's `starBit`).
const STAR: u64 = 1 << 63;

/// A parsed schedule: when it fires next after a given time.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// A crontab line or a descriptor (`@hourly`, …), in a time zone.
    Spec(SpecSchedule),
    /// `@every <duration>`: the duration after each time, in whole seconds (at least one).
    Every(Duration),
}

/// A crontab line as bit sets per field (robfig's `SpecSchedule`); seconds are always `0`.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecSchedule {
    second: u64,
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
    location: TimeZone,
}

/// Why a schedule does not parse, in robfig/cron's words (kube puts them in its events).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The schedule is the empty string.
    Empty,
    /// A `TZ=`/`CRON_TZ=` prefix with nothing after it.
    LocationWithoutSpec {
        /// The whole schedule.
        spec: String,
    },
    /// A `TZ=`/`CRON_TZ=` prefix names no known time zone.
    BadLocation {
        /// The zone's name.
        zone: String,
    },
    /// Not five fields.
    FieldCount {
        /// The fields found.
        fields: Vec<String>,
    },
    /// `@` followed by no descriptor robfig knows.
    UnrecognizedDescriptor {
        /// The descriptor.
        descriptor: String,
    },
    /// `@every` with a duration Go's `time.ParseDuration` refuses.
    Duration {
        /// The descriptor.
        descriptor: String,
        /// `ParseDuration`'s error.
        problem: String,
    },
    /// A field's range, step or number is wrong.
    Field {
        /// What is wrong, with the range.
        problem: String,
    },
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::Empty => f.write_str("empty spec string"),
            ScheduleError::LocationWithoutSpec { spec } => {
                write!(f, "invalid location descriptior: {spec}")
            }
            ScheduleError::BadLocation { zone } => {
                write!(f, "provided bad location {zone}: unknown time zone {zone}")
            }
            ScheduleError::FieldCount { fields } => write!(
                f,
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            ),
            ScheduleError::UnrecognizedDescriptor { descriptor } => {
                write!(f, "unrecognized descriptor: {descriptor}")
            }
            ScheduleError::Duration {
                descriptor,
                problem,
            } => write!(f, "failed to parse duration {descriptor}: {problem}"),
            ScheduleError::Field { problem } => f.write_str(problem),
        }
    }
}

impl std::error::Error for ScheduleError {}

/// A field's bounds and names.
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// Loads a time zone as Go's `time.LoadLocation` does: `""` and `"UTC"` are UTC, `"Local"`
/// is `local`, anything else comes from the zone database.
pub fn load_location(name: &str, local: &TimeZone) -> Option<TimeZone> {
    match name {
        "" | "UTC" => Some(TimeZone::UTC),
        "Local" => Some(local.clone()),
        _ => TimeZone::get(name).ok(),
    }
}

impl Schedule {
    /// `cron.ParseStandard`: schedules without a time zone prefix run in `local` (the
    /// controller's own zone).
    pub fn parse(spec: &str, local: &TimeZone) -> Result<Schedule, ScheduleError> {
        if spec.is_empty() {
            return Err(ScheduleError::Empty);
        }
        let mut spec = spec;
        let mut location = local.clone();
        if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
            let Some(space) = spec.find(' ') else {
                return Err(ScheduleError::LocationWithoutSpec {
                    spec: spec.to_owned(),
                });
            };
            let eq = spec.find('=').unwrap_or(0);
            let zone = &spec[eq + 1..space];
            location = load_location(zone, local).ok_or_else(|| ScheduleError::BadLocation {
                zone: zone.to_owned(),
            })?;
            spec = spec[space..].trim();
        }
        if spec.starts_with('@') {
            return descriptor(spec, location);
        }
        let fields: Vec<&str> = spec.split_whitespace().collect();
        let [minute, hour, dom, month, dow] = fields[..] else {
            return Err(ScheduleError::FieldCount {
                fields: fields.iter().map(|f| (*f).to_owned()).collect(),
            });
        };
        Ok(Schedule::Spec(SpecSchedule {
            second: 1,
            minute: field(minute, &MINUTES)?,
            hour: field(hour, &HOURS)?,
            dom: field(dom, &DOM)?,
            month: field(month, &MONTHS)?,
            dow: field(dow, &DOW)?,
            location,
        }))
    }

    /// The first time the schedule fires strictly after `after` (`None`: not within five
    /// years, where robfig answers the zero time).
    pub fn next(&self, after: Timestamp) -> Option<Timestamp> {
        match self {
            Schedule::Spec(spec) => spec.next(after),
            Schedule::Every(delay) => {
                let whole = floor_second(after)?;
                let delay = i64::try_from(delay.as_secs()).ok()?;
                Timestamp::from_second(whole.checked_add(delay)?).ok()
            }
        }
    }
}

/// The whole seconds of `t`, rounded down (Go's `t.Unix()`).
fn floor_second(t: Timestamp) -> Option<i64> {
    let secs = t.as_second();
    if t.subsec_nanosecond() < 0 {
        secs.checked_sub(1)
    } else {
        Some(secs)
    }
}

impl SpecSchedule {
    /// robfig's `SpecSchedule.Next`: field by field from the month down, a field that does
    /// not match is incremented (resetting the ones below), wrapping to re-check the ones
    /// above.
    fn next(&self, after: Timestamp) -> Option<Timestamp> {
        // A field without any value never matches: answer at once rather than search.
        let values = |bits: u64| bits & !STAR;
        if [self.second, self.minute, self.hour, self.month]
            .into_iter()
            .any(|b| values(b) == 0)
            || (values(self.dom) == 0 && values(self.dow) == 0)
        {
            return None;
        }
        let tz = &self.location;
        let start = Timestamp::from_second(floor_second(after)?.checked_add(1)?).ok()?;
        let mut t = start.to_zoned(tz.clone());
        let mut added = false;
        let year_limit = t.year() + 5;
        'wrap: loop {
            if t.year() > year_limit {
                return None;
            }
            while bit(t.month()) & self.month == 0 {
                if !added {
                    added = true;
                    t = at(tz, t.year(), t.month(), 1, 0)?;
                }
                t = t.checked_add(1.month()).ok()?;
                if t.month() == 1 {
                    continue 'wrap;
                }
            }
            while !self.day_matches(&t) {
                if !added {
                    added = true;
                    t = at(tz, t.year(), t.month(), t.day(), 0)?;
                }
                t = t.checked_add(1.day()).ok()?;
                // Where DST moved midnight, come back to it.
                let hour = t.hour();
                if hour != 0 {
                    let shift = if hour > 12 { 24 - hour } else { -hour };
                    t = t.checked_add(i64::from(shift).hours()).ok()?;
                }
                if t.day() == 1 {
                    continue 'wrap;
                }
            }
            while bit(t.hour()) & self.hour == 0 {
                if !added {
                    added = true;
                    t = at(tz, t.year(), t.month(), t.day(), t.hour())?;
                }
                t = t.checked_add(1.hour()).ok()?;
                if t.hour() == 0 {
                    continue 'wrap;
                }
            }
            while bit(t.minute()) & self.minute == 0 {
                if !added {
                    added = true;
                    t = truncate(&t, 60)?;
                }
                t = t.checked_add(1.minute()).ok()?;
                if t.minute() == 0 {
                    continue 'wrap;
                }
            }
            while bit(t.second()) & self.second == 0 {
                if !added {
                    added = true;
                    t = truncate(&t, 1)?;
                }
                t = t.checked_add(1.second()).ok()?;
                if t.second() == 0 {
                    continue 'wrap;
                }
            }
            return Some(t.timestamp());
        }
    }

    /// `dayMatches`: both day fields must match if either was `*`, else either may.
    fn day_matches(&self, t: &Zoned) -> bool {
        let dom = bit(t.day()) & self.dom != 0;
        let dow = bit(t.weekday().to_sunday_zero_offset()) & self.dow != 0;
        if self.dom & STAR != 0 || self.dow & STAR != 0 {
            dom && dow
        } else {
            dom || dow
        }
    }
}

/// The bit of a field's value.
fn bit(value: i8) -> u64 {
    u32::try_from(value)
        .ok()
        .and_then(|v| 1u64.checked_shl(v))
        .unwrap_or(0)
}

/// The civil time `year-month-day hour:00:00` in `tz` (earlier offset in a fold, later in a
/// gap).
fn at(tz: &TimeZone, year: i16, month: i8, day: i8, hour: i8) -> Option<Zoned> {
    civil::DateTime::new(year, month, day, hour, 0, 0, 0)
        .ok()?
        .to_zoned(tz.clone())
        .ok()
}

/// Go's `Truncate`: rounds the absolute time down to a multiple of `seconds`.
fn truncate(t: &Zoned, seconds: i64) -> Option<Zoned> {
    let whole = floor_second(t.timestamp())?;
    let ts = Timestamp::from_second(whole - whole.rem_euclid(seconds)).ok()?;
    Some(ts.to_zoned(t.time_zone().clone()))
}

/// `parseDescriptor`.
fn descriptor(spec: &str, location: TimeZone) -> Result<Schedule, ScheduleError> {
    let all = |b: &Bounds| bits(b.min, b.max, 1) | STAR;
    let first = |b: &Bounds| 1u64 << b.min;
    let spec_schedule = |hour, dom, month, dow| {
        Schedule::Spec(SpecSchedule {
            second: 1,
            minute: 1,
            hour,
            dom,
            month,
            dow,
            location: location.clone(),
        })
    };
    let schedule = match spec {
        "@yearly" | "@annually" => {
            spec_schedule(first(&HOURS), first(&DOM), first(&MONTHS), all(&DOW))
        }
        "@monthly" => spec_schedule(first(&HOURS), first(&DOM), all(&MONTHS), all(&DOW)),
        "@weekly" => spec_schedule(first(&HOURS), all(&DOM), all(&MONTHS), first(&DOW)),
        "@daily" | "@midnight" => spec_schedule(first(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
        "@hourly" => spec_schedule(all(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
        _ => {
            let Some(duration) = spec.strip_prefix("@every ") else {
                return Err(ScheduleError::UnrecognizedDescriptor {
                    descriptor: spec.to_owned(),
                });
            };
            let nanos = parse_go_duration(duration).map_err(|problem| ScheduleError::Duration {
                descriptor: spec.to_owned(),
                problem,
            })?;
            // `cron.Every`: at least a second, in whole seconds.
            let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(0).max(1);
            Schedule::Every(Duration::from_secs(secs))
        }
    };
    Ok(schedule)
}

/// `getField`: the union of its comma-separated ranges.
fn field(field: &str, bounds: &Bounds) -> Result<u64, ScheduleError> {
    field
        .split(',')
        .filter(|range| !range.is_empty())
        .try_fold(0, |acc, range| Ok(acc | range_bits(range, bounds)?))
}

/// `getRange`: `number | number "-" number [ "/" number ]`, or `*`/`?` with an optional step.
fn range_bits(expr: &str, bounds: &Bounds) -> Result<u64, ScheduleError> {
    let problem = |problem: String| ScheduleError::Field { problem };
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end, mut extra) = if matches!(low_and_high[0], "*" | "?") {
        (bounds.min, bounds.max, STAR)
    } else {
        let start = int_or_name(low_and_high[0], bounds).map_err(problem)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => int_or_name(low_and_high[1], bounds).map_err(problem)?,
            _ => return Err(problem(format!("too many hyphens: {expr}"))),
        };
        (start, end, 0)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = non_negative_int(range_and_step[1]).map_err(problem)?;
            // "N/step" means "N-max/step".
            if single {
                end = bounds.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(problem(format!("too many slashes: {expr}"))),
    };
    if start < bounds.min {
        return Err(problem(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        )));
    }
    if end > bounds.max {
        return Err(problem(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        )));
    }
    if start > end {
        return Err(problem(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        )));
    }
    if step == 0 {
        return Err(problem(format!(
            "step of range should be a positive number: {expr}"
        )));
    }
    Ok(bits(start, end, step) | extra)
}

/// `getBits`: the values `min..=max` by `step` (all below 64).
fn bits(min: u32, max: u32, step: u32) -> u64 {
    (min..=max)
        .step_by(usize::try_from(step).unwrap_or(usize::MAX))
        .fold(0, |acc, v| acc | 1u64.checked_shl(v).unwrap_or(0))
}

fn int_or_name(expr: &str, bounds: &Bounds) -> Result<u32, String> {
    let lower = expr.to_ascii_lowercase();
    if let Some(index) = bounds.names.iter().position(|n| *n == lower) {
        return Ok(u32::try_from(index).unwrap_or(0) + bounds.min);
    }
    non_negative_int(expr)
}

/// `mustParseInt`: `strconv.Atoi`, then not negative.
fn non_negative_int(expr: &str) -> Result<u32, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing \"{expr}\": invalid syntax"
        ));
    }
    match expr.parse::<i64>() {
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {expr}")),
        Ok(n) => Ok(u32::try_from(n).unwrap_or(u32::MAX)),
        Err(_) => Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing \"{expr}\": value out of range"
        )),
    }
}

/// Go's `time.ParseDuration`, in nanoseconds, with its error texts.
fn parse_go_duration(s: &str) -> Result<i128, String> {
    let quoted = format!("\"{s}\"");
    let invalid = || format!("time: invalid duration {quoted}");
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &rest[..int_len];
        rest = &rest[int_len..];
        let mut frac_part = "";
        if let Some(after_dot) = rest.strip_prefix('.') {
            let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &after_dot[..frac_len];
            rest = &after_dot[frac_len..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(rest.len(), |(i, _)| i);
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale: i128 = match unit {
            "" => return Err(format!("time: missing unit in duration {quoted}")),
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit \"{unit}\" in duration {quoted}"
                ));
            }
        };
        let whole: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut value = whole.checked_mul(scale).ok_or_else(invalid)?;
        if !frac_part.is_empty() {
            let digits = &frac_part[..frac_part.len().min(18)];
            let numerator: i128 = digits.parse().map_err(|_| invalid())?;
            let denominator = 10i128.pow(u32::try_from(digits.len()).unwrap_or(0));
            value += numerator * scale / denominator;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > i128::from(i64::MAX) {
            return Err(invalid());
        }
    }
    Ok(if negative { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("a timestamp")
    }

    fn next(spec: &str, after: &str) -> Option<String> {
        let schedule = Schedule::parse(spec, &TimeZone::UTC).expect("the schedule parses");
        schedule.next(ts(after)).map(|t| t.to_string())
    }

    #[test]
    fn standard_fields_fire_on_the_next_matching_minute() {
        let cases = [
            ("* * * * *", "2024-05-01T10:00:00Z", "2024-05-01T10:01:00Z"),
            (
                "* * * * *",
                "2024-05-01T10:00:59.5Z",
                "2024-05-01T10:01:00Z",
            ),
            (
                "*/15 * * * *",
                "2024-05-01T10:07:00Z",
                "2024-05-01T10:15:00Z",
            ),
            ("0 * * * *", "2024-05-01T10:00:00Z", "2024-05-01T11:00:00Z"),
            ("30 2 * * *", "2024-05-01T03:00:00Z", "2024-05-02T02:30:00Z"),
            ("0 0 1 1 *", "2024-05-01T00:00:00Z", "2025-01-01T00:00:00Z"),
            ("0 0 29 2 *", "2025-01-01T00:00:00Z", "2028-02-29T00:00:00Z"),
            (
                "5-10/5 0,12 * * *",
                "2024-05-01T00:06:00Z",
                "2024-05-01T00:10:00Z",
            ),
            (
                "0 9 * jan-mar mon",
                "2024-05-01T00:00:00Z",
                "2025-01-06T09:00:00Z",
            ),
        ];
        for (spec, after, want) in cases {
            assert_eq!(
                next(spec, after).as_deref(),
                Some(want),
                "{spec} after {after}"
            );
        }
    }

    #[test]
    fn day_fields_are_or_ed_unless_one_is_a_star() {
        // 2024-05-01 is a Wednesday. Day 15 or any Friday:
        assert_eq!(
            next("0 0 15 * fri", "2024-05-01T00:00:00Z").as_deref(),
            Some("2024-05-03T00:00:00Z")
        );
        // Any day of month but only Fridays:
        assert_eq!(
            next("0 0 * * fri", "2024-05-01T00:00:00Z").as_deref(),
            Some("2024-05-03T00:00:00Z")
        );
        // `*/1` is no star for robfig (a step of 1 keeps the star bit), `*/2` is.
        assert_eq!(
            next("0 0 */2 * fri", "2024-05-01T00:00:00Z").as_deref(),
            Some("2024-05-03T00:00:00Z")
        );
        assert_eq!(
            next("0 0 */1 * fri", "2024-05-01T00:00:00Z").as_deref(),
            Some("2024-05-03T00:00:00Z")
        );
        assert_eq!(
            next("0 0 ? * fri", "2024-05-04T00:00:00Z").as_deref(),
            Some("2024-05-10T00:00:00Z")
        );
    }

    #[test]
    fn descriptors_and_every() {
        let after = "2024-05-01T10:20:30Z";
        for (spec, want) in [
            ("@hourly", "2024-05-01T11:00:00Z"),
            ("@daily", "2024-05-02T00:00:00Z"),
            ("@midnight", "2024-05-02T00:00:00Z"),
            ("@weekly", "2024-05-05T00:00:00Z"),
            ("@monthly", "2024-06-01T00:00:00Z"),
            ("@yearly", "2025-01-01T00:00:00Z"),
            ("@annually", "2025-01-01T00:00:00Z"),
            ("@every 90s", "2024-05-01T10:22:00Z"),
            ("@every 1.5s", "2024-05-01T10:20:31Z"),
            ("@every 100ms", "2024-05-01T10:20:31Z"),
        ] {
            assert_eq!(next(spec, after).as_deref(), Some(want), "{spec}");
        }
    }

    #[test]
    fn impossible_days_never_fire() {
        assert_eq!(next("0 0 31 2 *", "2024-05-01T00:00:00Z"), None);
        assert_eq!(next(", * * * *", "2024-05-01T00:00:00Z"), None);
    }

    #[test]
    fn a_time_zone_prefix_moves_the_schedule() {
        let Some(zone) = TimeZone::get("America/New_York").ok() else {
            eprintln!("skipping: no zone database");
            return;
        };
        for prefix in ["TZ=America/New_York", "CRON_TZ=America/New_York"] {
            let spec = format!("{prefix} 0 9 * * *");
            // 09:00 EDT is 13:00 UTC.
            assert_eq!(
                next(&spec, "2024-05-01T00:00:00Z").as_deref(),
                Some("2024-05-01T13:00:00Z")
            );
        }
        // The zone of the controller applies to schedules without one.
        let local = Schedule::parse("0 9 * * *", &zone).expect("parses");
        assert_eq!(
            local
                .next(ts("2024-12-01T00:00:00Z"))
                .map(|t| t.to_string()),
            Some("2024-12-01T14:00:00Z".to_owned())
        );
        // 02:30 does not exist on 2024-03-10 (spring forward): robfig skips that day.
        let gap =
            Schedule::parse("TZ=America/New_York 30 2 * * *", &TimeZone::UTC).expect("parses");
        let first = gap.next(ts("2024-03-09T12:00:00Z")).expect("fires");
        assert_eq!(first.to_string(), "2024-03-11T06:30:00Z");
        let second = gap.next(first).expect("fires");
        assert_eq!(second.to_string(), "2024-03-12T06:30:00Z");
    }

    #[test]
    fn refusals_are_worded_as_robfig_words_them() {
        for (spec, problem) in [
            ("", "empty spec string"),
            ("nonsense", "expected exactly 5 fields, found 1: [nonsense]"),
            (
                "* * * * * *",
                "expected exactly 5 fields, found 6: [* * * * * *]",
            ),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("*/2/3 * * * *", "too many slashes: */2/3"),
            (
                "-1 * * * *",
                "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax",
            ),
            (
                "* * * foo *",
                "failed to parse int from foo: strconv.Atoi: parsing \"foo\": invalid syntax",
            ),
            ("@fortnightly", "unrecognized descriptor: @fortnightly"),
            (
                "@every 5",
                "failed to parse duration @every 5: time: missing unit in duration \"5\"",
            ),
            (
                "@every 5d",
                "failed to parse duration @every 5d: time: unknown unit \"d\" in duration \"5d\"",
            ),
            ("TZ=UTC", "invalid location descriptior: TZ=UTC"),
            (
                "TZ=Nowhere/Atlantis * * * * *",
                "provided bad location Nowhere/Atlantis: unknown time zone Nowhere/Atlantis",
            ),
        ] {
            let err = Schedule::parse(spec, &TimeZone::UTC).expect_err(spec);
            assert_eq!(err.to_string(), problem, "{spec:?}");
        }
    }
}
