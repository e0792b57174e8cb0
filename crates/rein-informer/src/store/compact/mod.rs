//! The opt-in compact store for large fleets: an [`Indexer`] that keeps each object as its
//! JSON bytes and decodes it on read, with a small cache of recently decoded objects.
//!
//! A typed Kubernetes object in memory is several times the size of its JSON: every string,
//! map and list is its own allocation. A controller that caches hundreds of thousands of
//! objects and reads a few of them per reconcile pays that for every object it never reads.
//! [`Indexer::compact`] keeps the JSON instead (`serde_json`, the API server's own encoding,
//! so every API type and custom resource round-trips), computes index values when an object
//! is stored, and decodes an object when it is read: `get` decodes one object, `by_index` the
//! objects under one value, `list` every object. The last [`CompactOptions::decoded_cache`]
//! objects written or read stay decoded, so a reconcile that reads the object its event was
//! about, or reads one object several times, decodes it at most once.
//!
//! Writes return the previous object as the typed store does (handlers get it in update and
//! delete notifications): from the cache when it holds it, else decoded. A relist compares
//! bytes, so only objects that changed or went away are decoded. An object that cannot be
//! encoded (none of the API types) is kept typed, as the default store would.

mod decoded;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use kube_client::Resource;
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{FastMap, IndexFn, Indexer, Indexers, NAMESPACE_INDEX, namespace_of};
use crate::Error;
use decoded::Decoded;

/// Settings of the compact store ([`StoreKind::Compact`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactOptions {
    /// How many recently written or read objects stay decoded (0: none). Default 1,024.
    pub decoded_cache: usize,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            decoded_cache: 1024,
        }
    }
}

/// How an informer's cache keeps its objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StoreKind {
    /// Typed objects shared as `Arc<K>`: reads cost nothing (the default).
    #[default]
    Typed,
    /// JSON bytes decoded on read (see [`Indexer::compact`]): a fraction of the memory, a
    /// decode per read that misses the cache of recently used objects.
    Compact(CompactOptions),
}

impl<K> Indexer<K>
where
    K: Resource + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// An indexer keyed by `namespace/name` with the namespace index installed, that keeps
    /// its objects as JSON (a fraction of a typed object's memory) and decodes them on read:
    /// `get` decodes one object, `by_index` the objects under one value, `list` every object.
    /// Index values are computed when an object is stored. The last
    /// [`CompactOptions::decoded_cache`] objects written or read stay decoded, so reads of
    /// them cost a lookup; reads return a decoded copy, not the object that was stored.
    /// Writes return the previous object, as the typed store does (from that cache, else
    /// decoded); a relist decodes only the objects that changed or went away. Objects must
    /// survive a JSON round trip (every API type and custom resource does).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_client::core::ObjectMeta;
    /// use rein_informer::{CompactOptions, Indexer, NAMESPACE_INDEX};
    ///
    /// let cache: Indexer<ConfigMap> = Indexer::compact(CompactOptions::default());
    /// cache.add(Arc::new(ConfigMap {
    ///     metadata: ObjectMeta { namespace: Some("default".into()), name: Some("cfg".into()), ..Default::default() },
    ///     ..Default::default()
    /// }));
    /// assert!(cache.is_compact());
    /// assert_eq!(cache.by_index(NAMESPACE_INDEX, "default").unwrap().len(), 1);
    /// ```
    pub fn compact(options: CompactOptions) -> Self {
        let mut indexer = Self::build(crate::key::KeyMaker::namespace_name());
        indexer.compact = Some(Arc::new(CompactStore::new(
            options,
            Codec {
                encode: |obj| serde_json::to_vec(obj),
                decode: |bytes| serde_json::from_slice(bytes),
            },
            vec![(
                NAMESPACE_INDEX.to_owned(),
                IndexFn::Namespace(namespace_of::<K>),
            )],
        )));
        indexer
    }

    /// [`Indexer::new`] or [`Indexer::compact`], as `kind` says.
    pub fn with_store(kind: StoreKind) -> Self {
        match kind {
            StoreKind::Typed => Self::new(),
            StoreKind::Compact(options) => Self::compact(options),
        }
    }
}

impl<K> Indexer<K> {
    /// Whether this indexer keeps its objects compact ([`Indexer::compact`]).
    pub fn is_compact(&self) -> bool {
        self.compact.is_some()
    }
}

