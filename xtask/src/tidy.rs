//! Invariants of the code base itself, checked as tests so `cargo xtask test` keeps them true.

use std::path::{Path, PathBuf};

use crate::project_root;
use crate::smoke::{example_files, parse_spec};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

fn all_rust_files() -> Vec<PathBuf> {
    let root = project_root();
    let mut files = Vec::new();
    for dir in ["crates", "examples", "tests", "xtask"] {
        rust_files(&root.join(dir), &mut files);
    }
    files
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let missing: Vec<String> = all_rust_files()
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` first line: {missing:#?}"
    );
}

#[test]
fn no_debugging_leftovers() {
    let banned = [
        concat!("db", "g!("),
        concat!("to", "do!("),
        concat!("unimple", "mented!("),
    ];
    let mut found = Vec::new();
    for p in all_rust_files() {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if banned.iter().any(|b| line.contains(b)) {
                found.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "debugging leftovers: {found:#?}");
}

#[test]
fn every_example_declares_its_smoke_run() {
    let root = project_root();
    let mut missing = Vec::new();
    for file in example_files(&root).expect("examples dir") {
        let name = file.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        if parse_spec(&name, &text).expect.is_empty() {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "examples without `// smoke-expect:`: {missing:?}"
    );
}

#[test]
fn every_example_is_listed_in_the_examples_readme() {
    let root = project_root();
    let readme = std::fs::read_to_string(root.join("examples/README.md")).unwrap_or_default();
    let missing: Vec<String> = example_files(&root)
        .expect("examples dir")
        .into_iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().to_string())
        .filter(|name| !readme.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "examples missing from examples/README.md: {missing:?}"
    );
}

#[test]
fn ci_runs_the_suite() {
    let ci = std::fs::read_to_string(project_root().join(".ci/run")).unwrap();
    assert!(ci.contains("cargo xtask test"));
}
