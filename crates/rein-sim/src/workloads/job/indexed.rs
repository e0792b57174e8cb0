//! kube's `pkg/controller/job/indexed_job_utils.go`: Indexed Jobs — each Pod carries its
//! completion index (annotation and label `batch.kubernetes.io/job-completion-index`, the
//! `JOB_COMPLETION_INDEX` variable, hostname `<job>-<index>`, name `<job>-<index>-…`), and
//! `status.completedIndexes` lists the succeeded ones as intervals (`1,3-5`).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod, PodTemplateSpec};

use super::{SyncCtx, has_tracking_finalizer, only_replace_failed_pods};
use crate::workloads::pods;

/// `batch.kubernetes.io/job-completion-index`.
pub(super) const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// `JOB_COMPLETION_INDEX`.
const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The DNS label limit the generated name prefix keeps within.
const DNS1123_LABEL_MAX_LENGTH: usize = 63;

/// `getCompletionIndex`: the Pod's index, if it has a valid one.
pub(super) fn index_of(pod: &Pod) -> Option<i32> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(COMPLETION_INDEX)?
        .parse::<i32>()
        .ok()
        .filter(|i| *i >= 0)
}

/// A set of completion indexes below `completions`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Indexes(BTreeSet<i32>);

impl Indexes {
    /// `parseIndexesFromString`: `1,3-5`; malformed parts and indexes not below
    /// `completions` are left out.
    pub(super) fn parse(s: &str, completions: i32) -> Indexes {
        let mut set = BTreeSet::new();
        for part in s.split(',').filter(|p| !p.is_empty()) {
            let (first, last) = match part.split_once('-') {
                Some((a, b)) => (a.parse::<i32>(), b.parse::<i32>()),
                None => (part.parse::<i32>(), part.parse::<i32>()),
            };
            let (Ok(first), Ok(last)) = (first, last) else {
                continue;
            };
            for i in first.max(0)..=last.min(completions - 1) {
                set.insert(i);
            }
        }
        Indexes(set)
    }

    /// These indexes and `more`.
    pub(super) fn with(&self, more: impl IntoIterator<Item = i32>) -> Indexes {
        let mut set = self.0.clone();
        set.extend(more);
        Indexes(set)
    }

    /// Whether `i` is in the set.
    pub(super) fn contains(&self, i: i32) -> bool {
        self.0.contains(&i)
    }

    /// How many.
    pub(super) fn total(&self) -> i32 {
        i32::try_from(self.0.len()).unwrap_or(i32::MAX)
    }
}

impl fmt::Display for Indexes {
    /// Intervals: `0,2-4,7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut iter = self.0.iter().copied().peekable();
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end += 1;
                iter.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

/// The indexes of Pods that succeeded and are not counted yet (`calculateSucceededIndexes`).
pub(super) fn succeeded_indexes(pods: &[Arc<Pod>], completions: i32) -> Vec<i32> {
    pods.iter()
        .filter(|p| pods::phase(p) == "Succeeded" && has_tracking_finalizer(p))
        .filter_map(|p| index_of(p))
        .filter(|i| *i < completions)
        .collect()
}

/// `firstPendingIndexes`: the lowest `count` indexes neither succeeded nor running (nor, when
/// only failed Pods are replaced, terminating).
pub(super) fn first_pending(job: &Job, ctx: &SyncCtx, count: usize, completions: i32) -> Vec<i32> {
    let mut taken = ctx
        .succeeded_indexes
        .with(ctx.active_pods.iter().filter_map(|p| index_of(p)));
    if only_replace_failed_pods(job) {
        taken = taken.with(
            ctx.pods
                .iter()
                .filter(|p| pods::is_terminating(p))
                .filter_map(|p| index_of(p)),
        );
    }
    (0..completions)
        .filter(|i| !taken.contains(*i))
        .take(count)
        .collect()
}

/// The template of the Pod for `index`, and its name prefix (`podGenerateNameWithIndex`).
pub(super) fn template_for(
    template: &PodTemplateSpec,
    job_name: &str,
    index: i32,
) -> (PodTemplateSpec, String) {
    let mut template = template.clone();
    let meta = template.metadata.get_or_insert_with(Default::default);
    meta.annotations
        .get_or_insert_with(Default::default)
        .insert(COMPLETION_INDEX.into(), index.to_string());
    meta.labels
        .get_or_insert_with(Default::default)
        .insert(COMPLETION_INDEX.into(), index.to_string());
    if let Some(spec) = template.spec.as_mut() {
        spec.hostname = Some(format!("{job_name}-{index}"));
        let containers = spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten());
        for container in containers {
            let env = container.env.get_or_insert_with(Vec::new);
            if env.iter().any(|e| e.name == COMPLETION_INDEX_ENV) {
                continue;
            }
            env.push(EnvVar {
                name: COMPLETION_INDEX_ENV.into(),
                value: None,
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        api_version: None,
                        field_path: format!("metadata.annotations['{COMPLETION_INDEX}']"),
                    }),
                    ..EnvVarSource::default()
                }),
            });
        }
    }
    let suffix = format!("-{index}-");
    let mut prefix = format!("{job_name}{suffix}");
    if prefix.len() > DNS1123_LABEL_MAX_LENGTH {
        let keep = DNS1123_LABEL_MAX_LENGTH.saturating_sub(suffix.len());
        let cut: String = job_name.chars().take(keep).collect();
        prefix = format!("{cut}{suffix}");
    }
    (template, prefix)
}

/// `appendDuplicatedIndexPodsForRemoval`: the Pods to remove first — without an index, with
/// an index not below `completions`, or all but one of several with the same index — and the
/// rest.
pub(super) fn split_duplicates(
    pods: &[Arc<Pod>],
    completions: i32,
) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
    let mut sorted = pods.to_vec();
    sorted.sort_by_key(|p| index_of(p).unwrap_or(-1));
    let (mut remove, mut left) = (Vec::new(), Vec::new());
    let mut groups: Vec<(Option<i32>, Vec<Arc<Pod>>)> = Vec::new();
    for pod in sorted {
        let index = index_of(&pod);
        if index.is_some_and(|i| i >= completions) {
            remove.push(pod);
            continue;
        }
        match groups.last_mut() {
            Some((i, group)) if *i == index => group.push(pod),
            _ => groups.push((index, vec![pod])),
        }
    }
    for (index, mut group) in groups {
        if index.is_none() {
            remove.extend(group);
            continue;
        }
        group.sort_by(|a, b| pods::active_order(a, b));
        if let Some(keep) = group.pop() {
            left.push(keep);
        }
        remove.extend(group);
    }
    (remove, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_round_trip_as_intervals() {
        let set = Indexes::parse("0,2-4,7,9-20", 10);
        assert_eq!(set.to_string(), "0,2-4,7,9");
        assert_eq!(set.total(), 6);
        assert_eq!(set.with([1, 5]).to_string(), "0-5,7,9");
        assert_eq!(Indexes::parse("", 3).to_string(), "");
        assert_eq!(Indexes::parse("x,1", 3).to_string(), "1");
    }

    #[test]
    fn long_job_names_are_cut_for_the_index_prefix() {
        let name = "j".repeat(70);
        let (_, prefix) = template_for(&PodTemplateSpec::default(), &name, 12);
        assert_eq!(prefix.len(), 63);
        assert!(prefix.ends_with("-12-"));
    }
}
