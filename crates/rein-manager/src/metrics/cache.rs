//! The secure metrics server's review caches: bounded, least-recently-used first out, each
//! entry expiring after its own lifetime, keyed by a SHA-256 digest so neither a bearer
//! token nor a long request path is kept (or costs more than 32 bytes) in memory.

use std::collections::HashMap;
use std::time::Duration;

use rustls::crypto::hash::Hash;
use tokio::time::Instant;

/// A cache key: the SHA-256 digest of what is cached.
pub(super) type Key = [u8; 32];

/// SHA-256, from the rustls provider rein already serves TLS with.
const SHA256: &dyn Hash = match rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256.tls13()
{
    Some(suite) => suite.common.hash_provider,
    None => panic!("TLS13_AES_128_GCM_SHA256 is a TLS 1.3 suite"),
};

/// The key of `parts`, each length-prefixed so that no two lists of parts share a key.
pub(super) fn key(parts: &[&[u8]]) -> Key {
    let mut hash = SHA256.start();
    for part in parts {
        hash.update(&(part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    let digest = hash.finish();
    let mut key = [0u8; 32];
    for (k, d) in key.iter_mut().zip(digest.as_ref()) {
        *k = *d;
    }
    key
}

/// A map of at most `capacity` entries, each valid until its own deadline. Inserting into a
/// full cache first drops the expired entries, then, if it is still full, the least
/// recently used one; an expired entry is never returned.
#[derive(Debug)]
pub(super) struct ReviewCache<V> {
    capacity: usize,
    entries: HashMap<Key, Entry<V>>,
    /// Counts uses, to order entries by their last one.
    clock: u64,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    expires: Instant,
    used: u64,
}

impl<V: Clone> ReviewCache<V> {
    /// An empty cache holding at most `capacity` entries (none with 0).
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: HashMap::new(),
            clock: 0,
        }
    }

    /// The value under `key` if it has not expired by `now`; an expired one is dropped.
    pub(super) fn get(&mut self, key: &Key, now: Instant) -> Option<V> {
        let entry = self.entries.get_mut(key)?;
        if entry.expires <= now {
            self.entries.remove(key);
            return None;
        }
        self.clock += 1;
        entry.used = self.clock;
        Some(entry.value.clone())
    }

    /// Keeps `value` under `key` until `now + ttl`, making room as needed.
    pub(super) fn insert(&mut self, key: Key, value: V, ttl: Duration, now: Instant) {
        let Some(expires) = now.checked_add(ttl) else {
            return;
        };
        if self.capacity == 0 {
            return;
        }
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            self.entries.retain(|_, entry| entry.expires > now);
            if self.entries.len() >= self.capacity {
                let oldest = self
                    .entries
                    .iter()
                    .min_by_key(|(_, entry)| entry.used)
                    .map(|(key, _)| *key);
                if let Some(oldest) = oldest {
                    self.entries.remove(&oldest);
                }
            }
        }
        self.clock += 1;
        self.entries.insert(
            key,
            Entry {
                value,
                expires,
                used: self.clock,
            },
        );
    }

    /// How many entries the cache holds (expired ones not yet dropped included).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}
