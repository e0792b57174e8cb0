//! Runs every side-by-side case at tiny sizes end to end (server and client processes) and
//! checks that the BENCH lines parse and that each side saw every object.

use std::process::Command;

/// One parsed `BENCH|side-by-side|<case>/<metric>/<side>|value|unit|note` line.
#[derive(Debug)]
struct Figure {
    case: String,
    metric: String,
    side: String,
    value: f64,
}

fn parse(line: &str) -> Option<Figure> {
    let rest = line.strip_prefix("BENCH|side-by-side|")?;
    let mut parts = rest.split('|');
    let mut key = parts.next()?.split('/');
    let (case, metric, side) = (key.next()?, key.next()?, key.next()?);
    let value = parts.next()?.parse().ok()?;
    Some(Figure {
        case: case.to_owned(),
        metric: metric.to_owned(),
        side: side.to_owned(),
        value,
    })
}

/// Runs `rein-bench case …` and returns its figures.
fn run_case(args: &[&str]) -> Vec<Figure> {
    let out = Command::new(env!("CARGO_BIN_EXE_rein-bench"))
        .arg("case")
        .args(args)
        .args([
            "--pods",
            "200",
            "--watch-pods",
            "50",
            "--updates",
            "200",
            "--objects",
            "100",
        ])
        .output()
        .expect("running rein-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rein-bench case {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let figures: Vec<Figure> = stdout.lines().filter_map(parse).collect();
    assert!(!figures.is_empty(), "no figures in:\n{stdout}");
    figures
}

fn side<'a>(figures: &'a [Figure], side: &str) -> Vec<&'a Figure> {
    figures.iter().filter(|f| f.side == side).collect()
}

fn value(figures: &[&Figure], metric: &str) -> f64 {
    figures
        .iter()
        .find(|f| f.metric == metric)
        .unwrap_or_else(|| panic!("no {metric} in {figures:?}"))
        .value
}

const INFORMER_SIDES: [&str; 3] = ["rein", "kube-runtime", "kube-runtime-streaming"];

fn with_sides(scenario: &[&str], sides: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = scenario.iter().map(|s| (*s).to_owned()).collect();
    for s in sides {
        args.extend(["--side".to_owned(), (*s).to_owned()]);
    }
    args
}

#[test]
fn sync_case_caches_every_pod_on_every_side() {
    let args = with_sides(&["sync"], &INFORMER_SIDES);
    let figures = run_case(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(figures.iter().all(|f| f.case == "initial-sync"));
    for s in INFORMER_SIDES {
        let mine = side(&figures, s);
        assert_eq!(value(&mine, "objects cached"), 200.0, "{s}");
        assert!(
            value(&mine, "peak RSS") >= value(&mine, "RSS after sync"),
            "{s}"
        );
    }
}

#[test]
fn watch_case_applies_every_update_on_every_side() {
    let args = with_sides(&["watch"], &INFORMER_SIDES);
    let figures = run_case(&args.iter().map(String::as_str).collect::<Vec<_>>());
    for s in INFORMER_SIDES {
        let mine = side(&figures, s);
        assert_eq!(value(&mine, "update events applied"), 200.0, "{s}");
        assert!(value(&mine, "events per second") > 0.0, "{s}");
    }
}

#[test]
fn controller_case_reconciles_every_object_on_both_sides() {
    for concurrency in ["1", "16"] {
        let args = with_sides(
            &["controller", "--concurrency", concurrency],
            &["rein", "kube-runtime"],
        );
        let figures = run_case(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            figures
                .iter()
                .all(|f| f.case == format!("controller-c{concurrency}"))
        );
        for s in ["rein", "kube-runtime"] {
            let mine = side(&figures, s);
            assert_eq!(value(&mine, "objects reconciled"), 100.0, "{s}");
            assert!(
                value(&mine, "latency p99") >= value(&mine, "latency p50"),
                "{s}"
            );
        }
    }
}

#[test]
fn backlog_watch_case_drains_every_update_on_every_side() {
    let args = with_sides(&["watch", "--backlog"], &INFORMER_SIDES);
    let figures = run_case(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(figures.iter().all(|f| f.case == "watch-backlog"));
    for s in INFORMER_SIDES {
        let mine = side(&figures, s);
        assert_eq!(value(&mine, "update events applied"), 200.0, "{s}");
        assert!(value(&mine, "events per CPU-second") > 0.0, "{s}");
        assert!(value(&mine, "writer rate") > 0.0, "{s}");
    }
}

#[test]
fn paced_controller_case_measures_arrival_latency_on_both_sides() {
    let args = with_sides(
        &["controller", "--concurrency", "16", "--paced", "500"],
        &["rein", "kube-runtime"],
    );
    let figures = run_case(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(figures.iter().all(|f| f.case == "controller-paced-c16"));
    for s in ["rein", "kube-runtime"] {
        let mine = side(&figures, s);
        assert_eq!(value(&mine, "objects reconciled"), 100.0, "{s}");
        assert!(
            value(&mine, "arrival latency p99") >= value(&mine, "arrival latency p50"),
            "{s}"
        );
        // Arrival at the probe never comes after the create request was sent.
        assert!(
            value(&mine, "latency p99") >= value(&mine, "arrival latency p50"),
            "{s}"
        );
        assert!(
            mine.iter().all(|f| f.metric != "time to all reconciled"),
            "a paced writer sets the pace: {s}"
        );
    }
}

#[test]
fn alike_sync_case_is_named_apart_and_caches_every_pod() {
    let args = with_sides(&["sync", "--strip-managed-fields"], &INFORMER_SIDES);
    let figures = run_case(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(figures.iter().all(|f| f.case == "initial-sync-alike"));
    for s in INFORMER_SIDES {
        assert_eq!(value(&side(&figures, s), "objects cached"), 200.0, "{s}");
    }
}

#[test]
fn metadata_only_case_caches_every_pod_on_every_side() {
    for (flags, case) in [
        (&[][..], "metadata-only"),
        (&["--strip-managed-fields"][..], "metadata-only-alike"),
    ] {
        let mut scenario = vec!["metadata"];
        scenario.extend_from_slice(flags);
        let args = with_sides(&scenario, &INFORMER_SIDES);
        let figures = run_case(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(figures.iter().all(|f| f.case == case), "{case}");
        for s in INFORMER_SIDES {
            assert_eq!(value(&side(&figures, s), "objects cached"), 200.0, "{s}");
        }
    }
}

#[test]
fn multi_namespace_case_caches_the_watched_namespaces_on_every_side() {
    // 200 Pods over 4 namespaces, 50 in each: the first 2 hold 100.
    let args = with_sides(
        &[
            "namespaces",
            "--namespaces",
            "4",
            "--watched-namespaces",
            "2",
        ],
        &INFORMER_SIDES,
    );
    let figures = run_case(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(figures.iter().all(|f| f.case == "multi-namespace"));
    for s in INFORMER_SIDES {
        assert_eq!(value(&side(&figures, s), "objects cached"), 100.0, "{s}");
    }
}

#[test]
fn testenv_memory_loads_and_lists_every_pod() {
    let out = Command::new(env!("CARGO_BIN_EXE_rein-bench"))
        .args(["testenv-memory", "--pods", "100"])
        .output()
        .expect("running rein-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rein-bench testenv-memory failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cases: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("BENCH|testenv-memory|"))
        .filter_map(|l| l.split('|').next())
        .collect();
    for case in [
        "load: time",
        "list: paged, time",
        "list: unpaged, time",
        "watch: history replay, time",
        "peak RSS",
    ] {
        assert!(cases.contains(&case), "no {case} in:\n{stdout}");
    }
}
