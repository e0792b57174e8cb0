//! kube's `pkg/controller/deployment/util/deployment_util.go`: the annotations a Deployment
//! writes on its ReplicaSets, revisions, surge and unavailability, conditions, and the
//! questions a rollout asks (is the new ReplicaSet saturated, is the rollout complete, has it
//! progressed, has it timed out).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentSpec, DeploymentStatus, ReplicaSet,
};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::workloads::intstr::scaled_value;
use crate::workloads::pods::now;

/// `deployment.kubernetes.io/revision`: the rollout sequence number of a ReplicaSet (and, on the
/// Deployment, of its current ReplicaSet).
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
/// `deployment.kubernetes.io/revision-history`: the revisions a ReplicaSet served before.
pub const REVISION_HISTORY_ANNOTATION: &str = "deployment.kubernetes.io/revision-history";
/// `deployment.kubernetes.io/desired-replicas`: the Deployment's replicas when the ReplicaSet
/// was last scaled.
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
/// `deployment.kubernetes.io/max-replicas`: replicas + maxSurge when the ReplicaSet was last
/// scaled.
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
/// `deprecated.deployment.rollback.to`: a rollback asked for through the old API.
pub const ROLLBACK_TO_ANNOTATION: &str = "deprecated.deployment.rollback.to";
/// The label telling a Deployment's ReplicaSets (and their Pods) apart.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
/// kubectl's last applied configuration, never copied to ReplicaSets.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The longest revision history annotation kept.
const MAX_REV_HISTORY_LENGTH_IN_CHARS: usize = 2000;

/// Reasons of the `Progressing` and `Available` conditions.
pub(crate) mod reason {
    /// A ReplicaSet of the rollout was scaled.
    pub(crate) const REPLICA_SET_UPDATED: &str = "ReplicaSetUpdated";
    /// Creating the new ReplicaSet failed.
    pub(crate) const FAILED_RS_CREATE: &str = "ReplicaSetCreateError";
    /// The new ReplicaSet was created.
    pub(crate) const NEW_REPLICA_SET: &str = "NewReplicaSetCreated";
    /// An existing ReplicaSet is the new one.
    pub(crate) const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
    /// The new ReplicaSet is available: the rollout is complete.
    pub(crate) const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
    /// No progress within `progressDeadlineSeconds`.
    pub(crate) const TIMED_OUT: &str = "ProgressDeadlineExceeded";
    /// The Deployment is paused.
    pub(crate) const PAUSED: &str = "DeploymentPaused";
    /// The Deployment was resumed.
    pub(crate) const RESUMED: &str = "DeploymentResumed";
    /// At least `replicas - maxUnavailable` Pods are available.
    pub(crate) const MIN_AVAILABLE: &str = "MinimumReplicasAvailable";
    /// Fewer than `replicas - maxUnavailable` Pods are available.
    pub(crate) const MIN_UNAVAILABLE: &str = "MinimumReplicasUnavailable";
}

/// The Deployment's spec (defaulted by the server; empty if absent).
pub(crate) fn spec(d: &Deployment) -> DeploymentSpec {
    d.spec.clone().unwrap_or_default()
}

/// `spec.replicas` (the server defaults it to 1).
pub(crate) fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// A ReplicaSet's `spec.replicas`.
pub(crate) fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// Sets a ReplicaSet's `spec.replicas`.
pub(crate) fn set_rs_replicas(rs: &mut ReplicaSet, n: i32) {
    rs.spec.get_or_insert_with(Default::default).replicas = Some(n);
}

/// A ReplicaSet's status counts: (replicas, ready, available).
fn rs_counts(rs: &ReplicaSet) -> (i32, i32, i32) {
    rs.status.as_ref().map_or((0, 0, 0), |s| {
        (
            s.replicas,
            s.ready_replicas.unwrap_or(0),
            s.available_replicas.unwrap_or(0),
        )
    })
}

/// `IsRollingUpdate`.
pub(crate) fn is_rolling_update(d: &Deployment) -> bool {
    strategy_type(d) == "RollingUpdate"
}

/// `spec.strategy.type` (RollingUpdate by default).
pub(crate) fn strategy_type(d: &Deployment) -> String {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.clone())
        .unwrap_or_else(|| "RollingUpdate".into())
}

