//! client-go's tools/cache for Rust: reflector, DeltaFIFO and RealFIFO, indexers, shared informers, listers.
//!
//! Part of [rein](https://example.invalid/rein): see `docs/ARCHITECTURE.md` for where this
//! crate sits in the stack.
//!
//! ```
//! // The crate builds and links.
//! use rein_informer as _;
//! ```
