//! Response bodies and the helpers that build JSON and `Status` answers.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use serde_json::Value;

use crate::status::ApiError;

/// Every response body: a full buffer or a stream (watches).
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// A JSON response from already-serialised bytes.
pub(crate) fn json_bytes(code: u16, bytes: Vec<u8>) -> Response<Body> {
    json_shared(code, Bytes::from(bytes))
}

/// About how many bytes each frame of a streamed list carries.
pub(crate) const CHUNK: usize = 256 * 1024;

/// A JSON list response streamed in chunks of about [`CHUNK`] bytes: `head`, the items as
/// they are copied from the store, then the closing `]}`.
pub(crate) fn json_stream(head: Vec<u8>, items: super::list::ListItems) -> Response<Body> {
    let stream = futures::stream::unfold(Some((head, items)), |state| async move {
        let (mut chunk, mut items) = state?;
        let more = items.fill(&mut chunk, CHUNK);
        if more {
            let next = Vec::with_capacity(CHUNK + 16 * 1024);
            return Some((Ok(Frame::data(Bytes::from(chunk))), Some((next, items))));
        }
        chunk.extend_from_slice(b"]}");
        Some((Ok(Frame::data(Bytes::from(chunk))), None))
    });
    let mut resp = Response::new(StreamBody::new(stream).boxed());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A JSON response from bytes shared with their owner (a stored object).
pub(crate) fn json_shared(code: u16, bytes: Bytes) -> Response<Body> {
    let mut resp = Response::new(Full::new(bytes).boxed());
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A JSON response, a built-in kind in canonical form (`crate::canonical`).
pub(crate) fn json(code: u16, value: &Value) -> Response<Body> {
    json_bytes(code, crate::canonical::to_vec(value))
}

/// A `metav1.Status` error response.
pub(crate) fn error(err: &ApiError) -> Response<Body> {
    let mut resp = json(err.code, &err.to_status());
    if let Some(secs) = err.retry_after
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// A plain-text response (health checks).
pub(crate) fn text(code: u16, body: &'static str) -> Response<Body> {
    text_bytes(code, Bytes::from_static(body.as_bytes()))
}

/// A plain-text response built at run time.
pub(crate) fn text_owned(code: u16, body: String) -> Response<Body> {
    text_bytes(code, Bytes::from(body))
}

fn text_bytes(code: u16, body: Bytes) -> Response<Body> {
    let mut resp = Response::new(Full::new(body).boxed());
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
