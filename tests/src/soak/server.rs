//! Where the soak's API server runs: in the soak's process (the short soak of the test suite),
//! or in a child process (the long soak), so that the soak's memory figures are the client
//! side's alone: rein-testenv's store and watch history grow with the run and would otherwise
//! be counted as rein's.
//!
//! The child is the soak binary itself started with `--serve`: it prints its URL, then reads
//! one command per line on its standard input (the chaos driver's faults, requests for its
//! in-flight list and its memory) and answers each with lines ending in `end`. Closing its
//! standard input stops it.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_testenv::{Fault, Faults, TestEnv};

use super::controllers::lock;
use super::error::SoakError;

/// Where the API server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// On a runtime of the soak's own process.
    InProcess,
    /// In a child process: this executable, run with `--serve`.
    Child(PathBuf),
}

/// The running API server, either way.
#[derive(Debug)]
pub(crate) enum Server {
    InProcess(TestEnv),
    Child(Arc<ChildServer>),
}

#[derive(Debug)]
pub(crate) struct ChildServer {
    child: Mutex<Child>,
    config: kube_client::Config,
    /// `None` once closed (which stops the child).
    io: Mutex<Option<(ChildStdin, BufReader<ChildStdout>)>>,
}

impl Server {
    /// Starts the server; `rt` runs an in-process one.
    pub(crate) fn start(
        placement: &Placement,
        rt: &tokio::runtime::Runtime,
    ) -> Result<Server, SoakError> {
        match placement {
            Placement::InProcess => Ok(Server::InProcess(
                rt.block_on(TestEnv::start()).map_err(SoakError::TestEnv)?,
            )),
            Placement::Child(exe) => {
                let mut child = Command::new(exe)
                    .arg("--serve")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| SoakError::ChildServer(format!("starting {exe:?}: {e}")))?;
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err(SoakError::ChildServer("no pipes to the child".into()));
                };
                let mut stdout = BufReader::new(stdout);
                let mut line = String::new();
                stdout
                    .read_line(&mut line)
                    .map_err(|e| SoakError::ChildServer(format!("reading its URL: {e}")))?;
                let url = line
                    .trim()
                    .strip_prefix("url ")
                    .ok_or_else(|| {
                        SoakError::ChildServer(format!("expected its URL, got {line:?}"))
                    })?
                    .parse::<http::Uri>()
                    .map_err(|e| SoakError::ChildServer(format!("its URL: {e}")))?;
                let mut config = kube_client::Config::new(url);
                config.default_namespace = "default".into();
                Ok(Server::Child(Arc::new(ChildServer {
                    child: Mutex::new(child),
                    config,
                    io: Mutex::new(Some((stdin, stdout))),
                })))
            }
        }
    }

    /// A client config for the server.
    pub(crate) fn config(&self) -> kube_client::Config {
        match self {
            Server::InProcess(env) => env.config(),
            Server::Child(c) => c.config.clone(),
        }
    }

    /// The fault-injection handle.
    pub(crate) fn faults(&self) -> FaultSink {
        match self {
            Server::InProcess(env) => FaultSink::InProcess(env.faults()),
            Server::Child(c) => FaultSink::Child(c.clone()),
        }
    }

    /// The requests the server holds now, one line each.
    pub(crate) fn requests_in_flight(&self) -> Vec<String> {
        match self {
            Server::InProcess(env) => env
                .requests_in_flight()
                .iter()
                .map(ToString::to_string)
                .collect(),
            Server::Child(c) => c.ask("in-flight"),
        }
    }

    /// Forgets the server's request log (it is for tests asserting on traffic).
    pub(crate) fn clear_requests(&self) {
        match self {
            Server::InProcess(env) => env.clear_requests(),
            Server::Child(c) => {
                c.ask("clear-requests");
            }
        }
    }

    /// The in-process server itself (its request log diagnoses a diverged cache); `None` for
    /// a child.
    pub(crate) fn env(&self) -> Option<&TestEnv> {
        match self {
            Server::InProcess(env) => Some(env),
            Server::Child(_) => None,
        }
    }

    /// The child's resident memory, KiB (`None` in process: it is part of the soak's).
    pub(crate) fn child_rss_kib(&self) -> Option<u64> {
        match self {
            Server::InProcess(_) => None,
            Server::Child(c) => {
                let pid = lock(&c.child).id();
                super::checks::rss_kib_of(&format!("/proc/{pid}/status"))
            }
        }
    }

    /// Stops the server.
    pub(crate) fn shutdown(self, rt: &tokio::runtime::Runtime) {
        match self {
            Server::InProcess(env) => rt.block_on(env.shutdown()),
            Server::Child(c) => {
                // Closing its standard input stops it.
                lock(&c.io).take();
                let mut child = lock(&c.child);
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while std::time::Instant::now() < deadline {
                    if let Ok(Some(_)) = child.try_wait() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl ChildServer {
    /// Sends one command and returns the lines of its answer (empty if the child is gone).
    fn ask(&self, command: &str) -> Vec<String> {
        let mut io = lock(&self.io);
        let Some((stdin, stdout)) = &mut *io else {
            return Vec::new();
        };
        if writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .is_err()
        {
            return Vec::new();
        }
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            match stdout.read_line(&mut line) {
                Ok(0) | Err(_) => return lines,
                Ok(_) => {
                    let line = line.trim_end().to_string();
                    if line == "end" {
                        return lines;
                    }
                    lines.push(line);
                }
            }
        }
    }
}

/// Injects faults into the server, wherever it runs.
#[derive(Debug)]
pub(crate) enum FaultSink {
    InProcess(Faults),
    Child(Arc<ChildServer>),
}

impl FaultSink {
    /// Applies a fault: `local` on an in-process server, `command` sent to a child.
    fn apply(&self, local: impl FnOnce(&Faults), command: impl FnOnce() -> String) {
        match self {
            FaultSink::InProcess(f) => local(f),
            FaultSink::Child(c) => {
                c.ask(&command());
            }
        }
    }

    pub(crate) fn close_watches(&self) {
        self.apply(Faults::close_watches, || "close-watches".into());
    }

    pub(crate) fn compact(&self) {
        self.apply(Faults::compact, || "compact".into());
    }

    pub(crate) fn server_errors(&self, n: usize) {
        self.apply(
            |f| f.inject(Fault::server_error(n)),
            || format!("errors {n}"),
        );
    }

    pub(crate) fn throttle(&self, n: usize, retry_after_secs: u64) {
        self.apply(
            |f| f.inject(Fault::too_many_requests(n, retry_after_secs)),
            || format!("throttle {n} {retry_after_secs}"),
        );
    }

    /// Holds the next `n` requests whose path contains `path` forever.
    pub(crate) fn hang(&self, n: usize, path: &str) {
        self.apply(
            |f| f.inject(Fault::hang(n).matching(path)),
            || format!("hang {n} {path}"),
        );
    }

    pub(crate) fn set_latency(&self, latency: Duration) {
        self.apply(
            |f| f.set_latency(latency),
            || format!("latency {}", latency.as_millis()),
        );
    }

    pub(crate) fn pause(&self) {
        self.apply(Faults::pause, || "pause".into());
    }

    pub(crate) fn resume(&self) {
        self.apply(Faults::resume, || "resume".into());
    }

    /// Error answers injected and not yet used up.
    pub(crate) fn pending(&self) -> usize {
        match self {
            FaultSink::InProcess(f) => f.pending(),
            FaultSink::Child(c) => c
                .ask("pending")
                .first()
                .and_then(|l| l.parse().ok())
                .unwrap_or(0),
        }
    }

    pub(crate) fn clear(&self) {
        self.apply(Faults::clear, || "clear".into());
    }
}

/// The child's side: serves rein-testenv and obeys commands on standard input until it closes.
/// What `soak --serve` runs.
pub fn serve_child() -> Result<(), SoakError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("soak-apiserver")
        .enable_all()
        .build()
        .map_err(SoakError::Runtime)?;
    let env = rt.block_on(TestEnv::start()).map_err(SoakError::TestEnv)?;
    let out = std::io::stdout();
    {
        let mut out = out.lock();
        let _ = writeln!(out, "url {}", env.base_url());
        let _ = out.flush();
    }
    let faults = env.faults();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| {
            words
                .get(i)
                .and_then(|w| w.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let mut answer = Vec::new();
        match words.first().copied() {
            Some("close-watches") => faults.close_watches(),
            Some("compact") => faults.compact(),
            Some("errors") => faults.inject(Fault::server_error(num(1) as usize)),
            Some("throttle") => faults.inject(Fault::too_many_requests(num(1) as usize, num(2))),
            Some("hang") => faults.inject(
                Fault::hang(num(1) as usize).matching(words.get(2).copied().unwrap_or("/")),
            ),
            Some("latency") => faults.set_latency(Duration::from_millis(num(1))),
            Some("pause") => faults.pause(),
            Some("resume") => faults.resume(),
            Some("clear") => faults.clear(),
            Some("pending") => answer.push(faults.pending().to_string()),
            Some("clear-requests") => env.clear_requests(),
            Some("in-flight") => {
                answer = env
                    .requests_in_flight()
                    .iter()
                    .map(ToString::to_string)
                    .collect();
            }
            _ => answer.push(format!("unknown command {line:?}")),
        }
        let mut out = out.lock();
        for a in answer {
            let _ = writeln!(out, "{a}");
        }
        let _ = writeln!(out, "end");
        let _ = out.flush();
    }
    rt.block_on(env.shutdown());
    Ok(())
}
