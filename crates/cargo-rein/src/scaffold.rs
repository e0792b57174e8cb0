//! `cargo rein new`: writes an operator crate from the templates in `templates/`, rendered by
//! substituting `{{name}}`, `{{ident}}`, `{{group}}` and the rein dependency lines.

use std::path::{Path, PathBuf};

use crate::Error;

/// What `cargo rein new` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOptions {
    /// The directory to create (it may exist if empty).
    pub dir: PathBuf,
    /// The package name (default: the directory's name).
    pub name: Option<String>,
    /// A rein checkout to depend on by path (offline), instead of the published crates.
    pub rein_path: Option<PathBuf>,
}

/// The template files: their path in the new crate and their text.
const TEMPLATES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../templates/Cargo.toml.tmpl")),
    ("Dockerfile", include_str!("../templates/Dockerfile.tmpl")),
    (
        ".dockerignore",
        include_str!("../templates/dockerignore.tmpl"),
    ),
    (".gitignore", include_str!("../templates/gitignore.tmpl")),
    ("README.md", include_str!("../templates/README.md.tmpl")),
    ("src/lib.rs", include_str!("../templates/src/lib.rs.tmpl")),
    ("src/main.rs", include_str!("../templates/src/main.rs.tmpl")),
    ("src/api.rs", include_str!("../templates/src/api.rs.tmpl")),
    (
        "src/controller.rs",
        include_str!("../templates/src/controller.rs.tmpl"),
    ),
    (
        "src/manifests.rs",
        include_str!("../templates/src/manifests.rs.tmpl"),
    ),
    (
        "tests/operator.rs",
        include_str!("../templates/tests/operator.rs.tmpl"),
    ),
];

/// Writes the operator crate; answers the files written, relative to `options.dir`.
///
/// With a rein path, the checkout's `Cargo.lock` is copied in too, so the new crate builds
/// with the versions rein is tested with, offline.
pub fn new_crate(options: &NewOptions) -> Result<Vec<PathBuf>, Error> {
    let name = match &options.name {
        Some(name) => name.clone(),
        None => options
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    validate_name(&name)?;
    let rein_path = match &options.rein_path {
        Some(path) => Some(rein_checkout(path)?),
        None => None,
    };
    ensure_empty(&options.dir)?;
    let vars = Vars::new(&name, rein_path.as_deref());
    let mut written = Vec::new();
    for (path, template) in TEMPLATES {
        write(&options.dir.join(path), &vars.render(template))?;
        written.push(PathBuf::from(path));
    }
    if let Some(checkout) = &rein_path {
        let lock = checkout.join("Cargo.lock");
        if lock.is_file() {
            let target = options.dir.join("Cargo.lock");
            std::fs::copy(&lock, &target).map_err(|source| Error::Io {
                what: "copying the rein checkout's Cargo.lock to",
                path: target,
                source,
            })?;
            written.push(PathBuf::from("Cargo.lock"));
        }
    }
    Ok(written)
}

/// Checks a package name: what cargo accepts, kept to lowercase so it also makes a valid
/// Kubernetes name and API group.
pub fn validate_name(name: &str) -> Result<(), Error> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name.len() <= 63
        && !name.ends_with(['-', '_']);
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidName {
            name: name.to_owned(),
        })
    }
}

/// The substitutions of one crate.
#[derive(Debug)]
struct Vars {
    pairs: Vec<(&'static str, String)>,
}

impl Vars {
    fn new(name: &str, rein_path: Option<&Path>) -> Vars {
        let dns = name.replace('_', "-");
        let (rein, testenv) = match rein_path {
            Some(root) => (
                dependency(
                    "rein",
                    &format!(
                        "{{ path = {:?} }}",
                        root.join("crates/rein").display().to_string()
                    ),
                ),
                dependency(
                    "rein-testenv",
                    &format!(
                        "{{ path = {:?} }}",
                        root.join("crates/rein-testenv").display().to_string()
                    ),
                ),
            ),
            None => (
                dependency("rein", "\"0.1\""),
                dependency("rein-testenv", "\"0.1\""),
            ),
        };
        Vars {
            pairs: vec![
                ("{{name}}", dns.clone()),
                ("{{ident}}", name.replace('-', "_")),
                ("{{group}}", format!("{dns}.example.com")),
                ("{{rein_dependency}}", rein),
                ("{{rein_testenv_dependency}}", testenv),
            ],
        }
    }

