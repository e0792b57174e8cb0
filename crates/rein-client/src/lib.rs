//! controller-runtime's client: typed, dynamic, discovery and cache-backed clients, and controllerutil.
//!
//! Part of [rein](https://example.invalid/rein): see `docs/ARCHITECTURE.md` for where this
//! crate sits in the stack.
//!
//! ```
//! // The crate builds and links.
//! use rein_client as _;
//! ```