fn rolling_params(d: &Deployment) -> (Option<IntOrString>, Option<IntOrString>) {
    let rolling = d
        .spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    (
        rolling.and_then(|r| r.max_surge.clone()),
        rolling.and_then(|r| r.max_unavailable.clone()),
    )
}

/// `ResolveFenceposts`: maxSurge rounded up and maxUnavailable rounded down against `desired`;
/// both zero becomes an unavailability of one. `None` for a value that is neither an int nor
/// a percentage.
pub(crate) fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    desired: i32,
) -> Option<(i32, i32)> {
    let zero = IntOrString::Int(0);
    let surge = scaled_value(max_surge.unwrap_or(&zero), desired, true)?;
    let mut unavailable = scaled_value(max_unavailable.unwrap_or(&zero), desired, false)?;
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    Some((surge, unavailable))
}

/// `MaxSurge`: how many Pods above `replicas` a rolling update may run (0 otherwise).
pub(crate) fn max_surge(d: &Deployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    let (surge, unavailable) = rolling_params(d);
    resolve_fenceposts(surge.as_ref(), unavailable.as_ref(), replicas(d)).map_or(0, |f| f.0)
}

/// `MaxUnavailable`: how many of `replicas` a rolling update may have unavailable.
pub(crate) fn max_unavailable(d: &Deployment) -> i32 {
    let want = replicas(d);
    if !is_rolling_update(d) || want == 0 {
        return 0;
    }
    let (surge, unavailable) = rolling_params(d);
    resolve_fenceposts(surge.as_ref(), unavailable.as_ref(), want).map_or(0, |f| f.1.min(want))
}

/// `HasProgressDeadline`.
pub(crate) fn has_progress_deadline(d: &Deployment) -> bool {
    d.spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .is_some_and(|s| s != i32::MAX)
}

/// `HasRevisionHistoryLimit`.
pub(crate) fn revision_history_limit(d: &Deployment) -> Option<i32> {
    d.spec
        .as_ref()
        .and_then(|s| s.revision_history_limit)
        .filter(|l| *l != i32::MAX)
}

/// A new condition, updated and transitioned now.
pub(crate) fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> DeploymentCondition {
    let now = now();
    DeploymentCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

/// `GetDeploymentCondition`.
pub(crate) fn get_condition<'a>(
    status: &'a DeploymentStatus,
    type_: &str,
) -> Option<&'a DeploymentCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
}

/// `SetDeploymentCondition`: replaces the condition of its type, unless the status and reason
/// are unchanged; keeps the transition time when the status is.
pub(crate) fn set_condition(status: &mut DeploymentStatus, mut condition: DeploymentCondition) {
    if let Some(current) = get_condition(status, &condition.type_) {
        if current.status == condition.status && current.reason == condition.reason {
            return;
        }
        if current.status == condition.status {
            condition.last_transition_time = current.last_transition_time.clone();
        }
    }
    let mut conditions = status.conditions.take().unwrap_or_default();
    conditions.retain(|c| c.type_ != condition.type_);
    conditions.push(condition);
    status.conditions = Some(conditions);
}

/// `RemoveDeploymentCondition`.
pub(crate) fn remove_condition(status: &mut DeploymentStatus, type_: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_ != type_);
        if conditions.is_empty() {
            status.conditions = None;
        }
    }
}

/// `Revision`: the revision annotation (0 when absent); `None` when it does not parse.
pub(crate) fn revision(meta: &ObjectMeta) -> Option<i64> {
    match meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION_ANNOTATION))
    {
        None => Some(0),
        Some(v) => v.parse().ok(),
    }
}

/// `MaxRevision`.
pub(crate) fn max_revision<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i64 {
    rss.into_iter()
        .filter_map(|rs| revision(&rs.metadata))
        .max()
        .unwrap_or(0)
        .max(0)
}

/// `LastRevision`: the second highest revision.
pub(crate) fn last_revision<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i64 {
    let (mut max, mut second) = (0, 0);
    for v in rss.into_iter().filter_map(|rs| revision(&rs.metadata)) {
        if v >= max {
            second = max;
            max = v;
        } else if v > second {
            second = v;
        }
    }
    second
}

