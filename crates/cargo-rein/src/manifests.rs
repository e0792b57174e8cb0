//! The operator's manifests as cargo rein handles them: read from the JSON `List` the operator
//! prints (or from YAML files, as `cargo rein manifests` writes them), written as YAML (one
//! multi-document stream, or a directory of files in apply order).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::Error;

/// The objects the operator's `manifests` mode printed, in apply order.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifests {
    objects: Vec<Value>,
}

/// Which file of `--out DIR` an object goes to, by kind; the numbers give `kubectl apply -f
/// DIR` the order (namespaces, then CRDs, then RBAC, then the workload).
fn file_for(kind: &str) -> &'static str {
    match kind {
        "Namespace" => "00-namespace.yaml",
        "CustomResourceDefinition" => "01-crds.yaml",
        "ServiceAccount" | "ClusterRole" | "ClusterRoleBinding" | "Role" | "RoleBinding" => {
            "02-rbac.yaml"
        }
        "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => "04-webhooks.yaml",
        _ => "03-manager.yaml",
    }
}

impl Manifests {
    /// Reads a JSON `List` (or a plain array) of objects, each with `apiVersion`, `kind` and
    /// `metadata.name`.
    pub fn from_json(bytes: &[u8]) -> Result<Manifests, Error> {
        let doc: Value = serde_json::from_slice(bytes).map_err(Error::BadManifests)?;
        let items = match doc {
            Value::Array(items) => items,
            Value::Object(mut list) => match list.remove("items") {
                Some(Value::Array(items)) => items,
                _ => return Err(bad(0, "a List without items")),
            },
            _ => return Err(bad(0, "neither a List nor an array")),
        };
        Manifests::from_objects(items)
    }

    /// Checks `objects` as [`Manifests::from_json`] does and keeps them in their order.
    pub fn from_objects(objects: Vec<Value>) -> Result<Manifests, Error> {
        for (index, item) in objects.iter().enumerate() {
            for field in ["apiVersion", "kind"] {
                if !item[field].is_string() {
                    return Err(bad(index, &format!("no {field}")));
                }
            }
            if !item["metadata"]["name"].is_string() {
                return Err(bad(index, "no metadata.name"));
            }
        }
        Ok(Manifests { objects })
    }

    /// Parses a multi-document YAML stream (or JSON, which is YAML); `path` names it in errors.
    /// A document that is a `List` contributes its items.
    pub fn from_yaml(path: &Path, text: &str) -> Result<Manifests, Error> {
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(text).map_err(|source| Error::BadManifestFile {
                path: path.to_path_buf(),
                source: Box::new(source),
            })?;
        let mut objects = Vec::new();
        for doc in docs {
            match doc {
                Value::Null => {}
                Value::Object(mut list) if list.get("kind") == Some(&Value::from("List")) => {
                    if let Some(Value::Array(items)) = list.remove("items") {
                        objects.extend(items);
                    }
                }
                other => objects.push(other),
            }
        }
        Manifests::from_objects(objects)
    }

    /// Reads the manifests at `path`: one YAML (or JSON) file, or a directory of them as
    /// [`Manifests::write_dir`] writes it (its `*.yaml`, `*.yml` and `*.json` files, by name).
    pub fn read(path: &Path) -> Result<Manifests, Error> {
        fn io<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> Error + 'p {
            move |source| Error::Io {
                what,
                path: path.to_path_buf(),
                source,
            }
        }
        let files = if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(io("reading", path))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension()
                        .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
                })
                .collect();
            files.sort();
            files
        } else {
            vec![path.to_path_buf()]
        };
        let mut objects = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(io("reading", &file))?;
            objects.extend(Manifests::from_yaml(&file, &text)?.objects);
        }
        Manifests::from_objects(objects)
    }

    /// The objects, in apply order.
    pub fn objects(&self) -> &[Value] {
        &self.objects
    }

    /// The objects of `kind`.
    pub fn of_kind<'a>(&'a self, kind: &str) -> impl Iterator<Item = &'a Value> + 'a {
        let kind = kind.to_owned();
        self.objects
            .iter()
            .filter(move |o| o["kind"] == kind.as_str())
    }

    /// The operator's ServiceAccount, `(namespace, name)`: the one the Deployment runs as, or
    /// the only one.
    pub fn service_account(&self) -> Result<(String, String), Error> {
        let accounts: Vec<&Value> = self.of_kind("ServiceAccount").collect();
        let from_deployment = self.of_kind("Deployment").find_map(|d| {
            d["spec"]["template"]["spec"]["serviceAccountName"]
                .as_str()
                .map(str::to_owned)
        });
        let account = match (&from_deployment, accounts.as_slice()) {
            (Some(name), _) => accounts
                .iter()
                .find(|a| a["metadata"]["name"] == name.as_str())
                .copied(),
            (None, [only]) => Some(*only),
            _ => None,
        };
        let account = account.ok_or_else(|| bad(0, "no ServiceAccount the Deployment runs as"))?;
        let name = account["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let namespace = account["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_owned();
        Ok((namespace, name))
    }

    /// Replaces the objects of `kind` named `name` with `object`.
    pub fn replace(&mut self, object: Value) {
        let same = |o: &Value| {
            o["kind"] == object["kind"]
                && o["metadata"]["name"] == object["metadata"]["name"]
                && o["metadata"]["namespace"] == object["metadata"]["namespace"]
        };
        match self.objects.iter_mut().find(|o| same(o)) {
            Some(slot) => *slot = object,
            None => self.objects.push(object),
        }
    }

    /// All objects as one multi-document YAML stream.
    pub fn to_yaml(&self) -> Result<String, Error> {
        yaml(self.objects.iter())
    }

    /// Writes the objects to files in `dir` (created), grouped by kind in apply order; answers
    /// the files written.
    pub fn write_dir(&self, dir: &Path) -> Result<Vec<PathBuf>, Error> {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            what: "creating",
            path: dir.to_path_buf(),
            source,
        })?;
        let mut files: Vec<&'static str> = self
            .objects
            .iter()
            .map(|o| file_for(o["kind"].as_str().unwrap_or_default()))
            .collect();
        files.sort_unstable();
        files.dedup();
        let mut written = Vec::new();
        for file in files {
            let text = yaml(
                self.objects
                    .iter()
                    .filter(|o| file_for(o["kind"].as_str().unwrap_or_default()) == file),
            )?;
            let path = dir.join(file);
            std::fs::write(&path, text).map_err(|source| Error::Io {
                what: "writing",
                path: path.clone(),
                source,
            })?;
            written.push(path);
        }
        Ok(written)
    }
}

