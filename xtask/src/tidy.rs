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

/// The `members = [...]` list of the root manifest.
fn workspace_members(root_manifest: &str) -> Vec<String> {
    let without_comments: Vec<&str> = root_manifest
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .collect();
    let text = without_comments.join("\n");
    let Some(start) = text.find("members") else {
        return Vec::new();
    };
    let rest = &text[start..];
    let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else {
        return Vec::new();
    };
    rest[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The `key = value` lines of table `[table]`, whitespace removed.
fn table_lines(manifest: &str, table: &str) -> Vec<String> {
    let header = format!("[{table}]");
    let mut inside = false;
    let mut lines = Vec::new();
    for line in manifest.lines() {
        let line: String = line
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if line.starts_with('[') {
            inside = line == header;
        } else if inside && !line.is_empty() {
            lines.push(line);
        }
    }
    lines
}

/// Whether a member's manifest takes the workspace lints (`[lints] workspace = true`).
fn inherits_workspace_lints(manifest: &str) -> bool {
    table_lines(manifest, "lints")
        .iter()
        .any(|l| l == "workspace=true")
}

/// Whether the root manifest forbids unsafe code for every member that takes its lints.
fn workspace_forbids_unsafe(root_manifest: &str) -> bool {
    table_lines(root_manifest, "workspace.lints.rust")
        .iter()
        .any(|l| l == "unsafe_code=\"forbid\"" || l.starts_with("unsafe_code={level=\"forbid\""))
}

/// Whether a crate root says `#![forbid(unsafe_code)]` itself.
fn crate_root_forbids_unsafe(source: &str) -> bool {
    source
        .lines()
        .any(|l| l.split_whitespace().collect::<String>() == "#![forbid(unsafe_code)]")
}

#[test]
fn every_member_takes_the_workspace_lints_and_no_crate_allows_unsafe_code() {
    let root = project_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = workspace_members(&manifest);
    assert!(members.len() >= 10, "members not found: {members:?}");
    let workspace_forbids = workspace_forbids_unsafe(&manifest);
    let mut offenders = Vec::new();
    for member in &members {
        let dir = root.join(member);
        let own = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
        let inherits = inherits_workspace_lints(&own);
        if !inherits {
            offenders.push(format!("{member}: no `[lints] workspace = true`"));
        }
        let roots_forbid = ["src/lib.rs", "src/main.rs"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(dir.join(f)).ok())
            .any(|src| crate_root_forbids_unsafe(&src));
        if !(roots_forbid || inherits && workspace_forbids) {
            offenders.push(format!(
                "{member}: unsafe code is not forbidden (workspace lint `unsafe_code = \"forbid\"` \
                 or `#![forbid(unsafe_code)]` in the crate root)"
            ));
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

#[test]
fn the_lint_checks_flag_what_they_look_for() {
    let root = "[workspace]\nmembers = [\n    \"crates/a\", # the core\n    \"b\",\n]\n\n\
                [workspace.lints.rust]\nmissing_docs = \"warn\"\nunsafe_code = \"forbid\"\n";
    assert_eq!(workspace_members(root), vec!["crates/a", "b"]);
    assert!(workspace_forbids_unsafe(root));
    assert!(!workspace_forbids_unsafe(&root.replace("forbid", "deny")));
    assert!(!workspace_forbids_unsafe(
        "[workspace.lints.clippy]\nunsafe_code = \"forbid\"\n"
    ));
    assert!(inherits_workspace_lints(
        "[package]\nname = \"a\"\n\n[lints]\nworkspace = true\n"
    ));
    assert!(!inherits_workspace_lints("[package]\nname = \"a\"\n"));
    assert!(!inherits_workspace_lints("[lints]\n# workspace = true\n"));
    assert!(!inherits_workspace_lints(
        "[lints.rust]\nworkspace = true\n"
    ));
    assert!(crate_root_forbids_unsafe(
        "//! A crate.\n#![forbid(unsafe_code)]\n"
    ));
    assert!(!crate_root_forbids_unsafe(
        "//! A crate.\n#![deny(unsafe_code)]\n"
    ));
}

/// The `default_value` of the `--listen` argument in `rein-apiserver`'s (or `rein-cluster`'s)
/// clap `Args`.
fn apiserver_default_listen(source: &str) -> Option<String> {
    let mut last_arg = None;
    for line in source.lines().map(str::trim) {
        if line.starts_with("#[arg(") {
            last_arg = Some(line);
        } else if line
            .strip_prefix("pub ")
            .unwrap_or(line)
            .starts_with("listen:")
        {
            let attr = last_arg?;
            let value = attr.split("default_value = \"").nth(1)?;
            return value.split('"').next().map(str::to_owned);
        } else if !line.starts_with("///") {
            last_arg = None;
        }
    }
    None
}

#[test]
fn rein_apiserver_listens_on_loopback_by_default() {
    // rein-apiserver and rein-cluster (rein-sim) both take their server flags from
    // rein-testenv's `cli::ServerFlags`.
    let path = project_root().join("crates/rein-testenv/src/cli.rs");
    let source = std::fs::read_to_string(&path).unwrap();
    let listen = apiserver_default_listen(&source)
        .unwrap_or_else(|| panic!("no `--listen` default found in {}", path.display()));
    let addr: std::net::SocketAddr = listen.parse().unwrap();
    assert!(addr.ip().is_loopback(), "the default --listen is {addr}");
    for binary in [
        "crates/rein-testenv/src/bin/rein-apiserver.rs",
        "crates/rein-sim/src/bin/rein-cluster.rs",
    ] {
        let source = std::fs::read_to_string(project_root().join(binary)).unwrap();
        assert!(
            source.contains("server: ServerFlags,") && !source.contains("listen:"),
            "{binary} takes its server flags from rein_testenv::cli::ServerFlags"
        );
    }

    let args = |attr: &str| format!("    /// Address.\n    {attr}\n    listen: SocketAddr,\n");
    assert_eq!(
        apiserver_default_listen(&args("#[arg(long, default_value = \"0.0.0.0:8080\")]")),
        Some("0.0.0.0:8080".to_owned())
    );
    assert_eq!(apiserver_default_listen(&args("#[arg(long)]")), None);
    assert_eq!(apiserver_default_listen("    listen: SocketAddr,\n"), None);
    assert_eq!(
        apiserver_default_listen(
            "    #[arg(long, default_value = \"127.0.0.1:0\")]\n    pub listen: SocketAddr,\n"
        ),
        Some("127.0.0.1:0".to_owned())
    );
}

/// The relative link targets of a Markdown text (`[text](target)`), outside fenced code blocks,
/// without their `#fragment`; web and mail addresses and in-page anchors are left out.
fn relative_links(markdown: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut in_code_block = false;
    for (i, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
            continue;
        }
        if in_code_block {
            continue;
        }
        for (start, _) in line.match_indices("](") {
            let rest = &line[start + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or("").trim();
            let is_web = target.contains("://") || target.starts_with("mailto:");
            if !target.is_empty() && !is_web {
                links.push((i + 1, target.to_owned()));
            }
        }
    }
    links
}

/// The Markdown files whose relative links must resolve: `README.md`, `examples/README.md`
/// and every `docs/*.md`.
fn linked_markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md"), root.join("examples/README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = project_root();
    let mut broken = Vec::new();
    for file in linked_markdown_files(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        for (line, target) in relative_links(&text) {
            if !dir.join(&target).exists() {
                let shown = file.strip_prefix(&root).unwrap_or(&file).display();
                broken.push(format!("{shown}:{line}: {target}"));
            }
        }
    }
    assert!(broken.is_empty(), "links to missing files: {broken:#?}");
}

#[test]
fn the_link_check_finds_relative_links_only() {
    let md = "See [the guide](docs/guide.md#flow) and [kube](https://kube.rs), [top](#top).\n\
              ```sh\n[not](a/link.md)\n```\n[a](../x.rs) and [b](y.md)\n";
    assert_eq!(
        relative_links(md),
        vec![
            (1, "docs/guide.md".to_owned()),
            (5, "../x.rs".to_owned()),
            (5, "y.md".to_owned()),
        ]
    );
}

/// The rein library crates in stack order, bottom first, with their rank: a crate may depend
/// (normally or for its tests) only on crates of a lower rank. `rein-workqueue`,
/// `rein-scheme`, `rein-serve` and `rein-leaderelection` are all at the bottom and know nothing
/// of each other; `rein-webhook` sits on `rein-serve` only.
const LAYERS: &[(&str, u8)] = &[
    ("rein-macros", 0),
    ("rein-workqueue", 0),
    ("rein-scheme", 0),
    ("rein-serve", 0),
    ("rein-leaderelection", 0),
    ("rein-informer", 1),
    ("rein-webhook", 1),
    ("rein-client", 2),
    ("rein-controller", 3),
    ("rein-sharding", 4),
    ("rein-manager", 5),
    ("rein", 6),
    ("rein-multicluster", 6),
    ("rein-sim", 7),
];

/// The embedded API server: it depends on no rein crate, and the library crates take it only
/// as a dev-dependency.
const TESTENV: &str = "rein-testenv";

/// The one ranked crate that may take rein-testenv as a normal dependency: rein-sim, the top
/// of the stack, whose `rein-cluster` binary composes the simulated cluster with the embedded
/// API server. rein-testenv still depends on nothing of rein's, so nothing cycles.
const COMPOSES_TESTENV: &str = "rein-sim";

/// The runtime dependencies the bottom crate may have: tokio, and foldhash (no dependencies
/// of its own) to hash items.
const WORKQUEUE_DEPENDENCIES: &[&str] = &["foldhash", "tokio"];

/// The names of the dependencies in table `[table]` of a manifest.
fn dependency_names(manifest: &str, table: &str) -> Vec<String> {
    table_lines(manifest, table)
        .iter()
        .filter_map(|l| l.split_once('=').map(|(name, _)| name.to_owned()))
        .collect()
}

/// Whether a manifest says `publish = false` (examples, tests, tools: their targets, not only
/// `src/`, are what they are for).
fn is_unpublished(manifest: &str) -> bool {
    table_lines(manifest, "package")
        .iter()
        .any(|l| l == "publish=false")
}

/// The Rust sources of a member: `src/` and `build.rs`, and with `all_targets` also `tests/`,
/// `benches/` and `examples/`, as one text.
fn member_sources(dir: &Path, all_targets: bool) -> String {
    let mut files = Vec::new();
    rust_files(&dir.join("src"), &mut files);
    files.push(dir.join("build.rs"));
    if all_targets {
        for sub in ["tests", "benches", "examples"] {
            rust_files(&dir.join(sub), &mut files);
        }
    }
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `source` names the crate `ident` as a whole word (`serde_json::`, `use tokio`,
/// `#[async_trait::async_trait]`, `#[derive(thiserror::Error)]`…).
fn names_crate(source: &str, ident: &str) -> bool {
    let is_ident_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    source.match_indices(ident).any(|(at, _)| {
        let before = source[..at].chars().next_back();
        let after = source[at + ident.len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}

/// What is wrong with one member's dependencies: unused ones, and rein crates it may not use.
fn dependency_problems(member: &str, manifest: &str, dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let normal = dependency_names(manifest, "dependencies");
    let dev = dependency_names(manifest, "dev-dependencies");
    let package = table_lines(manifest, "package")
        .iter()
        .find_map(|l| {
            l.strip_prefix("name=")
                .map(|n| n.trim_matches('"').to_owned())
        })
        .unwrap_or_default();

    // Declared but unused: a normal dependency must be named by the library or binary itself
    // (by any target for unpublished packages), a dev-dependency by some target.
    let own = member_sources(dir, is_unpublished(manifest));
    let everything = member_sources(dir, true);
    for name in &normal {
        if !names_crate(&own, &name.replace('-', "_")) {
            let used_elsewhere = names_crate(&everything, &name.replace('-', "_"));
            let fix = if used_elsewhere {
                "only tests, benches or examples use it: make it a dev-dependency"
            } else {
                "nothing uses it: remove it"
            };
            problems.push(format!("{member}: dependency `{name}` is unused ({fix})"));
        }
    }
    for name in dev.iter().filter(|d| !normal.contains(d)) {
        if !names_crate(&everything, &name.replace('-', "_")) {
            problems.push(format!("{member}: dev-dependency `{name}` is unused"));
        }
    }

    // Layering: rein crates point down the stack; rein-testenv stands alone.
    let rank = |name: &str| LAYERS.iter().find(|(n, _)| *n == name).map(|(_, r)| *r);
    let rein_deps = normal.iter().chain(&dev).filter(|d| d.starts_with("rein"));
    if package == TESTENV {
        for dep in rein_deps {
            problems.push(format!(
                "{member}: rein-testenv depends on no rein crate, not `{dep}`"
            ));
        }
    } else if let Some(own_rank) = rank(&package) {
        for dep in rein_deps {
            let allowed = match rank(dep) {
                Some(r) => r < own_rank,
                None => dep == TESTENV && (!normal.contains(dep) || package == COMPOSES_TESTENV),
            };
            if !allowed {
                problems.push(format!(
                    "{member}: `{package}` may not depend on `{dep}` (dependencies point down the \
                     stack; rein-testenv only as a dev-dependency, except for rein-sim)"
                ));
            }
        }
    }
    if package == "rein-workqueue" {
        for dep in normal
            .iter()
            .filter(|d| !WORKQUEUE_DEPENDENCIES.contains(&d.as_str()))
        {
            problems.push(format!(
                "{member}: the bottom crate depends only on {WORKQUEUE_DEPENDENCIES:?}, not `{dep}`"
            ));
        }
    }
    problems
}

#[test]
fn dependencies_point_down_the_stack_and_are_all_used() {
    let root = project_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut problems = Vec::new();
    for member in workspace_members(&manifest) {
        let dir = root.join(&member);
        let own = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
        problems.extend(dependency_problems(&member, &own, &dir));
    }
    // Nothing depends on the tools and harnesses on top.
    for member in workspace_members(&manifest) {
        let own = std::fs::read_to_string(root.join(&member).join("Cargo.toml")).unwrap();
        for dep in dependency_names(&own, "dependencies")
            .into_iter()
            .chain(dependency_names(&own, "dev-dependencies"))
        {
            if ["rein-bench", "rein-examples", "rein-tests", "xtask"].contains(&dep.as_str()) {
                problems.push(format!("{member}: nothing may depend on `{dep}`"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_dependency_check_flags_what_it_looks_for() {
    let dir = std::env::temp_dir().join(format!("rein-tidy-deps-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "//! A crate.\nuse rein_scheme::ObjectKey;\n#[async_trait::async_trait]\ntrait T {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tests/t.rs"),
        "//! A test.\nuse serde_json::json;\n",
    )
    .unwrap();
    let manifest = "[package]\nname = \"rein-informer\"\n\n[dependencies]\n\
                    rein-scheme = { workspace = true }\nasync-trait = \"0.1\"\n\
                    serde_json = \"1\"\nfoldhash = \"0.2\"\nrein-client = { workspace = true }\n\
                    rein-testenv = { workspace = true }\n\n[dev-dependencies]\nproptest = \"1\"\n";
    let problems = dependency_problems("crates/x", manifest, &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let flagged = |what: &str| problems.iter().any(|p| p.contains(what));
    assert!(
        flagged("`serde_json` is unused (only tests"),
        "{problems:#?}"
    );
    assert!(
        flagged("`foldhash` is unused (nothing uses it"),
        "{problems:#?}"
    );
    assert!(
        flagged("dev-dependency `proptest` is unused"),
        "{problems:#?}"
    );
    assert!(flagged("may not depend on `rein-client`"), "{problems:#?}");
    assert!(flagged("may not depend on `rein-testenv`"), "{problems:#?}");
    assert!(!flagged("`rein-scheme`"), "{problems:#?}");
    assert!(!flagged("`async-trait`"), "{problems:#?}");
    // rein-sim alone may take rein-testenv as a normal dependency (its binary composes them).
    let sim = manifest
        .replace("name = \"rein-informer\"", "name = \"rein-sim\"")
        .replace("rein-client = { workspace = true }\n", "");
    let dir = std::env::temp_dir().join(format!("rein-tidy-sim-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src/bin")).unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "//! A crate.\nuse rein_scheme::ObjectKey;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/bin/b.rs"),
        "//! A binary.\nuse rein_testenv::TestEnv;\n",
    )
    .unwrap();
    let problems = dependency_problems("crates/rein-sim", &sim, &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        !problems.iter().any(|p| p.contains("`rein-testenv`")),
        "{problems:#?}"
    );
    assert!(names_crate("use tokio::sync;", "tokio"));
    assert!(!names_crate("use tokio_util::sync;", "tokio"));
}
