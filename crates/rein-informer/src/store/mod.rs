//! The thread-safe store and indexer (client-go's `ThreadSafeStore` + `Indexer`): objects held as `Arc<K>`,
//! or, opted into per informer, as JSON bytes decoded on read (`compact/`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use kube_client::Resource;
use parking_lot::RwLock;

use crate::Error;
use crate::key::KeyMaker;

mod compact;
#[cfg(test)]
mod tests;

use compact::CompactStore;
pub use compact::{CompactOptions, StoreKind};

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

/// An index function as stored: the built-in namespace index reads the value straight out of
/// the object (no allocation per write); others are the caller's [`IndexFunc`].
enum IndexFn<K> {
    Namespace(fn(&K) -> Option<&str>),
    Custom(IndexFunc<K>),
}

impl<K> IndexFn<K> {
    fn values<'a>(&self, obj: &'a K) -> Values<'a> {
        match self {
            IndexFn::Namespace(f) => Values::Borrowed(f(obj)),
            IndexFn::Custom(f) => Values::Owned(f(obj)),
        }
    }
}

/// The values one object is indexed under.
enum Values<'a> {
    Borrowed(Option<&'a str>),
    Owned(Vec<String>),
}

impl Values<'_> {
    fn iter(&self) -> impl Iterator<Item = &str> {
        let (one, many): (Option<&str>, &[String]) = match self {
            Values::Borrowed(v) => (*v, &[]),
            Values::Owned(v) => (None, v.as_slice()),
        };
        one.into_iter().chain(many.iter().map(String::as_str))
    }

    fn contains(&self, value: &str) -> bool {
        match self {
            Values::Borrowed(v) => *v == Some(value),
            Values::Owned(v) => v.iter().any(|x| x == value),
        }
    }
}

fn namespace_of<K: Resource>(obj: &K) -> Option<&str> {
    obj.meta().namespace.as_deref().filter(|ns| !ns.is_empty())
}

/// One named index: its function and its contents.
struct NamedIndex<K> {
    name: String,
    func: IndexFn<K>,
    index: Index<K>,
}

struct State<K> {
    items: FastMap<Arc<str>, Arc<K>>,
    indexes: Vec<NamedIndex<K>>,
    last_resource_version: Option<String>,
}

/// A thread-safe, indexed object cache. Cheap to clone (a shared handle).
///
/// Reads hand out `Arc<K>` clones and never copy objects; callers must treat objects as
/// immutable. Index functions are infallible (unlike client-go, which panics on an index error).
/// [`Indexer::compact`] builds one that keeps objects as JSON instead and decodes them on read.
pub struct Indexer<K> {
    state: Arc<RwLock<State<K>>>,
    key_maker: KeyMaker<K>,
    /// An object's resourceVersion, which every add, update and delete records as the last
    /// synced one (client-go's `threadSafeMap.rv`).
    resource_version_of: fn(&K) -> Option<&str>,
    /// Set for a compact indexer: it holds the objects and indexes (`state` keeps only the
    /// last resource version).
    compact: Option<Arc<CompactStore<K>>>,
}

impl<K> Clone for Indexer<K> {
    fn clone(&self) -> Self {
        Indexer {
            state: self.state.clone(),
            key_maker: self.key_maker.clone(),
            resource_version_of: self.resource_version_of,
            compact: self.compact.clone(),
        }
    }
}

impl<K> fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(compact) = &self.compact {
            return f
                .debug_struct("Indexer")
                .field("len", &compact.len())
                .field("indexers", &compact.indexer_names())
                .field("compact", compact)
                .finish();
        }
        let state = self.state.read();
        f.debug_struct("Indexer")
            .field("len", &state.items.len())
            .field(
                "indexers",
                &state.indexes.iter().map(|i| &i.name).collect::<Vec<_>>(),
            )
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
        let idx = Self::build(KeyMaker::namespace_name());
        idx.state.write().indexes.push(NamedIndex {
            name: NAMESPACE_INDEX.to_string(),
            func: IndexFn::Namespace(namespace_of::<K>),
            index: Index::default(),
        });
        idx
    }

    /// An indexer with the namespace index plus `indexers` (which may replace it).
    pub fn with_indexers(indexers: Indexers<K>) -> Self {
        let idx = Self::new();
        {
            let mut st = idx.state.write();
            for (name, f) in indexers {
                st.indexes.retain(|i| i.name != name);
                st.indexes.push(NamedIndex {
                    name,
                    func: IndexFn::Custom(f),
                    index: Index::default(),
                });
            }
        }
        idx
    }

    /// A store with a custom key function and no indexes except those given.
    pub fn with_key_func(key_fn: KeyFunc<K>, indexers: Indexers<K>) -> Self {
        let idx = Self::build(KeyMaker::Custom(key_fn));
        idx.state.write().indexes = indexers
            .into_iter()
            .map(|(name, f)| NamedIndex {
                name,
                func: IndexFn::Custom(f),
                index: Index::default(),
            })
            .collect();
        idx
    }

    pub(crate) fn build(key_maker: KeyMaker<K>) -> Self {
        Indexer {
            state: Arc::new(RwLock::new(State {
                items: FastMap::default(),
                indexes: Vec::new(),
                last_resource_version: None,
            })),
            key_maker,
            resource_version_of: |obj| obj.meta().resource_version.as_deref(),
            compact: None,
        }
    }
}

