//! The Prometheus process collector's metrics, read from `/proc` at scrape time on Linux
//! (controller-runtime's registry carries them from client_golang): `process_cpu_seconds_total`,
//! `process_open_fds`, `process_max_fds`, `process_virtual_memory_bytes`,
//! `process_virtual_memory_max_bytes`, `process_resident_memory_bytes` and
//! `process_start_time_seconds`. Elsewhere, or when `/proc` cannot be read, nothing is written.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Linux's `USER_HZ`: the unit of the CPU times in `/proc/<pid>/stat` on every architecture
/// Rust supports.
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// Registered once in [`super::registry`].
#[derive(Debug)]
pub(super) struct ProcessCollector;

/// One reading of the process's figures.
#[derive(Debug, Clone, PartialEq)]
struct Reading {
    cpu_seconds: f64,
    open_fds: Option<u64>,
    max_fds: Option<u64>,
    virtual_bytes: u64,
    virtual_max_bytes: Option<u64>,
    resident_bytes: u64,
    start_time_seconds: Option<f64>,
}

/// Parses `/proc/<pid>/stat`: CPU seconds, start time in ticks since boot, virtual size and
/// resident pages. The command name (field 2) may hold spaces and parentheses, so fields are
/// counted from the last `)`.
fn parse_stat(stat: &str) -> Option<(f64, u64, u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); utime is field 14, stime 15, starttime 22, vsize 23,
    // rss 24.
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    let cpu = (field(14)? + field(15)?) as f64 / CLOCK_TICKS_PER_SECOND;
    Some((cpu, field(22)?, field(23)?, field(24)?))
}

/// The soft limit of a `/proc/<pid>/limits` row, `None` when unlimited or absent.
fn parse_limit(limits: &str, row: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with(row))?;
    line[row.len()..].split_whitespace().next()?.parse().ok()
}

/// `btime` (boot time, seconds since the epoch) from `/proc/stat`.
fn parse_boot_time(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

fn read() -> Option<Reading> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (cpu_seconds, start_ticks, virtual_bytes, resident_pages) = parse_stat(&stat)?;
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let start_time_seconds = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| parse_boot_time(&s))
        .map(|boot| boot as f64 + start_ticks as f64 / CLOCK_TICKS_PER_SECOND);
    // The page size is not in /proc/self; `statm`'s resident pages times `smaps_rollup`'s
    // kB would need two reads, so take it from `status`, which states it in kB.
    let resident_bytes = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(resident_pages * 4096, |kb| kb * 1024);
    Some(Reading {
        cpu_seconds,
        open_fds: std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64),
        max_fds: parse_limit(&limits, "Max open files"),
        virtual_bytes,
        virtual_max_bytes: parse_limit(&limits, "Max address space"),
        resident_bytes,
        start_time_seconds,
    })
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let Some(r) = read() else {
            return Ok(());
        };
        let counter = ConstCounter::new(r.cpu_seconds);
        counter.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            counter.metric_type(),
        )?)?;
        let gauges: [(&str, &str, Option<f64>); 6] = [
            (
                "process_open_fds",
                "Number of open file descriptors.",
                r.open_fds.map(|v| v as f64),
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                r.max_fds.map(|v| v as f64),
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                Some(r.virtual_bytes as f64),
            ),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                // client_golang reports an unlimited address space as -1.
                Some(r.virtual_max_bytes.map_or(-1.0, |v| v as f64)),
            ),
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                Some(r.resident_bytes as f64),
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                r.start_time_seconds,
            ),
        ];
        for (name, help, value) in gauges {
            let Some(value) = value else { continue };
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        // pid (comm with ") x" inside) state ppid … as the kernel writes it.
        let stat = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 150 0 0 20 0 \
                    8 0 123456 987654321 2048 18446744073709551615";
        let (cpu, start, vsize, rss) = parse_stat(stat).expect("parses");
        assert_eq!(cpu, 4.0);
        assert_eq!(start, 123_456);
        assert_eq!(vsize, 987_654_321);
        assert_eq!(rss, 2048);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn limits_and_boot_time_parse() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max address space         unlimited            unlimited            bytes\n\
                      Max open files            1024                 1048576              files\n";
        assert_eq!(parse_limit(limits, "Max open files"), Some(1024));
        assert_eq!(parse_limit(limits, "Max address space"), None);
        assert_eq!(
            parse_boot_time("cpu  1 2 3\nbtime 1700000000\nprocesses 5\n"),
            Some(1_700_000_000)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read_and_encoded() {
        let reading = read().expect("reads /proc/self");
        assert!(reading.resident_bytes > 0);
        assert!(reading.open_fds.is_some_and(|n| n > 0));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &super::super::registry().lock())
            .unwrap();
        for name in [
            "process_cpu_seconds_total",
            "process_open_fds",
            "process_resident_memory_bytes",
            "process_start_time_seconds",
        ] {
            assert!(text.contains(&format!("\n{name} ")), "{name} in:\n{text}");
        }
    }
}
