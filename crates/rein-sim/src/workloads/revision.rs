//! kube's `pkg/controller/history` for the DaemonSet and StatefulSet controllers: a
//! controller's template history as ControllerRevisions (`<owner>-<hash>`, the hash FNV-32 of
//! the revision's data and the collision count, `rand.SafeEncodeString`d), found, compared,
//! created (bumping the collision count on a name clash), renumbered and deleted.
//!
//! A revision's data is a strategic merge patch that puts the template back:
//! `{"spec": {"template": {…, "$patch": "replace"}}}` (`getPatch` of both controllers).
//! kube hashes the Go JSON bytes of it; the same bytes cannot be produced outside Go, so this
//! hashes serde_json's (keys sorted, as Go's map encoding sorts them): deterministic, changing
//! with the template and the collision count as kube's does, but not kube's value.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use rein_client::{Client, DeleteParams, ListOptions, PostParams};
use rein_scheme::labels::Selector;
use rein_scheme::{Object, ObjectKey};
use serde_json::{Value, json};

use super::Error;
use super::pods::controller_of;

/// `ControllerRevisionHashLabel`: the hash label of a StatefulSet's revisions.
pub(crate) const HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// `apps.ControllerRevisionHashLabelKey` (`DefaultDaemonSetUniqueLabelKey`): the revision of a
/// Pod (a StatefulSet's revision name, a DaemonSet's hash), and the hash of a DaemonSet's
/// revisions.
pub(crate) const POD_REVISION_LABEL: &str = "controller-revision-hash";

/// `rand.SafeEncodeString`'s alphabet: no vowels, no confusable characters.
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Go's `hash/fnv.New32` (FNV-1, not 1a), as `HashControllerRevision` uses it.
fn fnv32(bytes: &[u8], mut hash: u32) -> u32 {
    for b in bytes {
        hash = hash.wrapping_mul(16_777_619);
        hash ^= u32::from(*b);
    }
    hash
}

const FNV32_OFFSET: u32 = 2_166_136_261;

/// `HashControllerRevision`: FNV-32 of the data, then of the collision count in decimal,
/// encoded with `rand.SafeEncodeString`.
pub(crate) fn hash(data: &Value, collision_count: Option<i32>) -> String {
    // Serializing a JSON value cannot fail.
    let bytes = serde_json::to_vec(data).unwrap_or_default();
    let mut hash = fnv32(&bytes, FNV32_OFFSET);
    if let Some(count) = collision_count {
        hash = fnv32(count.to_string().as_bytes(), hash);
    }
    hash.to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

/// `ControllerRevisionName`: `<prefix>-<hash>`, the prefix cut to 223 characters.
pub(crate) fn name(prefix: &str, hash: &str) -> String {
    let prefix = prefix.get(..223).unwrap_or(prefix);
    format!("{prefix}-{hash}")
}

/// `getPatch`: the revision data that restores `template`.
pub(crate) fn patch_for(template: &PodTemplateSpec) -> Value {
    let mut template = serde_json::to_value(template).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut template {
        map.insert("$patch".into(), json!("replace"));
    }
    json!({ "spec": { "template": template } })
}

/// The data of a revision (`Value::Null` if it has none).
pub(crate) fn data(revision: &ControllerRevision) -> &Value {
    revision.data.as_ref().map_or(&Value::Null, |d| &d.0)
}

/// `ApplyRevision`, for the one field revisions hold: the template the revision restores
/// (`None` if its data is not a template patch).
pub(crate) fn template_of(revision: &ControllerRevision) -> Option<PodTemplateSpec> {
    let mut template = data(revision).pointer("/spec/template")?.clone();
    if let Value::Object(map) = &mut template {
        map.remove("$patch");
    }
    serde_json::from_value(template).ok()
}

/// `EqualRevision`: the same hash label (when both have one) and the same data.
pub(crate) fn equal(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    let label = |r: &ControllerRevision| {
        r.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HASH_LABEL))
            .cloned()
    };
    if let (Some(la), Some(lb)) = (label(a), label(b))
        && la != lb
    {
        return false;
    }
    data(a) == data(b)
}