/// `SetDeploymentRevision`: whether the Deployment's revision annotation changed.
pub(crate) fn set_deployment_revision(d: &mut Deployment, revision: &str) -> bool {
    let annotations = d.metadata.annotations.get_or_insert_with(Default::default);
    if annotations.get(REVISION_ANNOTATION).map(String::as_str) == Some(revision) {
        return false;
    }
    annotations.insert(REVISION_ANNOTATION.into(), revision.into());
    true
}

/// Annotations a Deployment never copies to its ReplicaSets (and a rollback never copies
/// back).
fn skip_copy_annotation(key: &str) -> bool {
    matches!(
        key,
        LAST_APPLIED_ANNOTATION
            | REVISION_ANNOTATION
            | REVISION_HISTORY_ANNOTATION
            | DESIRED_REPLICAS_ANNOTATION
            | MAX_REPLICAS_ANNOTATION
            | ROLLBACK_TO_ANNOTATION
    )
}

/// `copyDeploymentAnnotationsToReplicaSet`: whether anything changed.
fn copy_deployment_annotations(d: &Deployment, rs: &mut ReplicaSet) -> bool {
    let annotations = rs.metadata.annotations.get_or_insert_with(Default::default);
    let mut changed = false;
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if skip_copy_annotation(k) || annotations.get(k) == Some(v) {
            continue;
        }
        annotations.insert(k.clone(), v.clone());
        changed = true;
    }
    changed
}

/// `SetDeploymentAnnotationsTo`: the Deployment takes the annotations of the ReplicaSet it
/// rolls back to (but keeps its own skipped ones).
pub(crate) fn set_deployment_annotations_to(d: &mut Deployment, rs: &ReplicaSet) {
    let mut annotations: BTreeMap<String, String> = d
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| skip_copy_annotation(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in rs.metadata.annotations.iter().flatten() {
        if !skip_copy_annotation(k) {
            annotations.insert(k.clone(), v.clone());
        }
    }
    d.metadata.annotations = Some(annotations);
}

/// `SetNewReplicaSetAnnotations`: copies the Deployment's annotations, raises the revision to
/// `new_revision` (recording the old one in the revision history), and for a ReplicaSet about
/// to be created sets the replicas annotations. Whether anything changed.
pub(crate) fn set_new_replica_set_annotations(
    d: &Deployment,
    rs: &mut ReplicaSet,
    new_revision: i64,
    exists: bool,
) -> bool {
    let mut changed = copy_deployment_annotations(d, rs);
    let annotations = rs.metadata.annotations.get_or_insert_with(Default::default);
    let old = annotations.get(REVISION_ANNOTATION).cloned();
    let old_revision = match old.as_deref() {
        None | Some("") => 0,
        Some(v) => match v.parse::<i64>() {
            Ok(n) => n,
            Err(_) => {
                tracing::warn!(
                    revision = v,
                    "not updating a ReplicaSet whose revision is not an integer"
                );
                return false;
            }
        },
    };
    if old_revision < new_revision {
        annotations.insert(REVISION_ANNOTATION.into(), new_revision.to_string());
        changed = true;
        if let Some(old) = old {
            let history = annotations
                .get(REVISION_HISTORY_ANNOTATION)
                .cloned()
                .unwrap_or_default();
            if history.is_empty() {
                annotations.insert(REVISION_HISTORY_ANNOTATION.into(), old);
            } else {
                let mut revisions: Vec<&str> = history.split(',').collect();
                let mut total = history.len() + old.len() + 1;
                let mut start = 0;
                while total > MAX_REV_HISTORY_LENGTH_IN_CHARS && start < revisions.len() {
                    total -= revisions[start].len() + 1;
                    start += 1;
                }
                if total <= MAX_REV_HISTORY_LENGTH_IN_CHARS {
                    revisions = revisions.split_off(start);
                    revisions.push(&old);
                    let joined = revisions.join(",");
                    annotations.insert(REVISION_HISTORY_ANNOTATION.into(), joined);
                }
            }
        }
    }
    if !exists && set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)) {
        changed = true;
    }
    changed
}

/// `SetReplicasAnnotations`: whether anything changed.
pub(crate) fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i32, max: i32) -> bool {
    let annotations = rs.metadata.annotations.get_or_insert_with(Default::default);
    let mut changed = false;
    for (key, value) in [
        (DESIRED_REPLICAS_ANNOTATION, desired.to_string()),
        (MAX_REPLICAS_ANNOTATION, max.to_string()),
    ] {
        if annotations.get(key) != Some(&value) {
            annotations.insert(key.into(), value);
            changed = true;
        }
    }
    changed
}

