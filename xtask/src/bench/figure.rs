//! `BENCH|…` lines: parsing, and side-by-side keys (`<case>/<metric>/<side>`).

/// One figure printed by a benchmark.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    pub(crate) group: String,
    pub(crate) case: String,
    pub(crate) value: String,
    pub(crate) unit: String,
    pub(crate) note: String,
}

/// Parses a `BENCH|<group>|<case>|<value>|<unit>|<note>` line.
pub(crate) fn parse_figure(line: &str) -> Option<Figure> {
    let rest = line.strip_prefix("BENCH|")?;
    let mut parts = rest.splitn(5, '|').map(str::trim);
    Some(Figure {
        group: parts.next()?.to_owned(),
        case: parts.next()?.to_owned(),
        value: parts.next()?.to_owned(),
        unit: parts.next()?.to_owned(),
        note: parts.next().unwrap_or("").to_owned(),
    })
}

impl Figure {
    /// The `BENCH|…` line this figure was parsed from.
    pub(crate) fn line(&self) -> String {
        format!(
            "BENCH|{}|{}|{}|{}|{}",
            self.group, self.case, self.value, self.unit, self.note
        )
    }

    /// For a side-by-side figure, `(case, metric, side)`.
    pub(crate) fn side_key(&self) -> Option<(&str, &str, &str)> {
        if self.group != SIDE_BY_SIDE {
            return None;
        }
        let mut parts = self.case.splitn(3, '/');
        Some((parts.next()?, parts.next()?, parts.next()?))
    }
}

/// The group of the side-by-side harness's figures.
pub(crate) const SIDE_BY_SIDE: &str = "side-by-side";

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}
