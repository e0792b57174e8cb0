//! Tests for field selector parsing, escaping and matching.

use super::*;

fn get<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl FnMut(&str) -> Option<String> + 'a {
    move |f| {
        pairs
            .iter()
            .find(|(k, _)| *k == f)
            .map(|(_, v)| v.to_string())
    }
}

#[test]
fn parses_operators_and_matches() {
    let fields = [("metadata.name", "a"), ("status.phase", "Running")];
    let cases = [
        ("", true),
        ("metadata.name=a", true),
        ("metadata.name==a", true),
        ("metadata.name!=a", false),
        ("metadata.name=a,status.phase!=Failed", true),
        ("spec.nodeName=", true),
        ("spec.nodeName!=", false),
        ("spec.nodeName=x", false),
    ];
    for (text, want) in cases {
        let sel = Selector::parse(text).unwrap();
        assert_eq!(sel.matches(get(&fields)), want, "{text:?}");
    }
}

#[test]
fn escaping_round_trips() {
    let sel = Selector::one_term_equal("metadata.annotations.x", "a,b=c\\d");
    let text = sel.to_string();
    assert_eq!(text, "metadata.annotations.x=a\\,b\\=c\\\\d");
    let back = Selector::parse(&text).unwrap();
    assert_eq!(back, sel);
    assert_eq!(back.exact_match("metadata.annotations.x"), Some("a,b=c\\d"));
}

#[test]
fn errors_are_typed() {
    assert!(matches!(
        Selector::parse("nooperator"),
        Err(ParseError::MissingOperator { .. })
    ));
    assert!(matches!(
        Selector::parse("=x"),
        Err(ParseError::EmptyField { .. })
    ));
    assert!(matches!(
        Selector::parse("a=\\q"),
        Err(ParseError::InvalidEscape { .. })
    ));
}

#[test]
fn exact_match_ignores_inequalities() {
    let sel = Selector::parse("a!=1,b=2").unwrap();
    assert_eq!(sel.exact_match("a"), None);
    assert_eq!(sel.exact_match("b"), Some("2"));
}
