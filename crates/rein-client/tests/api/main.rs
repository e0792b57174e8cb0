//! Integration tests of rein-client against rein-testenv over real HTTP.

mod cache;
mod client;
mod controllerutil;
mod crd;
mod errors;
mod read_your_writes;
mod support;
