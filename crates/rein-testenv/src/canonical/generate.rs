//! The generator of `table.txt` (run by hand, `#[ignore]`d): reads the Go types of
//! k8s.io/api, apimachinery's `meta/v1` and apiextensions-apiserver's `apiextensions/v1` at
//! the Kubernetes version rein serves, and writes each struct's JSON fields in Go's order with
//! what `encoding/json` does with them.
//!
//! Point `REIN_GO_TYPES` at a directory holding `api/` (k8s.io/api at v0.33.x),
//! `apimachinery/` and `apiextensions/` (their repositories' trees at the same tag), then run
//! `cargo test -p rein-testenv --lib canonical::generate -- --ignored`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A type declaration: a struct's fields (Go name, type, tag) or another type's name.
#[derive(Debug)]
enum Decl {
    Struct(Vec<(String, String, String)>),
    Alias(String),
}

/// One Go package: its imports (alias → package key) and declarations.
#[derive(Debug, Default)]
struct Package {
    imports: BTreeMap<String, String>,
    decls: BTreeMap<String, Decl>,
}

fn package_key(import: &str) -> String {
    if let Some(rest) = import.strip_prefix("k8s.io/api/") {
        return rest.to_string();
    }
    match import {
        "k8s.io/apimachinery/pkg/apis/meta/v1" => "meta/v1".into(),
        "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1" => "apiextensions/v1".into(),
        "k8s.io/apimachinery/pkg/api/resource" => "#quantity".into(),
        "k8s.io/apimachinery/pkg/util/intstr" => "#intorstring".into(),
        "k8s.io/apimachinery/pkg/runtime" => "#runtime".into(),
        "k8s.io/apimachinery/pkg/types" => "#types".into(),
        other => format!("#other:{other}"),
    }
}

fn parse_file(text: &str, pkg: &mut Package) {
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed == "import (" {
            for import in lines.by_ref() {
                let import = import.trim();
                if import == ")" {
                    break;
                }
                let parts: Vec<&str> = import.split_whitespace().collect();
                let (alias, path) = match parts.as_slice() {
                    [path] => {
                        let path = path.trim_matches('"');
                        (path.rsplit('/').next().unwrap_or(path), path)
                    }
                    [alias, path, ..] => (*alias, path.trim_matches('"')),
                    _ => continue,
                };
                pkg.imports.insert(alias.to_string(), package_key(path));
            }
            continue;
        }
        let Some(rest) = line.strip_prefix("type ") else {
            continue;
        };
        let mut parts = rest.splitn(2, ' ');
        let name = parts.next().unwrap_or_default().to_string();
        let body = parts.next().unwrap_or_default().trim();
        if body == "struct {" {
            let mut fields = Vec::new();
            let mut depth = 0usize;
            for field in lines.by_ref() {
                if field == "}" && depth == 0 {
                    break;
                }
                let f = field.trim();
                if f.starts_with("//") || f.is_empty() {
                    continue;
                }
                if f.ends_with('{') {
                    depth += 1;
                    continue;
                }
                if f.starts_with('}') {
                    depth = depth.saturating_sub(1);
                    continue;
                }
                if depth > 0 {
                    continue;
                }
                let Some(tick) = f.find('`') else {
                    continue;
                };
                let tag = f[tick..].to_string();
                let decl: Vec<&str> = f[..tick].split_whitespace().collect();
                match decl.as_slice() {
                    [ty] => fields.push((String::new(), (*ty).to_string(), tag)),
                    [go, ty @ ..] => fields.push(((*go).to_string(), ty.join(" "), tag)),
                    [] => {}
                }
            }
            pkg.decls.insert(name, Decl::Struct(fields));
        } else if body.starts_with("struct{}") {
            pkg.decls.insert(name, Decl::Struct(Vec::new()));
        } else if !body.is_empty() && !body.starts_with('=') && !body.contains('{') {
            let ty = body.split("//").next().unwrap_or_default().trim();
            pkg.decls.insert(name, Decl::Alias(ty.to_string()));
        }
    }
}

/// The JSON name and flags of a `json:"…"` tag: (name, omitempty, inline, skipped).
fn json_tag(tag: &str) -> (String, bool, bool, bool) {
    let Some(start) = tag.find("json:\"") else {
        return (String::new(), false, false, false);
    };
    let rest = &tag[start + 6..];
    let value = &rest[..rest.find('"').unwrap_or(rest.len())];
    let mut parts = value.split(',');
    let name = parts.next().unwrap_or_default().to_string();
    let flags: Vec<&str> = parts.collect();
    let omit = flags.contains(&"omitempty") || flags.contains(&"omitzero");
    (name.clone(), omit, flags.contains(&"inline"), name == "-")
}

struct Resolver<'a> {
    packages: &'a BTreeMap<String, Package>,
}

