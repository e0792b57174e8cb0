//! Errors from scheme lookups, object construction and decoding.

use crate::GroupVersionKind;

/// Why a scheme operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Rust type was never registered.
    #[error("looking up the kind of Rust type {type_name}: it was not registered with the scheme")]
    NotRegistered {
        /// The Rust type name.
        type_name: &'static str,
    },
    /// The Rust type is registered under several kinds and the caller did not say which.
    #[error(
        "looking up the kind of Rust type {type_name}: it is registered as several kinds ({gvks:?})"
    )]
    Ambiguous {
        /// The Rust type name.
        type_name: &'static str,
        /// Every kind it is registered as.
        gvks: Vec<GroupVersionKind>,
    },
    /// No type or REST mapping is known for this kind.
    #[error("looking up kind {gvk}: no type or REST mapping is known for it")]
    UnknownKind {
        /// The kind.
        gvk: GroupVersionKind,
    },
    /// The kind has no REST resource of its own (a sub-resource body such as `Scale`).
    #[error("mapping kind {gvk} to a REST resource: it is only served as a sub-resource")]
    SubresourceOnly {
        /// The kind.
        gvk: GroupVersionKind,
    },
    /// A GVK without a version or kind.
    #[error("using kind {gvk}: version and kind must not be empty")]
    IncompleteKind {
        /// The kind.
        gvk: GroupVersionKind,
    },
    /// A JSON document without `apiVersion` or `kind`.
    #[error("decoding an object: it has no apiVersion and kind")]
    MissingTypeMeta,
    /// The bytes are not JSON, or the JSON does not fit the type.
    #[error("decoding an object of kind {gvk}")]
    Decode {
        /// The kind being decoded (empty when the document could not be read at all).
        gvk: GroupVersionKind,
        /// What serde reported.
        #[source]
        source: serde_json::Error,
    },
    /// Serializing an object to JSON failed.
    #[error("encoding an object of kind {gvk}")]
    Encode {
        /// The kind being encoded.
        gvk: GroupVersionKind,
        /// What serde reported.
        #[source]
        source: serde_json::Error,
    },
}
