//! Integration tests of rein-informer against rein-testenv.
//!
//! One test binary for the whole crate: every binary links the full dependency tree, so one
//! per file cost hundreds of megabytes of disk and a link each. Run one file's tests with
//! `cargo test -p rein-informer --test it <module>::`.

mod chaos;
mod controller;
mod informer;
mod prop_watch;
mod support;
mod watch_errors;
