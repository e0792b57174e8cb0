//! The string formats kube-openapi's `strfmt.Default` registry checks for custom resources
//! (`date`, `date-time`, `uuid`, `byte`, `ipv4`, ...); unknown formats are not checked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

use base64::Engine as _;
use regex::Regex;

/// Whether kube-openapi checks `format` on strings (names compare without `-` and `_`,
/// as strfmt's name normaliser does).
pub(crate) fn known(format: &str) -> bool {
    matches!(
        normalize(format).as_str(),
        "date"
            | "datetime"
            | "duration"
            | "uuid"
            | "uuid3"
            | "uuid4"
            | "uuid5"
            | "byte"
            | "ipv4"
            | "ipv6"
            | "cidr"
            | "mac"
            | "hostname"
            | "email"
            | "uri"
            | "bsonobjectid"
            | "hexcolor"
            | "rgbcolor"
            | "password"
            | "isbn"
            | "isbn10"
            | "isbn13"
            | "ssn"
    )
}

/// Whether `s` is a valid `format` value (true for formats that are not checked).
pub(crate) fn valid(format: &str, s: &str) -> bool {
    match normalize(format).as_str() {
        "date" => is_date(s),
        "datetime" => is_date_time(s),
        "duration" => is_duration(s),
        "uuid" => re(
            &UUID,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
        )
        .is_match(s),
        "uuid3" => re(
            &UUID3,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
        )
        .is_match(s),
        "uuid4" => re(
            &UUID4,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
        )
        .is_match(s),
        "uuid5" => re(
            &UUID5,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
        )
        .is_match(s),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(s),
        "mac" => re(&MAC, r"(?i)^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$").is_match(s),
        "hostname" => is_hostname(s),
        "email" => re(&EMAIL, r"^[^@\s]+@[^@\s]+$").is_match(s),
        "uri" => re(&URI, r"^(/|[A-Za-z][A-Za-z0-9+.-]*:)\S*$").is_match(s),
        "bsonobjectid" => s.len() == 24 && s.chars().all(|c| c.is_ascii_hexdigit()),
        "hexcolor" => re(&HEX, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$").is_match(s),
        "rgbcolor" => re(&RGB, r"^rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)$").is_match(s),
        "isbn" | "isbn10" | "isbn13" => {
            let digits: String = s.chars().filter(|c| !matches!(c, '-' | ' ')).collect();
            digits.len() == 10 || digits.len() == 13
        }
        "ssn" => re(&SSN, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$").is_match(s),
        _ => true,
    }
}

static UUID: OnceLock<Option<Regex>> = OnceLock::new();
static UUID3: OnceLock<Option<Regex>> = OnceLock::new();
static UUID4: OnceLock<Option<Regex>> = OnceLock::new();
static UUID5: OnceLock<Option<Regex>> = OnceLock::new();
static MAC: OnceLock<Option<Regex>> = OnceLock::new();
static EMAIL: OnceLock<Option<Regex>> = OnceLock::new();
static URI: OnceLock<Option<Regex>> = OnceLock::new();
static HEX: OnceLock<Option<Regex>> = OnceLock::new();
static RGB: OnceLock<Option<Regex>> = OnceLock::new();
static SSN: OnceLock<Option<Regex>> = OnceLock::new();

/// A lazily compiled regex; a pattern that does not compile matches everything.
fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Matcher {
    Matcher(cell.get_or_init(|| Regex::new(pattern).ok()).as_ref())
}

/// A compiled format pattern (or none: accept).
struct Matcher(Option<&'static Regex>);

impl Matcher {
    fn is_match(&self, s: &str) -> bool {
        self.0.is_none_or(|re| re.is_match(s))
    }
}

fn normalize(format: &str) -> String {
    format
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// `YYYY-MM-DD` (RFC 3339 full-date).
fn is_date(s: &str) -> bool {
    s.len() == 10 && s.parse::<jiff::civil::Date>().is_ok() && s.as_bytes()[4] == b'-'
}

/// RFC 3339 date-time (strfmt also accepts a few close variants; a timestamp jiff parses with
/// an offset or `Z` is accepted).
fn is_date_time(s: &str) -> bool {
    s.len() > 10 && s.parse::<jiff::Timestamp>().is_ok()
}

/// Go durations (`1h30m`, `250ms`) and strfmt's worded ones (`3 days`).
fn is_duration(s: &str) -> bool {
    static GO: OnceLock<Option<Regex>> = OnceLock::new();
    static WORDS: OnceLock<Option<Regex>> = OnceLock::new();
    let go = re(&GO, r"^[-+]?(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$");
    let words = re(
        &WORDS,
        r"^\d+\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|sec|minutes?|min|hours?|hr|days?|weeks?|wk)$",
    );
    s == "0" || go.0.is_some_and(|r| r.is_match(s)) || words.0.is_some_and(|r| r.is_match(s))
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => bits <= 32,
        Ok(IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// RFC 1123 host names.
fn is_hostname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}
