//! CronJob schedules as kube-apiserver checks them: `cron.ParseStandard` of robfig/cron v3
//! (five fields or a descriptor, an optional `TZ=`/`CRON_TZ=` prefix), with its error texts.

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
/// Month names map to 1..=12.
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
/// Day names map to 0..=6.
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// Why `ParseStandard` refuses `spec`, in its words; `None` when it parses.
pub(super) fn schedule_problem(spec: &str) -> Option<String> {
    if spec.is_empty() {
        return Some("empty spec string".to_string());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        // The location is loaded from the host's zone database; only its shape is checked.
        let Some(space) = spec.find(' ') else {
            return Some(format!("invalid location descriptior: {spec}"));
        };
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return descriptor_problem(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Some(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    [MINUTES, HOURS, DOM, MONTHS, DOW]
        .iter()
        .zip(&fields)
        .find_map(|(bounds, field)| field_problem(field, bounds))
}

fn descriptor_problem(spec: &str) -> Option<String> {
    match spec {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => {
            None
        }
        _ => match spec.strip_prefix("@every ") {
            Some(duration) => duration_problem(duration)
                .map(|problem| format!("failed to parse duration {spec}: {problem}")),
            None => Some(format!("unrecognized descriptor: {spec}")),
        },
    }
}

/// Go's `time.ParseDuration` errors: `[-+]` then one or more `<decimal><unit>`.
fn duration_problem(s: &str) -> Option<String> {
    let quoted = format!("\"{s}\"");
    let invalid = || Some(format!("time: invalid duration {quoted}"));
    let mut rest = s.strip_prefix(['-', '+']).unwrap_or(s);
    if rest == "0" {
        return None;
    }
    if rest.is_empty() {
        return invalid();
    }
    while !rest.is_empty() {
        let digits = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let number = &rest[..digits];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return invalid();
        }
        rest = &rest[digits..];
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(rest.len(), |(i, _)| i);
        let unit = &rest[..unit_len];
        if unit.is_empty() {
            return Some(format!("time: missing unit in duration {quoted}"));
        }
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return Some(format!(
                "time: unknown unit \"{unit}\" in duration {quoted}"
            ));
        }
        rest = &rest[unit_len..];
    }
    None
}

/// A comma-separated list of ranges (`getField`): the first range's error.
fn field_problem(field: &str, bounds: &Bounds) -> Option<String> {
    field
        .split(',')
        .filter(|range| !range.is_empty())
        .find_map(|range| range_problem(range, bounds))
}

/// `number | number "-" number [ "/" number ]`, `*` or `?` (`getRange`).
fn range_problem(expr: &str, bounds: &Bounds) -> Option<String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if matches!(low_and_high[0], "*" | "?") {
        (bounds.min, bounds.max)
    } else {
        let start = match int_or_name(low_and_high[0], bounds) {
            Ok(n) => n,
            Err(problem) => return Some(problem),
        };
        match low_and_high.len() {
            1 => (start, start),
            2 => match int_or_name(low_and_high[1], bounds) {
                Ok(end) => (start, end),
                Err(problem) => return Some(problem),
            },
            _ => return Some(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = match non_negative_int(range_and_step[1]) {
                Ok(n) => n,
                Err(problem) => return Some(problem),
            };
            if low_and_high.len() == 1 {
                end = bounds.max;
            }
            step
        }
        _ => return Some(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Some(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Some(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Some(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Some(format!("step of range should be a positive number: {expr}"));
    }
    None
}

fn int_or_name(expr: &str, bounds: &Bounds) -> Result<u32, String> {
    let lower = expr.to_ascii_lowercase();
    if let Some(index) = bounds.names.iter().position(|n| *n == lower) {
        let first = if bounds.min == 1 { 1 } else { 0 };
        return Ok(u32::try_from(index).unwrap_or(0) + first);
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

#[cfg(test)]
mod tests {
    use super::schedule_problem;

    #[test]
    fn standard_schedules_and_descriptors_parse() {
        for ok in [
            "*/5 * * * *",
            "0 0 1 1 *",
            "0-59/15 0,12 1-31 JAN-dec sun-SAT",
            "30 2 ? * mon",
            "@hourly",
            "@every 1h30m",
            "@every 1.5s",
            "TZ=Europe/Paris 0 0 * * *",
        ] {
            assert_eq!(schedule_problem(ok), None, "{ok}");
        }
    }

    #[test]
    fn refusals_are_worded_as_robfig_cron_words_them() {
        for (spec, problem) in [
            ("", "empty spec string"),
            ("nonsense", "expected exactly 5 fields, found 1: [nonsense]"),
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
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
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
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
        ] {
            assert_eq!(schedule_problem(spec).as_deref(), Some(problem), "{spec:?}");
        }
    }
}
