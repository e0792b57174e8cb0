//! The `pod-template-hash` of a Deployment's ReplicaSets (kube's `controller.ComputeHash`).
//!
//! kube hashes the Go value of the template with FNV-32a through `hashutil.DeepHashObject`
//! (a spew dump of the struct), adds the collision count as 8 little-endian bytes, and
//! encodes the decimal sum with `rand.SafeEncodeString`. A Go struct dump cannot be
//! reproduced outside Go, so this hashes the template's JSON (k8s-openapi writes fields in a
//! fixed order and maps sorted) the same way: the value is deterministic and changes with
//! the template and the collision count as kube's does, but it is not equal to the value
//! kube-controller-manager would compute for the same template.

use k8s_openapi::api::core::v1::PodTemplateSpec;

/// `rand.SafeEncodeString`'s alphabet: no vowels, no confusable characters.
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// 32-bit FNV-1a.
fn fnv32a(bytes: &[u8], mut hash: u32) -> u32 {
    for b in bytes {
        hash ^= u32::from(*b);
        hash = hash.wrapping_mul(16_777_619);
    }
    hash
}

const FNV32_OFFSET: u32 = 2_166_136_261;

/// `rand.SafeEncodeString`: each character mapped into [`ALPHANUMS`].
fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

/// The hash of `template` and `collision_count`, as used in ReplicaSet names and the
/// `pod-template-hash` label.
pub(crate) fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    // Serializing a k8s-openapi struct cannot fail (no non-string map keys).
    let bytes = serde_json::to_vec(template).unwrap_or_default();
    let mut hash = fnv32a(&bytes, FNV32_OFFSET);
    if let Some(count) = collision_count {
        let mut extra = [0u8; 8];
        extra[..4].copy_from_slice(&count.to_le_bytes());
        hash = fnv32a(&extra, hash);
    }
    safe_encode(&hash.to_string())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodSpec};

    use super::*;

    fn template(image: &str) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "app".into(),
                    image: Some(image.into()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        }
    }

    #[test]
    fn fnv32a_matches_the_reference_vectors() {
        assert_eq!(fnv32a(b"", FNV32_OFFSET), 0x811c_9dc5);
        assert_eq!(fnv32a(b"a", FNV32_OFFSET), 0xe40c_292c);
        assert_eq!(fnv32a(b"foobar", FNV32_OFFSET), 0xbf9c_f968);
    }

    #[test]
    fn the_hash_is_stable_and_follows_the_template_and_collisions() {
        let a = compute_hash(&template("nginx:1"), None);
        assert_eq!(a, compute_hash(&template("nginx:1"), None));
        assert_ne!(a, compute_hash(&template("nginx:2"), None));
        assert_ne!(a, compute_hash(&template("nginx:1"), Some(1)));
        assert!(a.bytes().all(|b| ALPHANUMS.contains(&b)));
        assert!(!a.is_empty() && a.len() <= 10);
    }
}
