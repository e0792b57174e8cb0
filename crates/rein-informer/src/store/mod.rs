//! The thread-safe store and indexer (client-go's `ThreadSafeStore` + `Indexer`): objects held as `Arc<K>`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use kube_client::Resource;
use parking_lot::RwLock;

use crate::{Error, meta_namespace_key};

#[cfg(test)]
mod tests;

/// The name of the built-in namespace index.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Computes the values an object is indexed under (zero, one or many).
pub type IndexFunc<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// Computes an object's store key.
pub type KeyFunc<K> = Arc<dyn Fn(&K) -> String + Send + Sync>;

/// Named index functions.
pub type Indexers<K> = HashMap<String, IndexFunc<K>>;

/// The namespace index function: `[namespace]`, or nothing for cluster-scoped objects.
pub fn namespace_index_func<K: Resource>(obj: &K) -> Vec<String> {
    match obj.meta().namespace.as_deref() {
        Some(ns) if !ns.is_empty() => vec![ns.to_string()],
        _ => Vec::new(),
    }
}

/// Internal maps use foldhash: keys are short strings and hashing dominates inserts.
pub(crate) type FastMap<K, V> = foldhash::HashMap<K, V>;

/// value → (key → object): lookups clone `Arc`s straight out of the set.
type Index<K> = FastMap<String, FastMap<Arc<str>, Arc<K>>>;

struct State<K> {
    items: FastMap<Arc<str>, Arc<K>>,
    indexers: Indexers<K>,
    indices: FastMap<String, Index<K>>,
    last_resource_version: Option<String>,
}

/// A thread-safe, indexed object cache. Cheap to clone (a shared handle).
///
/// Reads hand out `Arc<K>` clones and never copy objects; callers must treat objects as
/// immutable. Index functions are infallible (unlike client-go, which panics on an index error).
pub struct Indexer<K> {
    state: Arc<RwLock<State<K>>>,
    key_fn: KeyFunc<K>,
}

impl<K> Clone for Indexer<K> {
    fn clone(&self) -> Self {
        Indexer {
            state: self.state.clone(),
            key_fn: self.key_fn.clone(),
        }
    }
}

impl<K> fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.read();
        f.debug_struct("Indexer")
            .field("len", &state.items.len())
            .field("indexers", &state.indexers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> Default for Indexer<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Resource + Send + Sync + 'static> Indexer<K> {
    /// An indexer keyed by `namespace/name` with the namespace index installed.
    pub fn new() -> Self {
        let mut indexers: Indexers<K> = HashMap::new();
        indexers.insert(
            NAMESPACE_INDEX.to_string(),
            Arc::new(|o: &K| namespace_index_func(o)),
        );
        Self::with_key_func(Arc::new(|o: &K| meta_namespace_key(o)), indexers)
    }

    /// An indexer with the namespace index plus `indexers` (which may replace it).
    pub fn with_indexers(indexers: Indexers<K>) -> Self {
        let idx = Self::new();
        {
            let mut st = idx.state.write();
            for (name, f) in indexers {
                st.indices.insert(name.clone(), Index::default());
                st.indexers.insert(name, f);
            }
        }
        idx
    }
}

impl<K> Indexer<K> {
    /// A store with a custom key function and no indexes except those given.
    pub fn with_key_func(key_fn: KeyFunc<K>, indexers: Indexers<K>) -> Self {
        let indices = indexers
            .keys()
            .map(|n| (n.clone(), Index::default()))
            .collect();
        Indexer {
            state: Arc::new(RwLock::new(State {
                items: FastMap::default(),
                indexers,
                indices,
                last_resource_version: None,
            })),
            key_fn,
        }
    }

    /// The key of `obj` under this store's key function.
    pub fn key_of(&self, obj: &K) -> String {
        (self.key_fn)(obj)
    }

    /// Inserts or replaces an object.
    pub fn add(&self, obj: Arc<K>) {
        self.upsert(obj);
    }

    /// Inserts or replaces an object (identical to [`Indexer::add`] at the storage level).
    pub fn update(&self, obj: Arc<K>) {
        self.upsert(obj);
    }

    /// Inserts or replaces an object, returning the previous value under its key.
    pub fn upsert(&self, obj: Arc<K>) -> Option<Arc<K>> {
        let key: Arc<str> = Arc::from(self.key_of(&obj));
        let mut st = self.state.write();
        let old = st.items.insert(key.clone(), obj.clone());
        st.update_indices(old.as_deref(), Some(&obj), &key);
        old
    }

    /// Removes the object with `obj`'s key; no error if absent.
    pub fn delete(&self, obj: &K) -> Option<Arc<K>> {
        let key = self.key_of(obj);
        self.delete_by_key(&key)
    }

    /// Removes the object stored under `key`, returning it.
    pub fn delete_by_key(&self, key: &str) -> Option<Arc<K>> {
        let mut st = self.state.write();
        let (k, old) = st.items.remove_entry(key)?;
        st.update_indices(Some(&old), None, &k);
        Some(old)
    }

    /// The stored object with `obj`'s key.
    pub fn get(&self, obj: &K) -> Option<Arc<K>> {
        self.get_by_key(&self.key_of(obj))
    }

