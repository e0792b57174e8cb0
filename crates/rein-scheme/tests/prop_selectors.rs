//! Property tests of the label and field selector parsers: no input panics, accepted input
//! prints back to itself, and matching agrees with a reference model written here.
//!
//! Case counts default to 256 per property; set `PROPTEST_CASES` for a longer run.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use proptest::prelude::*;
use rein_scheme::fields;
use rein_scheme::labels::{Operator, ParseError, Requirement, Selector};

/// 256 cases unless `PROPTEST_CASES` says otherwise.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------------------------

/// Strings made mostly of the selector grammar's own characters, so the parser goes deep.
fn selector_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9./!=<>(), _-]{0,40}",
        "(in|notin|!|=|==|!=|<|>|\\(|\\)|,| |app|x.io/k|1|-2|v)*",
        any::<String>(),
    ]
}

/// A valid label name: 1 to 63 of `[A-Za-z0-9_.-]`, alphanumeric at both ends.
fn label_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9]",
        "[a-zA-Z0-9][a-zA-Z0-9_.-]{0,20}[a-zA-Z0-9]",
        Just("a".repeat(63)),
    ]
}

/// A valid key: an optional DNS-subdomain prefix and a label name.
fn label_key() -> impl Strategy<Value = String> {
    (
        proptest::option::of("[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(\\.[a-z0-9]{1,5}){0,2}"),
        label_name(),
    )
        .prop_map(|(prefix, name)| match prefix {
            Some(p) => format!("{p}/{name}"),
            None => name,
        })
}

fn label_value() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), label_name()]
}

/// A requirement the parser must accept, built from parts valid by construction.
fn valid_requirement() -> impl Strategy<Value = Requirement> {
    let op = prop_oneof![
        Just(Operator::Equals),
        Just(Operator::DoubleEquals),
        Just(Operator::NotEquals),
        Just(Operator::In),
        Just(Operator::NotIn),
        Just(Operator::Exists),
        Just(Operator::DoesNotExist),
        Just(Operator::GreaterThan),
        Just(Operator::LessThan),
    ];
    (
        label_key(),
        op,
        prop::collection::vec(label_value(), 1..4),
        any::<i64>(),
    )
        .prop_map(|(key, op, values, n)| {
            let values = match op {
                Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                    values[..1].to_vec()
                }
                Operator::In | Operator::NotIn => values,
                Operator::Exists | Operator::DoesNotExist => Vec::new(),
                Operator::GreaterThan | Operator::LessThan => vec![n.to_string()],
            };
            Requirement::new(key, op, values).expect("generated requirements are valid")
        })
}

/// The reference model: one requirement over a small key and value alphabet, so that matches
/// and misses both happen often.
#[derive(Debug, Clone)]
struct ModelReq {
    key: String,
    op: Operator,
    values: Vec<String>,
}

impl ModelReq {
    fn text(&self) -> String {
        let k = &self.key;
        match self.op {
            Operator::Equals => format!("{k}={}", self.values[0]),
            Operator::DoubleEquals => format!("{k}=={}", self.values[0]),
            Operator::NotEquals => format!("{k}!={}", self.values[0]),
            Operator::In => format!("{k} in ({})", self.values.join(", ")),
            Operator::NotIn => format!("{k} notin ({})", self.values.join(",")),
            Operator::Exists => k.clone(),
            Operator::DoesNotExist => format!("! {k}"),
            Operator::GreaterThan => format!("{k} > {}", self.values[0]),
            Operator::LessThan => format!("{k}<{}", self.values[0]),
        }
    }

    /// apimachinery's rules, written out case by case.
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let have = labels.get(&self.key);
        let listed = have.is_some_and(|v| self.values.contains(v));
        let int = |s: &str| s.parse::<i64>().ok();
        match self.op {
            Operator::Equals | Operator::DoubleEquals | Operator::In => listed,
            Operator::NotEquals | Operator::NotIn => !listed,
            Operator::Exists => have.is_some(),
            Operator::DoesNotExist => have.is_none(),
            Operator::GreaterThan => match (have.and_then(|v| int(v)), int(&self.values[0])) {
                (Some(h), Some(w)) => h > w,
                _ => false,
            },
            Operator::LessThan => match (have.and_then(|v| int(v)), int(&self.values[0])) {
                (Some(h), Some(w)) => h < w,
                _ => false,
            },
        }
    }
}

const KEYS: [&str; 4] = ["app", "tier", "x.io/role", "n"];
const VALUES: [&str; 6] = ["", "a", "b", "1", "2", "10"];
const LABEL_VALUES: [&str; 7] = ["a", "b", "1", "2", "10", "-3", ""];

