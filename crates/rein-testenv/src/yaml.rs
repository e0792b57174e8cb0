//! YAML request and response bodies (serde-saphyr): decoding bounded in depth, nodes, aliases
//! and time, so a hostile body is refused at once, with serde_yaml's reading of scalars.

use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::de::DeserializeOwned;

/// The deepest nesting a body may have, YAML or patched: the deepest serde_json reads (its
/// recursion limit of 128 admits 127 levels), so whatever is stored reads back as JSON.
pub(crate) const MAX_DEPTH: usize = 127;

/// The most nodes one body may hold (a 3 MiB body of one-character scalars has about 1.5 M).
const MAX_NODES: usize = 2_000_000;

fn options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.flow_nesting_limit = MAX_DEPTH;
    budget.max_nodes = MAX_NODES;
    budget.max_documents = 1;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    // Scalars read as YAML 1.2's core schema, as serde_yaml (and kubectl's JSON) have them:
    // `yes` and `on` are strings, `0755` and `1_000` too.
    options.strict_booleans = true;
    options.leading_zero_numbers_as_strings = true;
    options.underscored_numbers_as_strings = true;
    options.merge_keys = serde_saphyr::MergeKeyPolicy::AsOrdinary;
    options
}

/// The stack YAML is decoded on: serde-saphyr's deserializer recurses per level, with frames
/// of up to ~20 KiB in a debug build, so [`MAX_DEPTH`] levels need more than a runtime
/// worker's 2 MiB.
const DECODE_STACK: usize = 16 << 20;

/// Decodes one YAML document; the error's first line is its message (the rest is a snippet
/// of the input). Runs on a thread of its own with a stack that holds [`MAX_DEPTH`] levels;
/// the budget bounds its time (linear in the body).
pub(crate) fn from_slice<T: DeserializeOwned + Send>(bytes: &[u8]) -> Result<T, YamlError> {
    std::thread::scope(|scope| {
        let decoder = std::thread::Builder::new()
            .name("yaml-decode".into())
            .stack_size(DECODE_STACK)
            .spawn_scoped(scope, || {
                serde_saphyr::from_slice_with_options(bytes, options())
                    .map_err(|e| YamlError(first_line(&e)))
            })
            .map_err(|e| YamlError(format!("starting the YAML decoder: {e}")))?;
        decoder
            .join()
            .map_err(|_| YamlError("the YAML decoder failed".to_owned()))?
    })
}

/// Encodes `value` as a YAML document.
pub(crate) fn to_string<T: Serialize>(value: &T) -> Result<String, serde_saphyr::SerializeError> {
    serde_saphyr::to_string(value)
}

fn first_line(err: &serde_saphyr::Error) -> String {
    let text = err.to_string();
    let line = text.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

/// A YAML body that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct YamlError(pub(crate) String);

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn reads_scalars_as_serde_yaml_did() {
        let doc = "a: yes\nb: 1.0\nc: 0x10\nd: ~\ne: '1'\nf: 2026-01-01\ng: [1, two, {x: y}]\nh: |\n  line\n  two\ni: 012\nk: true\nm: -5\nn: null\n";
        let v: Value = from_slice(doc.as_bytes()).expect("decodes");
        assert_eq!(
            v,
            json!({"a": "yes", "b": 1.0, "c": 16, "d": null, "e": "1", "f": "2026-01-01",
                "g": [1, "two", {"x": "y"}], "h": "line\ntwo\n", "i": "012", "k": true,
                "m": -5, "n": null})
        );
    }

    /// 100,000 levels of flow mappings took serde_yaml (libyaml) half a minute of CPU; here
    /// every deep shape is refused at once (the suite's time bounds it).
    #[test]
    fn deep_documents_are_refused() {
        let n = 100_000;
        for body in [
            format!("{}x{}", "{a: ".repeat(n), "}".repeat(n)),
            format!("{}{}", "[".repeat(n), "]".repeat(n)),
            format!("{}x", "- ".repeat(n)),
            format!(
                "a:\n{}",
                (1..200)
                    .map(|i| format!("{}b{i}:\n", " ".repeat(i)))
                    .collect::<String>()
            ),
        ] {
            let err = from_slice::<Value>(body.as_bytes()).expect_err("too deep");
            assert!(!err.0.is_empty());
        }
        let ok = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let v = from_slice::<Value>(ok.as_bytes()).expect("the deepest JSON reads is fine");
        let json = serde_json::to_string(&v).expect("encodes");
        serde_json::from_str::<Value>(&json).expect("and reads back as JSON");
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            doc.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        from_slice::<Value>(doc.as_bytes()).expect_err("10^12 nodes");
    }
}