/// `ReplicasAnnotationsNeedUpdate`.
pub(crate) fn replicas_annotations_need_update(rs: &ReplicaSet, desired: i32, max: i32) -> bool {
    let annotations = rs.metadata.annotations.as_ref();
    let get = |k: &str| annotations.and_then(|a| a.get(k)).cloned();
    get(DESIRED_REPLICAS_ANNOTATION) != Some(desired.to_string())
        || get(MAX_REPLICAS_ANNOTATION) != Some(max.to_string())
}

fn int_annotation(rs: &ReplicaSet, key: &str) -> Option<i32> {
    rs.metadata.annotations.as_ref()?.get(key)?.parse().ok()
}

/// `GetDesiredReplicasAnnotation`.
pub(crate) fn desired_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
}

/// A template as JSON with the `pod-template-hash` label and every empty map, list and null
/// removed: apimachinery's semantic equality treats nil and empty alike.
fn normalized(template: &PodTemplateSpec) -> Value {
    fn prune(v: &mut Value) -> bool {
        match v {
            Value::Null => true,
            Value::Array(items) => {
                for item in items.iter_mut() {
                    prune(item);
                }
                items.is_empty()
            }
            Value::Object(map) => {
                map.retain(|_, child| !prune(child));
                map.is_empty()
            }
            _ => false,
        }
    }
    let mut v = serde_json::to_value(template).unwrap_or(Value::Null);
    if let Some(labels) = v
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    prune(&mut v);
    v
}

/// `EqualIgnoreHash`: the templates are equal but for the `pod-template-hash` label.
pub(crate) fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    normalized(a) == normalized(b)
}

/// A ReplicaSet's template (empty if absent).
pub(crate) fn rs_template(rs: &ReplicaSet) -> PodTemplateSpec {
    rs.spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default()
}

fn created(rs: &ReplicaSet) -> Option<&Timestamp> {
    rs.metadata.creation_timestamp.as_ref().map(|t| &t.0)
}

/// `ReplicaSetsByCreationTimestamp`: older first, then by name.
pub(crate) fn by_creation(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    created(a)
        .cmp(&created(b))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// `ReplicaSetsByRevision`: lower revision first, then older first.
pub(crate) fn by_revision(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    let ra = revision(&a.metadata).unwrap_or(0);
    let rb = revision(&b.metadata).unwrap_or(0);
    ra.cmp(&rb).then_with(|| by_creation(a, b))
}

/// `ReplicaSetsBySizeNewer`: larger first; of equal size, newer first.
pub(crate) fn by_size_newer(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    rs_replicas(b)
        .cmp(&rs_replicas(a))
        .then_with(|| by_creation(b, a))
}

/// `ReplicaSetsBySizeOlder`: larger first; of equal size, older first.
pub(crate) fn by_size_older(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    rs_replicas(b)
        .cmp(&rs_replicas(a))
        .then_with(|| by_creation(a, b))
}

/// `FindNewReplicaSet`: the oldest ReplicaSet whose template is the Deployment's.
pub(crate) fn find_new_replica_set<'a>(
    d: &Deployment,
    rss: &'a [ReplicaSet],
) -> Option<&'a ReplicaSet> {
    let template = spec(d).template;
    let mut sorted: Vec<&ReplicaSet> = rss.iter().collect();
    sorted.sort_by(|a, b| by_creation(a, b));
    sorted
        .into_iter()
        .find(|rs| equal_ignore_hash(&rs_template(rs), &template))
}

/// `FindOldReplicaSets`: every ReplicaSet but the new one.
pub(crate) fn find_old_replica_sets(d: &Deployment, rss: &[ReplicaSet]) -> Vec<ReplicaSet> {
    let new_uid = find_new_replica_set(d, rss).and_then(|rs| rs.metadata.uid.clone());
    rss.iter()
        .filter(|rs| new_uid.is_none() || rs.metadata.uid != new_uid)
        .cloned()
        .collect()
}

