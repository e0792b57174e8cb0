//! A manual trigger — an HTTP endpoint (GET /add?name=…) runs as a Runnable in the manager and enqueues a request for a synthetic object into a controller through a channel source and an event handler (Go original: a custom manager.RunnableFunc serving net/http whose handler sends event.GenericEvent into a source.Channel watched with handler.EnqueueRequestForObject).
// smoke-args: --quick
// smoke-expect: GET /add?name=demo-1 -> enqueued default/demo-1
// smoke-expect: reconciling default/demo-1
// smoke-expect: reconciling default/demo-2
// smoke-expect: http_trigger finished

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use clap::Parser;
use http_body_util::Full;
use hyper::{Request as HttpRequest, Response};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rein::controller::event::GenericEvent;
use rein::controller::handler::EnqueueRequestForObject;
use rein::controller::source::Channel;
use rein::controller::{Action, Context, Controller, ControllerOptions, Reconciler, Request};
use rein::manager::{Manager, Options, RunnableFn, signals};
use rein_testenv::TestEnv;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
struct Args {
    /// Where the trigger endpoint listens.
    #[arg(long, default_value = "127.0.0.1:8082")]
    addr: SocketAddr,
    /// Call the endpoint twice, wait for both reconciles, then exit.
    #[arg(long)]
    quick: bool,
}

/// Prints each request and reports it on `done`.
struct PrintReconciler {
    done: mpsc::UnboundedSender<Request>,
}

#[async_trait]
impl Reconciler for PrintReconciler {
    type Error = std::convert::Infallible;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Infallible> {
        println!("reconciling {req}");
        let _ = self.done.send(req);
        Ok(Action::done())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let quick = args.quick || rein_examples::quick_mode();

    let env = TestEnv::start().await?;
    let mgr = Manager::builder(env.config())
        .options(Options::default())
        .build()
        .await?;

    // The controller watches a channel of generic events about synthetic ConfigMaps.
    let (events, rx) = mpsc::channel::<GenericEvent<ConfigMap>>(16);
    let (done, mut reconciled) = mpsc::unbounded_channel();
    let controller = Controller::new(
        "http-trigger",
        PrintReconciler { done },
        ControllerOptions::default(),
    )?;
    controller.watch(Channel::new(rx), EnqueueRequestForObject, Vec::new());
    mgr.add(Arc::new(controller))?;

    // The HTTP trigger is a runnable every replica runs (no leader election).
    let listener = TcpListener::bind(if quick {
        "127.0.0.1:0".parse()?
    } else {
        args.addr
    })
    .await?;
    let addr = listener.local_addr()?;
    let listener = Arc::new(tokio::sync::Mutex::new(Some(listener)));
    mgr.add(Arc::new(
        RunnableFn::new(move |stop: CancellationToken| {
            let (listener, events) = (listener.clone(), events.clone());
            async move {
                let listener = listener
                    .lock()
                    .await
                    .take()
                    .ok_or("trigger already running")?;
                serve(listener, events, stop).await;
                Ok(())
            }
        })
        .without_leader_election(),
    ))?;
    println!("trigger listening on http://{addr}/add?name=<name>");

    let stop = if quick {
        CancellationToken::new()
    } else {
        signals::shutdown_signal()
    };
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    if quick {
        mgr.elected().await;
        for name in ["demo-1", "demo-2"] {
            let answer = get(addr, &format!("/add?name={name}")).await?;
            println!("GET /add?name={name} -> {answer}");
            let req = tokio::time::timeout(Duration::from_secs(30), reconciled.recv()).await?;
            anyhow::ensure!(req.is_some(), "controller stopped");
        }
        stop.cancel();
    }
    running.await??;
    println!("http_trigger finished");
    Ok(())
}

/// Serves `GET /add?name=<name>` until `stop` fires.
async fn serve(
    listener: TcpListener,
    events: mpsc::Sender<GenericEvent<ConfigMap>>,
    stop: CancellationToken,
) {
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    tracing::warn!(error = %err, "accepting a connection failed");
                    continue;
                }
            },
        };
        let events = events.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| add(req, events.clone()));
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            if let Err(err) = conn.await {
                tracing::debug!(error = %err, "trigger connection ended");
            }
        });
    }
}

/// The handler: a generic event for a synthetic ConfigMap `default/<name>`.
async fn add(
    req: HttpRequest<hyper::body::Incoming>,
    events: mpsc::Sender<GenericEvent<ConfigMap>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let name = req
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("name=")))
        .unwrap_or("manual")
        .to_owned();
    if req.uri().path() != "/add" {
        return Ok(text(404, "not found".into()));
    }
    let object = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    match events.send(GenericEvent::new(object)).await {
        Ok(()) => Ok(text(200, format!("enqueued default/{name}"))),
        Err(_) => Ok(text(503, "controller stopped".into())),
    }
}

fn text(status: u16, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    response
}

/// A minimal HTTP/1.1 GET (what `curl` would do), returning the body.
async fn get(addr: SocketAddr, path: &str) -> anyhow::Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or(response))
}