/// How the compact store turns objects into bytes and back (fixed when the store is built,
/// where the serde bounds are known).
struct Codec<K> {
    encode: fn(&K) -> serde_json::Result<Vec<u8>>,
    decode: fn(&[u8]) -> serde_json::Result<K>,
}

/// A stored object.
enum Body<K> {
    Encoded(Arc<[u8]>),
    /// An object that could not be encoded, kept as it was given.
    Typed(Arc<K>),
}

impl<K> Clone for Body<K> {
    fn clone(&self) -> Self {
        match self {
            Body::Encoded(bytes) => Body::Encoded(bytes.clone()),
            Body::Typed(obj) => Body::Typed(obj.clone()),
        }
    }
}

struct Slot<K> {
    /// Which write stored it (the decoded cache answers only for this one).
    generation: u64,
    body: Body<K>,
    /// Per index (in the order of `State::indexes`), the values the object is indexed
    /// under, shared with the index's own keys.
    values: Vec<Box<[Arc<str>]>>,
}

/// value → keys of the objects indexed under it.
type KeyIndex = FastMap<Arc<str>, foldhash::HashSet<Arc<str>>>;

struct NamedKeyIndex<K> {
    name: String,
    func: IndexFn<K>,
    index: KeyIndex,
}

struct State<K> {
    items: FastMap<Arc<str>, Slot<K>>,
    indexes: Vec<NamedKeyIndex<K>>,
    generation: u64,
}

/// The compact store behind an [`Indexer`] built with [`Indexer::compact`].
pub(crate) struct CompactStore<K> {
    state: RwLock<State<K>>,
    decoded: Mutex<Decoded<K>>,
    codec: Codec<K>,
}

impl<K> fmt::Debug for CompactStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactStore")
            .field("len", &self.len())
            .field("decoded", &self.decoded.lock().len())
            .finish()
    }
}

impl<K> CompactStore<K> {
    fn new(options: CompactOptions, codec: Codec<K>, indexes: Vec<(String, IndexFn<K>)>) -> Self {
        CompactStore {
            state: RwLock::new(State {
                items: FastMap::default(),
                indexes: indexes
                    .into_iter()
                    .map(|(name, func)| NamedKeyIndex {
                        name,
                        func,
                        index: KeyIndex::default(),
                    })
                    .collect(),
                generation: 0,
            }),
            decoded: Mutex::new(Decoded::new(options.decoded_cache)),
            codec,
        }
    }

    fn encode(&self, obj: &Arc<K>) -> Body<K> {
        match (self.codec.encode)(obj) {
            Ok(bytes) => Body::Encoded(bytes.into()),
            Err(error) => {
                tracing::warn!(%error, "compact store: an object cannot be encoded; kept typed");
                Body::Typed(obj.clone())
            }
        }
    }

    fn decode(&self, key: &str, body: &Body<K>) -> Option<Arc<K>> {
        match body {
            Body::Typed(obj) => Some(obj.clone()),
            Body::Encoded(bytes) => match (self.codec.decode)(bytes) {
                Ok(obj) => Some(Arc::new(obj)),
                Err(error) => {
                    tracing::error!(%error, key, "compact store: a stored object cannot be decoded");
                    None
                }
            },
        }
    }

    /// Stores `obj` under `key`, returning the object it replaces.
    pub(crate) fn upsert(&self, key: &str, obj: &Arc<K>) -> Option<Arc<K>> {
        let body = self.encode(obj);
        let (key, old, cached_old) = {
            let mut st = self.state.write();
            let key = match st.items.get_key_value(key) {
                Some((k, _)) => k.clone(),
                None => Arc::from(key),
            };
            st.generation += 1;
            let generation = st.generation;
            let old = st.items.remove(&key);
            let values = st.index(&key, old.as_ref().map(|s| s.values.as_slice()), Some(obj));
            st.items.insert(
                key.clone(),
                Slot {
                    generation,
                    body,
                    values,
                },
            );
            let mut decoded = self.decoded.lock();
            let cached_old = old
                .as_ref()
                .and_then(|slot| decoded.get(&key, slot.generation));
            decoded.put(key.clone(), generation, obj.clone());
            (key, old, cached_old)
        };
        let old = old?;
        cached_old.or_else(|| self.decode(&key, &old.body))
    }