/// `FilterActiveReplicaSets`: those with replicas.
pub(crate) fn active(rss: &[ReplicaSet]) -> Vec<ReplicaSet> {
    rss.iter()
        .filter(|rs| rs_replicas(rs) > 0)
        .cloned()
        .collect()
}

/// `GetReplicaCountForReplicaSets`: the sum of `spec.replicas`.
pub(crate) fn replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_replicas).sum()
}

/// `GetActualReplicaCountForReplicaSets`: the sum of `status.replicas`.
pub(crate) fn actual_replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(|rs| rs_counts(rs).0).sum()
}

/// `GetReadyReplicaCountForReplicaSets`.
pub(crate) fn ready_replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(|rs| rs_counts(rs).1).sum()
}

/// `GetAvailableReplicaCountForReplicaSets`.
pub(crate) fn available_replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(|rs| rs_counts(rs).2).sum()
}

/// `NewRSNewReplicas`: the size the new ReplicaSet may have now. `None` for a maxSurge that
/// does not resolve.
pub(crate) fn new_rs_new_replicas(
    d: &Deployment,
    all: &[&ReplicaSet],
    new_rs: &ReplicaSet,
) -> Result<i32, String> {
    match strategy_type(d).as_str() {
        "RollingUpdate" => {
            let (surge, _) = rolling_params(d);
            let want = replicas(d);
            let surge = scaled_value(surge.as_ref().unwrap_or(&IntOrString::Int(0)), want, true)
                .ok_or_else(|| format!("invalid maxSurge {surge:?}"))?;
            let current = replica_count(all.iter().copied());
            let max_total = want + surge;
            if current >= max_total {
                return Ok(rs_replicas(new_rs));
            }
            let scale_up = (max_total - current).min(want - rs_replicas(new_rs));
            Ok(rs_replicas(new_rs) + scale_up)
        }
        "Recreate" => Ok(replicas(d)),
        other => Err(format!("deployment type {other} isn't supported")),
    }
}

/// `IsSaturated`: the new ReplicaSet holds (and has available) all the Deployment's replicas.
pub(crate) fn is_saturated(d: &Deployment, rs: Option<&ReplicaSet>) -> bool {
    let Some(rs) = rs else {
        return false;
    };
    let want = replicas(d);
    desired_replicas_annotation(rs) == Some(want)
        && rs_replicas(rs) == want
        && rs_counts(rs).2 == want
}

/// A status's counts as `i32`s.
pub(crate) fn counts(s: &DeploymentStatus) -> (i32, i32, i32, i32, i64) {
    (
        s.replicas.unwrap_or(0),
        s.updated_replicas.unwrap_or(0),
        s.ready_replicas.unwrap_or(0),
        s.available_replicas.unwrap_or(0),
        s.observed_generation.unwrap_or(0),
    )
}

/// `DeploymentComplete`: every desired replica is updated and available and no old one runs.
pub(crate) fn deployment_complete(d: &Deployment, status: &DeploymentStatus) -> bool {
    let want = replicas(d);
    let (replicas, updated, _, available, observed) = counts(status);
    updated == want
        && replicas == want
        && available == want
        && observed >= d.metadata.generation.unwrap_or(0)
}

/// `DeploymentProgressing`: new Pods were added or became ready or available, or old ones went.
pub(crate) fn deployment_progressing(d: &Deployment, new: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let (old_replicas, old_updated, old_ready, old_available, _) = counts(&old);
    let (new_replicas, new_updated, new_ready, new_available, _) = counts(new);
    new_updated > old_updated
        || (new_replicas - new_updated) < (old_replicas - old_updated)
        || new_ready > old_ready
        || new_available > old_available
}

/// `DeploymentTimedOut`: no progress reported for `progressDeadlineSeconds`.
pub(crate) fn deployment_timed_out(d: &Deployment, new: &DeploymentStatus) -> bool {
    if !has_progress_deadline(d) {
        return false;
    }
    let Some(condition) = get_condition(new, "Progressing") else {
        return false;
    };
    match condition.reason.as_deref() {
        Some(reason::NEW_RS_AVAILABLE) => return false,
        Some(reason::TIMED_OUT) => return true,
        _ => {}
    }
    let Some(from) = condition.last_update_time.as_ref() else {
        return false;
    };
    let deadline = spec(d).progress_deadline_seconds.unwrap_or(i32::MAX);
    from.0
        .checked_add(SignedDuration::from_secs(i64::from(deadline)))
        .is_ok_and(|t| t < Timestamp::now())
}

