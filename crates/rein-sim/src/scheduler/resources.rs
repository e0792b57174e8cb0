//! Resource quantities and Pod requests as the scheduler counts them: apimachinery's
//! `Quantity` parsed exactly (no floating point), rounded up as `Value()` / `MilliValue()`
//! do, and `resourcehelper.PodRequests` (containers summed, init containers as a running
//! maximum, sidecars added, overhead on top).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The scheduler's CPU request for a container that asks for none, in millicores
/// (`schedutil.DefaultMilliCPURequest`), used for scoring only.
pub(crate) const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// The scheduler's memory request for a container that asks for none, in bytes
/// (`schedutil.DefaultMemoryRequest`, 200 MiB), used for scoring only.
pub(crate) const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// A parsed quantity: `mantissa × 10^exp10 × 2^exp2`, with its sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parsed {
    negative: bool,
    mantissa: u128,
    exp10: i32,
    exp2: u32,
}

impl Parsed {
    /// The value in units of `10^-scale`, rounded up (away from zero for negatives, as
    /// `inf.Dec`'s `RoundUp`), saturating at the bounds of `i64`.
    pub(crate) fn scaled(&self, scale: i32) -> i64 {
        let mut v = self.mantissa;
        for _ in 0..self.exp2 {
            v = v.saturating_mul(2);
        }
        let e = self.exp10.saturating_add(scale);
        if e >= 0 {
            for _ in 0..e.min(64) {
                v = v.saturating_mul(10);
            }
        } else {
            let mut divisor: u128 = 1;
            let mut underflow = false;
            for _ in 0..(-e) {
                match divisor.checked_mul(10) {
                    Some(d) => divisor = d,
                    None => {
                        underflow = true;
                        break;
                    }
                }
            }
            v = if underflow {
                u128::from(v > 0)
            } else {
                v.div_ceil(divisor)
            };
        }
        let magnitude = i64::try_from(v).unwrap_or(i64::MAX);
        if self.negative { -magnitude } else { magnitude }
    }

    /// `Quantity.Value()`: whole units, rounded up.
    pub(crate) fn value(&self) -> i64 {
        self.scaled(0)
    }

    /// `Quantity.MilliValue()`: thousandths, rounded up.
    pub(crate) fn milli_value(&self) -> i64 {
        self.scaled(3)
    }
}

/// Parses a quantity in apimachinery's grammar: a signed decimal number followed by a binary
/// suffix (`Ki`…`Ei`), a decimal suffix (`n`, `u`, `m`, `k`, `M`…`E`) or a decimal exponent
/// (`e3`, `E-2`). `None` for anything else.
pub(crate) fn parse(s: &str) -> Option<Parsed> {
    let s = s.trim();
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let number_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    if fraction.contains('.') {
        return None;
    }
    let mut mantissa: u128 = 0;
    for d in whole.bytes().chain(fraction.bytes()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(u128::from(d - b'0'))?;
    }
    let mut exp10 = -i32::try_from(fraction.len()).ok()?;
    let mut exp2 = 0;
    match suffix {
        "" => {}
        "Ki" => exp2 = 10,
        "Mi" => exp2 = 20,
        "Gi" => exp2 = 30,
        "Ti" => exp2 = 40,
        "Pi" => exp2 = 50,
        "Ei" => exp2 = 60,
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        other => {
            let exponent = other.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let e: i32 = exponent.parse().ok()?;
            exp10 = exp10.checked_add(e)?;
        }
    }
    Some(Parsed {
        negative: negative && mantissa != 0,
        mantissa,
        exp10,
        exp2,
    })
}

/// Compute resources in the units the scheduler compares: millicores and bytes; extended
/// resources (`nvidia.com/gpu`, `hugepages-2Mi`, …) in whole units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Resources {
    /// CPU, in millicores.
    pub(crate) milli_cpu: i64,
    /// Memory, in bytes.
    pub(crate) memory: i64,
    /// Ephemeral storage, in bytes.
    pub(crate) ephemeral_storage: i64,
    /// Every other resource by name, in whole units.
    pub(crate) scalars: BTreeMap<String, i64>,
}

