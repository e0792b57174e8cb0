//! The Unschedulable message as kube-scheduler words it (`FitError.Error()` followed by the
//! default preemption plugin's PostFilter message):
//! `0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu.
//! preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No
//! preemption victims found for incoming pod.` — each part a histogram of `"<count> <reason>"`
//! strings sorted as strings.

use std::collections::BTreeMap;

use super::filter::Verdict;

/// What the scheduler says when there is no node at all (`ErrNoNodesAvailable`).
pub(crate) const NO_NODES: &str = "no nodes available to schedule pods";
/// The preemption reason for a node rejected for a reason preemption cannot remove.
const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// The preemption reason for a node short of resources: the simulated scheduler does not
/// preempt, so no node ever has victims.
const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// The preemption message of a Pod with `preemptionPolicy: Never`.
const NEVER: &str = "not eligible due to preemptionPolicy=Never.";

/// `"<count> <reason>"` for each distinct reason, sorted as strings, joined by `", "`.
fn histogram<'a>(reasons: impl IntoIterator<Item = &'a str>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in reasons {
        *counts.entry(r).or_default() += 1;
    }
    let mut parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    parts.join(", ")
}

/// The full message for a Pod that fits no node: one verdict per node (none of them `Fits`),
/// and whether the Pod may preempt (`preemptionPolicy` is not `Never`).
pub(crate) fn unschedulable(verdicts: &[Verdict], may_preempt: bool) -> String {
    if verdicts.is_empty() {
        return NO_NODES.to_owned();
    }
    let total = verdicts.len();
    let rejected = verdicts.iter().filter_map(|v| match v {
        Verdict::Fits => None,
        Verdict::Rejected {
            reasons,
            resolvable,
        } => Some((reasons, *resolvable)),
    });
    let filters = histogram(
        rejected
            .clone()
            .flat_map(|(reasons, _)| reasons.iter().map(String::as_str)),
    );
    let mut message = format!("0/{total} nodes are available: {filters}.");
    if may_preempt {
        let preemption = histogram(rejected.map(
            |(_, resolvable)| {
                if resolvable { NO_VICTIMS } else { NOT_HELPFUL }
            },
        ));
        message.push_str(&format!(
            " preemption: 0/{total} nodes are available: {preemption}."
        ));
    } else {
        message.push_str(&format!(" preemption: {NEVER}"));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(reasons: &[&str], resolvable: bool) -> Verdict {
        Verdict::Rejected {
            reasons: reasons.iter().map(|r| (*r).to_owned()).collect(),
            resolvable,
        }
    }

    #[test]
    fn the_message_has_kubes_shape() {
        let verdicts = [
            rejected(&["Insufficient cpu"], true),
            rejected(&["node(s) had untolerated taint {dedicated: gpu}"], false),
            rejected(&["Insufficient cpu"], true),
        ];
        assert_eq!(
            unschedulable(&verdicts, true),
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, \
             2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not \
             helpful for scheduling, 2 No preemption victims found for incoming pod."
        );
    }

    #[test]
    fn several_reasons_of_one_node_all_count() {
        let verdicts = [
            rejected(&["Insufficient cpu", "Insufficient memory"], true),
            rejected(
                &["node(s) didn't match Pod's node affinity/selector"],
                false,
            ),
        ];
        assert_eq!(
            unschedulable(&verdicts, false),
            "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, \
             1 node(s) didn't match Pod's node affinity/selector. preemption: not eligible \
             due to preemptionPolicy=Never."
        );
        assert_eq!(unschedulable(&[], true), NO_NODES);
    }
}
