//! `Accept` header parsing shared by the negotiations (aggregated discovery, YAML and
//! metadata-only answers): media-range clauses in preference order and their parameters.

/// The clauses of an `Accept` value, best first: by quality (`q`, default 1), then in the
/// order sent; clauses with `q=0` or an unreadable `q` are dropped.
pub(super) fn clauses(accept: &str) -> Vec<&str> {
    let mut ranked: Vec<(f32, usize, &str)> = accept
        .split(',')
        .enumerate()
        .filter_map(|(index, clause)| {
            let quality = param(clause, "q").map_or(Some(1.0), |q| q.parse::<f32>().ok())?;
            (quality > 0.0).then_some((quality, index, clause.trim()))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked.into_iter().map(|(_, _, clause)| clause).collect()
}

/// A clause's media type without parameters, lower-cased.
pub(super) fn essence(clause: &str) -> String {
    clause
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The value of parameter `name` in one clause.
pub(super) fn param<'a>(clause: &'a str, name: &str) -> Option<&'a str> {
    clause.split(';').skip(1).find_map(|p| {
        let (key, value) = p.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().trim_matches('"'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clauses_rank_by_quality_then_order() {
        assert_eq!(
            clauses("a/b;q=0.5, c/d, e/f;q=0, g/h;q=x, i/j;q=0.9"),
            ["c/d", "i/j;q=0.9", "a/b;q=0.5"]
        );
        assert_eq!(
            param("application/json; as = Table ;g=\"meta.k8s.io\"", "g"),
            Some("meta.k8s.io")
        );
        assert_eq!(essence(" Application/JSON;v=1"), "application/json");
    }
}