impl<K> Indexer<K> {
    /// Records `obj`'s resourceVersion as the last synced one.
    fn record_resource_version(&self, obj: &K) {
        let rv = (self.resource_version_of)(obj)
            .unwrap_or_default()
            .to_owned();
        self.state.write().last_resource_version = Some(rv);
    }

    /// The key of `obj` under this store's key function.
    pub fn key_of(&self, obj: &K) -> String {
        self.key_maker.key(obj)
    }

    /// The key of `obj` as a shared string, built with a single allocation.
    pub(crate) fn arc_key(&self, obj: &K) -> Arc<str> {
        self.key_maker.arc_key(obj)
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
    /// Like client-go's store, every add, update and delete records the object's
    /// resourceVersion as [`last_store_sync_resource_version`](Self::last_store_sync_resource_version).
    pub fn upsert(&self, obj: Arc<K>) -> Option<Arc<K>> {
        if let Some(compact) = &self.compact {
            let old = self
                .key_maker
                .with_key(&obj, |key| compact.upsert(key, &obj));
            self.record_resource_version(&obj);
            return old;
        }
        let rv = (self.resource_version_of)(&obj)
            .unwrap_or_default()
            .to_owned();
        self.key_maker.with_key(&obj, |key| {
            let mut st = self.state.write();
            st.last_resource_version = Some(rv);
            st.upsert(key, obj.clone())
        })
    }

    /// Removes the object with `obj`'s key; no error if absent. Records `obj`'s
    /// resourceVersion as the last synced one (client-go's `DeleteWithObject`).
    pub fn delete(&self, obj: &K) -> Option<Arc<K>> {
        let old = self.key_maker.with_key(obj, |key| self.delete_by_key(key));
        self.record_resource_version(obj);
        old
    }

    /// Removes the object stored under `key`, returning it; the last synced resourceVersion
    /// stays as it is (client-go's `Delete(key)`).
    pub fn delete_by_key(&self, key: &str) -> Option<Arc<K>> {
        if let Some(compact) = &self.compact {
            return compact.delete(key);
        }
        self.state.write().delete(key)
    }

    /// The stored object with `obj`'s key.
    pub fn get(&self, obj: &K) -> Option<Arc<K>> {
        self.key_maker.with_key(obj, |key| self.get_by_key(key))
    }

    /// The stored object under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        if let Some(compact) = &self.compact {
            return compact.get(key);
        }
        self.state.read().items.get(key).cloned()
    }

    /// True if an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        if let Some(compact) = &self.compact {
            return compact.contains_key(key);
        }
        self.state.read().items.contains_key(key)
    }

    /// Every stored object (unspecified order).
    pub fn list(&self) -> Vec<Arc<K>> {
        if let Some(compact) = &self.compact {
            return compact.list();
        }
        self.state.read().items.values().cloned().collect()
    }

    /// Every stored key (unspecified order).
    pub fn list_keys(&self) -> Vec<String> {
        if let Some(compact) = &self.compact {
            return compact.list_keys();
        }
        self.state
            .read()
            .items
            .keys()
            .map(|k| k.to_string())
            .collect()
    }

    /// Number of stored objects.
    pub fn len(&self) -> usize {
        if let Some(compact) = &self.compact {
            return compact.len();
        }
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
        let keyed: Vec<(Arc<str>, Arc<K>)> =
            objects.into_iter().map(|o| (self.arc_key(&o), o)).collect();
        self.replace_keyed(keyed, resource_version)
    }

    /// Replaces the whole contents with pre-keyed objects, returning the previous contents.
    pub(crate) fn replace_keyed(
        &self,
        objects: impl IntoIterator<Item = (Arc<str>, Arc<K>)>,
        resource_version: String,
    ) -> FastMap<Arc<str>, Arc<K>> {
        if let Some(compact) = &self.compact {
            let old = compact.replace_keyed(objects);
            self.state.write().last_resource_version = Some(resource_version);
            return old;
        }
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

    /// The resourceVersion the store last saw (client-go's `LastStoreSyncResourceVersion`):
    /// of the last replace or bookmark, or of the object of the last add, update or
    /// [`delete`](Self::delete) (`Some("")` for an object without one); `None` before any.
    pub fn last_store_sync_resource_version(&self) -> Option<String> {
        self.state.read().last_resource_version.clone()
    }

    /// Objects sharing any index value with `obj` under index `index_name` (deduplicated).
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, Error> {
        if let Some(compact) = &self.compact {
            return compact.index(index_name, obj);
        }
        let st = self.state.read();
        let named = st.named(index_name)?;
        let values = named.func.values(obj);
        let mut found: FastMap<&Arc<str>, &Arc<K>> = FastMap::default();
        for v in values.iter() {
            if let Some(set) = named.index.get(v) {
                found.extend(set.iter());
            }
        }
        Ok(found.into_values().cloned().collect())
    }

    /// Objects whose index values under `index_name` include `value`.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, Error> {
        if let Some(compact) = &self.compact {
            return compact.by_index(index_name, value);
        }
        let st = self.state.read();
        let Some(set) = st.named(index_name)?.index.get(value) else {
            return Ok(Vec::new());
        };
        Ok(set.values().cloned().collect())
    }

    /// Keys of the objects indexed under `value`, sorted.
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>, Error> {
        if let Some(compact) = &self.compact {
            return compact.index_keys(index_name, value);
        }
        let st = self.state.read();
        let mut keys: Vec<String> = st
            .named(index_name)?
            .index
            .get(value)
            .map(|s| s.keys().map(|k| k.to_string()).collect())
            .unwrap_or_default();
        keys.sort();
        Ok(keys)
    }

    /// Every value currently present in index `index_name` (empty for an unknown index).
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        if let Some(compact) = &self.compact {
            return compact.list_index_func_values(index_name);
        }
        self.state
            .read()
            .named(index_name)
            .map(|i| i.index.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The names of the installed indexes.
    pub fn indexer_names(&self) -> Vec<String> {
        if let Some(compact) = &self.compact {
            return compact.indexer_names();
        }
        self.state
            .read()
            .indexes
            .iter()
            .map(|i| i.name.clone())
            .collect()
    }

    /// Installs more indexes and indexes the current contents (allowed at any time).
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), Error> {
        if let Some(compact) = &self.compact {
            return compact.add_indexers(indexers);
        }
        let mut st = self.state.write();
        if let Some(name) = indexers
            .keys()
            .find(|n| st.indexes.iter().any(|i| &i.name == *n))
        {
            return Err(Error::IndexerConflict { name: name.clone() });
        }
        for (name, f) in indexers {
            let func = IndexFn::Custom(f);
            let index = build_index(&st.items, &func);
            st.indexes.push(NamedIndex { name, func, index });
        }
        Ok(())
    }
}