    /// The stored object under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.state.read().items.get(key).cloned()
    }

    /// True if an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.state.read().items.contains_key(key)
    }

    /// Every stored object (unspecified order).
    pub fn list(&self) -> Vec<Arc<K>> {
        self.state.read().items.values().cloned().collect()
    }

    /// Every stored key (unspecified order).
    pub fn list_keys(&self) -> Vec<String> {
        self.state
            .read()
            .items
            .keys()
            .map(|k| k.to_string())
            .collect()
    }

    /// Number of stored objects.
    pub fn len(&self) -> usize {
        self.state.read().items.len()
    }

    /// True if nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces the whole contents atomically and rebuilds every index.
    pub fn replace(&self, objects: Vec<Arc<K>>, resource_version: String) {
        drop(self.replace_returning_old(objects, resource_version));
    }

    /// Replaces the whole contents, returning the previous contents by key.
    pub(crate) fn replace_returning_old(
        &self,
        objects: Vec<Arc<K>>,
        resource_version: String,
    ) -> FastMap<Arc<str>, Arc<K>> {
        let keyed: Vec<(Arc<str>, Arc<K>)> = objects
            .into_iter()
            .map(|o| (Arc::from(self.key_of(&o)), o))
            .collect();
        self.replace_keyed(keyed, resource_version)
    }

    /// Replaces the whole contents with pre-keyed objects, returning the previous contents.
    pub(crate) fn replace_keyed(
        &self,
        objects: impl IntoIterator<Item = (Arc<str>, Arc<K>)>,
        resource_version: String,
    ) -> FastMap<Arc<str>, Arc<K>> {
        let items: FastMap<Arc<str>, Arc<K>> = objects.into_iter().collect();
        let mut st = self.state.write();
        let old = std::mem::replace(&mut st.items, items);
        st.rebuild_indices();
        st.last_resource_version = Some(resource_version);
        old
    }

    /// Records a bookmark's resource version.
    pub fn bookmark(&self, resource_version: String) {
        self.state.write().last_resource_version = Some(resource_version);
    }

    /// The resource version of the last replace or bookmark, if any.
    pub fn last_store_sync_resource_version(&self) -> Option<String> {
        self.state.read().last_resource_version.clone()
    }

    /// Objects sharing any index value with `obj` under index `index_name` (deduplicated).
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, Error> {
        let st = self.state.read();
        let f = st.indexer(index_name)?;
        let index = &st.indices[index_name];
        let values = f(obj);
        let mut found: FastMap<&Arc<str>, &Arc<K>> = FastMap::default();
        for v in &values {
            if let Some(set) = index.get(v) {
                found.extend(set.iter());
            }
        }
        Ok(found.into_values().cloned().collect())
    }

    /// Objects whose index values under `index_name` include `value`.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, Error> {
        let st = self.state.read();
        st.indexer(index_name)?;
        let Some(set) = st.indices[index_name].get(value) else {
            return Ok(Vec::new());
        };
        Ok(set.values().cloned().collect())
    }

    /// Keys of the objects indexed under `value`, sorted.
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>, Error> {
        let st = self.state.read();
        st.indexer(index_name)?;
        let mut keys: Vec<String> = st.indices[index_name]
            .get(value)
            .map(|s| s.keys().map(|k| k.to_string()).collect())
            .unwrap_or_default();
        keys.sort();
        Ok(keys)
    }

    /// Every value currently present in index `index_name` (empty for an unknown index).
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        self.state
            .read()
            .indices
            .get(index_name)
            .map(|i| i.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The names of the installed indexes.
    pub fn indexer_names(&self) -> Vec<String> {
        self.state.read().indexers.keys().cloned().collect()
    }

    /// Installs more indexes and indexes the current contents (allowed at any time).
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), Error> {
        let mut st = self.state.write();
        if let Some(name) = indexers.keys().find(|n| st.indexers.contains_key(*n)) {
            return Err(Error::IndexerConflict { name: name.clone() });
        }
        for (name, f) in indexers {
            let index = build_index(&st.items, &f);
            st.indices.insert(name.clone(), index);
            st.indexers.insert(name, f);
        }
        Ok(())
    }
}

impl<K> State<K> {
    fn indexer(&self, name: &str) -> Result<&IndexFunc<K>, Error> {
        self.indexers
            .get(name)
            .ok_or_else(|| Error::UnknownIndex { name: name.into() })
    }

    fn rebuild_indices(&mut self) {
        for (name, f) in &self.indexers {
            let index = build_index(&self.items, f);
            self.indices.insert(name.clone(), index);
        }
    }

    fn update_indices(&mut self, old: Option<&K>, new: Option<&Arc<K>>, key: &Arc<str>) {
        for (name, f) in &self.indexers {
            let old_values = old.map(|o| f(o)).unwrap_or_default();
            let new_values = new.map(|n| f(n)).unwrap_or_default();
            let Some(index) = self.indices.get_mut(name) else {
                continue;
            };
            if let (Some(new), [o], [n]) = (new, old_values.as_slice(), new_values.as_slice())
                && o == n
            {
                if let Some(set) = index.get_mut(n) {
                    set.insert(key.clone(), new.clone());
                }
                continue;
            }
            for v in &old_values {
                if let Some(set) = index.get_mut(v) {
                    set.remove(key);
                    if set.is_empty() {
                        index.remove(v);
                    }
                }
            }
            if let Some(new) = new {
                for v in new_values {
                    index.entry(v).or_default().insert(key.clone(), new.clone());
                }
            }
        }
    }
}

fn build_index<K>(items: &FastMap<Arc<str>, Arc<K>>, f: &IndexFunc<K>) -> Index<K> {
    let mut index = Index::default();
    for (key, obj) in items {
        for v in f(obj) {
            index.entry(v).or_default().insert(key.clone(), obj.clone());
        }
    }
    index
}
