//! Label selectors (equality- and set-based) and field selectors, parsed from list and watch
//! query parameters and matched against stored JSON objects.

use serde_json::Value;

use crate::status::ApiError;

mod labels;

pub(crate) use labels::LabelSelector;

/// Where a field label's value comes from in a stored object: kube-apiserver matches field
/// selectors against a per-kind set of fields built from the typed object (the registry
/// strategy's `ToSelectableFields`), so a missing field reads as its Go zero value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// A dotted path, and the value when the field is missing (`""`, `"false"`, `"0"`).
    Path(String, &'static str),
    /// Pods' `status.podIP`: the first of `status.podIPs`, else `status.podIP`.
    PodIp,
    /// core/v1 Events' `source`: `source.component`, else `reportingComponent`.
    EventOrigin,
    /// A label kube-apiserver accepts but never fills in (Pods' `status.podIPs`): always empty.
    Unset,
}

impl Source {
    fn path(path: &str) -> Source {
        Source::Path(path.to_string(), "")
    }

    fn value(&self, obj: &Value) -> String {
        match self {
            Source::Path(path, default) => {
                field_value(obj, path).unwrap_or_else(|| (*default).to_string())
            }
            Source::PodIp => obj
                .pointer("/status/podIPs/0/ip")
                .and_then(Value::as_str)
                .or_else(|| obj.pointer("/status/podIP").and_then(Value::as_str))
                .unwrap_or_default()
                .to_string(),
            Source::EventOrigin => field_value(obj, "source.component")
                .filter(|s| !s.is_empty())
                .or_else(|| field_value(obj, "reportingComponent"))
                .unwrap_or_default(),
            Source::Unset => String::new(),
        }
    }
}

/// How kube-apiserver words the refusal of a field label the kind does not support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// `field label not supported: <label>`: the kinds with their own conversion function
    /// and custom resources.
    NotSupported,
    /// `"<label>" is not a known field selector: only "metadata.name", "metadata.namespace"`:
    /// the kinds without one (apimachinery's `DefaultMetaV1FieldSelectorConversion`).
    NotKnown,
    /// `field label "<label>" not supported for batchv1.Job`.
    Job,
}

/// The field labels one resource accepts (kube-apiserver's field label conversion function
/// for the kind, or a CRD's `selectableFields`) and where each one's value comes from.
#[derive(Debug, Clone)]
pub(crate) struct FieldLabels {
    labels: Vec<(String, Source)>,
    refusal: Refusal,
}

impl FieldLabels {
    /// The labels of a built-in resource, from kube-apiserver's field label conversion
    /// functions (`pkg/apis/*/*/conversion.go`) and selectable field sets
    /// (`pkg/registry/*/*/strategy.go`).
    pub(crate) fn builtin(group: &str, plural: &str) -> FieldLabels {
        let mut labels = FieldLabels {
            labels: vec![("metadata.name".to_string(), Source::path("metadata.name"))],
            refusal: Refusal::NotSupported,
        };
        let namespace = |l: &mut FieldLabels| l.plain(&["metadata.namespace"]);
        match (group, plural) {
            ("", "pods") => {
                namespace(&mut labels);
                labels.plain(&[
                    "spec.nodeName",
                    "spec.restartPolicy",
                    "spec.schedulerName",
                    "spec.serviceAccountName",
                    "status.phase",
                    "status.nominatedNodeName",
                ]);
                labels.add(
                    "spec.hostNetwork",
                    Source::Path("spec.hostNetwork".into(), "false"),
                );
                labels.add("status.podIP", Source::PodIp);
                labels.add("status.podIPs", Source::Unset);
                // The spelling of old v1 clients, converted to `spec.nodeName`.
                labels.add("spec.host", Source::path("spec.nodeName"));
            }
            ("", "nodes") => {
                labels.add(
                    "spec.unschedulable",
                    Source::Path("spec.unschedulable".into(), "false"),
                );
            }
            ("", "namespaces") => labels.plain(&["status.phase"]),
            ("", "secrets") => {
                namespace(&mut labels);
                labels.plain(&["type"]);
            }
            ("", "services") => {
                namespace(&mut labels);
                labels.plain(&["spec.clusterIP", "spec.type"]);
            }
            ("", "replicationcontrollers") | ("apps", "replicasets") => {
                namespace(&mut labels);
                labels.add(
                    "status.replicas",
                    Source::Path("status.replicas".into(), "0"),
                );
            }
            ("", "events") => {
                namespace(&mut labels);
                labels.plain(&[
                    "involvedObject.kind",
                    "involvedObject.namespace",
                    "involvedObject.name",
                    "involvedObject.uid",
                    "involvedObject.apiVersion",
                    "involvedObject.resourceVersion",
                    "involvedObject.fieldPath",
                    "reason",
                    "reportingComponent",
                    "type",
                ]);
                labels.add("source", Source::EventOrigin);
            }
            ("events.k8s.io", "events") => {
                // The events.k8s.io names of the core Event's fields: the objects are stored
                // as core Events, so each reads the core field.
                namespace(&mut labels);
                for field in [
                    "kind",
                    "namespace",
                    "name",
                    "uid",
                    "apiVersion",
                    "resourceVersion",
                    "fieldPath",
                ] {
                    labels.add(
                        &format!("regarding.{field}"),
                        Source::path(&format!("involvedObject.{field}")),
                    );
                }
                labels.plain(&["reason", "type"]);
                labels.add("reportingController", Source::path("reportingComponent"));
            }
            ("batch", "jobs") => {
                namespace(&mut labels);
                labels.add(
                    "status.successful",
                    Source::Path("status.succeeded".into(), "0"),
                );
                labels.refusal = Refusal::Job;
            }
            ("certificates.k8s.io", "certificatesigningrequests" | "clustertrustbundles") => {
                labels.plain(&["spec.signerName"]);
            }
            ("resource.k8s.io", "resourceslices") => {
                labels.plain(&["spec.nodeName", "spec.driver"]);
            }
            _ => {
                namespace(&mut labels);
                labels.refusal = Refusal::NotKnown;
            }
        }
        labels
    }