/// Objects as YAML documents, each opened with `---`.
pub fn yaml<'a>(objects: impl Iterator<Item = &'a Value>) -> Result<String, Error> {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(object).map_err(Error::Yaml)?);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

fn bad(index: usize, reason: &str) -> Error {
    Error::BadObject {
        index,
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sample() -> Manifests {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "op-system"}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op", "namespace": "op-system"}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "op", "namespace": "op-system"},
             "spec": {"template": {"spec": {"serviceAccountName": "op", "containers": []}}}},
        ]});
        Manifests::from_json(list.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn reads_a_list_and_finds_the_service_account() {
        let m = sample();
        assert_eq!(m.objects().len(), 3);
        assert_eq!(
            m.service_account().unwrap(),
            ("op-system".into(), "op".into())
        );
    }

    #[test]
    fn bad_lists_are_typed_errors() {
        assert!(matches!(
            Manifests::from_json(b"not json"),
            Err(Error::BadManifests(_))
        ));
        assert!(matches!(
            Manifests::from_json(b"{\"kind\":\"List\"}"),
            Err(Error::BadObject { .. })
        ));
        let nameless = br#"[{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}]"#;
        assert!(matches!(
            Manifests::from_json(nameless),
            Err(Error::BadObject { index: 0, .. })
        ));
    }

    #[test]
    fn yaml_reads_back_as_the_same_objects() {
        let m = sample();
        let text = m.to_yaml().unwrap();
        assert_eq!(text.matches("---\n").count(), 3);
        for (doc, object) in text.split("---\n").skip(1).zip(m.objects()) {
            let back: Value = serde_saphyr::from_str(doc).unwrap();
            assert_eq!(&back, object);
        }
    }

    #[test]
    fn yaml_streams_and_directories_read_back() {
        let m = sample();
        let path = Path::new("m.yaml");
        assert_eq!(
            Manifests::from_yaml(path, &m.to_yaml().unwrap()).unwrap(),
            m
        );
        // JSON is YAML; a List contributes its items; empty documents are skipped.
        let list = json!({"apiVersion": "v1", "kind": "List", "items": m.objects()});
        let text = format!("---\n{list}\n---\n");
        assert_eq!(Manifests::from_yaml(path, &text).unwrap(), m);

        let dir = std::env::temp_dir().join(format!("cargo-rein-read-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        m.write_dir(&dir).unwrap();
        std::fs::write(dir.join("notes.txt"), "not a manifest").unwrap();
        assert_eq!(
            Manifests::read(&dir).unwrap(),
            m,
            "files read in apply order"
        );
        assert_eq!(
            Manifests::read(&dir.join("00-namespace.yaml"))
                .unwrap()
                .objects()
                .len(),
            1
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_yaml_files_are_typed_errors() {
        let path = Path::new("bad.yaml");
        let err = Manifests::from_yaml(path, "kind: [unclosed").unwrap_err();
        assert!(
            matches!(&err, Error::BadManifestFile { path: p, .. } if p == path),
            "{err}"
        );
        let err = Manifests::from_yaml(path, "---\nkind: ConfigMap\n").unwrap_err();
        assert!(matches!(err, Error::BadObject { index: 0, .. }), "{err}");
        let err = Manifests::read(Path::new("/nonexistent/m.yaml")).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
    }

    #[test]
    fn yaml_quotes_what_would_read_back_as_another_type() {
        let tricky = json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"yes": "true", "n": "8080", "empty": "", "cron": "0 3 * * *", "null": "null",
                     "multi": "a\nb", "colon": "a: b"}}]);
        let m = Manifests::from_json(tricky.to_string().as_bytes()).unwrap();
        let back = Manifests::from_yaml(Path::new("t.yaml"), &m.to_yaml().unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn a_directory_gets_files_in_apply_order() {
        let dir = std::env::temp_dir().join(format!("cargo-rein-manifests-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let files = sample().write_dir(&dir).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["00-namespace.yaml", "02-rbac.yaml", "03-manager.yaml"]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
