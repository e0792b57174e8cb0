//! Kubernetes type machinery: group/version/kind, object keys, label and field selectors, and the Scheme.
//!
//! `rein-scheme` plays apimachinery's role in the rein stack. It sits directly above
//! k8s-openapi and kube-core and below everything that handles objects: `rein-informer` keys its
//! stores with [`ObjectKey`] and filters with [`labels::Selector`], `rein-client` maps types to
//! REST paths through the [`Scheme`], and `rein-controller` carries an [`ObjectKey`] in each
//! reconcile request. It does no I/O.
//!
//! ```
//! use rein_scheme::{labels, GroupVersionKind, ObjectKey};
//! use k8s_openapi::api::apps::v1::Deployment;
//!
//! let key: ObjectKey = "default/web".parse().unwrap();
//! assert_eq!(key, ObjectKey::new("default", "web"));
//!
//! let gvk = GroupVersionKind::of::<Deployment>();
//! assert_eq!(gvk.to_string(), "apps/v1, Kind=Deployment");
//!
//! let sel = labels::Selector::parse("app=web,tier!=db").unwrap();
//! assert_eq!(sel.to_string(), "app=web,tier!=db");
//! ```

pub mod conditions;
pub mod fields;
mod gvk;
mod key;
pub mod labels;
mod object;
mod scheme;

pub use gvk::{GroupVersion, GroupVersionKind, GroupVersionResource};
pub use key::{ObjectKey, ParseObjectKeyError};
pub use object::Object;
pub use scheme::{
    AnyObject, Error, RestMapper, RestMapping, Scheme, Scope, TypeInfo, builtins, downcast,
};
