//! The HTTP side of an admission webhook: checks and decodes the AdmissionReview, calls the
//! handler (recovering from panics) and encodes the answer.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Response, StatusCode};
use kube_core::DynamicObject;
use kube_core::admission::{AdmissionResponse, AdmissionReview};
use rein_serve::{Body, text};

use crate::admission::{AdmissionHandler, AdmissionRequest, unreadable};

/// The largest review body accepted: controller-runtime's 7 MiB.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 7 * 1024 * 1024;

/// Answers one HTTP request to an admission webhook path.
pub(crate) async fn serve(
    handler: Arc<dyn AdmissionHandler>,
    req: hyper::Request<Incoming>,
    max_body_bytes: usize,
) -> Response<Body> {
    if req.method() != Method::POST {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "admission webhooks only accept POST\n",
        );
    }
    let content_type = req
        .headers()
        .get(::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    if !media_type.eq_ignore_ascii_case("application/json") {
        return review_response(unreadable(
            400,
            "BadRequest",
            format!("contentType={content_type:?}, expected application/json"),
        ));
    }
    let body = match Limited::new(req.into_body(), max_body_bytes)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => {
            return review_response(unreadable(
                413,
                "RequestEntityTooLarge",
                format!("request entity is larger than the limit of {max_body_bytes} bytes"),
            ));
        }
        Err(err) => {
            return review_response(unreadable(
                400,
                "BadRequest",
                format!("reading the request body failed: {err}"),
            ));
        }
    };
    review_response(decide(handler, &body).await)
}

/// Decodes `body` as an AdmissionReview and lets `handler` decide.
pub(crate) async fn decide(handler: Arc<dyn AdmissionHandler>, body: &[u8]) -> AdmissionResponse {
    if body.is_empty() {
        return unreadable(400, "BadRequest", "request body is empty".to_owned());
    }
    let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(err) => {
            return unreadable(
                400,
                "BadRequest",
                format!("decoding the AdmissionReview failed: {err}"),
            );
        }
    };
    let api_version = review.types.api_version.as_str();
    if api_version != "admission.k8s.io/v1" && api_version != "admission.k8s.io/v1beta1" {
        return unreadable(
            400,
            "BadRequest",
            format!("unsupported AdmissionReview apiVersion {api_version:?}"),
        );
    }
    let request: AdmissionRequest = match review.try_into() {
        Ok(request) => request,
        Err(_) => {
            return unreadable(
                400,
                "BadRequest",
                "the AdmissionReview has no request".to_owned(),
            );
        }
    };
    let outcome = AssertUnwindSafe(handler.handle(&request))
        .catch_unwind()
        .await;
    let mut response = match outcome {
        Ok(response) => response,
        Err(_) => {
            tracing::error!(uid = %request.uid, "admission handler panicked");
            crate::metrics::record_panic();
            crate::AdmissionError::internal("the admission handler panicked")
                .into_response(&request)
        }
    };
    response.uid = request.uid.clone();
    if response.allowed && response.result.code == 0 {
        response.result.code = 200;
    }
    response
}

fn review_response(response: AdmissionResponse) -> Response<Body> {
    let review = response.into_review();
    match serde_json::to_vec(&review) {
        Ok(json) => {
            let mut resp = Response::new(Full::new(Bytes::from(json)));
            resp.headers_mut().insert(
                ::http::header::CONTENT_TYPE,
                ::http::HeaderValue::from_static("application/json"),
            );
            resp
        }
        Err(err) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding the AdmissionReview response failed: {err}\n"),
        ),
    }
}
