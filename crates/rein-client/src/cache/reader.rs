//! Answering `get` and `list` from an informer's indexer (controller-runtime's
//! `cache_reader.go`): keys, the namespace index, field indexes, label filtering, limits.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_client::Resource;
use kube_client::core::ObjectList;
use rein_informer::{IndexFunc, Indexer, NAMESPACE_INDEX};
use rein_scheme::ObjectKey;

use crate::{Error, ListOptions};

/// The value prefix meaning "in any namespace" in field indexes.
pub(crate) const ALL_NAMESPACES: &str = "__all_namespaces";

/// The index name for a field.
pub(crate) fn field_index_name(field: &str) -> String {
    format!("field:{field}")
}

/// Wraps a field extractor into an index function: each value `v` is indexed as `<ns>/<v>`
/// (namespaced objects) and `__all_namespaces/<v>`.
pub(crate) fn field_index_func<K: Resource + 'static>(extract: IndexFunc<K>) -> IndexFunc<K> {
    Arc::new(move |obj: &K| {
        let values = extract(obj);
        let ns = obj.meta().namespace.clone().filter(|ns| !ns.is_empty());
        let mut out = Vec::with_capacity(values.len() * 2);
        for v in values {
            if let Some(ns) = &ns {
                out.push(format!("{ns}/{v}"));
            }
            out.push(format!("{ALL_NAMESPACES}/{v}"));
        }
        out
    })
}

/// Describes the kind being read, for keys and error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KindRef<'a> {
    pub(crate) kind: &'a str,
    pub(crate) namespaced: bool,
}

/// One object by key: the cached object itself, shared (no copy).
pub(crate) fn get<K: Resource + Clone>(
    indexer: &Indexer<K>,
    kind: KindRef<'_>,
    key: &ObjectKey,
) -> Result<Arc<K>, Error> {
    let store_key = match (&key.namespace, kind.namespaced) {
        (Some(ns), true) => format!("{ns}/{}", key.name),
        _ => key.name.clone(),
    };
    match indexer.get_by_key(&store_key) {
        Some(obj) => Ok(obj),
        None => Err(Error::not_found(
            format!("getting {} {key} from the cache", kind.kind),
            kind.kind,
            &key.name,
        )),
    }
}

/// The objects matching the options, sorted by key: the cached objects themselves, shared.
pub(crate) fn list<K: Resource + Clone>(
    indexer: &Indexer<K>,
    kind: KindRef<'_>,
    opts: &ListOptions,
) -> Result<ObjectList<Arc<K>>, Error> {
    let action = || {
        format!(
            "listing {} in {} from the cache",
            kind.kind,
            opts.namespace.as_deref().unwrap_or("all namespaces")
        )
    };
    if opts.continue_token.is_some() {
        return Err(Error::CacheUnsupported {
            action: action(),
            problem: "the continue list option is not supported by the cache".into(),
        });
    }
    if opts.label_selector.is_nothing() {
        return Ok(crate::client::empty_list());
    }
    let namespace = opts
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty() && kind.namespaced);

    let requirements = opts.field_selector.requirements();
    let mut candidates: Vec<Arc<K>> = if let Some(first) = requirements.first() {
        let mut exact = Vec::with_capacity(requirements.len());
        for r in requirements {
            if r.operator != rein_scheme::fields::Operator::Equals {
                return Err(Error::CacheUnsupported {
                    action: action(),
                    problem: format!(
                        "non-exact field matches are not supported by the cache ({}!={})",
                        r.field, r.value
                    ),
                });
            }
            exact.push((field_index_name(&r.field), r));
        }
        let value = |v: &str| match namespace {
            Some(ns) => format!("{ns}/{v}"),
            None => format!("{ALL_NAMESPACES}/{v}"),
        };
        let mut found = indexer
            .by_index(&exact[0].0, &value(&first.value))
            .map_err(|_| Error::CacheUnsupported {
                action: action(),
                problem: format!(
                    "no field index named {:?} (add one with Cache::index_field)",
                    first.field
                ),
            })?;
        // Further requirements: look each candidate up in the other indexes.
        for (index, r) in exact.iter().skip(1) {
            let keys = indexer.index_keys(index, &value(&r.value)).map_err(|_| {
                Error::CacheUnsupported {
                    action: action(),
                    problem: format!(
                        "no field index named {:?} (add one with Cache::index_field)",
                        r.field
                    ),
                }
            })?;
            found.retain(|o| keys.binary_search(&indexer.key_of(o)).is_ok());
        }
        found
    } else if let Some(ns) = namespace {
        match indexer.by_index(NAMESPACE_INDEX, ns) {
            Ok(found) => found,
            Err(_) => indexer
                .list()
                .into_iter()
                .filter(|o| o.meta().namespace.as_deref() == Some(ns))
                .collect(),
        }
    } else {
        indexer.list()
    };

    if !opts.label_selector.is_everything() {
        const NO_LABELS: &BTreeMap<String, String> = &BTreeMap::new();
        candidates.retain(|o| {
            let labels = o.meta().labels.as_ref().unwrap_or(NO_LABELS);
            opts.label_selector.matches(labels)
        });
    }
    let mut keyed: Vec<(String, Arc<K>)> = candidates
        .into_iter()
        .map(|o| (indexer.key_of(&o), o))
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(limit) = opts.limit.filter(|l| *l > 0) {
        keyed.truncate(limit as usize);
    }
    let mut list = crate::client::empty_list::<Arc<K>>();
    list.items = keyed.into_iter().map(|(_, o)| o).collect();
    list.metadata.resource_version = indexer.last_store_sync_resource_version();
    Ok(list)
}
