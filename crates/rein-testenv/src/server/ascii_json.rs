//! A JSON value re-encoded for the YAML decoder: JSON's flow syntax with every non-ASCII
//! character escaped, since YAML reads some characters JSON keeps raw (U+0085, U+2028,
//! U+2029) as line breaks.

use std::fmt::Write as _;

use serde_json::Value;

/// `value` as compact JSON with everything outside ASCII escaped the way YAML's
/// double-quoted strings take it (`\uXXXX`, or `\UXXXXXXXX` beyond the BMP, where JSON
/// would need a surrogate pair YAML rejects). Non-ASCII characters only occur inside
/// strings, where the escape means the same character.
pub(crate) fn to_vec(value: &Value) -> Option<Vec<u8>> {
    let text = serde_json::to_string(value).ok()?;
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        let code = u32::from(ch);
        if ch.is_ascii() {
            out.push(ch);
        } else if code <= 0xFFFF {
            let _ = write!(out, "\\u{code:04x}");
        } else {
            let _ = write!(out, "\\U{code:08x}");
        }
    }
    Some(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    #[test]
    fn yaml_reads_back_the_same_value() {
        let value = json!({"k\u{e9}y": ["line\u{85}break", "sep\u{2028}\u{2029}", "\u{1f600}", "plain\n\"q\""]});
        let bytes = super::to_vec(&value).expect("encodes");
        assert!(bytes.is_ascii());
        let back: Value = serde_yaml::from_slice(&bytes).expect("YAML reads it");
        assert_eq!(back, value);
    }
}
