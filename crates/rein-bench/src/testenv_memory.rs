//! `testenv-memory`: rein-testenv's own footprint. Loads realistic Pods with managedFields (as a
//! cluster writes them: created by kube-controller-manager, status by the kubelet) into an
//! in-process rein-testenv, then lists them (paged, as informers do, and in one unpaged
//! request) and replays the watch history; prints peak RSS and the times.

use std::time::Instant;

use anyhow::Context;
use futures::AsyncReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{Api, ListParams};
use rein_testenv::TestEnv;

use crate::cli::TestenvMemoryArgs;
use crate::pods::NAMESPACE;
use crate::procstat::{peak_rss_mib, rss_mib};
use crate::serve::preload;

/// Items per page of the paged list (client-go's and kube-runtime's default page size).
const PAGE: u32 = 500;

pub(crate) async fn run(args: TestenvMemoryArgs) -> anyhow::Result<()> {
    let pods = args.pods;
    let baseline = rss_mib();
    let env = TestEnv::start().await.context("starting rein-testenv")?;
    let api: Api<Pod> = Api::namespaced(env.client(), NAMESPACE);
    let started = Instant::now();
    preload(env.client(), pods, 1, true).await?;
    let load = started.elapsed().as_secs_f64();
    let loaded_rss = rss_mib();
    let note = format!("{pods} Pods with managedFields, 64 requests in flight");
    figure("load: time", load, "s", &note);
    figure(
        "load: RSS after load",
        loaded_rss,
        "MiB",
        "VmRSS; server and client in one process",
    );
    figure(
        "load: RSS per Pod",
        (loaded_rss - baseline) * 1024.0 * 1024.0 / pods.max(1) as f64,
        "bytes",
        "RSS growth over the load / Pods (store + watch history)",
    );

    let started = Instant::now();
    let mut listed = 0;
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await.context("listing a page")?;
        listed += page.items.len();
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    anyhow::ensure!(listed == pods, "the paged list saw {listed} of {pods} Pods");
    figure(
        "list: paged, time",
        started.elapsed().as_secs_f64(),
        "s",
        &format!("limit={PAGE}, typed decode in the client"),
    );

    let path = format!("/api/v1/namespaces/{NAMESPACE}/pods");
    let started = Instant::now();
    let bytes = read_all(&env, &path, usize::MAX).await?;
    figure(
        "list: unpaged, time",
        started.elapsed().as_secs_f64(),
        "s",
        &format!(
            "one request, {:.0} MiB of JSON read raw",
            bytes as f64 / 1048576.0
        ),
    );

    // The last half of the history: every retained event from a resourceVersion halfway back.
    let current = env.resource_version();
    let replay = (pods as u64).min(current / 2);
    let from = current - replay;
    let started = Instant::now();
    let watch = format!("{path}?watch=true&resourceVersion={from}&timeoutSeconds=600");
    read_all(&env, &watch, replay as usize).await?;
    figure(
        "watch: history replay, time",
        started.elapsed().as_secs_f64(),
        "s",
        &format!("{replay} events from the history, read raw"),
    );
    figure(
        "peak RSS",
        peak_rss_mib(),
        "MiB",
        "VmHWM at the end; aim < 4096 for 100,000 Pods",
    );
    env.shutdown().await;
    Ok(())
}

/// Reads `path`'s body raw until its end or until `lines` newlines; answers the bytes read.
async fn read_all(env: &TestEnv, path: &str, lines: usize) -> anyhow::Result<usize> {
    let request = http::Request::get(path).body(Vec::new())?;
    let mut body = env
        .client()
        .request_stream(request)
        .await
        .with_context(|| format!("requesting {path}"))?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut total, mut seen) = (0usize, 0usize);
    while seen < lines {
        let n = body.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        total += n;
        seen += buf[..n].iter().filter(|b| **b == b'\n').count();
    }
    if lines != usize::MAX {
        anyhow::ensure!(seen >= lines, "the watch sent {seen} of {lines} events");
    }
    Ok(total)
}

fn figure(case: &str, value: f64, unit: &str, note: &str) {
    println!("BENCH|testenv-memory|{case}|{value:.3}|{unit}|{note}");
}
