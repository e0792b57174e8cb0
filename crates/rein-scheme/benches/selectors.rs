//! Benchmarks of label and field selectors: parsing, and matching many label sets (client-go's
//! `BenchmarkLister_Match` workload: N objects of which 100 match).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use rein_scheme::{fields, labels};

fn main() {
    parse_labels();
    match_labels(100_000);
    parse_and_match_fields();
}

fn parse_labels() {
    let text = "app=web,tier in (frontend,edge),!canary,environment notin (dev,test)";
    let n = 200_000;
    let start = Instant::now();
    for _ in 0..n {
        black_box(labels::Selector::parse(black_box(text)).ok());
    }
    let per = start.elapsed().as_nanos() as f64 / n as f64;
    println!("BENCH|labels|parse 4-requirement selector|{per:.0}|ns/op|one-off per list call");
}

fn match_labels(n: usize) {
    let objects: Vec<BTreeMap<String, String>> = (0..n)
        .map(|i| {
            let mut m = BTreeMap::new();
            m.insert("app".to_string(), format!("app-{}", i % (n / 100)));
            m.insert("tier".to_string(), "backend".to_string());
            m.insert("pod-template-hash".to_string(), format!("{i:x}"));
            m
        })
        .collect();
    let selector = labels::Selector::parse("app=app-7,tier in (backend,db)").unwrap_or_default();
    let start = Instant::now();
    let matched = objects.iter().filter(|l| selector.matches(l)).count();
    let elapsed = start.elapsed();
    assert_eq!(matched, 100);
    println!(
        "BENCH|labels|match {n} label sets, 100 match|{:.2}|ms|client-go BenchmarkLister_Match analogue",
        elapsed.as_secs_f64() * 1e3
    );
    println!(
        "BENCH|labels|match per label set|{:.1}|ns|",
        elapsed.as_nanos() as f64 / n as f64
    );
}

fn parse_and_match_fields() {
    let n = 200_000;
    let start = Instant::now();
    let mut hits = 0;
    for i in 0..n {
        let sel = fields::Selector::parse("spec.nodeName=node-1,status.phase!=Failed");
        if let Ok(sel) = sel
            && sel.matches(|f| match f {
                "spec.nodeName" => Some(format!("node-{}", i % 2)),
                _ => None,
            })
        {
            hits += 1;
        }
    }
    black_box(hits);
    let per = start.elapsed().as_nanos() as f64 / n as f64;
    println!("BENCH|fields|parse + match 2-term selector|{per:.0}|ns/op|");
}