/// `SortControllerRevisions`: by revision number, then creation time, then name.
pub(crate) fn sort(revisions: &mut [Arc<ControllerRevision>]) {
    revisions.sort_by(|a, b| {
        a.revision
            .cmp(&b.revision)
            .then_with(|| {
                let (ta, tb) = (
                    a.metadata.creation_timestamp.as_ref().map(|t| t.0),
                    b.metadata.creation_timestamp.as_ref().map(|t| t.0),
                );
                ta.partial_cmp(&tb).unwrap_or(Ordering::Equal)
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

/// `ListControllerRevisions`: the revisions in `owner`'s namespace its selector matches that
/// it controls or that nobody controls.
pub(crate) async fn list<O: Object>(
    client: &Client,
    owner: &O,
    selector: &Selector,
) -> Result<Vec<Arc<ControllerRevision>>, Error> {
    let namespace = owner.meta().namespace.clone().unwrap_or_default();
    let uid = owner.meta().uid.clone().unwrap_or_default();
    let list = client
        .list::<ControllerRevision>(
            &ListOptions::default()
                .namespace(&namespace)
                .labels(selector.clone()),
        )
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter(|r| controller_of(&r.metadata).is_none_or(|c| c.uid == uid))
        .collect())
}

/// `NewControllerRevision`: a revision of `owner` (its controller reference `reference`)
/// holding `data`, labelled with `labels` and the hash, named after the hash.
pub(crate) fn new(
    owner_name: &str,
    namespace: &str,
    reference: OwnerReference,
    labels: BTreeMap<String, String>,
    data: Value,
    revision: i64,
    collision_count: Option<i32>,
) -> ControllerRevision {
    let hash = hash(&data, collision_count);
    let mut labels = labels;
    labels.insert(HASH_LABEL.into(), hash.clone());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(name(owner_name, &hash)),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels),
            owner_references: Some(vec![reference]),
            ..ObjectMeta::default()
        },
        data: Some(RawExtension(data)),
        revision,
    }
}

/// `CreateControllerRevision`: creates `revision`, renaming it with a bumped
/// `collision_count` while another revision with different data holds the name; an existing
/// revision with the same data is returned as is.
pub(crate) async fn create(
    client: &Client,
    owner_name: &str,
    revision: &ControllerRevision,
    collision_count: &mut i32,
) -> Result<ControllerRevision, Error> {
    let mut clone = revision.clone();
    loop {
        let hash = hash(data(revision), Some(*collision_count));
        clone.metadata.name = Some(name(owner_name, &hash));
        match client.create(&clone, &PostParams::default()).await {
            Ok(created) => return Ok(created),
            Err(err) if err.is_already_exists() => {
                let key = ObjectKey::from_object(&clone);
                let existing = client.api_reader().get::<ControllerRevision>(&key).await?;
                if data(&existing) == data(&clone) {
                    return Ok(Arc::unwrap_or_clone(existing));
                }
                *collision_count = collision_count.saturating_add(1);
            }
            Err(err) => return Err(err.into()),
        }
    }
}

/// `UpdateControllerRevision`: gives `revision` the number `number`.
pub(crate) async fn renumber(
    client: &Client,
    revision: &ControllerRevision,
    number: i64,
) -> Result<ControllerRevision, Error> {
    if revision.revision == number {
        return Ok(revision.clone());
    }
    let mut updated = revision.clone();
    updated.revision = number;
    match client.update(&updated, &PostParams::default()).await {
        Ok(done) => Ok(done),
        Err(err) if err.is_conflict() => {
            let fresh = client
                .api_reader()
                .get::<ControllerRevision>(&ObjectKey::from_object(revision))
                .await?;
            let mut updated = Arc::unwrap_or_clone(fresh);
            updated.revision = number;
            Ok(client.update(&updated, &PostParams::default()).await?)
        }
        Err(err) => Err(err.into()),
    }
}

/// `DeleteControllerRevision` (gone already is fine).
pub(crate) async fn delete(client: &Client, revision: &ControllerRevision) -> Result<(), Error> {
    match client
        .delete::<ControllerRevision>(&ObjectKey::from_object(revision), &DeleteParams::default())
        .await
    {
        Ok(()) => Ok(()),
        Err(err) if err.is_not_found() => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// The highest revision number of `revisions` (0 for none).
pub(crate) fn max_revision<'a>(revisions: impl IntoIterator<Item = &'a ControllerRevision>) -> i64 {
    revisions.into_iter().map(|r| r.revision).max().unwrap_or(0)
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
    fn fnv32_matches_the_reference_vectors() {
        assert_eq!(fnv32(b"", FNV32_OFFSET), 0x811c_9dc5);
        assert_eq!(fnv32(b"a", FNV32_OFFSET), 0x050c_5d7e);
        assert_eq!(fnv32(b"foobar", FNV32_OFFSET), 0x31f0_b262);
    }

    #[test]
    fn the_hash_follows_the_data_and_the_collision_count() {
        let a = hash(&patch_for(&template("nginx:1")), Some(0));
        assert_eq!(a, hash(&patch_for(&template("nginx:1")), Some(0)));
        assert_ne!(a, hash(&patch_for(&template("nginx:2")), Some(0)));
        assert_ne!(a, hash(&patch_for(&template("nginx:1")), Some(1)));
        assert!(a.bytes().all(|b| ALPHANUMS.contains(&b)));
    }

    #[test]
    fn a_revision_gives_back_its_template() {
        let revision = ControllerRevision {
            data: Some(RawExtension(patch_for(&template("redis")))),
            ..ControllerRevision::default()
        };
        assert_eq!(data(&revision)["spec"]["template"]["$patch"], "replace");
        assert_eq!(template_of(&revision), Some(template("redis")));
    }

    #[test]
    fn long_owner_names_are_cut() {
        assert_eq!(name("web", "abc"), "web-abc");
        assert_eq!(name(&"a".repeat(300), "h").len(), 225);
    }
}
