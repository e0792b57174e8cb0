//! `ShardingOptions`: the ring, this replica's shard id, the Lease timing and the sharded kinds.

use std::collections::HashSet;

use rein_leaderelection::LeaderElectionConfig;
use rein_scheme::Object;
use rein_scheme::labels::{Operator, Requirement};

use crate::{Error, ShardedKind};

/// The prefix of every label sharding writes.
pub const LABEL_DOMAIN: &str = "shard.rein.dev";
/// The label naming the ring a shard Lease belongs to.
pub const LEASE_RING_LABEL: &str = "ring.shard.rein.dev/name";
/// The label naming the shard a shard Lease belongs to (kept when the Lease is released).
pub const LEASE_SHARD_LABEL: &str = "ring.shard.rein.dev/shard";

/// How a replica takes part in a ring (the `ClusterRing` of kubernetes-controller-sharding,
/// here without a CRD: every replica carries the same options but its own shard id).
#[derive(Debug, Clone)]
pub struct ShardingOptions {
    /// The ring's name: a DNS label (lowercase letters, digits, `-`; at most 40 characters).
    /// Objects carry the label `shard.rein.dev/<ring>`.
    pub ring: String,
    /// The namespace of the shard and coordinator Leases (a manager defaults it to its Pod's
    /// namespace).
    pub namespace: Option<String>,
    /// This replica's shard id: a DNS label, unique among the live replicas of the ring (a
    /// Pod name works). Default: `$POD_NAME`, else `$HOSTNAME`, else a random id.
    pub shard_id: Option<String>,
    /// The timing of the shard Leases and of the coordinator election, with leader
    /// election's rules (default 15 s / 10 s / 2 s). Shards always release their Lease on a
    /// graceful stop.
    pub lease: LeaderElectionConfig,
    /// The sharded kinds.
    pub kinds: Vec<ShardedKind>,
    /// Whether a manager shards every controller built for a kind sharded by its own key
    /// unless its builder says `leader_elected()` (default false: only controllers whose
    /// builder says `sharded()`). Controllers taken off leader election by hand are left as
    /// they are.
    pub shard_controllers_by_default: bool,
}

impl ShardingOptions {
    /// A ring with the default timing and no kinds yet.
    pub fn new(ring: impl Into<String>) -> Self {
        ShardingOptions {
            ring: ring.into(),
            namespace: None,
            shard_id: None,
            lease: LeaderElectionConfig::default(),
            kinds: Vec::new(),
            shard_controllers_by_default: false,
        }
    }

    /// Sets the Leases' namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Sets this replica's shard id.
    pub fn shard_id(mut self, id: impl Into<String>) -> Self {
        self.shard_id = Some(id.into());
        self
    }

    /// Sets the Lease timing.
    pub fn lease(mut self, config: LeaderElectionConfig) -> Self {
        self.lease = config;
        self
    }

    /// Shards `K` by the hash of its key: a controller for `K` reconciles only its shard's
    /// objects.
    pub fn kind<K: Object>(mut self) -> Self {
        self.kinds.push(ShardedKind::new::<K>());
        self
    }

    /// Assigns `K` to its controller owner's shard (a Pod to its ReplicaSet's), so a
    /// controller that owns `K` sees its objects in its shard's cache.
    pub fn following_owner<K: Object>(mut self) -> Self {
        self.kinds.push(ShardedKind::following_owner::<K>());
        self
    }

    /// Shards every controller for a kind of the ring by default
    /// ([`ShardingOptions::shard_controllers_by_default`]).
    pub fn shard_controllers_by_default(mut self) -> Self {
        self.shard_controllers_by_default = true;
        self
    }

    /// The label holding an object's shard: `shard.rein.dev/<ring>`.
    pub fn shard_label(&self) -> String {
        format!("{LABEL_DOMAIN}/{}", self.ring)
    }

    /// The label the coordinator sets to ask a shard to hand an object over:
    /// `drain.shard.rein.dev/<ring>`.
    pub fn drain_label(&self) -> String {
        format!("drain.{LABEL_DOMAIN}/{}", self.ring)
    }

