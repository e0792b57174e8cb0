//! Work queues and rate limiters for controllers: client-go's util/workqueue and a token bucket like golang.org/x/time/rate.
//!
//! Part of [rein](https://example.invalid/rein): see `docs/ARCHITECTURE.md` for where this
//! crate sits in the stack.
//!
//! ```
//! // The crate builds and links.
//! use rein_workqueue as _;
//! ```
