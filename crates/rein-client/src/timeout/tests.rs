//! The timeout layer on tokio's paused clock, around an inner service that answers (or not)
//! when the test says so.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use http::{Request, Response};
use http_body_util::{BodyExt, StreamBody};
use tokio::sync::{mpsc, oneshot};
use tower::{Layer, ServiceExt};

use super::*;

type Chunks = StreamBody<BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;
type Responder = oneshot::Sender<Response<Chunks>>;

/// A timeout service over an inner one that hands each request's responder to the test (a
/// responder the test keeps and never uses leaves its request unanswered).
fn service(
    timeouts: RequestTimeouts,
) -> (
    RequestTimeout<
        impl tower::Service<
            Request<()>,
            Response = Response<Chunks>,
            Error = Infallible,
            Future = impl Send + 'static,
        > + Clone,
    >,
    mpsc::UnboundedReceiver<Responder>,
) {
    let (tx, rx) = mpsc::unbounded_channel::<Responder>();
    let inner = tower::service_fn(move |_req: Request<()>| {
        let (respond, response) = oneshot::channel();
        let _ = tx.send(respond);
        async move {
            match response.await {
                Ok(resp) => Ok::<_, Infallible>(resp),
                Err(_) => std::future::pending().await,
            }
        }
    });
    (RequestTimeoutLayer::new(timeouts).layer(inner), rx)
}

/// A body whose chunks the test sends; it ends when the sender drops.
fn body() -> (Chunks, mpsc::UnboundedSender<Bytes>) {
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok(Frame::data(b)), rx))
    });
    (StreamBody::new(Box::pin(stream) as _), tx)
}

/// Answers the next request that reached the inner service with `chunks` as its body.
async fn answer(responders: &mut mpsc::UnboundedReceiver<Responder>, chunks: Chunks) {
    let respond = responders
        .recv()
        .await
        .expect("a request reached the service");
    respond
        .send(Response::new(chunks))
        .map_err(|_| "the request went away")
        .unwrap();
}

fn request(uri: &str) -> Request<()> {
    Request::builder().uri(uri).body(()).unwrap()
}

fn timed_out(err: &BoxError) -> &RequestTimedOut {
    err.downcast_ref::<RequestTimedOut>()
        .unwrap_or_else(|| panic!("not a timeout: {err}"))
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_request_fails_with_a_timeout_at_its_limit_not_before() {
    let (svc, mut responders) = service(RequestTimeouts::default());
    let call = tokio::spawn(svc.oneshot(request("/api/v1/namespaces/a/pods/p")));
    let _held = responders
        .recv()
        .await
        .expect("the request reached the inner service");
    tokio::time::sleep(Duration::from_secs(59)).await;
    assert!(!call.is_finished(), "gave up before its limit");
    let err = call
        .await
        .unwrap()
        .expect_err("an unanswered request times out");
    let err = timed_out(&err);
    assert_eq!(err.after, Duration::from_secs(60));
    assert_eq!(err.path, "/api/v1/namespaces/a/pods/p");
    assert_eq!(err.what, "no response");
}

#[tokio::test(start_paused = true)]
async fn a_body_that_stops_mid_way_fails_once_the_request_limit_passes() {
    let (svc, mut responders) = service(RequestTimeouts::default());
    let call = tokio::spawn(svc.oneshot(request("/api/v1/pods?limit=500")));
    let (chunks, feed) = body();
    tokio::time::sleep(Duration::from_secs(20)).await;
    answer(&mut responders, chunks).await;
    let mut body = call.await.unwrap().expect("answered in time").into_body();
    feed.send(Bytes::from_static(b"{\"items\":[")).unwrap();
    let first = body.frame().await.unwrap().unwrap();
    assert_eq!(first.into_data().unwrap(), "{\"items\":[");
    // The rest never comes: the limit counts from the request's start, 60 s in all.
    let started = tokio::time::Instant::now();
    let err = body
        .frame()
        .await
        .unwrap()
        .expect_err("a stalled body times out");
    assert_eq!(timed_out(&err).what, "the response body did not end");
    assert_eq!(started.elapsed(), Duration::from_secs(40));
    drop(feed);
}

#[tokio::test(start_paused = true)]
async fn a_watch_streams_until_its_timeout_seconds_plus_the_grace() {
    let (svc, mut responders) = service(RequestTimeouts::default());
    let call = tokio::spawn(svc.oneshot(request(
        "/api/v1/pods?watch=true&timeoutSeconds=300&allowWatchBookmarks=true",
    )));
    let (chunks, feed) = body();
    answer(&mut responders, chunks).await;
    let mut body = call.await.unwrap().unwrap().into_body();
    // Long past the request limit, events still flow.
    tokio::time::sleep(Duration::from_secs(200)).await;
    feed.send(Bytes::from_static(b"{}")).unwrap();
    assert!(body.frame().await.unwrap().is_ok());
    let err = body
        .frame()
        .await
        .unwrap()
        .expect_err("ended by the client");
    assert_eq!(timed_out(&err).after, Duration::from_secs(330));
    drop(feed);
}

#[tokio::test(start_paused = true)]
async fn a_watch_must_get_its_response_within_the_request_limit() {
    let (svc, mut responders) = service(RequestTimeouts::default());
    let call = tokio::spawn(svc.oneshot(request("/api/v1/pods?watch=1&timeoutSeconds=300")));
    let _held = responders.recv().await.unwrap();
    let err = call.await.unwrap().expect_err("no response in 60 s");
    assert_eq!(timed_out(&err).after, Duration::from_secs(60));
}

#[tokio::test(start_paused = true)]
async fn without_limits_nothing_times_out() {
    let (svc, mut responders) = service(RequestTimeouts::none());
    let call = tokio::spawn(svc.oneshot(request("/api/v1/pods")));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!call.is_finished());
    let (chunks, feed) = body();
    answer(&mut responders, chunks).await;
    let mut body = call.await.unwrap().unwrap().into_body();
    drop(feed);
    assert!(body.frame().await.is_none(), "the body ends normally");
}

#[tokio::test(start_paused = true)]
async fn a_followed_log_streams_past_the_request_limit() {
    let (svc, mut responders) = service(RequestTimeouts::default());
    let call = tokio::spawn(svc.oneshot(request(
        "/api/v1/namespaces/a/pods/p/log?container=c&follow=true",
    )));
    let (chunks, feed) = body();
    answer(&mut responders, chunks).await;
    let mut body = call.await.unwrap().unwrap().into_body();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    feed.send(Bytes::from_static(b"a log line")).unwrap();
    assert!(
        body.frame().await.unwrap().is_ok(),
        "still streaming after an hour"
    );
    drop(feed);
    assert!(body.frame().await.is_none());
}
