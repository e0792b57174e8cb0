//! Response representations beyond plain JSON, chosen by `Accept`: YAML
//! (`application/yaml`) and the metadata-only `meta.k8s.io` forms
//! (`as=PartialObjectMetadata` for objects, `as=PartialObjectMetadataList` for lists), as
//! kube-apiserver's `transformResponseObject` produces them. Tables are `table.rs`'s.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, header};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use super::accept::{self, param};
use super::body::Body;
use crate::resources::ResourceDef;
use crate::status::ApiError;

/// Which metadata-only form was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Partial {
    /// `PartialObjectMetadata`: one object's metadata.
    Object,
    /// `PartialObjectMetadataList`: a list of them.
    List,
}

/// The representation a request negotiated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Representation {
    /// Encode the answer as YAML.
    pub(crate) yaml: bool,
    /// Reduce the answer to metadata.
    pub(crate) partial: Option<Partial>,
}

impl Representation {
    /// Reads `Accept`: the first clause (by quality) this server can produce decides.
    pub(crate) fn negotiate(headers: &HeaderMap) -> Representation {
        let accept = headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(",");
        for clause in accept::clauses(&accept) {
            let essence = accept::essence(clause);
            let yaml = match essence.as_str() {
                "application/yaml" => true,
                "application/json" | "application/*" | "*/*" => false,
                _ => continue,
            };
            let meta_group = param(clause, "g") == Some("meta.k8s.io")
                && matches!(param(clause, "v"), Some("v1" | "v1beta1"));
            let partial = match param(clause, "as") {
                None => None,
                Some("PartialObjectMetadata") if meta_group => Some(Partial::Object),
                Some("PartialObjectMetadataList") if meta_group => Some(Partial::List),
                // Tables are answered by `table.rs`.
                Some("Table") => return Representation::default(),
                Some(_) => continue,
            };
            return Representation { yaml, partial };
        }
        Representation::default()
    }

    /// Whether the answer is plain JSON (nothing to do).
    pub(crate) fn is_plain(&self) -> bool {
        *self == Representation::default()
    }

    /// Rewrites a complete JSON answer into this representation. Status answers keep their
    /// form (only re-encoded as YAML when asked).
    pub(crate) async fn adapt(&self, resp: Response<Body>, def: &ResourceDef) -> Response<Body> {
        if self.is_plain() {
            return resp;
        }
        let (mut parts, body) = resp.into_parts();
        // Complete bodies only: the error type is `Infallible`.
        let Ok(collected) = body.collect().await;
        let bytes = collected.to_bytes();
        let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
            return Response::from_parts(parts, Full::new(bytes).boxed());
        };
        let mut content_type = if self.yaml {
            "application/yaml".to_string()
        } else {
            "application/json".to_string()
        };
        if let Some(partial) = self.partial
            && value.get("kind").and_then(Value::as_str) != Some("Status")
            && parts.status.is_success()
        {
            match metadata_only(&value, partial, def) {
                Ok(reduced) => {
                    value = reduced;
                    if !self.yaml {
                        let kind = match partial {
                            Partial::Object => "PartialObjectMetadata",
                            Partial::List => "PartialObjectMetadataList",
                        };
                        content_type = format!("application/json;g=meta.k8s.io;v=v1;as={kind}");
                    }
                }
                Err(err) => {
                    value = err.to_status();
                    parts.status = http::StatusCode::from_u16(err.code).unwrap_or(parts.status);
                }
            }
        }
        let encoded = if self.yaml {
            crate::yaml::to_string(&value)
                .map(String::into_bytes)
                .unwrap_or_default()
        } else {
            crate::canonical::to_vec(&value)
        };
        if let Ok(v) = HeaderValue::from_str(&content_type) {
            parts.headers.insert(header::CONTENT_TYPE, v);
        }
        parts.headers.remove(header::CONTENT_LENGTH);
        Response::from_parts(parts, Full::new(Bytes::from(encoded)).boxed())
    }
}

/// kube-apiserver's `asPartialObjectMetadata` / `asPartialObjectMetadataList`.
pub(crate) fn metadata_only(
    value: &Value,
    partial: Partial,
    def: &ResourceDef,
) -> Result<Value, ApiError> {
    let is_list = value.get("items").is_some_and(Value::is_array);
    match (partial, is_list) {
        (Partial::Object, false) => Ok(partial_object(value)),
        (Partial::List, true) => {
            let items: Vec<Value> = value["items"]
                .as_array()
                .map(|items| items.iter().map(partial_object).collect())
                .unwrap_or_default();
            let mut meta = json!({});
            for field in ["resourceVersion", "continue", "remainingItemCount"] {
                if let Some(v) = value.pointer(&format!("/metadata/{field}")) {
                    meta[field] = v.clone();
                }
            }
            Ok(json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": meta,
                "items": items,
            }))
        }
        (Partial::Object, true) => Err(not_acceptable(format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({})",
            go_type(def, true)
        ))),
        (Partial::List, false) => Err(not_acceptable(format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
            go_type(def, false)
        ))),
    }
}

/// One object reduced to its metadata.
pub(crate) fn partial_object(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

fn not_acceptable(message: String) -> ApiError {
    ApiError::new(406, "NotAcceptable", message)
}

/// The Go type kube-apiserver's `%T` prints for the stored (internal) object.
fn go_type(def: &ResourceDef, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if def.custom {
        return format!("*unstructured.Unstructured{suffix}");
    }
    let package = match def.group.split('.').next() {
        Some("") | None => "core",
        Some(first) => first,
    };
    format!("*{package}.{}{suffix}", def.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn negotiate(accept: &str) -> Representation {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_str(accept).expect("header"),
        );
        Representation::negotiate(&headers)
    }

    #[test]
    fn accept_clauses_pick_the_representation() {
        let partial = |partial| Representation {
            yaml: false,
            partial: Some(partial),
        };
        assert_eq!(
            negotiate("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
            partial(Partial::Object)
        );
        assert_eq!(
            negotiate(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            ),
            partial(Partial::List)
        );
        assert!(negotiate("application/yaml").yaml);
        assert!(negotiate("application/vnd.kubernetes.protobuf,application/json").is_plain());
        assert!(negotiate("application/json;as=Table;g=meta.k8s.io;v=v1").is_plain());
        assert!(negotiate("application/json;as=Nonsense;g=x;v=v1,application/yaml").yaml);
        assert!(negotiate("application/yaml;q=0.5,application/json").is_plain());
    }
}
