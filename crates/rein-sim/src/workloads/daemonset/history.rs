//! A DaemonSet's ControllerRevisions, as kube's `constructHistory`, `snapshot`,
//! `dedupCurHistories` and `cleanupHistory` keep them: one revision per template the set has
//! had (`<ds>-<hash>`, labelled with the template's labels and
//! `controller-revision-hash: <hash>`, annotated as the set), the current one renumbered to
//! the highest, a hash collision resolved by bumping `status.collisionCount`, and revisions no
//! Pod uses deleted beyond `revisionHistoryLimit`.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use rein_client::{Client, ListOptions, Patch, PatchParams, PostParams};
use rein_scheme::ObjectKey;
use rein_scheme::labels::Selector;
use serde_json::json;

use super::super::Error;
use super::super::claim::{Claim, describe};
use super::super::revision::{self, POD_REVISION_LABEL};
use super::{controller_reference, template};

/// The current revision and the others.
pub(super) struct History {
    pub(super) current: ControllerRevision,
    pub(super) old: Vec<Arc<ControllerRevision>>,
}

impl History {
    /// The current revision's hash: the `controller-revision-hash` of up-to-date Pods.
    pub(super) fn hash(&self) -> String {
        self.current
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_REVISION_LABEL))
            .cloned()
            .unwrap_or_default()
    }
}

/// `Match`: whether `revision` holds the set's current template.
fn matches(ds: &DaemonSet, revision: &ControllerRevision) -> bool {
    revision::data(revision) == &revision::patch_for(&template(ds))
}

/// `constructHistory`.
pub(super) async fn construct(
    client: &Client,
    ds: &DaemonSet,
    selector: &Selector,
    claimed_pods: &[Arc<Pod>],
) -> Result<History, Error> {
    let namespace = ds.metadata.namespace.clone().unwrap_or_default();
    let all = client
        .list::<ControllerRevision>(&ListOptions::default().namespace(&namespace))
        .await?;
    let histories = Claim {
        client,
        owner: ds,
        selector,
        finalizers: &[],
    }
    .run(all.items)
    .await?;
    let mut current = Vec::new();
    let mut old = Vec::new();
    for history in histories {
        // Revisions from before the label: their name stands in for the hash.
        let history = if history
            .metadata
            .labels
            .as_ref()
            .is_none_or(|l| !l.contains_key(POD_REVISION_LABEL))
        {
            let mut labelled = Arc::unwrap_or_clone(history);
            let name = labelled.metadata.name.clone().unwrap_or_default();
            labelled
                .metadata
                .labels
                .get_or_insert_default()
                .insert(POD_REVISION_LABEL.into(), name);
            Arc::new(client.update(&labelled, &PostParams::default()).await?)
        } else {
            history
        };
        if matches(ds, &history) {
            current.push(history);
        } else {
            old.push(history);
        }
    }
    let next = revision::max_revision(old.iter().map(|r| &**r)) + 1;
    let current = if current.is_empty() {
        snapshot(client, ds, next).await?
    } else {
        let kept = dedup(client, ds, current, claimed_pods).await?;
        if kept.revision < next {
            revision::renumber(client, &kept, next).await?
        } else {
            kept
        }
    };
    Ok(History { current, old })
}

