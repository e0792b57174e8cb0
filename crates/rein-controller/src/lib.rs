//! controller-runtime's controller, reconcile, source, handler, predicate and builder packages.
//!
//! Part of [rein](https://example.invalid/rein): see `docs/ARCHITECTURE.md` for where this
//! crate sits in the stack.
//!
//! ```
//! // The crate builds and links.
//! use rein_controller as _;
//! ```
