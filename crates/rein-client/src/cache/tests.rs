//! Cache tests against rein-testenv live in the crate's integration tests.
