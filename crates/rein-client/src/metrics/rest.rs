//! client-go's REST client metrics, as a tower layer: `rest_client_requests_total{code,method,host}`
//! and `rest_client_request_duration_seconds{verb,host}`, one observation per attempt (a request
//! the retry layer sends again counts twice, as in client-go), measured until the response's
//! headers arrive. A request that fails without a response counts with `code="<error>"`.

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use http::{Request, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use tokio::time::Instant;
use tower::{Layer, Service};

use super::registry;

/// client-go's `requestLatency` buckets.
const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabels {
    code: String,
    method: String,
    host: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LatencyLabels {
    verb: String,
    host: String,
}

struct Families {
    requests: Family<ResultLabels, Counter>,
    latency: Family<LatencyLabels, Histogram, fn() -> Histogram>,
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

fn families() -> &'static Families {
    static FAMILIES: OnceLock<Families> = OnceLock::new();
    FAMILIES.get_or_init(|| {
        let f = Families {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
        };
        let mut r = registry().lock();
        r.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            f.requests.clone(),
        );
        r.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            f.latency.clone(),
        );
        drop(r);
        f
    })
}

/// How many requests with this status `code` (or `"<error>"`), HTTP `method` and `host` the
/// process has sent through a [`RestClientMetricsLayer`].
pub fn rest_client_requests(code: &str, method: &str, host: &str) -> u64 {
    families()
        .requests
        .get_or_create(&ResultLabels {
            code: code.to_owned(),
            method: method.to_owned(),
            host: host.to_owned(),
        })
        .get()
}

/// A tower layer recording client-go's REST client metrics for every request it passes
/// (see the module docs). [`crate::kube_client()`] installs it under the retry layer.
#[derive(Debug, Clone)]
pub struct RestClientMetricsLayer {
    host: String,
}

impl RestClientMetricsLayer {
    /// Records requests to `host` (`host:port` of the API server, client-go's `host` label).
    pub fn new(host: impl Into<String>) -> Self {
        RestClientMetricsLayer { host: host.into() }
    }

    /// The `host` label for a cluster URL: its `host:port` (the port only when the URL has
    /// one), as client-go's `req.URL.Host`.
    pub fn host_of(url: &http::Uri) -> String {
        url.authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default()
    }
}

impl<S> Layer<S> for RestClientMetricsLayer {
    type Service = RestClientMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RestClientMetrics {
            inner,
            host: self.host.clone(),
        }
    }
}

/// The service made by [`RestClientMetricsLayer`].
#[derive(Debug, Clone)]
pub struct RestClientMetrics<S> {
    inner: S,
    host: String,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for RestClientMetrics<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<ResBody>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let method = request.method().as_str().to_owned();
        let host = self.host.clone();
        let started = Instant::now();
        let response = self.inner.call(request);
        Box::pin(async move {
            let result = response.await;
            let f = families();
            f.latency
                .get_or_create(&LatencyLabels {
                    verb: method.clone(),
                    host: host.clone(),
                })
                .observe(started.elapsed().as_secs_f64());
            let code = match &result {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_owned(),
            };
            f.requests
                .get_or_create(&ResultLabels { code, method, host })
                .inc();
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use tower::{ServiceBuilder, ServiceExt};

    use super::*;

    #[tokio::test]
    async fn every_attempt_is_counted_by_code_method_and_host() {
        let host = "rest-metrics-test:6443";
        let svc = ServiceBuilder::new()
            .layer(RestClientMetricsLayer::new(host))
            .service_fn(|req: Request<String>| async move {
                let status = if req.uri().path() == "/missing" {
                    404
                } else {
                    200
                };
                Ok::<_, Infallible>(
                    Response::builder()
                        .status(status)
                        .body(String::new())
                        .unwrap(),
                )
            });
        let get = |path: &str| {
            Request::builder()
                .method("GET")
                .uri(path)
                .body(String::new())
                .unwrap()
        };
        svc.clone().oneshot(get("/api")).await.unwrap();
        svc.clone().oneshot(get("/api")).await.unwrap();
        svc.clone().oneshot(get("/missing")).await.unwrap();
        assert_eq!(rest_client_requests("200", "GET", host), 2);
        assert_eq!(rest_client_requests("404", "GET", host), 1);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry().lock()).unwrap();
        assert!(
            text.contains(&format!(
                r#"rest_client_requests_total{{code="404",method="GET",host="{host}"}} 1"#
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                r#"rest_client_request_duration_seconds_count{{verb="GET",host="{host}"}} 3"#
            )),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_request_without_a_response_counts_as_error() {
        let host = "rest-metrics-error:6443";
        let svc = ServiceBuilder::new()
            .layer(RestClientMetricsLayer::new(host))
            .service_fn(|_req: Request<String>| async { Err::<Response<String>, _>("refused") });
        let request = Request::builder()
            .method("POST")
            .uri("/api/v1/namespaces")
            .body(String::new())
            .unwrap();
        assert!(svc.oneshot(request).await.is_err());
        assert_eq!(rest_client_requests("<error>", "POST", host), 1);
    }

    #[test]
    fn the_host_label_is_the_authority() {
        let url: http::Uri = "https://127.0.0.1:6443/".parse().unwrap();
        assert_eq!(RestClientMetricsLayer::host_of(&url), "127.0.0.1:6443");
    }
}
