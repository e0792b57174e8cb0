//! The short chaos soak (part of `cargo xtask test`): a manager with three controllers keeps
//! converging while faults are injected, over several seeds; and a soak whose server stops
//! answering fails within its stall timeout with a report, instead of hanging. `cargo xtask
//! soak` runs the long one.

use std::time::{Duration, Instant};

use rein_tests::soak::{self, SoakConfig, SoakError};

/// One short soak; `REIN_SOAK_SEED` replaces the seed (to reproduce a failure).
fn converges_through_chaos(seed: u64) {
    let seed = std::env::var("REIN_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(seed);
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

#[test]
fn a_manager_converges_through_chaos_seed_7() {
    converges_through_chaos(7);
}

#[test]
fn a_manager_converges_through_chaos_seed_11() {
    converges_through_chaos(11);
}

#[test]
fn a_manager_converges_through_chaos_seed_12() {
    converges_through_chaos(12);
}

#[test]
fn a_manager_converges_through_chaos_seed_13() {
    converges_through_chaos(13);
}

/// The server holds every request from the end of round 2 on, forever: the soak must stop once
/// nothing progressed for its stall timeout, and say what it was waiting on.
#[test]
fn a_hung_request_fails_the_soak_with_a_report_instead_of_hanging() {
    let mut config = SoakConfig::short(3);
    config.hang_after_round = Some(2);
    config.stall_timeout = Duration::from_secs(8);
    let started = Instant::now();
    let err = soak::run(&config).expect_err("a soak whose server answers nothing cannot pass");
    let elapsed = started.elapsed();
    let SoakError::Stalled { why, report } = &err else {
        panic!("expected a stall report, got: {err}");
    };
    println!("{err}");
    assert!(
        why.contains("nothing progressed") && why.contains("round 3 of the writer"),
        "{why}"
    );
    // The writer's writes wait; the server says it holds them.
    assert!(!report.contains("writer: 0 write(s)"), "{report}");
    assert!(report.contains("(Hung, "), "{report}");
    // Every informer and controller is listed.
    for kind in [
        "Kind=ConfigMap",
        "Kind=Secret",
        "Kind=ReplicaSet",
        "Kind=Pod",
    ] {
        assert!(report.contains(kind), "{kind} missing from:\n{report}");
    }
    assert!(report.contains("controller soak-scaler"), "{report}");
    assert!(elapsed < config.deadline, "took {elapsed:?}");
}

/// The long soak's set-up, shortened: the API server in a child process (the `soak` binary
/// with `--serve`, driven over its standard input), faults injected through it, its memory
/// measured apart from the soak's.
#[test]
fn a_short_soak_with_its_api_server_in_a_child_process() {
    let mut config = SoakConfig::short(5);
    config.length = soak::Length::Rounds(10);
    config.server = soak::Placement::Child(env!("CARGO_BIN_EXE_soak").into());
    let outcome = soak::run(&config).expect("the soak ran to its checks");
    println!("{outcome}");
    assert!(outcome.passed(), "{outcome}");
    let report = &outcome.report;
    assert!(report.faults.total() > 0);
    assert_eq!(report.server_rss_kib.len(), report.rounds);
    assert!(report.server_rss_kib.iter().all(|&kib| kib > 0));
    assert!(outcome.summary().contains("server_rss_peak="));
}
