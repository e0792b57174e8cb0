//! Shared support for rein's cross-crate integration tests (in `tests/tests/`).

pub mod sharded;
pub mod soak;
