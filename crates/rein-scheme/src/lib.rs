//! Kubernetes type machinery: group/version/kind, object keys, label and field selectors, and the Scheme.
//!
//! Part of [rein](https://example.invalid/rein): see `docs/ARCHITECTURE.md` for where this
//! crate sits in the stack.
//!
//! ```
//! // The crate builds and links.
//! use rein_scheme as _;
//! ```
