//! A stored object in compact form: its JSON exactly as served, one allocation shared by the
//! store, the watch history, every watcher and every list response, plus a small summary of
//! the fields selectors and the store's indexes read. The full `serde_json::Value` is decoded
//! only when a request needs it (writes, patches, tables, conversion).
//!
//! A `Value` costs several times its JSON (a map of one entry is a whole B-tree node), and
//! managedFields are mostly such maps: a realistic Pod of 9 KB of JSON took over 50 KB as a
//! `Value`.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::ObjKey;
use crate::resources::ResKey;
use crate::selectors::FieldLabels;

/// One stored object.
#[derive(Debug)]
pub(crate) struct Stored {
    /// The object serialised (`serde_json::to_vec`, keys in order).
    json: Bytes,
    /// `apiVersion`, `metadata.name`, `namespace`, `uid`, `labels`, the uids of
    /// `metadata.ownerReferences`, and the fields a built-in resource's field selectors read.
    summary: Value,
}

impl Stored {
    /// Encodes `obj`, a `res` object, for storing.
    pub(crate) fn new(res: &ResKey, obj: &Value) -> Stored {
        Stored {
            json: Bytes::from(serde_json::to_vec(obj).unwrap_or_default()),
            summary: summarize(res, obj),
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

    /// The summary: enough of the object for label selectors, the field selectors of a
    /// built-in resource, and the uid and owner indexes (not for anything served).
    pub(crate) fn summary(&self) -> &Value {
        &self.summary
    }

    /// `apiVersion`.
    pub(crate) fn api_version(&self) -> &str {
        self.summary
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// (namespace, name).
    pub(crate) fn key(&self) -> ObjKey {
        super::object_key(&self.summary)
    }
}

/// The summary [`Stored::summary`] describes.
fn summarize(res: &ResKey, obj: &Value) -> Value {
    let mut out = Map::new();
    if let Some(v) = obj.get("apiVersion") {
        out.insert("apiVersion".to_string(), v.clone());
    }
    let mut meta = Map::new();
    if let Some(m) = obj.get("metadata") {
        for field in ["name", "namespace", "uid", "labels"] {
            if let Some(v) = m.get(field) {
                meta.insert(field.to_string(), v.clone());
            }
        }
        if let Some(refs) = m.get("ownerReferences").and_then(Value::as_array) {
            let uids = refs
                .iter()
                .map(|r| {
                    let mut only = Map::new();
                    if let Some(uid) = r.get("uid") {
                        only.insert("uid".to_string(), uid.clone());
                    }
                    Value::Object(only)
                })
                .collect();
            meta.insert("ownerReferences".to_string(), Value::Array(uids));
        }
    }
    out.insert("metadata".to_string(), Value::Object(meta));
    let mut summary = Value::Object(out);
    for path in FieldLabels::builtin_paths(&res.group, &res.plural) {
        if let Some(v) = lookup(obj, &path) {
            place(&mut summary, &path, v.clone());
        }
    }
    summary
}

fn lookup<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(obj, |cur, part| cur.get(part))
}

/// Sets the dotted `path` in `summary` to `value`, creating objects on the way (a path
/// through a non-object is left alone, as it was absent in the object too).
fn place(summary: &mut Value, path: &str, value: Value) {
    let mut cur = summary;
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
