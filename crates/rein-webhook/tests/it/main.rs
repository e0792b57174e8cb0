//! Integration tests of rein-webhook: the server over real TLS (admission and conversion), and the property test of
//! admission review decoding.
//!
//! One test binary for the crate (every binary links the whole dependency tree). Run one
//! file's tests with `cargo test -p rein-webhook --test it <module>::`.

mod conversion;
mod prop_admission;
mod prop_config;
mod webhook;