fn model_requirement() -> impl Strategy<Value = ModelReq> {
    let op = prop_oneof![
        Just(Operator::Equals),
        Just(Operator::DoubleEquals),
        Just(Operator::NotEquals),
        Just(Operator::In),
        Just(Operator::NotIn),
        Just(Operator::Exists),
        Just(Operator::DoesNotExist),
        Just(Operator::GreaterThan),
        Just(Operator::LessThan),
    ];
    (
        prop::sample::select(&KEYS[..]),
        op,
        prop::collection::vec(prop::sample::select(&VALUES[..]), 1..4),
        -3i64..12,
    )
        .prop_map(|(key, op, values, n)| {
            let values: Vec<String> = match op {
                Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                    vec![values[0].to_string()]
                }
                Operator::In | Operator::NotIn => values.iter().map(|v| v.to_string()).collect(),
                Operator::Exists | Operator::DoesNotExist => Vec::new(),
                Operator::GreaterThan | Operator::LessThan => vec![n.to_string()],
            };
            ModelReq {
                key: key.to_string(),
                op,
                values,
            }
        })
}

fn label_set() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        prop::sample::select(&KEYS[..]).prop_map(str::to_string),
        prop::sample::select(&LABEL_VALUES[..]).prop_map(str::to_string),
        0..4,
    )
}

