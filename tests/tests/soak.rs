//! The short chaos soak (part of `cargo xtask test`): a manager with three controllers keeps
//! converging while faults are injected; `cargo xtask soak` runs the long one.

use rein_tests::soak::{self, SoakConfig};

#[test]
fn a_manager_converges_through_chaos() {
    let seed = std::env::var("REIN_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let outcome = soak::run(&SoakConfig::short(seed)).expect("the soak ran to its checks");
    println!("{outcome}");
    assert!(outcome.passed(), "{outcome}");
    let report = &outcome.report;
    assert!(
        report.faults.total() > 0,
        "the chaos driver injected nothing"
    );
    assert!(report.writes > 0 && report.convergence.is_some());
}