impl Resources {
    /// The resources of a resource list; `pods` is left out (it is a count, not a request)
    /// and unparseable quantities count as zero (the API server refuses them anyway).
    pub(crate) fn from_list(list: Option<&BTreeMap<String, Quantity>>) -> Resources {
        let mut r = Resources::default();
        for (name, q) in list.into_iter().flatten() {
            let Some(p) = parse(&q.0) else { continue };
            match name.as_str() {
                "cpu" => r.milli_cpu = r.milli_cpu.saturating_add(p.milli_value()),
                "memory" => r.memory = r.memory.saturating_add(p.value()),
                "ephemeral-storage" => {
                    r.ephemeral_storage = r.ephemeral_storage.saturating_add(p.value());
                }
                "pods" => {}
                other => {
                    let v = r.scalars.entry(other.to_owned()).or_default();
                    *v = v.saturating_add(p.value());
                }
            }
        }
        r
    }

    /// Adds `other` field by field.
    pub(crate) fn add(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        for (name, v) in &other.scalars {
            let mine = self.scalars.entry(name.clone()).or_default();
            *mine = mine.saturating_add(*v);
        }
    }

    /// Keeps, field by field, the larger of `self` and `other`.
    pub(crate) fn max_with(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        for (name, v) in &other.scalars {
            let mine = self.scalars.entry(name.clone()).or_default();
            *mine = (*mine).max(*v);
        }
    }

    /// Whether nothing at all is requested (the resource fit then only counts the Pod).
    pub(crate) fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalars.values().all(|v| *v == 0)
    }

    /// The same with the scheduler's non-zero defaults for CPU and memory where none is
    /// asked (scoring spreads best-effort Pods too).
    pub(crate) fn non_zero(&self) -> Resources {
        let mut r = self.clone();
        if r.milli_cpu == 0 {
            r.milli_cpu = DEFAULT_MILLI_CPU_REQUEST;
        }
        if r.memory == 0 {
            r.memory = DEFAULT_MEMORY_REQUEST;
        }
        r
    }
}

/// A container's requests (its limits where it gives no request, as the API server defaults).
fn container_requests(c: &Container) -> Resources {
    let resources = c.resources.as_ref();
    let mut r = Resources::from_list(resources.and_then(|r| r.limits.as_ref()));
    let requests = Resources::from_list(resources.and_then(|r| r.requests.as_ref()));
    let given = resources.and_then(|r| r.requests.as_ref());
    // Requests win over limits name by name.
    if let Some(given) = given {
        if given.contains_key("cpu") {
            r.milli_cpu = requests.milli_cpu;
        }
        if given.contains_key("memory") {
            r.memory = requests.memory;
        }
        if given.contains_key("ephemeral-storage") {
            r.ephemeral_storage = requests.ephemeral_storage;
        }
        for (name, v) in requests.scalars {
            r.scalars.insert(name, v);
        }
    }
    r
}

