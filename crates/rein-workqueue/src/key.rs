//! Pre-hashed keys: items are hashed before the queue lock is taken, so the critical sections
//! only probe the table and compare.
//!
//! The table stores [`Hashed`] keys and uses an identity hasher over the stored hash. Lookups
//! by a borrowed item go through the `dyn Key` borrow, so no clone is needed to look up.
//!
//! Items are hashed with foldhash, seeded per queue ([`ItemHasher`]): on the de-duplication
//! path the hash is most of the work, and SipHash (std's `RandomState`) cost a third of the
//! CPU of an add. foldhash is what hashbrown and rein-informer's stores use for the same
//! `namespace/name` keys; its per-instance random seed keeps colliding keys from being
//! crafted without knowing that seed.

use std::borrow::Borrow;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// An item with its hash, computed once with the queue's seeded [`ItemHasher`].
#[derive(Debug, Clone)]
pub(crate) struct Hashed<T> {
    pub(crate) hash: u64,
    pub(crate) item: T,
}

/// A view of a key: its hash and the item (owned in [`Hashed`], borrowed in lookups).
pub(crate) trait Key<T> {
    fn hash(&self) -> u64;
    fn item(&self) -> &T;
}

impl<T> Key<T> for Hashed<T> {
    fn hash(&self) -> u64 {
        self.hash
    }
    fn item(&self) -> &T {
        &self.item
    }
}

impl<T> Key<T> for (u64, &T) {
    fn hash(&self) -> u64 {
        self.0
    }
    fn item(&self) -> &T {
        self.1
    }
}

impl<T: Eq> PartialEq for Hashed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.item == other.item
    }
}

impl<T: Eq> Eq for Hashed<T> {}

impl<T> Hash for Hashed<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl<T: Eq> PartialEq for dyn Key<T> + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.hash() == other.hash() && self.item() == other.item()
    }
}

impl<T: Eq> Eq for dyn Key<T> + '_ {}

impl<T> Hash for dyn Key<T> + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(Key::hash(self));
    }
}

impl<'a, T: 'a> Borrow<dyn Key<T> + 'a> for Hashed<T> {
    fn borrow(&self) -> &(dyn Key<T> + 'a) {
        self
    }
}

/// Passes the pre-computed hash through.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by `Hashed`; fold anything else in for completeness.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The build-hasher of the queue's table.
pub(crate) type PassThrough = BuildHasherDefault<IdentityHasher>;

/// How a queue hashes its items (once per add or done, outside the lock); seeded at random
/// for each queue.
pub(crate) type ItemHasher = foldhash::fast::RandomState;