    /// The labels of a custom resource: `metadata.name`, `metadata.namespace` when it is
    /// namespaced, and the `selectableFields` the CRD declares for `version`.
    pub(crate) fn custom(namespaced: bool, crd: Option<&Value>, version: &str) -> FieldLabels {
        let mut labels = FieldLabels {
            labels: vec![("metadata.name".to_string(), Source::path("metadata.name"))],
            refusal: Refusal::NotSupported,
        };
        if namespaced {
            labels.plain(&["metadata.namespace"]);
        }
        let selectable = crd
            .and_then(|c| c.pointer("/spec/versions"))
            .and_then(Value::as_array)
            .and_then(|vs| {
                vs.iter()
                    .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
            })
            .and_then(|v| v.get("selectableFields"))
            .and_then(Value::as_array);
        for field in selectable.into_iter().flatten() {
            if let Some(path) = field.get("jsonPath").and_then(Value::as_str) {
                let path = path.trim_start_matches('.');
                if !path.is_empty() {
                    labels.add(path, Source::path(path));
                }
            }
        }
        labels
    }

    /// The dotted paths of the object fields a field selector of a built-in resource may read
    /// (kept with each stored object, so lists and watches select without decoding it).
    /// Nothing here for custom resources: their selectable fields come from the CRD.
    pub(crate) fn builtin_paths(group: &str, plural: &str) -> Vec<String> {
        let mut paths = Vec::new();
        for (_, source) in FieldLabels::builtin(group, plural).labels {
            match source {
                Source::Path(path, _) => paths.push(path),
                Source::PodIp => paths.extend(["status.podIPs".into(), "status.podIP".into()]),
                Source::EventOrigin => {
                    paths.extend(["source.component".into(), "reportingComponent".into()]);
                }
                Source::Unset => {}
            }
        }
        paths.sort();
        paths.dedup();
        paths
    }

    fn plain(&mut self, paths: &[&str]) {
        for path in paths {
            self.add(path, Source::path(path));
        }
    }

    fn add(&mut self, label: &str, source: Source) {
        self.labels.push((label.to_string(), source));
    }

    fn lookup(&self, label: &str) -> Result<Source, ApiError> {
        if let Some((_, source)) = self.labels.iter().find(|(l, _)| l == label) {
            return Ok(source.clone());
        }
        Err(ApiError::bad_request(match self.refusal {
            Refusal::NotSupported => format!("field label not supported: {label}"),
            Refusal::NotKnown => format!(
                "{label:?} is not a known field selector: only \"metadata.name\", \
                 \"metadata.namespace\""
            ),
            Refusal::Job => format!("field label {label:?} not supported for batchv1.Job"),
        }))
    }
}

/// A parsed `fieldSelector`: `label=value`, `label==value`, `label!=value` terms, each label
/// one the resource supports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    reqs: Vec<(Source, bool, String)>,
}

