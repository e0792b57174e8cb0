//! Typed listers over an informer's cache: label-selector lists and gets, optionally per namespace.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use kube_client::Resource;
use rein_scheme::labels::Selector;

use crate::{Indexer, NAMESPACE_INDEX};

fn matches<K: Resource>(selector: &Selector, obj: &K) -> bool {
    if selector.is_everything() {
        return true;
    }
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    selector.matches(obj.meta().labels.as_ref().unwrap_or(&EMPTY))
}

/// Reads objects of one kind from an informer's cache (client-go's generated listers).
pub struct Lister<K> {
    indexer: Indexer<K>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            indexer: self.indexer.clone(),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("indexer", &self.indexer)
            .finish()
    }
}

impl<K: Resource> Lister<K> {
    /// A lister over `indexer`.
    pub fn new(indexer: Indexer<K>) -> Self {
        Lister { indexer }
    }

    /// Every cached object matching `selector`, across all namespaces.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        if selector.is_nothing() {
            return Vec::new();
        }
        let mut all = self.indexer.list();
        all.retain(|o| matches(selector, o.as_ref()));
        all
    }

    /// The object `namespace/name` (use `""` as namespace for cluster-scoped objects).
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        if namespace.is_empty() {
            self.indexer.get_by_key(name)
        } else {
            self.indexer.get_by_key(&format!("{namespace}/{name}"))
        }
    }

    /// A lister restricted to one namespace.
    pub fn namespaced(&self, namespace: &str) -> NamespacedLister<K> {
        NamespacedLister {
            indexer: self.indexer.clone(),
            namespace: namespace.to_string(),
        }
    }
}

/// A [`Lister`] restricted to one namespace.
pub struct NamespacedLister<K> {
    indexer: Indexer<K>,
    namespace: String,
}

impl<K> fmt::Debug for NamespacedLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespacedLister")
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K: Resource> NamespacedLister<K> {
    /// Objects in this namespace matching `selector` (through the namespace index when present).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        if selector.is_nothing() {
            return Vec::new();
        }
        let mut objs = match self.indexer.by_index(NAMESPACE_INDEX, &self.namespace) {
            Ok(objs) => objs,
            Err(_) => {
                let mut all = self.indexer.list();
                all.retain(|o| o.meta().namespace.as_deref() == Some(self.namespace.as_str()));
                all
            }
        };
        objs.retain(|o| matches(selector, o.as_ref()));
        objs
    }

    /// The object with `name` in this namespace.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.indexer
            .get_by_key(&format!("{}/{}", self.namespace, name))
    }
}
