//! A stored object in compact form: its JSON exactly as served, one allocation shared by the
//! store, the watch history, every watcher and every list response, plus a small typed
//! summary of what selectors and the store's indexes read. The full `serde_json::Value` is
//! decoded only when a request needs it (writes, patches, tables, conversion).
//!
//! A `Value` costs several times its JSON (a map of one entry is a whole B-tree node) and
//! managedFields are mostly such maps: a realistic Pod of 9 KB of JSON took over 50 KB as a
//! `Value`, and the store, the history and each event's cached encoding held their own.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::ObjKey;
use crate::resources::ResKey;
use crate::selectors::FieldLabels;

/// One stored object.
#[derive(Debug)]
pub(crate) struct Stored {
    /// The object serialised in canonical form (`crate::canonical`).
    json: Bytes,
    summary: Summary,
}

/// What lists, watches and the store's indexes read of an object, kept beside its JSON.
#[derive(Debug)]
pub(crate) struct Summary {
    namespace: Box<str>,
    name: Box<str>,
    api_version: Box<str>,
    uid: Option<Box<str>>,
    owner_uids: Box<[Box<str>]>,
    /// `metadata.labels` with string values, sorted by key.
    labels: Box<[(Box<str>, Box<str>)]>,
    /// The fields outside `metadata` a built-in resource's field selectors read, as a JSON
    /// object of the same shape (`None` when the object has none of them).
    fields: Option<Box<[u8]>>,
}

impl Stored {
    /// Encodes `obj`, a `res` object, for storing.
    pub(crate) fn new(res: &ResKey, obj: &Value) -> Stored {
        let mut json = crate::canonical::to_vec(obj);
        // The buffer grew by doubling: up to half of it would be kept unused for as long as
        // the object is stored.
        json.shrink_to_fit();
        Stored {
            json: Bytes::from(json),
            summary: Summary::of(res, obj),
        }
    }

    /// The object as JSON: served as is when the request's version is the stored one.
    pub(crate) fn json(&self) -> &Bytes {
        &self.json
    }

    /// The whole object, decoded.
    pub(crate) fn decode(&self) -> Value {
        // The bytes were encoded from a `Value`: decoding them back cannot fail.
        serde_json::from_slice(&self.json).unwrap_or_default()
    }

    /// The whole object, decoded, in an `Arc`.
    pub(crate) fn value(&self) -> Arc<Value> {
        Arc::new(self.decode())
    }

    /// What selectors and indexes read.
    pub(crate) fn summary(&self) -> &Summary {
        &self.summary
    }

    /// `apiVersion`.
    pub(crate) fn api_version(&self) -> &str {
        &self.summary.api_version
    }

    /// `metadata.namespace` (empty when cluster-scoped).
    pub(crate) fn namespace(&self) -> &str {
        &self.summary.namespace
    }

    /// (namespace, name), borrowed.
    pub(crate) fn key_ref(&self) -> (&str, &str) {
        (&self.summary.namespace, &self.summary.name)
    }

    /// (namespace, name).
    pub(crate) fn key(&self) -> ObjKey {
        (
            self.summary.namespace.to_string(),
            self.summary.name.to_string(),
        )
    }
}

impl Summary {
    fn of(res: &ResKey, obj: &Value) -> Summary {
        let meta = obj.get("metadata");
        let text = |field: &str| -> Option<Box<str>> {
            meta.and_then(|m| m.get(field))
                .and_then(Value::as_str)
                .map(Box::from)
        };
        let owner_uids = meta
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .filter_map(|r| r.get("uid").and_then(Value::as_str))
                    .map(Box::from)
                    .collect()
            })
            .unwrap_or_default();
        // A JSON object's keys come in order: the labels are sorted.
        let labels = meta
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|(k, v)| Some((Box::from(k.as_str()), Box::from(v.as_str()?))))
                    .collect()
            })
            .unwrap_or_default();
        let mut fields = Value::Object(Map::new());
        for path in FieldLabels::builtin_paths(&res.group, &res.plural) {
            if path.starts_with("metadata.") {
                continue;
            }
            if let Some(v) = path.split('.').try_fold(obj, |cur, part| cur.get(part)) {
                place(&mut fields, &path, v.clone());
            }
        }
        let fields = (fields.as_object().is_some_and(|f| !f.is_empty())).then(|| {
            serde_json::to_vec(&fields)
                .unwrap_or_default()
                .into_boxed_slice()
        });
        Summary {
            namespace: text("namespace").unwrap_or_default(),
            name: text("name").unwrap_or_default(),
            api_version: obj
                .get("apiVersion")
                .and_then(Value::as_str)
                .map(Box::from)
                .unwrap_or_default(),
            uid: text("uid"),
            owner_uids,
            labels,
            fields,
        }
    }

    /// `metadata.uid`.
    pub(crate) fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    /// The uids in `metadata.ownerReferences`.
    pub(crate) fn owner_uids(&self) -> impl Iterator<Item = &str> {
        self.owner_uids.iter().map(AsRef::as_ref)
    }

    /// The label `key`'s value.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .map(|i| self.labels[i].1.as_ref())
    }

    /// The object reduced to its name, namespace and the fields a built-in resource's field
    /// selectors read: built on each call, for matching a field selector.
    pub(crate) fn selectable(&self) -> Value {
        let mut out = match &self.fields {
            Some(json) => serde_json::from_slice(json).unwrap_or_default(),
            None => Value::Object(Map::new()),
        };
        if let Some(map) = out.as_object_mut() {
            let mut meta = Map::new();
            meta.insert("name".into(), Value::String(self.name.to_string()));
            meta.insert(
                "namespace".into(),
                Value::String(self.namespace.to_string()),
            );
            map.insert("metadata".into(), Value::Object(meta));
        }
        out
    }
}

/// Sets the dotted `path` in `target` to `value`, creating objects on the way.
fn place(target: &mut Value, path: &str, value: Value) {
    let mut cur = target;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        if parts.peek().is_none() {
            map.insert(part.to_string(), value);
            return;
        }
        cur = map
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}
