//! Property test of watch decoding at the informer: a tiny HTTP/1.1 server answers the
//! informer's watch with arbitrary byte chunks (truncated JSON, wrong types, huge lines,
//! unknown event types, ERROR events with odd statuses, invalid UTF-8), then closes. The
//! informer must not panic, must report undecodable input as a typed error through its
//! watch-error handler, and must recover: relist or re-watch, and pick up the next, good
//! stream.
//!
//! 64 cases by default; set `PROPTEST_CASES` for a longer run.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::core::{Status, WatchEvent};
use parking_lot::Mutex;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use rein_informer::{
    ApiListerWatcher, BackoffOptions, Error, InformerOptions, ListWatchOptions, QueueKind,
    ReflectorOptions, SharedIndexInformer,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

/// `default` cases unless `PROPTEST_CASES` says otherwise.
fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/// What the server does for the current case.
#[derive(Debug, Default)]
struct Script {
    /// The body of the next watch, taken by the first watch request of the case.
    garbage: Option<Vec<Vec<u8>>>,
    /// Requests seen in this case: (is a watch, query).
    requests: Vec<(bool, String)>,
    /// Ends the good streams of this case.
    done: CancellationToken,
}

const LIST: &str =
    r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}"#;

/// The stream every watch after the garbage gets: the object that shows recovery, and the
/// bookmark that ends a streaming list's initial events.
fn good_stream() -> String {
    let added = json!({"type": "ADDED", "object": {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "recovered", "namespace": "default", "resourceVersion": "6"},
    }});
    let bookmark = json!({"type": "BOOKMARK", "object": {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"resourceVersion": "6", "annotations": {"k8s.io/initial-events-end": "true"}},
    }});
    format!("{added}\n{bookmark}\n")
}

async fn serve(listener: TcpListener, script: Arc<Mutex<Script>>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(answer(socket, script.clone()));
    }
}