impl<K> State<K> {
    fn named(&self, name: &str) -> Result<&NamedIndex<K>, Error> {
        self.indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| Error::UnknownIndex { name: name.into() })
    }

    fn upsert(&mut self, key: &str, obj: Arc<K>) -> Option<Arc<K>> {
        // One hash lookup by borrowed key; the key is allocated only for a new object.
        let (key, old) = match self.items.get_key_value(key) {
            Some((k, _)) => {
                let k = k.clone();
                let old = self.items.insert(k.clone(), obj.clone());
                (k, old)
            }
            None => {
                let k: Arc<str> = Arc::from(key);
                self.items.insert(k.clone(), obj.clone());
                (k, None)
            }
        };
        self.update_indices(old.as_deref(), Some(&obj), &key);
        old
    }

    fn delete(&mut self, key: &str) -> Option<Arc<K>> {
        let (k, old) = self.items.remove_entry(key)?;
        self.update_indices(Some(&old), None, &k);
        Some(old)
    }

    fn rebuild_indices(&mut self) {
        for named in &mut self.indexes {
            named.index = build_index(&self.items, &named.func);
        }
    }

    /// Moves `key` between index sets. Values an update leaves unchanged only have the
    /// object pointer swapped in place (no set is removed or re-created).
    fn update_indices(&mut self, old: Option<&K>, new: Option<&Arc<K>>, key: &Arc<str>) {
        for named in &mut self.indexes {
            let old_values = old.map(|o| named.func.values(o));
            let new_values = new.map(|n| named.func.values(n));
            let index = &mut named.index;
            if let Some(old_values) = &old_values {
                for v in old_values.iter() {
                    if new_values.as_ref().is_some_and(|n| n.contains(v)) {
                        continue;
                    }
                    if let Some(set) = index.get_mut(v) {
                        set.remove(key);
                        if set.is_empty() {
                            index.remove(v);
                        }
                    }
                }
            }
            let (Some(new), Some(new_values)) = (new, &new_values) else {
                continue;
            };
            for v in new_values.iter() {
                match index.get_mut(v) {
                    Some(set) => match set.get_mut(key) {
                        Some(slot) => *slot = new.clone(),
                        None => {
                            set.insert(key.clone(), new.clone());
                        }
                    },
                    None => {
                        let mut set = FastMap::default();
                        set.insert(key.clone(), new.clone());
                        index.insert(v.to_string(), set);
                    }
                }
            }
        }
    }
}

fn build_index<K>(items: &FastMap<Arc<str>, Arc<K>>, f: &IndexFn<K>) -> Index<K> {
    let mut index = Index::default();
    for (key, obj) in items {
        for v in f.values(obj).iter() {
            match index.get_mut(v) {
                Some(set) => {
                    set.insert(key.clone(), obj.clone());
                }
                None => {
                    let mut set: FastMap<Arc<str>, Arc<K>> = FastMap::default();
                    set.insert(key.clone(), obj.clone());
                    index.insert(v.to_string(), set);
                }
            }
        }
    }
    index
}
