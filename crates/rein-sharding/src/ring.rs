//! Rendezvous (highest random weight) hashing: which live shard owns a key.
//!
//! Each shard scores each key with a hash of both; the highest score wins. Adding or removing
//! one of N shards moves only the keys that shard wins or held, about 1/N of them, and every
//! coordinator computes the same answer from the same set of shards.

use rein_scheme::{GroupVersionKind, ObjectKey};

/// The string an object of kind `gvk` is hashed by: `<group>/<kind>/<namespace>/<name>`
/// (`<group>/<kind>/<name>` for cluster-scoped objects). With [`assign`] it tells which shard
/// the coordinator will pick for an object.
pub fn hash_key(gvk: &GroupVersionKind, key: &ObjectKey) -> String {
    format!("{}/{}/{key}", gvk.group, gvk.kind)
}

/// The shard that owns `key` among `shards`, or `None` if there is none. Ties (which a 64-bit
/// hash makes vanishingly rare) go to the smaller shard id, so the answer never depends on
/// the order of `shards`.
pub fn assign<'a>(key: &str, shards: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    shards
        .into_iter()
        .map(|shard| (score(shard, key), shard))
        .max_by(|(sa, a), (sb, b)| sa.cmp(sb).then_with(|| b.cmp(a)))
        .map(|(_, shard)| shard)
}

/// The weight of `shard` for `key`: FNV-1a over `shard`, a separator and `key`, finished with
/// the SplitMix64 mixer so that similar inputs give unrelated scores. Stable across
/// processes, platforms and releases: replicas of different versions agree.
fn score(shard: &str, key: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for byte in shard.bytes().chain([0xff]).chain(key.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(PRIME);
    }
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::assign;

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("default/object-{i}")).collect()
    }

    #[test]
    fn no_shards_own_nothing() {
        assert_eq!(assign("default/a", []), None);
    }

    #[test]
    fn order_of_shards_does_not_matter() {
        for key in keys(200) {
            assert_eq!(assign(&key, ["a", "b", "c"]), assign(&key, ["c", "a", "b"]));
        }
    }

    #[test]
    fn keys_spread_evenly() {
        // 4 shards, 4000 keys: each within 15 % of the fair 1000.
        let shards = ["shard-0", "shard-1", "shard-2", "shard-3"];
        let mut counts = BTreeMap::new();
        for key in keys(4000) {
            *counts.entry(assign(&key, shards).unwrap()).or_insert(0) += 1;
        }
        for (shard, n) in counts {
            assert!((850..=1150).contains(&n), "{shard} owns {n} of 4000");
        }
    }

    #[test]
    fn adding_a_shard_moves_only_keys_to_it() {
        let before = ["a", "b", "c"];
        let after = ["a", "b", "c", "d"];
        let mut moved = 0;
        for key in keys(3000) {
            let (old, new) = (assign(&key, before).unwrap(), assign(&key, after).unwrap());
            if old != new {
                assert_eq!(
                    new, "d",
                    "{key} moved from {old} to {new}, not to the new shard"
                );
                moved += 1;
            }
        }
        // About a quarter of the keys.
        assert!((600..=900).contains(&moved), "{moved} of 3000 moved");
    }

    #[test]
    fn removing_a_shard_moves_only_its_keys() {
        for key in keys(3000) {
            let old = assign(&key, ["a", "b", "c"]).unwrap();
            let new = assign(&key, ["a", "c"]).unwrap();
            if old != "b" {
                assert_eq!(old, new, "{key} moved although its shard stayed");
            }
        }
    }
}