/// One request per connection (`Connection: close`), so no body framing to get wrong.
async fn answer(socket: TcpStream, script: Arc<Mutex<Script>>) {
    let mut reader = BufReader::new(socket);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).await.is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header).await {
            Ok(0) | Err(_) => return,
            Ok(_) if header == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let mut socket = reader.into_inner();
    let target = request_line.split(' ').nth(1).unwrap_or("").to_string();
    let query = target
        .split_once('?')
        .map(|(_, q)| q)
        .unwrap_or("")
        .to_string();
    let watch = query
        .split('&')
        .any(|p| p == "watch=true" || p == "watch=1");
    let (garbage, done) = {
        let mut s = script.lock();
        s.requests.push((watch, query));
        let garbage = if watch { s.garbage.take() } else { None };
        (garbage, s.done.clone())
    };
    if !watch {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            LIST.len()
        );
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.write_all(LIST.as_bytes()).await;
        let _ = socket.shutdown().await;
        return;
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    match garbage {
        Some(chunks) => {
            for chunk in chunks {
                if socket.write_all(&chunk).await.is_err() || socket.flush().await.is_err() {
                    return;
                }
                tokio::task::yield_now().await;
            }
            let _ = socket.shutdown().await;
        }
        None => {
            let _ = socket.write_all(good_stream().as_bytes()).await;
            let _ = socket.flush().await;
            done.cancelled().await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Generated watch bodies
// ---------------------------------------------------------------------------------------------

fn event_line() -> impl Strategy<Value = String> {
    let name = "[a-z]{1,8}";
    let typ = prop::sample::select(vec!["ADDED", "MODIFIED", "DELETED"]);
    (typ, name, 1u32..100).prop_map(|(t, n, rv)| {
        json!({"type": t, "object": {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": n, "namespace": "default", "resourceVersion": rv.to_string()},
            "data": {"k": "v"},
        }})
        .to_string()
    })
}

fn odd_status_line() -> impl Strategy<Value = String> {
    let code = prop_oneof![
        prop::sample::select(vec![0i64, 200, 400, 403, 404, 410, 429, 500, 503, 999, -1]),
        any::<i64>(),
    ];
    let reason = prop_oneof![
        prop::sample::select(vec![
            "",
            "Expired",
            "Gone",
            "TooManyRequests",
            "InternalError"
        ])
        .prop_map(str::to_string),
        any::<String>(),
    ];
    let message = prop_oneof![
        Just("too old resource version: 1 (5)".to_string()),
        Just(String::new()),
        any::<String>(),
    ];
    let details = prop_oneof![
        Just(json!(null)),
        Just(json!({"retryAfterSeconds": 1})),
        Just(json!({"retryAfterSeconds": -1})),
        Just(json!({"retryAfterSeconds": "soon"})),
        Just(json!([])),
    ];
    (code, reason, message, details, any::<bool>()).prop_map(
        |(code, reason, message, details, whole)| {
            let object = if whole {
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                   "code": code, "reason": reason, "message": message, "details": details})
            } else {
                json!({"code": code})
            };
            json!({"type": "ERROR", "object": object}).to_string()
        },
    )
}

fn wrong_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(r#"{"type":"ADDED","object":{"metadata":{"name":5}}}"#.to_string()),
        Just(r#"{"type":"ADDED","object":{"data":[]}}"#.to_string()),
        Just(r#"{"type":7}"#.to_string()),
        Just(r#"{"object":{}}"#.to_string()),
        Just(r#"{"type":"ADDED"}"#.to_string()),
        Just(r#"{"type":"EXPLODED","object":{"metadata":{"name":"x"}}}"#.to_string()),
        Just(r#"{"type":"BOOKMARK","object":{"metadata":{}}}"#.to_string()),
        Just(r#"{"type":"ADDED","object":{}}"#.to_string()),
        Just("[]".to_string()),
        Just("null".to_string()),
        Just("42".to_string()),
        Just(r#"{"kind":"Status","code":500,"message":"not an event"}"#.to_string()),
        "[ -~]{0,40}",
    ]
}

fn huge_line() -> impl Strategy<Value = String> {
    (1usize..300_000, any::<bool>()).prop_map(|(n, valid)| {
        let name = "a".repeat(n);
        if valid {
            json!({"type": "ADDED", "object": {"metadata": {"name": name, "namespace": "default"}}})
                .to_string()
        } else {
            format!("{{\"type\":\"ADDED\",\"object\":{{\"metadata\":{{\"name\":\"{name}")
        }
    })
}

/// One piece of the body: a line (maybe without its newline, maybe cut short) or raw bytes.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        3 => event_line(),
        2 => odd_status_line(),
        4 => wrong_line(),
        1 => huge_line(),
    ];
    prop_oneof![
        6 => (line, prop::bool::weighted(0.25), any::<prop::sample::Index>()).prop_map(|(l, cut, at)| {
            let mut bytes = l.into_bytes();
            if cut {
                bytes.truncate(at.index(bytes.len() + 1));
            }
            bytes.push(b'\n');
            bytes
        }),
        1 => any::<Vec<u8>>(),
        1 => Just(b"\r\n\n  \n".to_vec()),
        1 => Just(vec![0xff, 0xfe, b'\n']),
    ]
}

/// The body, cut into chunks at arbitrary points.
fn body() -> impl Strategy<Value = Vec<Vec<u8>>> {
    (
        prop::collection::vec(piece(), 0..6),
        prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    )
        .prop_map(|(pieces, cuts)| {
            let all: Vec<u8> = pieces.concat();
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(all.len() + 1)).collect();
            at.push(0);
            at.push(all.len());
            at.sort_unstable();
            at.dedup();
            at.windows(2).map(|w| all[w[0]..w[1]].to_vec()).collect()
        })
}

/// Whether kube-client's line decoding (`LinesCodec` + serde_json) meets input that is neither
/// an event, nor a `Status`, nor an incomplete line before any ERROR event: then the informer
/// must report a decode error.
fn must_report_a_decode_error(body: &[u8]) -> bool {
    let mut lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    if body.ends_with(b"\n") {
        lines.pop();
    }
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok(text) = std::str::from_utf8(line) else {
            return true;
        };
        match serde_json::from_str::<WatchEvent<ConfigMap>>(text) {
            Ok(WatchEvent::Error(_)) => return false,
            Ok(_) => {}
            Err(e) if e.is_eof() => {}
            Err(_) => return serde_json::from_str::<Status>(text).is_err(),
        }
    }
    false
}

// ---------------------------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------------------------

fn informer_options(streaming: bool) -> InformerOptions {
    InformerOptions {
        resync_period: Duration::ZERO,
        queue: QueueKind::RealFifo,
        reflector: ReflectorOptions {
            use_watch_list: streaming,
            backoff: BackoffOptions {
                initial: Duration::from_millis(2),
                max: Duration::from_millis(20),
                ..Default::default()
            },
            ..Default::default()
        },
    }
}

/// Arbitrary watch bodies: no panic, a typed decode error reported where the input cannot be
/// decoded, and recovery onto the next stream.
#[test]
fn arbitrary_watch_bodies_are_typed_errors_and_the_informer_recovers() {
    let rt = Runtime::new().expect("runtime");
    let script = Arc::new(Mutex::new(Script::default()));
    let listener = rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("binds");
    let addr = listener.local_addr().expect("address");
    rt.spawn(serve(listener, script.clone()));
    let mut kube_config = kube_client::Config::new(format!("http://{addr}").parse().expect("url"));
    kube_config.default_retry = false;

    let mut runner = TestRunner::new(config(64));
    runner
        .run(&(body(), any::<bool>()), |(chunks, streaming)| {
            // A failed streaming list falls back to list and watch without calling the
            // handler (client-go logs it and falls back too); a plain watch reports it.
            let expect_decode_error = !streaming && must_report_a_decode_error(&chunks.concat());
            {
                let mut s = script.lock();
                *s = Script {
                    garbage: Some(chunks),
                    ..Script::default()
                };
            }
            rt.block_on(async {
                let client = kube_client::Client::try_from(kube_config.clone())
                    .map_err(|e| TestCaseError::fail(format!("client: {e}")))?;
                run_case(client, streaming, expect_decode_error, &script).await
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

async fn run_case(
    client: kube_client::Client,
    streaming: bool,
    expect_decode_error: bool,
    script: &Arc<Mutex<Script>>,
) -> Result<(), TestCaseError> {
    let lw = ApiListerWatcher::<ConfigMap>::new(client, ListWatchOptions::default());
    let informer = Arc::new(SharedIndexInformer::new(lw, informer_options(streaming)));
    let errors: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    {
        let errors = errors.clone();
        informer
            .set_watch_error_handler(move |e: &Error| {
                let decode = matches!(
                    e,
                    Error::Api {
                        source: kube_client::Error::SerdeError(_)
                            | kube_client::Error::ReadEvents(_),
                        ..
                    }
                );
                errors.lock().push((format!("{e:?}"), decode));
            })
            .map_err(|e| TestCaseError::fail(format!("handler: {e}")))?;
    }
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let informer = informer.clone();
        let stop = stop.clone();
        async move { informer.run(stop).await }
    });
    let indexer = informer.indexer();
    let recovered = tokio::time::timeout(Duration::from_secs(20), async {
        while !indexer.contains_key("default/recovered") {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .is_ok();
    stop.cancel();
    let done = script.lock().done.clone();
    done.cancel();
    let joined = tokio::time::timeout(Duration::from_secs(20), task).await;
    let requests = script.lock().requests.clone();
    let errors = errors.lock().clone();
    // A decode error that ends an open stream ends the cycle without an error (client-go
    // logs it): the reflector's status records it.
    let last_error = informer.status().reflector.and_then(|r| r.last_error);
    match joined {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            return Err(TestCaseError::fail(format!(
                "the informer task failed: {e}"
            )));
        }
        Err(_) => return Err(TestCaseError::fail("the informer did not stop")),
    }
    prop_assert!(
        recovered,
        "no recovery onto the good stream; requests {:?}, errors {:?}",
        requests,
        errors
    );
    if expect_decode_error {
        let recorded = last_error
            .as_deref()
            .is_some_and(|e| e.contains("reading a watch stream"));
        prop_assert!(
            errors.iter().any(|(_, decode)| *decode) || recorded,
            "undecodable input was not reported as a decode error; errors {:?}, status {:?}",
            errors,
            last_error
        );
    }
    Ok(())
}
