//! A minimal HTTPS client that posts AdmissionReviews and ConversionReviews the way the API
//! server does, for tests, examples and local checks of a webhook server.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::StatusCode;
use hyper_util::rt::TokioIo;
use kube_core::admission::{AdmissionResponse, AdmissionReview, Operation};
use kube_core::conversion::{ConversionResponse, ConversionReview};
use kube_core::{DynamicObject, Resource};
use rustls::pki_types::ServerName;
use serde::Serialize;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::error::Error;
use super::tls::client_config;

/// Calls a webhook server over TLS, trusting only the given CA.
#[derive(Clone)]
pub struct AdmissionClient {
    addr: SocketAddr,
    server_name: ServerName<'static>,
    connector: TlsConnector,
}

impl fmt::Debug for AdmissionClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdmissionClient")
            .field("addr", &self.addr)
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl AdmissionClient {
    /// A client for the server at `addr`, verifying its certificate for `server_name`
    /// against the CA certificates in `ca_pem`.
    pub fn new(addr: SocketAddr, server_name: &str, ca_pem: &str) -> Result<Self, Error> {
        let server_name =
            ServerName::try_from(server_name.to_owned()).map_err(|source| Error::ServerName {
                name: server_name.to_owned(),
                source,
            })?;
        Ok(Self {
            addr,
            server_name,
            connector: TlsConnector::from(client_config(ca_pem)?),
        })
    }

    /// Posts `body` with `content_type` to `path`; returns the HTTP status and body.
    pub async fn post(
        &self,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<(StatusCode, Bytes), Error> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .map_err(|source| Error::Connect {
                addr: self.addr,
                source,
            })?;
        let tls = self
            .connector
            .connect(self.server_name.clone(), tcp)
            .await
            .map_err(Error::Handshake)?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(Error::Http)?;
        let driver = tokio::spawn(conn);
        let request = hyper::Request::post(path)
            .header(::http::header::HOST, self.server_name.to_str().as_ref())
            .header(::http::header::CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from(body)))
            .map_err(Error::Request)?;
        let response = sender.send_request(request).await.map_err(Error::Http)?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(Error::Http)?
            .to_bytes();
        driver.abort();
        Ok((status, body))
    }

    /// Posts an AdmissionReview (as JSON) to `path` and returns the webhook's response.
    pub async fn review(
        &self,
        path: &str,
        review: &serde_json::Value,
    ) -> Result<AdmissionResponse, Error> {
        let body = serde_json::to_vec(review).map_err(Error::Encode)?;
        let (status, body) = self.post(path, "application/json", body).await?;
        let review: AdmissionReview<DynamicObject> =
            serde_json::from_slice(&body).map_err(|source| Error::Decode {
                status: status.as_u16(),
                source,
            })?;
        review.response.ok_or(Error::NoResponse)
    }

    /// Posts a ConversionReview (as JSON) to `path` and returns the webhook's response.
    pub async fn convert(
        &self,
        path: &str,
        review: &serde_json::Value,
    ) -> Result<ConversionResponse, Error> {
        let body = serde_json::to_vec(review).map_err(Error::Encode)?;
        let (status, body) = self.post(path, "application/json", body).await?;
        let review: ConversionReview =
            serde_json::from_slice(&body).map_err(|source| Error::Decode {
                status: status.as_u16(),
                source,
            })?;
        review.response.ok_or(Error::NoResponse)
    }
}

/// The `apiextensions.k8s.io/v1` ConversionReview the API server would send to convert
/// `objects` to `desired_api_version`.
pub fn conversion_request(
    desired_api_version: &str,
    objects: Vec<serde_json::Value>,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": next_uid(),
            "desiredAPIVersion": desired_api_version,
            "objects": objects,
        }
    })
}

fn next_uid() -> String {
    static NEXT_UID: AtomicU64 = AtomicU64::new(1);
    format!(
        "00000000-0000-4000-8000-{:012x}",
        NEXT_UID.fetch_add(1, Ordering::Relaxed)
    )
}

/// The `admission.k8s.io/v1` AdmissionReview the API server would send for `operation` on
/// `object` (and `old_object` for updates and deletes).
pub fn review_request<K>(
    operation: Operation,
    object: Option<&K>,
    old_object: Option<&K>,
) -> Result<serde_json::Value, Error>
where
    K: Resource<DynamicType = ()> + Serialize,
{
    let uid = next_uid();
    let meta = object.or(old_object).map(|o| o.meta());
    let operation = serde_json::to_value(operation).map_err(Error::Encode)?;
    let gvk = serde_json::json!({
        "group": K::group(&()), "version": K::version(&()), "kind": K::kind(&()),
    });
    Ok(serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": gvk,
            "resource": {
                "group": K::group(&()), "version": K::version(&()), "resource": K::plural(&()),
            },
            "name": meta.and_then(|m| m.name.clone()).unwrap_or_default(),
            "namespace": meta.and_then(|m| m.namespace.clone()),
            "operation": operation,
            "userInfo": { "username": "rein-admission-client" },
            "object": object.map(serde_json::to_value).transpose().map_err(Error::Encode)?,
            "oldObject": old_object.map(serde_json::to_value).transpose().map_err(Error::Encode)?,
            "dryRun": false,
        }
    }))
}
