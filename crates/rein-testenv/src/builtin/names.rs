//! apimachinery's string formats (`pkg/util/validation`): qualified names, label values,
//! DNS labels and subdomains, config keys, with its messages.

/// `validation.IsQualifiedName`: label keys, annotation keys, finalizer names.
pub(crate) fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')",
                regex_error(
                    QUALIFIED_MSG,
                    QUALIFIED_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len(63)));
    }
    if !is_qualified(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_MSG,
                QUALIFIED_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`.
pub(crate) fn label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len(63));
    }
    if !value.is_empty() && !is_qualified(value) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', \
             '_' or '.', and must start and end with an alphanumeric character",
            &format!("({QUALIFIED_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `validation.IsDNS1123Label`.
pub(crate) fn dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len(63));
    }
    if !is_label(value) {
        if dns1123_subdomain(value).is_empty() {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters \
                 or '-', and must start and end with an alphanumeric character",
                LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `validation.IsDNS1123Subdomain`.
pub(crate) fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len(253));
    }
    // The regex alone: the 253 caps the whole name, not each label.
    if value.is_empty() || !value.split('.').all(has_label_shape) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character",
            &format!("{LABEL_FMT}(\\.{LABEL_FMT})*"),
            &["example.com"],
        ));
    }
    errs
}

/// `validation.IsWildcardDNS1123Subdomain`: `*.` and a subdomain.
pub(crate) fn wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len(253));
    }
    let valid = value
        .strip_prefix("*.")
        .is_some_and(|rest| rest.split('.').all(has_label_shape));
    if !valid {
        errs.push(regex_error(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS \
             subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and \
             end with an alphanumeric character",
            &format!("\\*\\.{LABEL_FMT}(\\.{LABEL_FMT})*"),
            &["*.example.com"],
        ));
    }
    errs
}

/// `validation.IsValidPortName` (`IANA_SVC_NAME`).
pub(crate) fn port_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 15 {
        errs.push(max_len(15));
    }
    let b = value.as_bytes();
    if !b
        .iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if value.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if !b.iter().any(u8::is_ascii_lowercase) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if value.starts_with('-') || value.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `validation.IsConfigMapKey`: keys of ConfigMap and Secret data.
pub(crate) fn config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len(253));
    }
    let ok = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_');
    if value.is_empty() || !value.bytes().all(ok) {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if value == "." {
        errs.push("must not be '.'".into());
    } else if value == ".." {
        errs.push("must not be '..'".into());
    } else if value.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

const QUALIFIED_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and \
                             must start and end with an alphanumeric character";
const QUALIFIED_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `validation.RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        examples.join(" or ")
    )
}

fn is_qualified(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_alphanumeric();
    !b.is_empty()
        && alnum(&b[0])
        && alnum(&b[b.len() - 1])
        && b.iter()
            .all(|c| alnum(c) || matches!(c, b'-' | b'_' | b'.'))
}

fn is_label(s: &str) -> bool {
    s.len() <= 63 && has_label_shape(s)
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, of any length.
fn has_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && alnum(&b[0])
        && alnum(&b[b.len() - 1])
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_apimachinery() {
        assert!(qualified_name("example.com/my-key").is_empty());
        assert_eq!(
            qualified_name("bad key"),
            [
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
              start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or \
              '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        assert_eq!(
            label_value(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
        assert!(label_value("").is_empty());
        assert_eq!(dns1123_label("a.b"), ["must not contain dots"]);
        assert!(port_name("http").is_empty());
        assert!(!port_name("HTTP").is_empty());
    }
}