/// Whether an init container is a sidecar (`restartPolicy: Always`).
pub(crate) fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// The Pod's effective requests (`resourcehelper.PodRequests`): pod-level resources when
/// given, else the containers' sum plus sidecars, against the largest init container
/// (with the sidecars started before it), plus the runtime class overhead.
pub(crate) fn pod_requests(spec: &PodSpec) -> Resources {
    let mut requests = Resources::default();
    for c in &spec.containers {
        requests.add(&container_requests(c));
    }
    let mut sidecars = Resources::default();
    let mut init_max = Resources::default();
    for c in spec.init_containers.iter().flatten() {
        let own = container_requests(c);
        if is_sidecar(c) {
            sidecars.add(&own);
            init_max.max_with(&sidecars);
        } else {
            let mut with_sidecars = own;
            with_sidecars.add(&sidecars);
            init_max.max_with(&with_sidecars);
        }
    }
    requests.add(&sidecars);
    requests.max_with(&init_max);
    if let Some(pod_level) = spec.resources.as_ref().and_then(|r| r.requests.as_ref()) {
        let pod_level = Resources::from_list(Some(pod_level));
        if pod_level.milli_cpu > 0 {
            requests.milli_cpu = pod_level.milli_cpu;
        }
        if pod_level.memory > 0 {
            requests.memory = pod_level.memory;
        }
    }
    requests.add(&Resources::from_list(spec.overhead.as_ref()));
    requests
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ResourceRequirements;

    use super::*;

    fn q(s: &str) -> Parsed {
        parse(s).unwrap_or_else(|| panic!("{s} should parse"))
    }

    #[test]
    fn quantities_round_up_exactly() {
        assert_eq!(q("4").milli_value(), 4000);
        assert_eq!(q("0.1").milli_value(), 100);
        assert_eq!(q("100m").milli_value(), 100);
        assert_eq!(q("1.5").milli_value(), 1500);
        assert_eq!(q("0.0001").milli_value(), 1);
        assert_eq!(q("1n").value(), 1);
        assert_eq!(q("16Gi").value(), 16 * 1024 * 1024 * 1024);
        assert_eq!(q("1.5Ki").value(), 1536);
        assert_eq!(q("128974848").value(), 128_974_848);
        assert_eq!(q("129e6").value(), 129_000_000);
        assert_eq!(q("1E3").value(), 1000);
        assert_eq!(q("5e-1").milli_value(), 500);
        assert_eq!(q("123M").value(), 123_000_000);
        assert_eq!(q("+2k").value(), 2000);
        assert_eq!(q("-1").value(), -1);
        assert_eq!(q(".5").milli_value(), 500);
        assert_eq!(q("9Ei").value(), i64::MAX);
    }

    #[test]
    fn bad_quantities_are_refused() {
        for bad in [
            "", "abc", "1.2.3", "1Qi", "1e", "1e+", "--1", ".", "1 Gi", "1ee2",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    fn container(requests: &[(&str, &str)], limits: &[(&str, &str)], sidecar: bool) -> Container {
        let list = |pairs: &[(&str, &str)]| {
            (!pairs.is_empty()).then(|| {
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
                    .collect()
            })
        };
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: list(requests),
                limits: list(limits),
                ..ResourceRequirements::default()
            }),
            restart_policy: sidecar.then(|| "Always".to_owned()),
            ..Container::default()
        }
    }

    #[test]
    fn pod_requests_follow_the_resource_helper() {
        let spec = PodSpec {
            containers: vec![
                container(&[("cpu", "500m"), ("memory", "1Gi")], &[], false),
                container(&[], &[("cpu", "1")], false),
            ],
            init_containers: Some(vec![
                container(&[("cpu", "3")], &[], false),
                container(&[("cpu", "100m")], &[], true),
                container(&[("cpu", "2"), ("nvidia.com/gpu", "1")], &[], false),
            ]),
            ..PodSpec::default()
        };
        let r = pod_requests(&spec);
        // Containers 1.5 + sidecar 0.1 = 1.6 against the init maximum 3.
        assert_eq!(r.milli_cpu, 3000);
        assert_eq!(r.memory, 1 << 30);
        assert_eq!(r.scalars.get("nvidia.com/gpu"), Some(&1));
        assert!(!r.is_zero());
        assert!(pod_requests(&PodSpec::default()).is_zero());
        let best_effort = pod_requests(&PodSpec::default()).non_zero();
        assert_eq!(best_effort.milli_cpu, DEFAULT_MILLI_CPU_REQUEST);
        assert_eq!(best_effort.memory, DEFAULT_MEMORY_REQUEST);
    }
}
