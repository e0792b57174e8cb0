//! The retry layer on tokio's paused clock, around an inner service that answers from a script.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use super::*;

/// An answer: a status and an optional `Retry-After`.
type Answer = (u16, Option<&'static str>);

/// What the inner service answers, in order, and when each request reached it.
#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    seen: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Script {
    fn new(answers: &[Answer]) -> Script {
        Script {
            answers: Arc::new(Mutex::new(answers.iter().copied().collect())),
            ..Script::default()
        }
    }

    fn service(
        &self,
    ) -> impl Service<
        Request<Body>,
        Response = Response<()>,
        Error = BoxError,
        Future = impl Send + 'static,
    > + Clone
    + Send
    + 'static {
        let script = self.clone();
        tower::service_fn(move |req: Request<Body>| {
            let script = script.clone();
            async move {
                script
                    .seen
                    .lock()
                    .unwrap()
                    .push((Instant::now(), req.uri().to_string()));
                let (code, retry_after) = script
                    .answers
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or((200, None));
                let mut resp = Response::builder().status(code);
                if let Some(secs) = retry_after {
                    resp = resp.header("Retry-After", secs);
                }
                Ok::<_, BoxError>(resp.body(()).unwrap())
            }
        })
    }

    fn calls(&self) -> Vec<Instant> {
        self.seen.lock().unwrap().iter().map(|s| s.0).collect()
    }
}

fn get() -> Request<Body> {
    Request::builder()
        .uri("/api/v1/pods")
        .body(Body::empty())
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_throttled_request_is_retried_after_exactly_the_servers_retry_after() {
    let script = Script::new(&[(429, Some("1")), (503, Some("2")), (200, None)]);
    let svc = RetryAfterLayer::default().layer(script.service());
    let start = Instant::now();
    let resp = svc.oneshot(get()).await.unwrap();
    assert_eq!(resp.status(), 200);
    let calls: Vec<Duration> = script.calls().iter().map(|t| *t - start).collect();
    assert_eq!(
        calls,
        [
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(3)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn retries_stop_after_the_limit_and_the_last_answer_is_returned() {
    let script = Script::new(&[(429, Some("0")); 20]);
    let svc = RetryAfterLayer::default().layer(script.service());
    let resp = svc.oneshot(get()).await.unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(script.calls().len(), 1 + DEFAULT_MAX_RETRIES as usize);
}

#[tokio::test(start_paused = true)]
async fn answers_without_retry_after_and_client_errors_are_not_retried() {
    for answer in [(500, None), (429, None), (409, Some("1")), (404, None)] {
        let script = Script::new(&[answer, (200, None)]);
        let svc = RetryAfterLayer::default().layer(script.service());
        let resp = svc.oneshot(get()).await.unwrap();
        assert_eq!(resp.status().as_u16(), answer.0, "{answer:?}");
        assert_eq!(script.calls().len(), 1, "{answer:?} was retried");
    }
}
