//! `case`: runs one case end to end — a serve process and, one after another, a client process
//! per side (all of this binary) — forwarding the BENCH lines to stdout.

use std::io::{BufRead, BufReader, Lines, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Instant;

use anyhow::Context;

use crate::cli::{CaseArgs, Scenario, Side, Sizes};

/// A running `serve` process.
#[derive(Debug)]
struct Server {
    child: Child,
    out: Lines<BufReader<ChildStdout>>,
    kubeconfig: PathBuf,
}

impl Server {
    fn start(
        exe: &Path,
        pods: usize,
        namespaces: usize,
        index: usize,
        sizes: &Sizes,
    ) -> anyhow::Result<Server> {
        let kubeconfig = std::env::temp_dir().join(format!(
            "rein-bench-{}-{index}.kubeconfig",
            std::process::id()
        ));
        let started = Instant::now();
        let mut serve = Command::new(exe);
        serve
            .arg("serve")
            .args(["--pods", &pods.to_string()])
            .args(["--namespaces", &namespaces.to_string()])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if sizes.managed_fields {
            serve.arg("--managed-fields");
        }
        let mut child = serve.spawn().context("starting the server process")?;
        let mut out = lines(child.stdout.take())?;
        forward_until(&mut out, "READY").context("waiting for the server to load")?;
        eprintln!(
            "  server ready with {pods} Pods in {namespaces} namespace(s) after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(Server {
            child,
            out,
            kubeconfig,
        })
    }

    /// Asks the server for `n` updates; the answer is read by [`Server::await_updates`].
    fn request_updates(&mut self, n: usize) -> anyhow::Result<()> {
        let stdin = self.child.stdin.as_mut().context("server stdin")?;
        writeln!(stdin, "update {n}")?;
        stdin.flush()?;
        Ok(())
    }

    /// Waits for `UPDATED <n> <seconds>`; returns the writer's rate in updates per second.
    fn await_updates(&mut self) -> anyhow::Result<f64> {
        let line = forward_until(&mut self.out, "UPDATED")?;
        eprintln!("  server: {line}");
        let mut words = line.split_whitespace().skip(1);
        let n: f64 = words.next().context("update count")?.parse()?;
        let secs: f64 = words.next().context("update seconds")?.parse()?;
        Ok(n / secs.max(1e-9))
    }

    /// Closes stdin (which stops the server) and waits for it.
    fn stop(mut self) -> anyhow::Result<()> {
        drop(self.child.stdin.take());
        let status = self
            .child
            .wait()
            .context("waiting for the server process")?;
        let _ = std::fs::remove_file(&self.kubeconfig);
        anyhow::ensure!(status.success(), "the server process failed: {status}");
        Ok(())
    }
}

pub(crate) fn run(args: &CaseArgs) -> anyhow::Result<()> {
    let sizes = args.sizes.effective();
    let exe = std::env::current_exe().context("locating this binary")?;
    let pods = match args.scenario {
        Scenario::Sync | Scenario::Metadata | Scenario::Namespaces => sizes.pods,
        Scenario::Watch => sizes.watch_pods,
        Scenario::Controller => 0,
    };
    let namespaces = if args.scenario == Scenario::Namespaces {
        sizes.namespaces
    } else {
        1
    };
    if args.scenario == Scenario::Controller {
        for (i, side) in args.side.iter().enumerate() {
            let mut server = Server::start(&exe, pods, namespaces, i, &sizes)?;
            let result = run_side(
                &exe,
                args.scenario,
                *side,
                &sizes,
                &mut server,
                Output::Keep,
            );
            let stopped = server.stop();
            result?;
            stopped?;
        }
        return Ok(());
    }
    let mut server = Server::start(&exe, pods, namespaces, 0, &sizes)?;
    let mut result = Ok(());
    // The first client to sync after the preload ran about twice as slow as later ones, with
    // twice the CPU time, whichever side it was (the kernel settling memory the server's
    // preload left behind is charged to it). An unmeasured warm-up sync takes that hit.
    if args.scenario != Scenario::Watch
        && let Some(first) = args.side.first()
    {
        eprintln!("  warm-up (not measured):");
        result = run_side(
            &exe,
            args.scenario,
            *first,
            &sizes,
            &mut server,
            Output::Discard,
        );
    }
    for side in &args.side {
        if result.is_err() {
            break;
        }
        result = run_side(
            &exe,
            args.scenario,
            *side,
            &sizes,
            &mut server,
            Output::Keep,
        );
    }
    let stopped = server.stop();
    result?;
    stopped
}