/// `GetReplicaSetProportion`: how many replicas `rs` gets of `to_add` (negative: removes) when
/// a Deployment in a rollout is scaled.
pub(crate) fn proportion(d: &Deployment, rs: &ReplicaSet, to_add: i32, added: i32) -> i32 {
    if rs_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = fraction(d, rs);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// `getReplicaSetFraction`.
fn fraction(d: &Deployment, rs: &ReplicaSet) -> i32 {
    let want = replicas(d);
    if want == 0 {
        return -rs_replicas(rs);
    }
    let deployment_replicas = want + max_surge(d);
    let annotated = int_annotation(rs, MAX_REPLICAS_ANNOTATION)
        .unwrap_or_else(|| d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0));
    if annotated == 0 {
        return 0;
    }
    let size = f64::from(rs_replicas(rs)) * f64::from(deployment_replicas) / f64::from(annotated);
    // `integer.RoundToInt32`: half away from zero.
    let rounded = size.round();
    let rounded = if rounded >= f64::from(i32::MAX) {
        i32::MAX
    } else if rounded <= f64::from(i32::MIN) {
        i32::MIN
    } else {
        // In range by the checks above.
        rounded as i32
    };
    rounded - rs_replicas(rs)
}

/// `FindActiveOrLatest`: the only ReplicaSet with replicas, or the newest when none has any;
/// `None` when several have.
pub(crate) fn find_active_or_latest(
    new_rs: Option<&ReplicaSet>,
    old: &[ReplicaSet],
) -> Option<ReplicaSet> {
    if new_rs.is_none() && old.is_empty() {
        return None;
    }
    let mut olds: Vec<&ReplicaSet> = old.iter().collect();
    olds.sort_by(|a, b| by_creation(b, a));
    let all: Vec<&ReplicaSet> = olds
        .iter()
        .copied()
        .chain(new_rs)
        .filter(|rs| rs_replicas(rs) > 0)
        .collect();
    match all.len() {
        0 => new_rs.or(olds.first().copied()).cloned(),
        1 => Some(all[0].clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> IntOrString {
        IntOrString::String(v.into())
    }

    #[test]
    fn fenceposts_round_surge_up_and_unavailability_down() {
        assert_eq!(
            resolve_fenceposts(Some(&s("25%")), Some(&s("25%")), 10),
            Some((3, 2))
        );
        assert_eq!(
            resolve_fenceposts(Some(&s("25%")), Some(&s("25%")), 1),
            Some((1, 0))
        );
        assert_eq!(
            resolve_fenceposts(Some(&s("0%")), Some(&s("1%")), 2),
            Some((0, 1))
        );
        assert_eq!(
            resolve_fenceposts(Some(&IntOrString::Int(0)), Some(&IntOrString::Int(0)), 5),
            Some((0, 1))
        );
        assert_eq!(resolve_fenceposts(Some(&s("many")), None, 5), None);
    }

    #[test]
    fn a_rollback_keeps_the_revision_history() {
        let d = Deployment::default();
        let mut rs = ReplicaSet::default();
        assert!(set_new_replica_set_annotations(&d, &mut rs, 1, true));
        assert!(set_new_replica_set_annotations(&d, &mut rs, 3, true));
        assert!(set_new_replica_set_annotations(&d, &mut rs, 5, true));
        let annotations = rs.metadata.annotations.unwrap_or_default();
        assert_eq!(annotations[REVISION_ANNOTATION], "5");
        assert_eq!(annotations[REVISION_HISTORY_ANNOTATION], "1,3");
    }

    #[test]
    fn templates_compare_without_the_hash_label() {
        let mut a = PodTemplateSpec::default();
        let b = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some([(POD_TEMPLATE_HASH_LABEL.to_owned(), "abc".to_owned())].into()),
                ..ObjectMeta::default()
            }),
            spec: None,
        };
        assert!(equal_ignore_hash(&a, &b));
        a.metadata = Some(ObjectMeta {
            labels: Some([("app".to_owned(), "x".to_owned())].into()),
            ..ObjectMeta::default()
        });
        assert!(!equal_ignore_hash(&a, &b));
    }
}