impl FieldSelector {
    /// Parses kube's field selector syntax; a label `labels` does not list answers 400
    /// BadRequest with kube-apiserver's message, for lists, watches and deletecollection alike.
    pub(crate) fn parse(s: &str, labels: &FieldLabels) -> Result<FieldSelector, ApiError> {
        // As kube's `fields.ParseSelector`: every term is split and unescaped first, then the
        // labels are looked up, so a malformed value is reported before an unknown label.
        let mut parsed = Vec::new();
        for term in split_field_terms(s) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let Some((key, eq, raw)) = split_field_term(term) else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                )));
            };
            let value = unescape_field_value(raw.trim()).map_err(ApiError::bad_request)?;
            parsed.push((key.trim(), eq, value));
        }
        let mut reqs = Vec::with_capacity(parsed.len());
        for (key, eq, value) in parsed {
            reqs.push((labels.lookup(key)?, eq, value));
        }
        Ok(FieldSelector { reqs })
    }

    /// Whether every term reads only the fields at `paths` (or `metadata.name` and
    /// `metadata.namespace`), so an object reduced to those fields matches as the whole does.
    pub(crate) fn reads_only(&self, paths: &[String]) -> bool {
        let within = |p: &str| {
            matches!(p, "metadata.name" | "metadata.namespace") || paths.iter().any(|q| q == p)
        };
        self.reqs.iter().all(|(source, _, _)| match source {
            Source::Path(path, _) => within(path),
            Source::PodIp => within("status.podIPs") && within("status.podIP"),
            Source::EventOrigin => within("source.component") && within("reportingComponent"),
            Source::Unset => true,
        })
    }

    /// Whether there are no terms (everything matches).
    pub(crate) fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Whether the object's fields satisfy every term.
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.reqs
            .iter()
            .all(|(source, eq, want)| (source.value(obj) == *want) == *eq)
    }
}

/// Splits a field selector at its commas, leaving escaped ones (`\,`) inside their term.
fn split_field_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at its first operator (`!=`, `==` or `=`, tried in that order at each
/// position, as kube does): the key, whether it is an equality, and the raw value.
fn split_field_term(term: &str) -> Option<(&str, bool, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        if let Some(value) = rest.strip_prefix("!=") {
            return Some((&term[..i], false, value));
        }
        if let Some(value) = rest.strip_prefix("==") {
            return Some((&term[..i], true, value));
        }
        if let Some(value) = rest.strip_prefix('=') {
            return Some((&term[..i], true, value));
        }
    }
    None
}

