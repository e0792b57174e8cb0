//! One raw HTTP request to the test server, for the tests that check what kube-client does not
//! show: status codes, `Content-Type`, `Warning` headers and Status bodies as sent.

use bytes::Bytes;
use http::header;
use kube_client::Client;
use kube_client::client::Body;
use serde_json::Value;

/// What the server answered to one request.
pub(crate) struct Answer {
    /// The status code.
    pub(crate) code: u16,
    /// The `Content-Type` header, empty when there is none.
    pub(crate) content_type: String,
    /// The `Warning` headers, in order.
    pub(crate) warnings: Vec<String>,
    /// The body as sent.
    pub(crate) bytes: Bytes,
}

impl Answer {
    /// The body as text (lossy UTF-8).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// The body as JSON; `Null` when it is not JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }

    /// The body as JSON; a JSON string of the text when it is not JSON.
    pub(crate) fn json_or_text(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or_else(|_| Value::String(self.text()))
    }
}

/// Sends `method path` with `headers` (name, value) and `body`, and reads the whole answer.
pub(crate) async fn send(
    client: &Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Answer {
    let resp = open(client, method, path, headers, body).await;
    let code = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let warnings = resp
        .headers()
        .get_all(header::WARNING)
        .iter()
        .map(|v| v.to_str().unwrap_or_default().to_string())
        .collect();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("reads")
        .to_bytes();
    Answer {
        code,
        content_type,
        warnings,
        bytes,
    }
}

/// Sends `method path` with `headers` (name, value) and `body`: the response, its body still
/// to be read (a watch's stream, frame by frame).
pub(crate) async fn open(
    client: &Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> http::Response<Body> {
    let mut request = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(body).expect("request");
    client.send(request.map(Into::into)).await.expect("sends")
}

/// Sends `body` (nothing when `None`) as `content_type`.
pub(crate) async fn send_json(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Option<&Value>,
) -> Answer {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    send(
        client,
        method,
        path,
        &[("content-type", content_type)],
        bytes,
    )
    .await
}

/// GETs `path` with `Accept: accept`.
pub(crate) async fn get_as(client: &Client, path: &str, accept: &str) -> Answer {
    send(client, "GET", path, &[("accept", accept)], Vec::new()).await
}

/// The (code, reason, message) of a Status body.
pub(crate) fn status_of(body: &Value) -> (u64, &str, &str) {
    (
        body["code"].as_u64().unwrap_or_default(),
        body["reason"].as_str().unwrap_or_default(),
        body["message"].as_str().unwrap_or_default(),
    )
}
