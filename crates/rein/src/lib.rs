//! rein: Kubernetes controllers and operators in Rust, in the spirit of client-go and
//! controller-runtime.
//!
//! This facade re-exports the layers; depend on it, or on the individual crates.
//!
//! ```
//! use rein::workqueue as _;
//! ```

#[doc(inline)]
pub use rein_client as client;
#[doc(inline)]
pub use rein_controller as controller;
#[doc(inline)]
pub use rein_informer as informer;
#[doc(inline)]
pub use rein_manager as manager;
#[doc(inline)]
pub use rein_scheme as scheme;
#[doc(inline)]
pub use rein_workqueue as workqueue;