/// Whether a client's BENCH lines are passed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    Keep,
    Discard,
}

/// Runs one side's client against `server`.
fn run_side(
    exe: &Path,
    scenario: Scenario,
    side: Side,
    sizes: &Sizes,
    server: &mut Server,
    output: Output,
) -> anyhow::Result<()> {
    eprintln!("  {} …", side.name());
    let started = Instant::now();
    let mut client = Command::new(exe);
    client
        .arg("client")
        .arg(scenario_arg(scenario))
        .args(["--side", side.name()])
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
        .args(["--pods", &sizes.pods.to_string()])
        .args(["--watch-pods", &sizes.watch_pods.to_string()])
        .args(["--updates", &sizes.updates.to_string()])
        .args(["--objects", &sizes.objects.to_string()])
        .args(["--concurrency", &sizes.concurrency.to_string()])
        .args(["--paced", &sizes.paced.to_string()])
        .args(["--namespaces", &sizes.namespaces.to_string()])
        .args([
            "--watched-namespaces",
            &sizes.watched_namespaces.to_string(),
        ])
        .stdout(Stdio::piped());
    if !sizes.managed_fields {
        client.arg("--no-managed-fields");
    }
    if sizes.strip_managed_fields {
        client.arg("--strip-managed-fields");
    }
    if sizes.backlog {
        client.arg("--backlog");
    }
    let mut client = client.spawn().context("starting the client process")?;
    let mut client_out = lines(client.stdout.take())?;
    let mut writer_rate = None;
    if scenario == Scenario::Watch {
        forward_until(&mut client_out, "SYNCED").context("waiting for the client to sync")?;
        if sizes.backlog {
            signal(&client, "STOP")?;
            server.request_updates(sizes.updates)?;
            writer_rate = Some(server.await_updates()?);
            signal(&client, "CONT")?;
        } else {
            server.request_updates(sizes.updates)?;
        }
    }
    for line in client_out {
        let line = line?;
        if output == Output::Keep {
            println!("{line}");
        }
    }
    let status = client.wait().context("waiting for the client process")?;
    anyhow::ensure!(
        status.success(),
        "the {} client process failed: {status}",
        side.name()
    );
    if scenario == Scenario::Watch && !sizes.backlog {
        writer_rate = Some(server.await_updates()?);
    }
    if let Some(rate) = writer_rate.filter(|_| output == Output::Keep) {
        println!(
            "BENCH|side-by-side|{}/writer rate/{}|{rate:.3}|updates/s|the server process's writer, 64 in flight, while this side watched",
            scenario.name(sizes),
            side.name()
        );
    }
    eprintln!(
        "  {} done in {:.1} s",
        side.name(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Sends `SIG<name>` to the client with kill(1) (no `unsafe` here) and, for STOP, waits until
/// the kernel reports the process stopped, so no update can reach it before the backlog is
/// written.
fn signal(child: &Child, name: &str) -> anyhow::Result<()> {
    let pid = child.id().to_string();
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid])
        .status()
        .context("running kill")?;
    anyhow::ensure!(status.success(), "kill -{name} {pid} failed: {status}");
    if name == "STOP" {
        let stat = format!("/proc/{pid}/stat");
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&stat).context("reading the client's state")?;
            // The state follows the parenthesised command name.
            let state = text.rsplit(") ").next().and_then(|r| r.chars().next());
            if state == Some('T') {
                return Ok(());
            }
            anyhow::ensure!(Instant::now() < deadline, "the client did not stop");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    Ok(())
}

fn lines(out: Option<ChildStdout>) -> anyhow::Result<Lines<BufReader<ChildStdout>>> {
    Ok(BufReader::new(out.context("child stdout")?).lines())
}

/// Forwards lines until one starts with `prefix`; returns that line.
fn forward_until(
    lines: &mut Lines<BufReader<ChildStdout>>,
    prefix: &str,
) -> anyhow::Result<String> {
    for line in lines.by_ref() {
        let line = line?;
        if line.starts_with(prefix) {
            return Ok(line);
        }
        println!("{line}");
    }
    anyhow::bail!("the process ended before printing {prefix}")
}

fn scenario_arg(scenario: Scenario) -> &'static str {
    match scenario {
        Scenario::Sync => "sync",
        Scenario::Watch => "watch",
        Scenario::Controller => "controller",
        Scenario::Metadata => "metadata",
        Scenario::Namespaces => "namespaces",
    }
}
