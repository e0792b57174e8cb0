//! Why a protobuf body could not be decoded.

/// A protobuf request body that could not be turned into JSON.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProtoError {
    /// The body does not start with `k8s\0`.
    #[error("decoding the protobuf body: it does not start with the Kubernetes magic number")]
    Magic,
    /// The bytes end inside a field.
    #[error("decoding the protobuf body: the message ends early")]
    Truncated,
    /// A varint longer than ten bytes.
    #[error("decoding the protobuf body: a varint is too long")]
    Varint,
    /// A wire type protobuf 3 does not use (groups) or that does not exist.
    #[error("decoding the protobuf body: unsupported wire type {0}")]
    UnsupportedWireType(u64),
    /// A field arrived with a wire type its declared type does not have.
    #[error("decoding the protobuf body: field {field} has the wrong wire type")]
    WireType {
        /// The field's JSON name.
        field: String,
    },
    /// A string field holding bytes that are not UTF-8.
    #[error("decoding the protobuf body: a string is not valid UTF-8")]
    Utf8(#[source] std::string::FromUtf8Error),
    /// An embedded JSON document (`RawExtension`, `FieldsV1`, `JSON`) that does not parse.
    #[error("decoding the protobuf body: an embedded JSON document does not parse")]
    EmbeddedJson(#[source] serde_json::Error),
    /// `runtime.Unknown.contentEncoding` names a compression this server does not undo.
    #[error("decoding the protobuf body: content encoding {0:?} is not supported")]
    ContentEncoding(String),
    /// No message is known for the envelope's apiVersion and kind.
    #[error("decoding the protobuf body: no protobuf message is known for {api_version} {kind}")]
    UnknownKind {
        /// The envelope's `apiVersion`.
        api_version: String,
        /// The envelope's `kind`.
        kind: String,
    },
    /// The field table names a message it does not describe.
    #[error("decoding the protobuf body: message {0} is not in the field table")]
    UnknownMessage(String),
    /// Messages nested deeper than any real object.
    #[error("decoding the protobuf body: messages are nested too deeply")]
    TooDeep,
}
