//! Case counts for the property tests: each test's default, overridden by `PROPTEST_CASES`.

use proptest::test_runner::Config as ProptestConfig;

/// `default` cases, or `PROPTEST_CASES` when set (the suite pins the seed, not the count).
pub(crate) fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}