    /// Removes the object under `key`, returning it.
    pub(crate) fn delete(&self, key: &str) -> Option<Arc<K>> {
        let (key, old, cached) = {
            let mut st = self.state.write();
            let (key, old) = st.items.remove_entry(key)?;
            st.index(&key, Some(&old.values), None);
            let mut decoded = self.decoded.lock();
            let cached = decoded.get(&key, old.generation);
            decoded.remove(&key);
            (key, old, cached)
        };
        cached.or_else(|| self.decode(&key, &old.body))
    }

    /// The object under `key`: cached, or decoded (and then cached).
    pub(crate) fn get(&self, key: &str) -> Option<Arc<K>> {
        let (key, generation, body) = {
            let st = self.state.read();
            let (key, slot) = st.items.get_key_value(key)?;
            if let Some(obj) = self.decoded.lock().get(key, slot.generation) {
                return Some(obj);
            }
            (key.clone(), slot.generation, slot.body.clone())
        };
        let obj = self.decode(&key, &body)?;
        self.decoded.lock().put(key, generation, obj.clone());
        Some(obj)
    }

    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.state.read().items.contains_key(key)
    }

    pub(crate) fn len(&self) -> usize {
        self.state.read().items.len()
    }

    pub(crate) fn list_keys(&self) -> Vec<String> {
        self.state
            .read()
            .items
            .keys()
            .map(|k| k.to_string())
            .collect()
    }

    /// Every object, decoded (cached ones are reused; a list does not fill the cache).
    pub(crate) fn list(&self) -> Vec<Arc<K>> {
        let found: Vec<_> = {
            let st = self.state.read();
            st.items.iter().map(|(k, slot)| snapshot(k, slot)).collect()
        };
        self.decode_all(found)
    }

    /// Replaces every object, returning the previous contents by key. An object whose bytes
    /// did not change is answered with its new copy, so only changed or removed objects are
    /// decoded.
    pub(crate) fn replace_keyed(
        &self,
        objects: impl IntoIterator<Item = (Arc<str>, Arc<K>)>,
    ) -> FastMap<Arc<str>, Arc<K>> {
        let new: Vec<(Arc<str>, Arc<K>, Body<K>)> = objects
            .into_iter()
            .map(|(key, obj)| {
                let body = self.encode(&obj);
                (key, obj, body)
            })
            .collect();
        let old = {
            let mut st = self.state.write();
            let old = std::mem::take(&mut st.items);
            for named in &mut st.indexes {
                named.index = KeyIndex::default();
            }
            for (key, obj, body) in &new {
                st.generation += 1;
                let generation = st.generation;
                // A key listed twice: the later object wins, as in the typed store.
                let twice = st.items.remove(key);
                let values = st.index(key, twice.as_ref().map(|s| s.values.as_slice()), Some(obj));
                st.items.insert(
                    key.clone(),
                    Slot {
                        generation,
                        body: body.clone(),
                        values,
                    },
                );
            }
            self.decoded.lock().clear();
            old
        };
        let new: FastMap<Arc<str>, (Arc<K>, Body<K>)> = new
            .into_iter()
            .map(|(key, obj, body)| (key, (obj, body)))
            .collect();
        old.into_iter()
            .filter_map(|(key, slot)| {
                let unchanged = match (new.get(&key), &slot.body) {
                    (Some((obj, Body::Encoded(now))), Body::Encoded(before)) if now == before => {
                        Some(obj.clone())
                    }
                    _ => None,
                };
                let obj = unchanged.or_else(|| self.decode(&key, &slot.body))?;
                Some((key, obj))
            })
            .collect()
    }

    /// Objects sharing any index value with `obj` under `index_name`.
    pub(crate) fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, Error> {
        let found: Vec<_> = {
            let st = self.state.read();
            let named = st.named(index_name)?;
            let mut keys: foldhash::HashSet<&Arc<str>> = foldhash::HashSet::default();
            for value in named.func.values(obj).iter() {
                if let Some(set) = named.index.get(value) {
                    keys.extend(set.iter());
                }
            }
            keys.into_iter()
                .filter_map(|k| st.items.get_key_value(k).map(|(k, s)| snapshot(k, s)))
                .collect()
        };
        Ok(self.decode_all(found))
    }

    /// Objects indexed under `value` in `index_name`.
    pub(crate) fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, Error> {
        let found: Vec<_> = {
            let st = self.state.read();
            let Some(set) = st.named(index_name)?.index.get(value) else {
                return Ok(Vec::new());
            };
            set.iter()
                .filter_map(|k| st.items.get_key_value(k).map(|(k, s)| snapshot(k, s)))
                .collect()
        };
        Ok(self.decode_all(found))
    }

    /// Keys indexed under `value` in `index_name`, sorted.
    pub(crate) fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>, Error> {
        let st = self.state.read();
        let mut keys: Vec<String> = st
            .named(index_name)?
            .index
            .get(value)
            .map(|set| set.iter().map(|k| k.to_string()).collect())
            .unwrap_or_default();
        keys.sort();
        Ok(keys)
    }

    pub(crate) fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        self.state
            .read()
            .named(index_name)
            .map(|named| named.index.keys().map(|v| v.to_string()).collect())
            .unwrap_or_default()
    }

    pub(crate) fn indexer_names(&self) -> Vec<String> {
        self.state
            .read()
            .indexes
            .iter()
            .map(|named| named.name.clone())
            .collect()
    }

    /// Installs more indexes, indexing the current contents (each object decoded once).
    pub(crate) fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), Error> {
        let mut st = self.state.write();
        if let Some(name) = indexers
            .keys()
            .find(|n| st.indexes.iter().any(|i| &i.name == *n))
        {
            return Err(Error::IndexerConflict { name: name.clone() });
        }
        for (name, func) in indexers {
            let mut named = NamedKeyIndex {
                name,
                func: IndexFn::Custom(func),
                index: KeyIndex::default(),
            };
            let State { items, .. } = &mut *st;
            for (key, slot) in items.iter_mut() {
                let values = match self.decode(key, &slot.body) {
                    Some(obj) => named.insert(key, &obj),
                    None => Box::default(),
                };
                slot.values.push(values);
            }
            st.indexes.push(named);
        }
        Ok(())
    }

    /// Decodes `found` (key, generation, body), taking what the cache holds.
    fn decode_all(&self, found: Vec<(Arc<str>, u64, Body<K>)>) -> Vec<Arc<K>> {
        let mut objects = Vec::with_capacity(found.len());
        let mut misses = Vec::new();
        {
            let mut decoded = self.decoded.lock();
            for (key, generation, body) in found {
                match decoded.get(&key, generation) {
                    Some(obj) => objects.push(obj),
                    None => misses.push((key, body)),
                }
            }
        }
        objects.extend(
            misses
                .into_iter()
                .filter_map(|(key, body)| self.decode(&key, &body)),
        );
        objects
    }
}

