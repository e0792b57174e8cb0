//! Unit tests of the probe rendering and query parsing.

use std::collections::BTreeSet;

use hyper::StatusCode;

use super::handler::{CheckStatus, ProbeQuery, render};

#[test]
fn success_is_a_plain_ok_unless_verbose() {
    let statuses = [CheckStatus::Ok("ping".into())];
    assert_eq!(
        render(&statuses, &BTreeSet::new(), false),
        (StatusCode::OK, "ok".to_owned())
    );
    assert_eq!(
        render(&statuses, &BTreeSet::new(), true),
        (
            StatusCode::OK,
            "[+]ping ok\nhealthz check passed\n".to_owned()
        )
    );
}

#[test]
fn failure_is_always_verbose_and_withholds_the_reason() {
    let statuses = [
        CheckStatus::Failed("informers".into()),
        CheckStatus::Excluded("db".into()),
        CheckStatus::Ok("ping".into()),
    ];
    let unknown: BTreeSet<String> = ["nope".to_owned()].into();
    let (status, body) = render(&statuses, &unknown, false);
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        body,
        "[-]informers failed: reason withheld\n[+]db excluded: ok\n[+]ping ok\n\
         warn: some health checks cannot be excluded: no matches for \"nope\"\n\
         healthz check failed\n"
    );
}

#[test]
fn query_understands_verbose_and_repeated_excludes() {
    let q = ProbeQuery::parse(Some("verbose&exclude=a&exclude=b&other=1&exclude="));
    assert!(q.verbose);
    assert_eq!(q.exclude, ["a".to_owned(), "b".to_owned()].into());
    assert_eq!(ProbeQuery::parse(None), ProbeQuery::default());
    assert!(ProbeQuery::parse(Some("verbose=1")).verbose);
}
