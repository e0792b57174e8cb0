//! Tests for label selector parsing, matching and display.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn parses_and_matches_each_operator() {
    let l = labels(&[("app", "web"), ("tier", "front"), ("replicas", "3")]);
    let cases = [
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app=db", false),
        ("app!=db", true),
        ("missing!=x", true),
        ("app in (web,db)", true),
        ("app in (db)", false),
        ("app notin (db)", true),
        ("missing notin (db)", true),
        ("app notin (web)", false),
        ("app", true),
        ("missing", false),
        ("!missing", true),
        ("!app", false),
        ("replicas>2", true),
        ("replicas<2", false),
        ("app>2", false),
        ("missing=", false),
        ("app=web,tier=front", true),
        ("app=web,tier=back", false),
        ("  app = web ,  tier in ( front ) ", true),
        ("example.com/team in (a),app", false),
    ];
    for (text, want) in cases {
        let sel = Selector::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(sel.matches(&l), want, "{text:?}");
    }
}

#[test]
fn empty_value_matches_empty_label() {
    let sel = Selector::parse("a=,b in (,x)").unwrap();
    assert!(sel.matches(&labels(&[("a", ""), ("b", "")])));
    assert!(!sel.matches(&labels(&[("b", "")])));
}

#[test]
fn display_round_trips() {
    for text in [
        "a=b",
        "a==b",
        "a!=b",
        "a in (x,y)",
        "a notin (x)",
        "a",
        "!a",
        "a>5",
        "a<-1",
        "example.com/x=y,k in (a,b),z",
    ] {
        let sel = Selector::parse(text).unwrap();
        assert_eq!(sel.to_string(), text);
        assert_eq!(Selector::parse(&sel.to_string()).unwrap(), sel);
    }
    // Requirements are sorted by key and set values sorted.
    assert_eq!(
        Selector::parse("z=1,a in (c,b)").unwrap().to_string(),
        "a in (b,c),z=1"
    );
}

#[test]
fn parse_errors_are_typed() {
    assert!(matches!(
        Selector::parse("a in b"),
        Err(ParseError::UnexpectedToken {
            expected: "'('",
            ..
        })
    ));
    assert!(matches!(
        Selector::parse("a in (b"),
        Err(ParseError::UnexpectedEnd { .. })
    ));
    // `()` is the set holding the empty value (apimachinery's parseValues), so that
    // `in ("")` prints and parses back.
    assert_eq!(
        Selector::parse("a in ()").map(|s| s.to_string()),
        Ok("a in ()".to_string())
    );
    assert!(matches!(
        Selector::parse("a>b"),
        Err(ParseError::NotAnInteger { .. })
    ));
    assert!(matches!(
        Selector::parse("-a=b"),
        Err(ParseError::InvalidKey { .. })
    ));
    assert!(matches!(
        Selector::parse("a=b c"),
        Err(ParseError::UnexpectedToken { .. })
    ));
    assert!(matches!(
        Selector::parse("a=-b"),
        Err(ParseError::InvalidValue { .. })
    ));
    assert!(matches!(
        Selector::parse("a,"),
        Err(ParseError::UnexpectedEnd { .. })
    ));
    assert!(matches!(
        Selector::parse("a foo"),
        Err(ParseError::UnexpectedToken { .. })
    ));
    let too_long = format!("a={}", "x".repeat(64));
    assert!(matches!(
        Selector::parse(&too_long),
        Err(ParseError::InvalidValue { .. })
    ));
    let msg = Selector::parse("a in b").unwrap_err().to_string();
    assert!(msg.contains("byte 5"), "{msg}");
}

#[test]
fn everything_and_nothing() {
    let l = labels(&[("a", "b")]);
    assert!(Selector::everything().matches(&l));
    assert!(Selector::everything().matches(&BTreeMap::new()));
    assert!(!Selector::nothing().matches(&l));
    assert!(Selector::everything().is_everything());
}

#[test]
fn from_label_selector_converts_both_parts() {
    let ls = LabelSelector {
        match_labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
        match_expressions: Some(vec![
            LabelSelectorRequirement {
                key: "tier".into(),
                operator: "In".into(),
                values: Some(vec!["a".into(), "b".into()]),
            },
            LabelSelectorRequirement {
                key: "canary".into(),
                operator: "DoesNotExist".into(),
                values: None,
            },
        ]),
    };
    let sel = Selector::from_label_selector(&ls).unwrap();
    assert_eq!(sel.to_string(), "app=web,!canary,tier in (a,b)");
    assert!(sel.matches(&labels(&[("app", "web"), ("tier", "a")])));
    assert!(
        Selector::from_label_selector(&LabelSelector::default())
            .unwrap()
            .is_everything()
    );

    let bad = LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "x".into(),
            operator: "Gt".into(),
            values: Some(vec!["1".into()]),
        }]),
        ..Default::default()
    };
    assert!(matches!(
        Selector::from_label_selector(&bad),
        Err(ParseError::UnknownOperator { .. })
    ));
    let no_values = LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "x".into(),
            operator: "In".into(),
            values: None,
        }]),
        ..Default::default()
    };
    assert!(matches!(
        Selector::from_label_selector(&no_values),
        Err(ParseError::EmptyValues { .. })
    ));
}

#[test]
fn from_map_requires_every_pair() {
    let sel = Selector::from_map(&labels(&[("a", "1"), ("b", "2")])).unwrap();
    assert!(sel.matches(&labels(&[("a", "1"), ("b", "2"), ("c", "3")])));
    assert!(!sel.matches(&labels(&[("a", "1")])));
}