    fn render(&self, template: &str) -> String {
        self.pairs
            .iter()
            .fold(template.to_owned(), |text, (key, value)| {
                text.replace(key, value)
            })
    }
}

fn dependency(name: &str, spec: &str) -> String {
    format!("{name} = {spec}")
}

/// The checkout's root, made absolute, if it holds `crates/rein`.
fn rein_checkout(path: &Path) -> Result<PathBuf, Error> {
    let root = std::path::absolute(path).map_err(|source| Error::Io {
        what: "resolving",
        path: path.to_path_buf(),
        source,
    })?;
    if root.join("crates/rein/Cargo.toml").is_file() {
        Ok(root)
    } else {
        Err(Error::NotAReinCheckout {
            path: path.to_path_buf(),
        })
    }
}

fn ensure_empty(dir: &Path) -> Result<(), Error> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            Some(_) => Err(Error::DirectoryNotEmpty {
                dir: dir.to_path_buf(),
            }),
            None => Ok(()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io {
            what: "reading",
            path: dir.to_path_buf(),
            source,
        }),
    }
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| Error::Io {
            what: "creating",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(path, text).map_err(|source| Error::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("cargo-rein-unit-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn names_are_checked() {
        for good in ["op", "backup-operator", "a1_b2"] {
            validate_name(good).unwrap();
        }
        for bad in ["", "Op", "1op", "op-", "op.x", "op op", "über"] {
            assert!(
                matches!(validate_name(bad), Err(Error::InvalidName { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_placeholder_is_substituted() {
        let vars = Vars::new("my_op", Some(Path::new("/src/rein")));
        for (path, template) in TEMPLATES {
            let text = vars.render(template);
            assert!(!text.contains("{{"), "{path} keeps a placeholder");
        }
        let manifest = vars.render(TEMPLATES[0].1);
        assert!(manifest.contains("name = \"my-op\""), "{manifest}");
        assert!(
            manifest.contains("rein = { path = \"/src/rein/crates/rein\" }"),
            "{manifest}"
        );
        let api = vars.render(include_str!("../templates/src/api.rs.tmpl"));
        assert!(api.contains("group = \"my-op.example.com\""));
        let main = vars.render(include_str!("../templates/src/main.rs.tmpl"));
        assert!(main.contains("use my_op::RunOptions;"));
    }

    #[test]
    fn without_a_path_the_published_crates_are_named() {
        let manifest = Vars::new("op", None).render(TEMPLATES[0].1);
        assert!(manifest.contains("rein = \"0.1\"") && manifest.contains("rein-testenv = \"0.1\""));
        // rein-testenv is a dev-dependency: out of the operator's own build.
        let dev = manifest.split("[dev-dependencies]").nth(1).unwrap();
        assert!(dev.contains("rein-testenv"));
        assert!(
            !manifest
                .split("[dev-dependencies]")
                .next()
                .unwrap()
                .contains("rein-testenv")
        );
    }

    #[test]
    fn writes_the_crate_and_refuses_a_full_directory_or_a_bad_checkout() {
        let dir = temp_dir("new");
        let options = NewOptions {
            dir: dir.clone(),
            name: Some("op".into()),
            rein_path: None,
        };
        let written = new_crate(&options).unwrap();
        assert!(written.contains(&PathBuf::from("src/controller.rs")));
        assert!(dir.join("tests/operator.rs").is_file() && dir.join("Dockerfile").is_file());
        assert!(matches!(
            new_crate(&options),
            Err(Error::DirectoryNotEmpty { .. })
        ));
        let bad = NewOptions {
            dir: temp_dir("bad"),
            name: None,
            rein_path: Some(dir.clone()),
        };
        assert!(matches!(
            new_crate(&bad),
            Err(Error::NotAReinCheckout { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The dependency names of the `[dependencies]` and `[dev-dependencies]` tables of a
    /// Cargo.toml text, in order.
    fn dependency_names(toml: &str) -> (Vec<String>, Vec<String>) {
        let (mut normal, mut dev) = (Vec::new(), Vec::new());
        let mut table = "";
        for line in toml.lines().map(str::trim) {
            if line.starts_with('[') {
                table = match line {
                    "[dependencies]" => "normal",
                    "[dev-dependencies]" => "dev",
                    _ => "",
                };
            } else if let Some((name, _)) = line.split_once('=')
                && !line.starts_with('#')
            {
                let name = name.trim().to_owned();
                match table {
                    "normal" => normal.push(name),
                    "dev" => dev.push(name),
                    _ => {}
                }
            }
        }
        (normal, dev)
    }

    /// The dependency list `rein`'s crate docs give an operator is the one `cargo rein new`
    /// writes, which the end-to-end test builds and tests: the docs cannot drift from a
    /// Cargo.toml that works.
    #[test]
    fn the_dependency_list_rein_documents_is_the_one_the_scaffold_builds() {
        let docs = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../rein/src/lib.rs"),
        )
        .unwrap();
        let block: String = docs
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .map(str::trim_start)
            .skip_while(|l| *l != "```toml")
            .skip(1)
            .take_while(|l| *l != "```")
            .map(|l| format!("{l}\n"))
            .collect();
        let template = Vars::new("op", None).render(include_str!("../templates/Cargo.toml.tmpl"));
        let (doc_normal, doc_dev) = dependency_names(&block);
        let (normal, dev) = dependency_names(&template);
        // tracing and tracing-subscriber are the scaffold's choice of logging, not rein's need.
        let needed: Vec<String> = normal
            .into_iter()
            .filter(|n| !n.starts_with("tracing"))
            .collect();
        assert_eq!(doc_normal, needed, "rein's docs list:\n{block}");
        assert_eq!(doc_dev, dev);
    }
}