impl Resolver<'_> {
    /// The shape code and struct definition of `ty` as written in package `pkg`.
    fn resolve(&self, pkg: &str, ty: &str) -> (char, Option<String>) {
        if let Some(inner) = ty.strip_prefix('*') {
            return match self.resolve(pkg, inner) {
                ('S', def) => ('P', def),
                _ => ('p', None),
            };
        }
        if ty == "[]byte" {
            return ('x', None);
        }
        if let Some(elem) = ty.strip_prefix("[]") {
            return ('a', self.struct_of(pkg, elem));
        }
        if let Some(rest) = ty.strip_prefix("map[") {
            let value = &rest[rest.find(']').map_or(0, |i| i + 1)..];
            return ('m', self.struct_of(pkg, value));
        }
        match ty {
            "string" => return ('s', None),
            "bool" => return ('b', None),
            "interface{}" | "any" => return ('r', None),
            _ => {}
        }
        if ty.starts_with("int") || ty.starts_with("uint") || ty.starts_with("float") {
            return ('i', None);
        }
        let (target, name) = match ty.split_once('.') {
            Some((alias, name)) => {
                let imports = &self.packages.get(pkg).map(|p| &p.imports);
                let target = imports
                    .and_then(|i| i.get(alias))
                    .cloned()
                    .unwrap_or_else(|| format!("#other:{alias}"));
                (target, name)
            }
            None => (pkg.to_string(), ty),
        };
        match (target.as_str(), name) {
            ("#quantity", _) => return ('q', None),
            ("#intorstring", _) => return ('n', None),
            ("#types", _) => return ('s', None),
            ("meta/v1", "Time" | "MicroTime") => return ('t', None),
            ("meta/v1", "Duration") => return ('d', None),
            ("meta/v1", "FieldsV1") => return ('r', None),
            (
                "apiextensions/v1",
                "JSON"
                | "JSONSchemaPropsOrArray"
                | "JSONSchemaPropsOrBool"
                | "JSONSchemaPropsOrStringArray",
            ) => return ('r', None),
            _ => {}
        }
        match self.packages.get(&target).and_then(|p| p.decls.get(name)) {
            Some(Decl::Struct(_)) => ('S', Some(format!("{target}.{name}"))),
            Some(Decl::Alias(under)) => self.resolve(&target, under),
            None => ('r', None),
        }
    }

    fn struct_of(&self, pkg: &str, ty: &str) -> Option<String> {
        match self.resolve(pkg, ty) {
            ('S' | 'P', def) => def,
            _ => None,
        }
    }

    /// The JSON fields of struct `name` in `pkg`, inline embeddings expanded in place.
    fn fields(&self, pkg: &str, name: &str, out: &mut String) {
        let Some(Decl::Struct(fields)) = self.packages.get(pkg).and_then(|p| p.decls.get(name))
        else {
            return;
        };
        for (go, ty, tag) in fields {
            let (json, omit, inline, skip) = json_tag(tag);
            if skip {
                continue;
            }
            // An embedded struct is inlined unless its tag names it.
            if inline || (go.is_empty() && json.is_empty()) {
                if let ('S', Some(def)) = self.resolve(pkg, ty)
                    && let Some((p, n)) = def.rsplit_once('.')
                {
                    self.fields(p, n, out);
                }
                continue;
            }
            if json.is_empty() {
                continue;
            }
            let (shape, def) = self.resolve(pkg, ty);
            let omit = if omit { 'o' } else { '-' };
            match def {
                Some(def) => writeln!(out, "{json} {omit} {shape} {def}"),
                None => writeln!(out, "{json} {omit} {shape}"),
            }
            .expect("writes");
        }
    }
}

fn go_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    out.retain(|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        name.ends_with(".go")
            && !name.ends_with("_test.go")
            && !name.starts_with("zz_generated")
            && !name.starts_with("generated.")
    });
    out.sort();
    out
}

#[test]
#[ignore = "generator: run by hand to rewrite src/canonical/table.txt"]
fn generate() {
    let root = PathBuf::from(std::env::var("REIN_GO_TYPES").expect("REIN_GO_TYPES"));
    let mut dirs: Vec<(String, PathBuf)> = vec![
        ("meta/v1".into(), root.join("apimachinery/pkg/apis/meta/v1")),
        (
            "apiextensions/v1".into(),
            root.join("apiextensions/pkg/apis/apiextensions/v1"),
        ),
    ];
    for group in std::fs::read_dir(root.join("api")).expect("api/") {
        let group = group.expect("entry").path();
        for version in std::fs::read_dir(&group).into_iter().flatten() {
            let version = version.expect("entry").path();
            if version.join("types.go").is_file() {
                let key = format!(
                    "{}/{}",
                    group
                        .file_name()
                        .and_then(|n| n.to_str())
                        .unwrap_or_default(),
                    version
                        .file_name()
                        .and_then(|n| n.to_str())
                        .unwrap_or_default()
                );
                dirs.push((key, version));
            }
        }
    }
    let mut packages = BTreeMap::new();
    for (key, dir) in &dirs {
        let mut pkg = Package::default();
        for file in go_files(dir) {
            parse_file(&std::fs::read_to_string(&file).expect("reads"), &mut pkg);
        }
        packages.insert(key.clone(), pkg);
    }
    let resolver = Resolver {
        packages: &packages,
    };
    let mut out = String::new();
    for (key, pkg) in &packages {
        for (name, decl) in &pkg.decls {
            if matches!(decl, Decl::Struct(_)) {
                writeln!(out, "T {key}.{name}").expect("writes");
                resolver.fields(key, name, &mut out);
            }
        }
    }
    let dest = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/canonical/table.txt");
    std::fs::write(dest, out).expect("writes table.txt");
}
