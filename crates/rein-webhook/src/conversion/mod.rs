//! Conversion webhooks (controller-runtime's `pkg/conversion` and `pkg/webhook/conversion`):
//! one [`Hub`] version per kind, spokes that convert to and from it, served as
//! `apiextensions.k8s.io` ConversionReviews at [`CONVERT_PATH`].

mod hub;
mod review;

pub use hub::{Conversion, ConversionError, Convertible, Hub};
pub(crate) use review::{ConversionWebhook, serve};

/// The path controller-runtime serves every kind's conversions at (`/convert`); a CRD's
/// `spec.conversion.webhook.clientConfig` names it.
pub const CONVERT_PATH: &str = "/convert";
