//! The generator of `table.txt` (run by hand, `#[ignore]`d): reads k8s-pb's prost sources and
//! the served OpenAPI schemas, and writes every message's fields with their JSON names.
//!
//! Run after `cargo fetch` has put k8s-pb 0.9.0 in the registry:
//! `cargo test -p rein-testenv --lib proto::generate -- --ignored`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One field as prost declares it.
#[derive(Debug)]
struct RawField {
    tag: u32,
    rust_name: String,
    card: char,
    kind: String,
    message: Option<String>,
}

fn k8s_pb_source() -> PathBuf {
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cargo"));
    let registry = home.join("registry/src");
    for index in std::fs::read_dir(&registry).expect("registry sources") {
        let candidate = index.expect("entry").path().join("k8s-pb-0.9.0/src");
        if candidate.is_dir() {
            return candidate;
        }
    }
    panic!(
        "k8s-pb 0.9.0 is not in {}: run `cargo fetch`",
        registry.display()
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reads dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `api.core.v1` for `<src>/api/core/v1/mod.rs`.
fn package_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().to_string())
        .collect();
    parts.pop();
    parts
}

/// Resolves a prost type path (`super::super::meta::v1::ObjectMeta`, `Container`) against
/// the module it appears in.
fn resolve(package: &[String], path: &str) -> String {
    let mut module: Vec<String> = package.to_vec();
    let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let (name, prefix) = segments.split_last().expect("a path");
    for seg in prefix {
        if *seg == "super" {
            module.pop();
        } else {
            module.push((*seg).to_string());
        }
    }
    format!("{}.{}", module.join("."), name)
}

/// The innermost type argument of `Option<…>`, `Vec<…>`, `Box<…>` or the value of a map.
fn inner_type(ty: &str) -> String {
    let ty = ty.trim();
    if let Some(start) = ty.find('<') {
        let inner = &ty[start + 1..ty.rfind('>').expect("closing >")];
        let inner = match inner.rfind(", ") {
            Some(comma) if ty.contains("BTreeMap") => &inner[comma + 2..],
            _ => inner,
        };
        return inner_type(inner);
    }
    ty.to_string()
}

fn parse_attr(attr: &str) -> (u32, char, String) {
    let body = attr
        .trim()
        .trim_start_matches("#[prost(")
        .trim_end_matches(")]");
    let tag = body
        .split("tag = \"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|t| t.parse().ok())
        .expect("a tag");
    if let Some(map) = body.strip_prefix("btree_map = \"") {
        let value = map.split('"').next().expect("map types");
        let value = value.split(", ").nth(1).expect("map value type");
        return (tag, 'M', scalar_kind(value));
    }
    let first = body.split(',').next().expect("a kind").trim();
    let card = if body.contains("repeated") { 'r' } else { 'o' };
    (tag, card, scalar_kind(first))
}

fn scalar_kind(prost_kind: &str) -> String {
    match prost_kind.split(" =").next().unwrap_or(prost_kind) {
        "string" => "s",
        "bytes" => "y",
        "bool" => "b",
        "int32" => "i32",
        "int64" => "i64",
        "double" => "d",
        "message" => "m",
        other => panic!("unexpected prost kind {other}"),
    }
    .to_string()
}

/// Every message of every file: full name → fields.
fn parse_sources(src: &Path) -> BTreeMap<String, Vec<RawField>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut messages = BTreeMap::new();
    for file in files {
        let package = package_of(src, &file);
        let text = std::fs::read_to_string(&file).expect("reads source");
        let lines: Vec<&str> = text.lines().collect();
        let mut current: Option<String> = None;
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i].trim();
            if let Some(rest) = line.strip_prefix("pub struct ") {
                let name = rest.trim_end_matches(" {").trim();
                let full = format!("{}.{}", package.join("."), name);
                messages.insert(full.clone(), Vec::new());
                current = Some(full);
            } else if line == "}" {
                current = None;
            } else if line.starts_with("#[prost(")
                && let Some(message) = &current
            {
                let (tag, card, kind) = parse_attr(line);
                let mut decl = String::new();
                i += 1;
                while i < lines.len() {
                    let part = lines[i].trim();
                    if !part.starts_with("#[") {
                        decl.push_str(part);
                        decl.push(' ');
                        let balanced = decl.matches('<').count() == decl.matches('>').count();
                        if part.ends_with(',') && balanced {
                            break;
                        }
                    }
                    i += 1;
                }
                let decl = decl
                    .replace(", >", ">")
                    .replace(",>", ">")
                    .replace("< ", "<");
                let decl = decl.trim().trim_end_matches(',');
                let decl = decl.strip_prefix("pub ").expect("a pub field");
                let (rust_name, ty) = decl.split_once(':').expect("name: type");
                let rust_name = rust_name.trim().trim_start_matches("r#").to_string();
                let message_ref = (kind == "m").then(|| resolve(&package, &inner_type(ty)));
                messages
                    .get_mut(message)
                    .expect("current message")
                    .push(RawField {
                        tag,
                        rust_name,
                        card,
                        kind,
                        message: message_ref,
                    });
            }
            i += 1;
        }
    }
    messages
}