/// Undoes kube's `fields.EscapeValue`: `\\`, `\,` and `\=` stand for `\`, `,` and `=`. An
/// unknown escape, a lone trailing backslash, or a bare `,` or `=` is an error worded as
/// kube-apiserver words it (a bare character is printed as its code point, as Go's `%v` of
/// a rune does).
fn unescape_field_value(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' || c == '=' {
            return Err(format!(
                "invalid field selector: unescaped character in value: {}",
                u32::from(c)
            ));
        } else {
            out.push(c);
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// A dotted field path's value as a string (numbers and booleans printed).
fn field_value(obj: &Value, path: &str) -> Option<String> {
    let mut cur = obj;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj() -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web", "tier": "fe", "n": "3"}},
               "spec": {"nodeName": "node-1"}, "status": {"phase": "Running"}})
    }

    #[test]
    fn field_selectors() {
        let o = obj();
        let pods = FieldLabels::builtin("", "pods");
        let m = |s: &str| FieldSelector::parse(s, &pods).expect("parses").matches(&o);
        assert!(m("metadata.name=a"));
        assert!(m("spec.nodeName==node-1,status.phase!=Pending"));
        assert!(m("spec.host=node-1"), "the old spelling of spec.nodeName");
        assert!(!m("metadata.namespace=other"));
        assert!(m("spec.hostNetwork=false"), "an unset bool reads false");
        assert!(m("status.podIPs="), "accepted, never filled in");
        assert!(FieldSelector::parse("nonsense", &pods).is_err());
    }

    #[test]
    fn field_selector_values_take_kubes_escapes() {
        let o = json!({"metadata": {"name": "a", "namespace": "ns"}, "type": r"x,y=z\w"});
        let secrets = FieldLabels::builtin("", "secrets");
        let m = |s: &str| {
            FieldSelector::parse(s, &secrets)
                .expect("parses")
                .matches(&o)
        };
        assert!(m(r"type=x\,y\=z\\w"));
        assert!(m(r"type=x\,y\=z\\w,metadata.name=a"));
        assert!(!m(r"type=x\,y\=z\\w,metadata.name=b"));
        assert!(m(r"type!=x\,y"));
        let refused = |s: &str| {
            let err = FieldSelector::parse(s, &secrets).expect_err("refused");
            assert_eq!((err.code, err.reason), (400, "BadRequest"));
            err.message
        };
        assert_eq!(
            refused(r"type=x\"),
            r"invalid field selector: invalid escape sequence: \"
        );
        assert_eq!(
            refused(r"type=x\y"),
            r"invalid field selector: invalid escape sequence: \y"
        );
        assert_eq!(
            refused("type=x=y"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            refused(r"nonsense=x\q"),
            r"invalid field selector: invalid escape sequence: \q",
            "values are checked before labels are looked up"
        );
    }

    #[test]
    fn unsupported_labels_are_refused_as_kube_apiserver_words_it() {
        let refused = |labels: &FieldLabels, s: &str| {
            let err = FieldSelector::parse(s, labels).expect_err("refused");
            assert_eq!((err.code, err.reason), (400, "BadRequest"));
            err.message
        };
        assert_eq!(
            refused(&FieldLabels::builtin("", "pods"), "spec.missing="),
            "field label not supported: spec.missing"
        );
        assert_eq!(
            refused(&FieldLabels::builtin("", "configmaps"), "data.x=1"),
            "\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert_eq!(
            refused(&FieldLabels::builtin("batch", "jobs"), "status.succeeded=1"),
            "field label \"status.succeeded\" not supported for batchv1.Job"
        );
        // Cluster-scoped kinds with their own function do not take metadata.namespace.
        refused(&FieldLabels::builtin("", "nodes"), "metadata.namespace=");
        refused(
            &FieldLabels::builtin("", "namespaces"),
            "metadata.namespace=",
        );
        // events.k8s.io spells the core names differently and takes only its own.
        refused(
            &FieldLabels::builtin("events.k8s.io", "events"),
            "involvedObject.name=x",
        );
    }

    #[test]
    fn values_read_as_the_typed_object_gives_them() {
        let job = json!({"metadata": {"name": "j"}, "status": {"succeeded": 2}});
        let jobs = FieldLabels::builtin("batch", "jobs");
        let m = |labels: &FieldLabels, s: &str, o: &Value| {
            FieldSelector::parse(s, labels).expect("parses").matches(o)
        };
        assert!(m(&jobs, "status.successful=2", &job));
        assert!(m(
            &jobs,
            "status.successful=0",
            &json!({"metadata": {"name": "k"}})
        ));
        let events = FieldLabels::builtin("", "events");
        let event = json!({"metadata": {"name": "e"}, "reportingComponent": "kubelet"});
        assert!(
            m(&events, "source=kubelet", &event),
            "falls back to reportingComponent"
        );
        let event = json!({"metadata": {"name": "e"}, "source": {"component": "sched"}, "reportingComponent": "kubelet"});
        assert!(m(&events, "source=sched", &event));
        let nodes = FieldLabels::builtin("", "nodes");
        assert!(m(
            &nodes,
            "spec.unschedulable=false",
            &json!({"metadata": {"name": "n"}})
        ));
        assert!(m(
            &nodes,
            "spec.unschedulable=true",
            &json!({"spec": {"unschedulable": true}})
        ));
        let pod = json!({"status": {"podIP": "10.0.0.2", "podIPs": [{"ip": "10.0.0.1"}]}});
        assert!(m(
            &FieldLabels::builtin("", "pods"),
            "status.podIP=10.0.0.1",
            &pod
        ));
    }

    #[test]
    fn custom_resources_take_the_crd_selectable_fields_of_the_version() {
        let crd = json!({"spec": {"versions": [
            {"name": "v1", "selectableFields": [{"jsonPath": ".spec.color"}]},
            {"name": "v2", "selectableFields": [{"jsonPath": ".spec.size"}]},
        ]}});
        let v1 = FieldLabels::custom(true, Some(&crd), "v1");
        let o = json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": {"color": "red", "size": 3}});
        let m = |s: &str| FieldSelector::parse(s, &v1).expect("parses").matches(&o);
        assert!(m("spec.color=red,metadata.namespace=ns"));
        assert!(!m("spec.color!=red"));
        assert!(FieldSelector::parse("spec.size=3", &v1).is_err());
        let v2 = FieldLabels::custom(false, Some(&crd), "v2");
        assert!(
            FieldSelector::parse("spec.size=3", &v2)
                .expect("parses")
                .matches(&o)
        );
        assert!(FieldSelector::parse("metadata.namespace=ns", &v2).is_err());
    }
}
