//! `/openapi/v2` and `/openapi/v3/...` answers as kube-openapi's handlers give them: the
//! `Accept` clauses pick JSON or gnostic protobuf (v2), the `ETag` is the upper-case hex
//! SHA-512 of the JSON document (the protobuf form shares it, told apart by `Vary: Accept`),
//! `If-None-Match` naming it answers 304, and no acceptable form answers 406.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty, Full};
use serde_json::Value;

use super::accept;
use super::body::Body;

/// The v2 protobuf media type kubectl asks for (kube-openapi still accepts it).
const V2_PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The v2 protobuf media type answered in `Content-Type`.
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The forms a document can be served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Json,
    V2Protobuf,
}

/// The answer at `/openapi/v2`.
pub(crate) fn v2(document: &Value, headers: &HeaderMap) -> Response<Body> {
    let offered: &[(&str, Form)] = &[
        ("application/json", Form::Json),
        (V2_PROTOBUF_DEPRECATED, Form::V2Protobuf),
        (V2_PROTOBUF, Form::V2Protobuf),
    ];
    respond(document, headers, offered)
}

/// The answer at `/openapi/v3/<group-version>`. kube-openapi also offers the v3 protobuf
/// form; rein-testenv does not encode it, so a client that accepts only that form gets 406
/// (kubectl asks for JSON). With the index's `hash` in the query the answer may be cached
/// for good (`Cache-Control: public, immutable`, `Expires` a year on).
pub(crate) fn v3(document: &Value, headers: &HeaderMap, query: Option<&str>) -> Response<Body> {
    let mut resp = respond(document, headers, &[("application/json", Form::Json)]);
    let hashed = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .any(|(k, v)| k == "hash" && !v.is_empty());
    if hashed && resp.status() == StatusCode::OK {
        let expires = jiff::Timestamp::now()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .saturating_add(jiff::Span::new().years(1));
        let out = resp.headers_mut();
        out.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, immutable"),
        );
        if let Ok(value) =
            HeaderValue::from_str(&expires.strftime("%a, %d %b %Y %H:%M:%S UTC").to_string())
        {
            out.insert(header::EXPIRES, value);
        }
    }
    resp
}

/// The answer at `/openapi/v3`: the index, always JSON (kube-openapi does not negotiate it),
/// with its `ETag` and 304.
pub(crate) fn v3_index(document: &Value, headers: &HeaderMap) -> Response<Body> {
    let mut resp = respond(
        document,
        &HeaderMap::new(),
        &[("application/json", Form::Json)],
    );
    if let Some(etag) = resp.headers().get(header::ETAG).cloned()
        && headers
            .get(header::IF_NONE_MATCH)
            .is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        resp = bare(StatusCode::NOT_MODIFIED);
        resp.headers_mut().insert(header::ETAG, etag);
    }
    resp.headers_mut().remove(header::VARY);
    resp
}

fn respond(document: &Value, headers: &HeaderMap, offered: &[(&str, Form)]) -> Response<Body> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|a| !a.trim().is_empty())
        .unwrap_or("*/*");
    let Some(form) = negotiate(accept, offered) else {
        return bare(StatusCode::NOT_ACCEPTABLE);
    };
    let json = serde_json::to_vec(document).unwrap_or_default();
    let digest = ring::digest::digest(&ring::digest::SHA512, &json);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
    let etag = format!("\"{hex}\"");
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "*" || v.split(',').any(|t| t.trim() == etag));
    let mut resp = if not_modified {
        bare(StatusCode::NOT_MODIFIED)
    } else {
        let (bytes, content_type) = match form {
            Form::Json => (json, "application/json"),
            Form::V2Protobuf => (crate::openapi::v2_protobuf(document), V2_PROTOBUF),
        };
        let mut resp = Response::new(Full::new(Bytes::from(bytes)).boxed());
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        resp
    };
    let out = resp.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        out.insert(header::ETAG, value);
    }
    out.insert(header::VARY, HeaderValue::from_static("Accept"));
    resp
}

/// The first offered form the best-ranked clause admits (`*/*` and `application/*` admit
/// every form, the first offered winning), as kube-openapi's loop over goautoneg's clauses.
fn negotiate(accept: &str, offered: &[(&str, Form)]) -> Option<Form> {
    let mut clauses = accept::clauses(accept);
    // goautoneg ranks more specific ranges first among equal qualities.
    let quality = |c: &str| {
        accept::param(c, "q")
            .and_then(|q| q.parse::<f32>().ok())
            .unwrap_or(1.0)
    };
    let wildcards = |c: &str| {
        let essence = accept::essence(c);
        usize::from(essence.ends_with("/*")) + usize::from(essence == "*/*")
    };
    clauses.sort_by(|a, b| {
        quality(b)
            .total_cmp(&quality(a))
            .then(wildcards(a).cmp(&wildcards(b)))
    });
    for clause in clauses {
        let essence = accept::essence(clause);
        let (kind, sub) = essence.split_once('/').unwrap_or((essence.as_str(), ""));
        for (media, form) in offered {
            let (o_kind, o_sub) = media.split_once('/').unwrap_or((media, ""));
            if (kind == o_kind || kind == "*") && (sub == o_sub || sub == "*") {
                return Some(*form);
            }
        }
    }
    None
}

fn bare(code: StatusCode) -> Response<Body> {
    let mut resp = Response::new(Empty::<Bytes>::new().map_err(|e| match e {}).boxed());
    *resp.status_mut() = code;
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2: &[(&str, Form)] = &[
        ("application/json", Form::Json),
        (V2_PROTOBUF_DEPRECATED, Form::V2Protobuf),
        (V2_PROTOBUF, Form::V2Protobuf),
    ];

    #[test]
    fn negotiation_follows_kube_openapi() {
        let kubectl = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        assert_eq!(negotiate(kubectl, V2), Some(Form::V2Protobuf));
        assert_eq!(negotiate("*/*", V2), Some(Form::Json));
        assert_eq!(negotiate("application/json", V2), Some(Form::Json));
        assert_eq!(
            negotiate(
                "*/*;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                V2
            ),
            Some(Form::V2Protobuf)
        );
        assert_eq!(negotiate("text/html", V2), None);
    }
}