/// What a read takes out of the lock to decode after releasing it.
fn snapshot<K>(key: &Arc<str>, slot: &Slot<K>) -> (Arc<str>, u64, Body<K>) {
    (key.clone(), slot.generation, slot.body.clone())
}

impl<K> State<K> {
    fn named(&self, name: &str) -> Result<&NamedKeyIndex<K>, Error> {
        self.indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| Error::UnknownIndex { name: name.into() })
    }

    /// Moves `key` from the index values in `old` (per index) to those of `new`, returning
    /// the new ones.
    fn index(
        &mut self,
        key: &Arc<str>,
        old: Option<&[Box<[Arc<str>]>]>,
        new: Option<&K>,
    ) -> Vec<Box<[Arc<str>]>> {
        let mut all = Vec::with_capacity(self.indexes.len());
        for (i, named) in self.indexes.iter_mut().enumerate() {
            let old_values = old.and_then(|o| o.get(i)).map_or(&[][..], |v| &v[..]);
            let new_values = new.map(|obj| named.func.values(obj));
            for value in old_values {
                if new_values.as_ref().is_some_and(|n| n.contains(value)) {
                    continue;
                }
                if let Some(set) = named.index.get_mut(value) {
                    set.remove(key);
                    if set.is_empty() {
                        named.index.remove(value);
                    }
                }
            }
            let Some(obj) = new else { continue };
            all.push(named.insert(key, obj));
        }
        all
    }
}

impl<K> NamedKeyIndex<K> {
    /// Indexes `key` under every value `obj` has here; returns those values.
    fn insert(&mut self, key: &Arc<str>, obj: &K) -> Box<[Arc<str>]> {
        let mut values = Vec::new();
        for value in self.func.values(obj).iter() {
            let value = match self.index.get_key_value(value) {
                Some((value, _)) => value.clone(),
                None => Arc::from(value),
            };
            self.index
                .entry(value.clone())
                .or_default()
                .insert(key.clone());
            values.push(value);
        }
        values.into()
    }
}
