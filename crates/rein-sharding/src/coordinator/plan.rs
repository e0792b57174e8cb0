//! What the coordinator does to one object: a pure function of the object's labels, the live
//! shards and (for kinds that follow their owner) the owner's shard.

use std::collections::HashMap;

use crate::kind::ObjMeta;
use crate::ring;

/// A label change the coordinator makes, guarded by the object's resourceVersion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// An unassigned object goes to this shard.
    Assign(String),
    /// Ask the current shard to hand the object over (set the drain label).
    Drain,
    /// The current shard is dead: assign directly (or unassign when no shard lives), no
    /// handshake.
    Release(Option<String>),
    /// An object that follows its owner goes to the owner's shard.
    Follow(String),
}

/// The label keys and live shards one pass decides with.
#[derive(Debug)]
pub(crate) struct Ring<'a> {
    pub(crate) shard_label: &'a str,
    pub(crate) drain_label: &'a str,
    /// Live shard ids: the targets of assignments.
    pub(crate) live: &'a [String],
    /// Shards confirmed dead: their objects are released without a handshake. A shard in
    /// neither list (its Lease looks expired but is not confirmed yet) keeps its objects.
    pub(crate) dead: &'a [String],
}

impl Ring<'_> {
    fn is_live(&self, shard: &str) -> bool {
        self.live.iter().any(|s| s == shard)
    }

    fn is_dead(&self, shard: &str) -> bool {
        self.dead.iter().any(|s| s == shard)
    }

    /// The decision for an object assigned by the hash of `hash_key`.
    pub(crate) fn decide(&self, obj: &ObjMeta, hash_key: &str) -> Option<Decision> {
        let current = obj.labels.get(self.shard_label).map(String::as_str);
        let draining = obj.labels.contains_key(self.drain_label);
        let desired = ring::assign(hash_key, self.live.iter().map(String::as_str));
        match current {
            None => desired.map(|d| Decision::Assign(d.to_owned())),
            Some(c) if self.is_dead(c) => Some(Decision::Release(desired.map(str::to_owned))),
            Some(c) if Some(c) == desired || !self.is_live(c) => None,
            // Asked already: the old shard acknowledges by removing both labels.
            Some(_) if draining => None,
            Some(_) => Some(Decision::Drain),
        }
    }

    /// The decision for an object of a kind that follows its controller owner: the owner's
    /// shard if the owner is a sharded object (`owners`: uid → its shard), else by its own
    /// hash.
    pub(crate) fn decide_follower(
        &self,
        obj: &ObjMeta,
        hash_key: &str,
        owners: &HashMap<String, Option<String>>,
    ) -> Option<Decision> {
        let Some(owner_shard) = obj.controller.as_ref().and_then(|uid| owners.get(uid)) else {
            return self.decide(obj, hash_key);
        };
        let current = obj.labels.get(self.shard_label);
        match owner_shard {
            Some(target) if current != Some(target) => Some(Decision::Follow(target.clone())),
            // The owner is between shards: keep the object where it is.
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rein_scheme::ObjectKey;

    use super::*;

    const SHARD: &str = "shard.rein.dev/r";
    const DRAIN: &str = "drain.shard.rein.dev/r";

    fn obj(labels: &[(&str, &str)], controller: Option<&str>) -> ObjMeta {
        ObjMeta {
            key: ObjectKey::new("default", "x"),
            uid: "uid-x".into(),
            resource_version: "1".into(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            controller: controller.map(str::to_owned),
        }
    }

    const DEAD: &[String] = &[];

    fn ring(live: &[String]) -> Ring<'_> {
        Ring {
            shard_label: SHARD,
            drain_label: DRAIN,
            live,
            dead: DEAD,
        }
    }

    #[test]
    fn unassigned_objects_are_assigned_to_the_hashed_shard() {
        let live = vec!["a".to_owned(), "b".to_owned()];
        let want = ring::assign("k", ["a", "b"]).unwrap().to_owned();
        assert_eq!(
            ring(&live).decide(&obj(&[], None), "k"),
            Some(Decision::Assign(want))
        );
        assert_eq!(ring(&[]).decide(&obj(&[], None), "k"), None);
    }

    #[test]
    fn a_live_shard_is_asked_to_drain_once() {
        let live = vec!["a".to_owned(), "b".to_owned()];
        let want = ring::assign("k", ["a", "b"]).unwrap();
        let other = if want == "a" { "b" } else { "a" };
        let r = ring(&live);
        assert_eq!(r.decide(&obj(&[(SHARD, want)], None), "k"), None);
        assert_eq!(
            r.decide(&obj(&[(SHARD, other)], None), "k"),
            Some(Decision::Drain)
        );
        assert_eq!(
            r.decide(&obj(&[(SHARD, other), (DRAIN, "true")], None), "k"),
            None
        );
    }

    #[test]
    fn a_dead_shard_is_released_without_handshake() {
        let live = vec!["a".to_owned()];
        let dead = vec!["gone".to_owned()];
        let r = Ring {
            dead: &dead,
            ..ring(&live)
        };
        assert_eq!(
            r.decide(&obj(&[(SHARD, "gone"), (DRAIN, "true")], None), "k"),
            Some(Decision::Release(Some("a".into())))
        );
        let r = Ring {
            dead: &dead,
            ..ring(&[])
        };
        assert_eq!(
            r.decide(&obj(&[(SHARD, "gone")], None), "k"),
            Some(Decision::Release(None))
        );
    }

    #[test]
    fn an_unconfirmed_shard_keeps_its_objects() {
        let live = vec!["a".to_owned()];
        assert_eq!(
            ring(&live).decide(&obj(&[(SHARD, "silent")], None), "k"),
            None
        );
    }

    #[test]
    fn followers_take_their_owners_shard() {
        let live = vec!["a".to_owned(), "b".to_owned()];
        let owners = HashMap::from([
            ("owner".to_owned(), Some("b".to_owned())),
            ("moving".to_owned(), None),
        ]);
        let r = ring(&live);
        let pod = obj(&[(SHARD, "a")], Some("owner"));
        assert_eq!(
            r.decide_follower(&pod, "k", &owners),
            Some(Decision::Follow("b".into()))
        );
        let settled = obj(&[(SHARD, "b")], Some("owner"));
        assert_eq!(r.decide_follower(&settled, "k", &owners), None);
        let between = obj(&[(SHARD, "a")], Some("moving"));
        assert_eq!(r.decide_follower(&between, "k", &owners), None);
        // An owner that is not sharded: hashed like any object.
        let orphan = obj(&[], Some("unknown"));
        assert!(matches!(
            r.decide_follower(&orphan, "k", &owners),
            Some(Decision::Assign(_))
        ));
    }
}
