//! controller-runtime's manager: runnables, leader election, health probes, metrics and admission webhooks.
//!
//! Part of [rein](https://example.invalid/rein): see `docs/ARCHITECTURE.md` for where this
//! crate sits in the stack.
//!
//! ```
//! // The crate builds and links.
//! use rein_manager as _;
//! ```
