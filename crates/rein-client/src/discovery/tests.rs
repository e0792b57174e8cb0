//! Discovery tests live in the crate's integration tests (they need an API server).
