//! One HTTPS call of a webhook: connect (a service reference through the mapping the test
//! environment was given), verify the server against `caBundle`, POST the AdmissionReview
//! with `?timeout=<n>s`, decode the answer — each failure worded as Go's HTTP client and
//! client-go's REST client word it, under one deadline.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;

use super::Services;
use super::hook::{Endpoint, Hook};

/// The largest answer read from a webhook.
const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// Where one call goes.
struct Destination {
    /// The address dialed (`host:port`).
    dial: String,
    /// The name the certificate must be valid for.
    server_name: String,
    /// The URL as it appears in errors (with `?timeout=`).
    url: String,
    /// The request target: path and query.
    path_and_query: String,
    /// The `Host` header.
    authority: String,
}

/// POSTs `review` to `hook`; answers the decoded response, or why the call failed (the text
/// that follows `failed calling webhook "<name>": `).
pub(crate) async fn post(
    hook: &Hook,
    services: &Services,
    review: &Value,
) -> Result<Value, String> {
    let timeout = Duration::from_secs(hook.timeout_seconds);
    let dest = destination(hook, services)?;
    let body = serde_json::to_vec(review).map_err(|e| format!("failed to call webhook: {e}"))?;
    let outcome = tokio::time::timeout(timeout, exchange(hook, &dest, body)).await;
    let fail = |why: String| format!("failed to call webhook: Post \"{}\": {why}", dest.url);
    let (code, bytes) = match outcome {
        Err(_) => return Err(fail("context deadline exceeded".to_string())),
        Ok(Err(why)) => return Err(fail(why)),
        Ok(Ok(answer)) => answer,
    };
    if !(200..300).contains(&code) {
        return Err(format!(
            "failed to call webhook: {}",
            server_error(code, &bytes)
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        format!("failed to call webhook: couldn't get version/kind; json parse error: {e}")
    })
}

/// Resolves the hook's endpoint.
fn destination(hook: &Hook, services: &Services) -> Result<Destination, String> {
    let timeout = format!("timeout={}s", hook.timeout_seconds);
    let with_timeout = |path: &str| {
        if !hook.timeout_query {
            path.to_string()
        } else if path.contains('?') {
            format!("{path}&{timeout}")
        } else {
            format!("{path}?{timeout}")
        }
    };
    match &hook.endpoint {
        None => {
            Err("could not get REST client: no clientConfig.url or clientConfig.service".into())
        }
        Some(Endpoint::Url(url)) => {
            let uri: http::Uri = url
                .parse()
                .map_err(|e| format!("could not get REST client: parsing {url:?}: {e}"))?;
            if uri.scheme_str() != Some("https") {
                return Err(format!(
                    "could not get REST client: {url:?}: 'https' is the only allowed URL scheme"
                ));
            }
            let host = uri.host().unwrap_or_default();
            let port = uri.port_u16().unwrap_or(443);
            let server_name = host.trim_start_matches('[').trim_end_matches(']');
            let path_and_query = with_timeout(uri.path_and_query().map_or("/", |p| p.as_str()));
            let authority = uri
                .authority()
                .map_or_else(|| host.to_string(), |a| a.to_string());
            Ok(Destination {
                dial: format!("{host}:{port}"),
                server_name: server_name.to_string(),
                url: format!("https://{authority}{path_and_query}"),
                path_and_query,
                authority,
            })
        }
        Some(Endpoint::Service {
            namespace,
            name,
            path,
            port,
        }) => {
            let host = format!("{name}.{namespace}.svc");
            let path = if path.starts_with('/') {
                path.clone()
            } else {
                format!("/{path}")
            };
            let path_and_query = with_timeout(&path);
            let url = format!("https://{host}:{port}{path_and_query}");
            let Some(addr) = services.get(namespace, name, *port) else {
                return Err(format!(
                    "failed to call webhook: Post \"{url}\": service \"{name}\" not found \
                     (rein-testenv: map it with TestEnvBuilder::webhook_service)"
                ));
            };
            Ok(Destination {
                dial: addr.to_string(),
                server_name: host.clone(),
                url,
                path_and_query,
                authority: format!("{host}:{port}"),
            })
        }
    }
}

/// Connects, shakes hands and exchanges one request; answers the status code and body.
async fn exchange(hook: &Hook, dest: &Destination, body: Vec<u8>) -> Result<(u16, Bytes), String> {
    let tcp = TcpStream::connect(&dest.dial)
        .await
        .map_err(|e| dial_error(&dest.dial, &e))?;
    let _ = tcp.set_nodelay(true);
    let server_name = ServerName::try_from(dest.server_name.clone())
        .map_err(|e| format!("tls: invalid server name {:?}: {e}", dest.server_name))?;
    let connector = tokio_rustls::TlsConnector::from(client_config(hook)?);
    let stream = connector
        .connect(server_name, tcp)
        .await
        .map_err(|e| tls_error(&e, &dest.server_name))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    let conn = AbortOnDrop(tokio::spawn(async move {
        let _ = conn.await;
    }));
    let request = Request::post(dest.path_and_query.as_str())
        .header(header::HOST, dest.authority.as_str())
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, */*")
        .header(header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(hyper_error)?;
    let code = response.status().as_u16();
    let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
        .collect()
        .await
        .map_err(|e| match e.downcast::<hyper::Error>() {
            Ok(e) => hyper_error(*e),
            Err(e) => e.to_string(),
        })?
        .to_bytes();
    drop(conn);
    Ok((code, bytes))
}

/// A TLS client configuration trusting only `caBundle` (no bundle: nothing, as a cluster
/// without the webhook's CA in its system roots would).
fn client_config(hook: &Hook) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(bundle) = &hook.ca_bundle
        && let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(bundle.trim())
    {
        for cert in CertificateDer::pem_slice_iter(&pem).flatten() {
            let _ = roots.add(cert);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Go's wording of a failed dial.
fn dial_error(addr: &str, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
        _ => e.to_string(),
    };
    format!("dial tcp {addr}: {why}")
}

/// Go's wording of a failed handshake.
fn tls_error(e: &std::io::Error, server_name: &str) -> String {
    use rustls::{CertificateError, Error};
    match e.get_ref().and_then(|inner| inner.downcast_ref::<Error>()) {
        Some(Error::InvalidCertificate(
            CertificateError::UnknownIssuer | CertificateError::BadSignature,
        )) => "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            .to_string(),
        Some(Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        )) => format!(
            "tls: failed to verify certificate: x509: certificate is not valid for {server_name}"
        ),
        Some(other) => format!("tls: {other}"),
        None if e.kind() == std::io::ErrorKind::UnexpectedEof => "EOF".to_string(),
        None => e.to_string(),
    }
}

/// Go's wording of a connection that ended without an answer.
fn hyper_error(e: hyper::Error) -> String {
    if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        return "EOF".to_string();
    }
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::UnexpectedEof => "EOF".to_string(),
                std::io::ErrorKind::ConnectionReset => "read: connection reset by peer".to_string(),
                _ => io.to_string(),
            };
        }
        source = cause.source();
    }
    if e.is_parse() {
        return format!("net/http: HTTP/1.x transport connection broken: {e}");
    }
    e.to_string()
}

/// client-go's error for an answer outside 2xx: a `Status` body's message, else
/// apimachinery's generic message for the code.
fn server_error(code: u16, body: &[u8]) -> String {
    if let Ok(status) = serde_json::from_slice::<Value>(body)
        && status.get("kind").and_then(Value::as_str) == Some("Status")
        && let Some(message) = status.get("message").and_then(Value::as_str)
    {
        return message.to_string();
    }
    let text = String::from_utf8_lossy(body);
    let text = if text.trim().is_empty() {
        "unknown".to_string()
    } else {
        text.trim().chars().take(1024).collect()
    };
    match code {
        400 => "the server rejected our request for an unknown reason".to_string(),
        401 => "the server has asked for the client to provide credentials".to_string(),
        403 => "the server does not allow access to the requested resource".to_string(),
        404 => "the server could not find the requested resource".to_string(),
        409 => "the server reported a conflict".to_string(),
        429 => "the server has received too many requests and has asked us to try again later"
            .to_string(),
        503 => "the server is currently unable to handle the request".to_string(),
        504 => "the server was unable to return a response in the time allotted, but may still \
                be processing the request"
            .to_string(),
        _ => format!("an error on the server ({text:?}) has prevented the request from succeeding"),
    }
}

/// Aborts the connection task when the call ends or is abandoned at its deadline.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