    /// The options with the shard id filled in and everything checked.
    pub(crate) fn resolve(mut self) -> Result<Self, Error> {
        let invalid = |option, reason: String| Error::InvalidOption { option, reason };
        if !is_dns_label(&self.ring) || self.ring.len() > 40 {
            return Err(invalid(
                "ring",
                format!(
                    "{:?} is not a DNS label of at most 40 characters",
                    self.ring
                ),
            ));
        }
        let id = match self.shard_id.take() {
            Some(id) => id,
            None => default_shard_id(),
        };
        if !is_dns_label(&id) {
            return Err(invalid(
                "shard_id",
                format!("{id:?} is not a DNS label (lowercase letters, digits, '-')"),
            ));
        }
        self.shard_id = Some(id);
        if self.namespace.as_deref().is_none_or(str::is_empty) {
            return Err(Error::MissingNamespace);
        }
        let mut config = self.lease.clone();
        config.release_on_cancel = true;
        if config.name.is_empty() {
            config.name = self.ring.clone();
        }
        config.validate().map_err(Error::LeaseConfig)?;
        self.lease = config;
        let mut seen = HashSet::new();
        for kind in &self.kinds {
            let gvk = kind.gvk().to_string();
            if !seen.insert(gvk.clone()) {
                return Err(Error::DuplicateKind {
                    ring: self.ring.clone(),
                    kind: gvk,
                });
            }
        }
        // The label key and value must make a valid selector.
        self.selector_requirement()?;
        Ok(self)
    }

    /// `shard.rein.dev/<ring>=<id>`: what this shard's cache watches.
    pub(crate) fn selector_requirement(&self) -> Result<Requirement, Error> {
        Requirement::new(self.shard_label(), Operator::Equals, [self.id().to_owned()]).map_err(
            |err| Error::InvalidOption {
                option: "ring",
                reason: err.to_string(),
            },
        )
    }

    /// The resolved shard id (empty before `resolve`).
    pub(crate) fn id(&self) -> &str {
        self.shard_id.as_deref().unwrap_or_default()
    }

    /// The resolved namespace (empty before `resolve`).
    pub(crate) fn lease_namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or_default()
    }
}

/// A DNS-1123 label: 1–63 lowercase letters, digits and `-`, alphanumeric at both ends.
fn is_dns_label(s: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 63
        && s.chars().all(|c| ok(c) || c == '-')
        && s.starts_with(ok)
        && s.ends_with(ok)
}

/// `$POD_NAME`, `$HOSTNAME` (lowercased, invalid characters replaced), else `shard-<random>`.
fn default_shard_id() -> String {
    let from_env = ["POD_NAME", "HOSTNAME"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .map(|v| {
            v.to_lowercase()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .take(63)
                .collect::<String>()
                .trim_matches('-')
                .to_owned()
        })
        .find(|v| is_dns_label(v));
    from_env.unwrap_or_else(|| {
        let bytes: [u8; 4] = std::array::from_fn(|i| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or_default();
            (nanos >> (i * 8)) as u8 ^ (std::process::id() >> (i * 8)) as u8
        });
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("shard-{hex}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ShardingOptions {
        ShardingOptions::new("ring")
            .namespace("default")
            .shard_id("a")
    }

    #[test]
    fn resolve_checks_names() {
        assert!(base().resolve().is_ok());
        let bad_ring = ShardingOptions {
            ring: "Ring_1".into(),
            ..base()
        };
        assert!(matches!(
            bad_ring.resolve(),
            Err(Error::InvalidOption { option: "ring", .. })
        ));
        assert!(matches!(
            base().shard_id("host_1").resolve(),
            Err(Error::InvalidOption {
                option: "shard_id",
                ..
            })
        ));
        let no_ns = ShardingOptions {
            namespace: None,
            ..base()
        };
        assert!(matches!(no_ns.resolve(), Err(Error::MissingNamespace)));
    }

    #[test]
    fn resolve_checks_timing_and_kinds() {
        let mut bad = base();
        bad.lease.renew_deadline = bad.lease.lease_duration;
        assert!(matches!(bad.resolve(), Err(Error::LeaseConfig(_))));
        let twice = base()
            .kind::<k8s_openapi::api::core::v1::ConfigMap>()
            .kind::<k8s_openapi::api::core::v1::ConfigMap>();
        assert!(matches!(twice.resolve(), Err(Error::DuplicateKind { .. })));
    }

    #[test]
    fn default_id_is_a_dns_label() {
        assert!(is_dns_label(&default_shard_id()));
    }
}
