//! The HTTP side of a conversion webhook: checks and decodes the ConversionReview, converts
//! each object with its kind's converter (recovering from panics) and encodes the answer.
//! Every failure is answered as a ConversionReview whose `result` is a `Failure` with a
//! message, as controller-runtime's handler answers.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Response, StatusCode};
use kube_core::TypeMeta;
use kube_core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube_core::response::{Status, StatusSummary};
use parking_lot::RwLock;
use rein_serve::{Body, text};
use serde_json::Value;

use super::hub::KindConverter;
use crate::error::Error;

/// The ConversionReview handler at `/convert`: one converter per group and kind.
#[derive(Default)]
pub(crate) struct ConversionWebhook {
    kinds: RwLock<BTreeMap<(String, String), Arc<dyn KindConverter>>>,
}

impl ConversionWebhook {
    /// Adds a kind's converter; a kind can be registered once.
    pub(crate) fn add(&self, converter: Arc<dyn KindConverter>) -> Result<(), Error> {
        let gk = converter.group_kind();
        let mut kinds = self.kinds.write();
        if kinds.contains_key(&gk) {
            return Err(Error::Conversion {
                kind: gk.1.clone(),
                why: format!("a conversion for {}.{} is already registered", gk.1, gk.0),
            });
        }
        kinds.insert(gk, converter);
        Ok(())
    }

    /// Converts every object of `req`, or answers why one failed.
    fn convert(&self, req: &ConversionRequest) -> Result<Vec<Value>, String> {
        let desired_group = group_of(&req.desired_api_version);
        req.objects
            .iter()
            .map(|object| {
                let api_version = object
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .ok_or("the object has no apiVersion")?;
                let kind = object
                    .get("kind")
                    .and_then(Value::as_str)
                    .ok_or("the object has no kind")?;
                let group = group_of(api_version);
                if group != desired_group {
                    return Err(format!(
                        "src {kind} {api_version} and dst {} do not belong to the same API group",
                        req.desired_api_version
                    ));
                }
                let converter = self
                    .kinds
                    .read()
                    .get(&(group.to_owned(), kind.to_owned()))
                    .cloned()
                    .ok_or_else(|| {
                        format!("no conversion is registered for kind {kind:?} in group {group:?}")
                    })?;
                converter.convert(object, &req.desired_api_version)
            })
            .collect()
    }
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Answers one HTTP request to the conversion path.
pub(crate) async fn serve(
    webhook: Arc<ConversionWebhook>,
    req: hyper::Request<Incoming>,
    max_body_bytes: usize,
) -> Response<Body> {
    if req.method() != Method::POST {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "conversion webhooks only accept POST\n",
        );
    }
    let content_type = req
        .headers()
        .get(::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    if !media_type.eq_ignore_ascii_case("application/json") {
        return failed(
            StatusCode::BAD_REQUEST,
            None,
            format!("contentType={content_type:?}, expected application/json"),
        );
    }
    let body = match Limited::new(req.into_body(), max_body_bytes)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => {
            return failed(
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                format!("request entity is larger than the limit of {max_body_bytes} bytes"),
            );
        }
        Err(err) => {
            return failed(
                StatusCode::BAD_REQUEST,
                None,
                format!("reading the request body failed: {err}"),
            );
        }
    };
    let review: ConversionReview = match serde_json::from_slice(&body) {
        Ok(review) => review,
        Err(err) => {
            return failed(
                StatusCode::BAD_REQUEST,
                None,
                format!("decoding the ConversionReview failed: {err}"),
            );
        }
    };
    let types = review.types.clone();
    if types.api_version != "apiextensions.k8s.io/v1"
        && types.api_version != "apiextensions.k8s.io/v1beta1"
    {
        return failed(
            StatusCode::BAD_REQUEST,
            None,
            format!(
                "unsupported ConversionReview apiVersion {:?}",
                types.api_version
            ),
        );
    }
    let Some(request) = review.request else {
        return failed(
            StatusCode::BAD_REQUEST,
            Some(types),
            "conversion request is nil".to_owned(),
        );
    };
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| webhook.convert(&request)));
    let uid = request.uid.clone();
    let mut response = ConversionResponse::for_request(request);
    response = match outcome {
        Ok(Ok(objects)) => response.success(objects),
        Ok(Err(message)) => {
            tracing::info!(%uid, %message, "conversion failed");
            response.failure(failure(message))
        }
        Err(_) => {
            tracing::error!(%uid, "conversion panicked");
            crate::metrics::record_panic();
            response.failure(failure(
                "internal error occurred during conversion".to_owned(),
            ))
        }
    };
    response.uid = uid;
    let mut review = response.into_review();
    review.types = types;
    encode(StatusCode::OK, &review)
}

fn failure(message: String) -> Status {
    Status {
        status: Some(StatusSummary::Failure),
        message,
        ..Status::default()
    }
}

/// A failed ConversionReview for a request that could not be handled at all.
fn failed(code: StatusCode, types: Option<TypeMeta>, message: String) -> Response<Body> {
    let mut review = ConversionResponse::invalid(failure(message)).into_review();
    review.types = types.unwrap_or_else(|| TypeMeta {
        api_version: "apiextensions.k8s.io/v1".to_owned(),
        kind: "ConversionReview".to_owned(),
    });
    encode(code, &review)
}

fn encode(code: StatusCode, review: &ConversionReview) -> Response<Body> {
    match serde_json::to_vec(review) {
        Ok(json) => {
            let mut resp = Response::new(Full::new(Bytes::from(json)));
            *resp.status_mut() = code;
            resp.headers_mut().insert(
                ::http::header::CONTENT_TYPE,
                ::http::HeaderValue::from_static("application/json"),
            );
            resp
        }
        Err(err) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding the ConversionReview response failed: {err}\n"),
        ),
    }
}