/// `snapshot`: creates the revision of the current template; on a name taken by another
/// template, bumps `status.collisionCount` and fails (the next sync uses the new hash).
async fn snapshot(
    client: &Client,
    ds: &DaemonSet,
    number: i64,
) -> Result<ControllerRevision, Error> {
    let data = revision::patch_for(&template(ds));
    let collision_count = ds.status.as_ref().and_then(|s| s.collision_count);
    let hash = revision::hash(&data, collision_count);
    let name = revision::name(ds.metadata.name.as_deref().unwrap_or_default(), &hash);
    let mut labels = template(ds)
        .metadata
        .and_then(|m| m.labels)
        .unwrap_or_default();
    labels.insert(POD_REVISION_LABEL.into(), hash);
    let history = ControllerRevision {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.clone()),
            namespace: ds.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: ds.metadata.annotations.clone(),
            owner_references: Some(vec![controller_reference(client, ds)?]),
            ..Default::default()
        },
        data: Some(RawExtension(data)),
        revision: number,
    };
    let err = match client.create(&history, &PostParams::default()).await {
        Ok(created) => return Ok(created),
        Err(err) if err.is_already_exists() => err,
        Err(err) => return Err(err.into()),
    };
    let reader = client.api_reader();
    let key = ObjectKey::new(ds.metadata.namespace.clone().unwrap_or_default(), name);
    let existing = reader.get::<ControllerRevision>(&key).await?;
    if matches(ds, &existing) {
        return Ok(Arc::unwrap_or_clone(existing));
    }
    let fresh = reader.get::<DaemonSet>(&ObjectKey::from_object(ds)).await?;
    let fresh_count = fresh.status.as_ref().and_then(|s| s.collision_count);
    if fresh_count != collision_count {
        return Err(Error::Invalid {
            object: describe(ds),
            problem: format!(
                "found a stale collision count ({collision_count:?}, expected {fresh_count:?}); \
                 will retry until it is updated"
            ),
        });
    }
    let mut bumped = Arc::unwrap_or_clone(fresh);
    let status = bumped.status.get_or_insert_default();
    status.collision_count = Some(collision_count.unwrap_or(0).saturating_add(1));
    client
        .status()
        .update(&bumped, &PostParams::default())
        .await?;
    tracing::debug!(daemon_set = %describe(ds), "hash collision: collisionCount bumped");
    Err(err.into())
}

/// `dedupCurHistories`: of several revisions holding the current template, keeps the
/// highest, relabels the Pods to its hash and deletes the others.
async fn dedup(
    client: &Client,
    ds: &DaemonSet,
    current: Vec<Arc<ControllerRevision>>,
    pods: &[Arc<Pod>],
) -> Result<ControllerRevision, Error> {
    let Some(keep) = current.iter().max_by_key(|r| r.revision).cloned() else {
        return Err(Error::Invalid {
            object: describe(ds),
            problem: "no current revision to keep".into(),
        });
    };
    if current.len() == 1 {
        return Ok(Arc::unwrap_or_clone(keep));
    }
    let hash = keep
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(POD_REVISION_LABEL))
        .cloned()
        .unwrap_or_default();
    for pod in pods {
        let label = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_REVISION_LABEL));
        if label != Some(&hash) {
            let patch = json!({ "metadata": { "labels": { POD_REVISION_LABEL: hash } } });
            client
                .patch::<Pod, _>(
                    &ObjectKey::from_object(&**pod),
                    &Patch::Merge(patch),
                    &PatchParams::default(),
                )
                .await?;
        }
    }
    for duplicate in current
        .iter()
        .filter(|r| r.metadata.name != keep.metadata.name)
    {
        revision::delete(client, duplicate).await?;
    }
    Ok(Arc::unwrap_or_clone(keep))
}

/// `cleanupHistory`: deletes the oldest revisions no Pod runs (deleted terminal Pods count)
/// beyond `revisionHistoryLimit`.
pub(super) async fn cleanup(
    client: &Client,
    ds: &DaemonSet,
    mut old: Vec<Arc<ControllerRevision>>,
    pods: &[Arc<Pod>],
) -> Result<(), Error> {
    let keep = ds
        .spec
        .as_ref()
        .and_then(|s| s.revision_history_limit)
        .unwrap_or(10);
    let mut to_kill = i64::try_from(old.len()).unwrap_or(i64::MAX) - i64::from(keep);
    if to_kill <= 0 {
        return Ok(());
    }
    let live: HashSet<&str> = pods
        .iter()
        .filter_map(|p| p.metadata.labels.as_ref()?.get(POD_REVISION_LABEL))
        .map(String::as_str)
        .filter(|h| !h.is_empty())
        .collect();
    revision::sort(&mut old);
    for history in &old {
        if to_kill <= 0 {
            break;
        }
        let hash = history
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_REVISION_LABEL));
        if hash.is_some_and(|h| live.contains(h.as_str())) {
            continue;
        }
        revision::delete(client, history).await?;
        to_kill -= 1;
    }
    Ok(())
}
