//! The compact store's small cache of recently decoded objects: two generations of a map (an
//! approximate LRU without a list), each entry stamped with the write it was decoded from.

use std::sync::Arc;

use crate::store::FastMap;

/// At most `capacity` decoded objects: new entries go into `recent`; when it holds half the
/// capacity it becomes `older` (the previous `older` is dropped), and a hit in `older` moves
/// back into `recent`. Entries carry the generation of the bytes they were decoded from, and
/// a lookup only answers for the generation the store holds now, so a reader that decoded an
/// object just before a write can never make the cache serve the old version.
pub(super) struct Decoded<K> {
    /// Entries per generation of the map (half the capacity, at least one when caching).
    half: usize,
    recent: FastMap<Arc<str>, (u64, Arc<K>)>,
    older: FastMap<Arc<str>, (u64, Arc<K>)>,
}

impl<K> Decoded<K> {
    pub(super) fn new(capacity: usize) -> Self {
        Decoded {
            half: capacity.div_ceil(2),
            recent: FastMap::default(),
            older: FastMap::default(),
        }
    }

    /// The object decoded from generation `generation` of `key`, if cached.
    pub(super) fn get(&mut self, key: &Arc<str>, generation: u64) -> Option<Arc<K>> {
        if let Some((g, obj)) = self.recent.get(key) {
            return (*g == generation).then(|| obj.clone());
        }
        let (g, obj) = self.older.remove(key)?;
        if g != generation {
            return None;
        }
        self.put(key.clone(), generation, obj.clone());
        Some(obj)
    }

    /// Caches `obj` as generation `generation` of `key`, unless a newer one is cached.
    pub(super) fn put(&mut self, key: Arc<str>, generation: u64, obj: Arc<K>) {
        if self.half == 0 {
            return;
        }
        if let Some((g, _)) = self.recent.get(&key)
            && *g > generation
        {
            return;
        }
        self.older.remove(&key);
        self.recent.insert(key, (generation, obj));
        if self.recent.len() >= self.half {
            self.older = std::mem::take(&mut self.recent);
        }
    }

    /// Forgets `key` (deleted from the store).
    pub(super) fn remove(&mut self, key: &str) {
        self.recent.remove(key);
        self.older.remove(key);
    }

    /// Forgets everything (the store's contents were replaced).
    pub(super) fn clear(&mut self) {
        self.recent = FastMap::default();
        self.older = FastMap::default();
    }

    /// How many objects are cached.
    pub(super) fn len(&self) -> usize {
        self.recent.len() + self.older.len()
    }
}
