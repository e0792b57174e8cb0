//! The last word on a write's shape: decoding it into its k8s-openapi type, so nothing is
//! stored that a typed client could not read back.

use serde_json::Value;

/// Decodes `obj` as the k8s-openapi type of (`group`, `version`, `kind`); the error text when
/// it does not decode. Kinds k8s-openapi does not know pass.
pub(crate) fn decodes(group: &str, version: &str, kind: &str, obj: &Value) -> Result<(), String> {
    decode_as(group, version, kind, obj).unwrap_or(Ok(()))
}

fn try_type<K>(obj: &Value) -> Result<(), String>
where
    K: k8s_openapi::serde::de::DeserializeOwned,
{
    <K as k8s_openapi::serde::Deserialize>::deserialize(obj)
        .map(drop)
        .map_err(|e| e.to_string())
}

macro_rules! decode_table {
    ($($ty:path),* $(,)?) => {
        /// `None` when no built-in type has this group, version and kind.
        fn decode_as(
            group: &str,
            version: &str,
            kind: &str,
            obj: &Value,
        ) -> Option<Result<(), String>> {
            use k8s_openapi::Resource as _;
            $(
                if <$ty>::GROUP == group && <$ty>::VERSION == version && <$ty>::KIND == kind {
                    return Some(try_type::<$ty>(obj));
                }
            )*
            None
        }
    };
}

crate::resources::with_builtin_types!(decode_table);