/// The OpenAPI definition name a package's message has (`io.k8s.api.core.v1.Pod`).
fn definition_prefix(package: &str) -> String {
    let package = package
        .replace("apiextensions_apiserver", "apiextensions-apiserver")
        .replace("kube_aggregator", "kube-aggregator");
    format!("io.k8s.{package}.")
}

fn lower_camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The JSON name that marks a Go struct embedded with `json:",inline"`.
const INLINE: &str = "-";

/// Whether `field` is an embedded struct whose fields the parent's schema lists as its own.
fn is_inlined(
    messages: &BTreeMap<String, Vec<RawField>>,
    field: &RawField,
    properties: &[String],
) -> bool {
    let Some(child) = field.message.as_ref().and_then(|m| messages.get(m)) else {
        return false;
    };
    // k8s-pb may be newer than the served schemas: most (not all) fields must be there.
    let known = child
        .iter()
        .filter(|c| properties.iter().any(|p| squash(p) == squash(&c.rust_name)))
        .count();
    known > 0 && known * 4 >= child.len() * 3
}

fn squash(name: &str) -> String {
    name.replace(['_', '-', '$'], "").to_ascii_lowercase()
}

#[test]
#[ignore = "generator: run by hand to rewrite src/proto/table.txt"]
fn generate_table() {
    let src = k8s_pb_source();
    let messages = parse_sources(&src);
    let definitions = crate::openapi::definitions();
    let by_lower: BTreeMap<String, (&String, &Value)> = definitions
        .iter()
        .map(|(name, schema)| (name.to_ascii_lowercase(), (name, schema)))
        .collect();
    let mut out = String::new();
    let mut unmatched = Vec::new();
    let mut go_names = BTreeMap::new();
    for full in messages.keys() {
        let (package, name) = full.rsplit_once('.').expect("package.name");
        let wanted = format!("{}{}", definition_prefix(package), name).to_ascii_lowercase();
        let go = by_lower
            .get(&wanted)
            .map(|(def, _)| def.rsplit('.').next().expect("name").to_string())
            .unwrap_or_else(|| name.to_string());
        go_names.insert(full.clone(), format!("{package}.{go}"));
    }
    for (full, fields) in &messages {
        let (package, name) = full.rsplit_once('.').expect("package.name");
        let wanted = format!("{}{}", definition_prefix(package), name).to_ascii_lowercase();
        let properties: Vec<String> = by_lower
            .get(&wanted)
            .and_then(|(_, schema)| schema.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let _ = writeln!(out, "message {}", go_names[full]);
        for field in fields {
            let json = match properties
                .iter()
                .find(|p| squash(p) == squash(&field.rust_name))
            {
                Some(p) => p.clone(),
                None if is_inlined(&messages, field, &properties) => INLINE.to_string(),
                None => {
                    if !properties.is_empty() {
                        unmatched.push(format!("{full}.{}", field.rust_name));
                    }
                    lower_camel(&field.rust_name)
                }
            };
            let _ = write!(out, "{} {} {} {}", field.tag, json, field.card, field.kind);
            if let Some(m) = &field.message {
                let target = go_names.get(m).cloned().unwrap_or_else(|| m.clone());
                let _ = write!(out, " {target}");
            }
            out.push('\n');
        }
    }
    let dest = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/proto/table.txt");
    std::fs::write(&dest, out).expect("writes table");
    eprintln!(
        "wrote {} messages to {}; fields not in the schema: {unmatched:?}",
        messages.len(),
        dest.display()
    );
}
