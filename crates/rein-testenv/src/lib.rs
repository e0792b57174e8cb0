//! An embedded, in-process Kubernetes API server for tests: envtest without binaries.
//!
//! Part of [rein](https://example.invalid/rein): see `docs/ARCHITECTURE.md` for where this
//! crate sits in the stack.
//!
//! ```
//! // The crate builds and links.
//! use rein_testenv as _;
//! ```