proptest! {
    #![proptest_config(config())]

    /// Any input: a selector or a typed error, and an accepted one prints back to itself.
    #[test]
    fn label_parse_never_panics_and_accepted_input_round_trips(input in selector_like()) {
        if let Ok(sel) = Selector::parse(&input) {
            let printed = sel.to_string();
            let again = Selector::parse(&printed);
            prop_assert_eq!(again.as_ref(), Ok(&sel), "printed as {:?}", printed);
        }
    }

    /// Selectors built from valid parts print to a string that parses back to the same value.
    #[test]
    fn label_valid_selectors_round_trip(reqs in prop::collection::vec(valid_requirement(), 0..5)) {
        let sel = Selector::from_requirements(reqs);
        let printed = sel.to_string();
        prop_assert_eq!(Selector::parse(&printed), Ok(sel), "printed as {:?}", printed);
    }

    /// `matches` agrees with the reference model on generated selectors and label sets.
    #[test]
    fn label_matches_agrees_with_model(
        reqs in prop::collection::vec(model_requirement(), 0..4),
        labels in label_set(),
    ) {
        let text: Vec<String> = reqs.iter().map(ModelReq::text).collect();
        let text = text.join(" , ");
        let sel = Selector::parse(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        let want = reqs.iter().all(|r| r.matches(&labels));
        prop_assert_eq!(sel.matches(&labels), want, "selector {:?} on {:?}", text, labels);
    }

    /// Keys that break the qualified-name rules give `InvalidKey`, not a panic or a selector.
    #[test]
    fn label_invalid_keys_are_typed_errors(key in "[_.-][a-zA-Z0-9_.-]{0,5}|[a-z]{64,70}|/[a-z]{1,3}|[a-z]{1,3}/|UP/[a-z]") {
        let err = Selector::parse(&format!("{key}=v")).expect_err("invalid key accepted");
        prop_assert!(matches!(err, ParseError::InvalidKey { .. }), "{:?}", err);
    }

    /// Non-integers after `>` or `<` give `NotAnInteger`.
    #[test]
    fn label_non_integer_bounds_are_typed_errors(value in "[a-z][a-z0-9]{0,6}", gt in any::<bool>()) {
        let op = if gt { ">" } else { "<" };
        let err = Selector::parse(&format!("n{op}{value}")).expect_err("non-integer accepted");
        prop_assert!(matches!(err, ParseError::NotAnInteger { .. }), "{:?}", err);
    }
}

fn match_expression() -> impl Strategy<Value = LabelSelectorRequirement> {
    (
        prop_oneof![label_key(), any::<String>()],
        prop::sample::select(vec![
            "In",
            "NotIn",
            "Exists",
            "DoesNotExist",
            "Gt",
            "in",
            "",
        ]),
        prop::option::of(prop::collection::vec(
            prop_oneof![label_value(), any::<String>()],
            0..3,
        )),
    )
        .prop_map(|(key, operator, values)| LabelSelectorRequirement {
            key,
            operator: operator.to_string(),
            values,
        })
}

proptest! {
    #![proptest_config(config())]

    /// `metav1.LabelSelector`s from objects: a selector or a typed error (an unknown operator
    /// is `UnknownOperator`), and a converted selector round-trips through its string form.
    #[test]
    fn label_selector_objects_convert_or_fail_typed(
        match_labels in prop::option::of(prop::collection::btree_map(
            prop_oneof![label_key(), any::<String>()],
            prop_oneof![label_value(), any::<String>()],
            0..3,
        )),
        match_expressions in prop::option::of(prop::collection::vec(match_expression(), 0..3)),
    ) {
        let object = LabelSelector { match_labels, match_expressions };
        match Selector::from_label_selector(&object) {
            Ok(sel) => {
                let printed = sel.to_string();
                let again = Selector::parse(&printed);
                prop_assert_eq!(again.as_ref(), Ok(&sel), "printed as {:?}", printed);
            }
            Err(ParseError::UnknownOperator { operator, .. }) => {
                prop_assert!(!["In", "NotIn", "Exists", "DoesNotExist"].contains(&operator.as_str()));
            }
            Err(_) => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------------------------

fn field_path() -> impl Strategy<Value = String> {
    "[a-z][a-zA-Z]{0,6}(\\.[a-z][a-zA-Z]{0,6}){0,2}"
}

/// Values with the characters that need escaping, and no surrounding whitespace (the parser
/// trims terms, as apimachinery does).
fn field_value() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9=,\\\\! .-]{0,12}", any::<String>()].prop_map(|v| v.trim().to_string())
}

fn field_term() -> impl Strategy<Value = (String, bool, String)> {
    (field_path(), any::<bool>(), field_value())
}

proptest! {
    #![proptest_config(config())]

    /// Any input: a selector or a typed error, and an accepted one prints back to itself.
    #[test]
    fn field_parse_never_panics_and_accepted_input_round_trips(
        input in prop_oneof!["[a-z.=!,\\\\ ]{0,30}", any::<String>()],
    ) {
        if let Ok(sel) = fields::Selector::parse(&input) {
            let printed = sel.to_string();
            let again = fields::Selector::parse(&printed);
            prop_assert_eq!(again.as_ref(), Ok(&sel), "printed as {:?}", printed);
        }
    }

    /// Selectors built with `and` print (escaped) to a string that parses back to them, and
    /// `matches` agrees with a direct evaluation of each term.
    #[test]
    fn field_built_selectors_round_trip_and_match(
        terms in prop::collection::vec(field_term(), 0..4),
        present in prop::collection::btree_map(field_path(), field_value(), 0..4),
    ) {
        let mut sel = fields::Selector::everything();
        for (path, eq, value) in &terms {
            let op = if *eq { fields::Operator::Equals } else { fields::Operator::NotEquals };
            sel = sel.and(path.clone(), op, value.clone());
        }
        let printed = sel.to_string();
        let again = fields::Selector::parse(&printed);
        prop_assert_eq!(again.as_ref(), Ok(&sel), "printed as {:?}", printed);

        let want = terms.iter().all(|(path, eq, value)| {
            let have = present.get(path).map(String::as_str).unwrap_or("");
            (have == value) == *eq
        });
        prop_assert_eq!(sel.matches(|f| present.get(f).cloned()), want);
    }

    /// A term without an operator is `MissingOperator`; a bad escape is `InvalidEscape`.
    #[test]
    fn field_bad_terms_are_typed_errors(field in field_path(), bad in "[a-z]{0,3}\\\\[a-z]") {
        let err = fields::Selector::parse(&field).expect_err("no operator accepted");
        prop_assert!(matches!(err, fields::ParseError::MissingOperator { .. }), "{:?}", err);
        let err = fields::Selector::parse(&format!("{field}={bad}")).expect_err("bad escape accepted");
        prop_assert!(matches!(err, fields::ParseError::InvalidEscape { .. }), "{:?}", err);
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions found by the properties above
// ---------------------------------------------------------------------------------------------

/// `in` with only the empty value printed as `a in ()`, which the parser refused; apimachinery
/// reads `()` as the set holding the empty value.
#[test]
fn regression_in_with_only_the_empty_value_round_trips() {
    let req = Requirement::new("a", Operator::In, [""]).expect("valid");
    let sel = Selector::from_requirements(vec![req]);
    assert_eq!(sel.to_string(), "a in ()");
    assert_eq!(Selector::parse("a in ()"), Ok(sel.clone()));
    assert!(sel.matches(&BTreeMap::from([("a".to_string(), String::new())])));
    assert!(!sel.matches(&BTreeMap::new()));
}

/// A field ending in `!` (`! =`) printed as `!=`, which read back as an inequality with an
/// empty field.
#[test]
fn regression_field_ending_in_bang_prints_unambiguously() {
    let sel = fields::Selector::parse("a=,! =").expect("parses");
    assert_eq!(fields::Selector::parse(&sel.to_string()), Ok(sel));
}

/// A field ending in `\` (`\ =`) printed as `\=`, an escaped `=` with no operator after it.
#[test]
fn regression_field_ending_in_backslash_prints_unambiguously() {
    let sel = fields::Selector::parse(".=,\\ =").expect("parses");
    assert_eq!(fields::Selector::parse(&sel.to_string()), Ok(sel));
}
