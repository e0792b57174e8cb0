//! Status conditions (apimachinery's `meta.SetStatusCondition` and friends): set, find and
//! test a `metav1.Condition` in a status's `conditions` list, keeping `lastTransitionTime`
//! as Kubernetes expects — it moves only when the status changes.
//!
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
//! use k8s_openapi::jiff::Timestamp;
//! use rein_scheme::conditions;
//!
//! let mut conditions = Vec::new();
//! let ready = |status: &str| Condition {
//!     type_: "Ready".into(),
//!     status: status.into(),
//!     reason: "Reconciled".into(),
//!     message: String::new(),
//!     observed_generation: Some(1),
//!     // The zero time: set_status_condition stamps now.
//!     last_transition_time: Time(Timestamp::UNIX_EPOCH),
//! };
//! assert!(conditions::set_status_condition(&mut conditions, ready("True")));
//! assert!(conditions::is_status_condition_true(&conditions, "Ready"));
//! assert!(!conditions::set_status_condition(&mut conditions, ready("True")), "no change");
//! assert!(conditions::remove_status_condition(&mut conditions, "Ready"));
//! assert!(conditions::find_status_condition(&conditions, "Ready").is_none());
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// Sets `new` in `conditions` (`meta.SetStatusCondition`): added if no condition of its type
/// is there, else the existing one takes its status, reason, message and
/// observedGeneration. `lastTransitionTime` is `new`'s when set (not the zero time), else
/// now — and on an existing condition it changes only when the status does. Answers whether
/// anything changed.
pub fn set_status_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    let transition = if new.last_transition_time.0 == Timestamp::UNIX_EPOCH {
        Time(Timestamp::now())
    } else {
        new.last_transition_time.clone()
    };
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        conditions.push(Condition {
            last_transition_time: transition,
            ..new
        });
        return true;
    };
    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = transition;
        changed = true;
    }
    if existing.reason != new.reason {
        existing.reason = new.reason;
        changed = true;
    }
    if existing.message != new.message {
        existing.message = new.message;
        changed = true;
    }
    if existing.observed_generation != new.observed_generation {
        existing.observed_generation = new.observed_generation;
        changed = true;
    }
    changed
}

/// Removes the condition of `type_` (`meta.RemoveStatusCondition`); answers whether one was
/// there.
pub fn remove_status_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// The condition of `type_`, if present (`meta.FindStatusCondition`).
pub fn find_status_condition<'a>(
    conditions: &'a [Condition],
    type_: &str,
) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is present with status `True`.
pub fn is_status_condition_true(conditions: &[Condition], type_: &str) -> bool {
    is_status_condition_present_and_equal(conditions, type_, "True")
}

/// Whether the condition of `type_` is present with status `False`.
pub fn is_status_condition_false(conditions: &[Condition], type_: &str) -> bool {
    is_status_condition_present_and_equal(conditions, type_, "False")
}

/// Whether the condition of `type_` is present with `status`.
pub fn is_status_condition_present_and_equal(
    conditions: &[Condition],
    type_: &str,
    status: &str,
) -> bool {
    find_status_condition(conditions, type_).is_some_and(|c| c.status == status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(type_: &str, status: &str, reason: &str, at: i64) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: Time(Timestamp::from_second(at).expect("a time")),
        }
    }

    /// apimachinery's `TestSetStatusCondition` cases: a new condition is added; the same
    /// status keeps the old transition time while reason and message move; a new status
    /// takes the given transition time.
    #[test]
    fn set_keeps_the_transition_time_unless_the_status_changes() {
        let mut conditions = vec![cond("Ready", "False", "Starting", 100)];
        assert!(set_status_condition(
            &mut conditions,
            cond("Ready", "False", "Waiting", 200)
        ));
        assert_eq!(conditions[0].reason, "Waiting");
        assert_eq!(conditions[0].last_transition_time.0.as_second(), 100);
        assert!(set_status_condition(
            &mut conditions,
            cond("Ready", "True", "Done", 300)
        ));
        assert_eq!(conditions[0].last_transition_time.0.as_second(), 300);
        assert!(!set_status_condition(
            &mut conditions,
            cond("Ready", "True", "Done", 400)
        ));
        assert!(set_status_condition(
            &mut conditions,
            cond("Degraded", "False", "Fine", 0)
        ));
        let degraded = find_status_condition(&conditions, "Degraded").expect("added");
        assert_ne!(
            degraded.last_transition_time.0,
            Timestamp::UNIX_EPOCH,
            "now, not zero"
        );
        assert!(is_status_condition_true(&conditions, "Ready"));
        assert!(is_status_condition_false(&conditions, "Degraded"));
        assert!(!is_status_condition_true(&conditions, "Missing"));
        assert!(!is_status_condition_false(&conditions, "Missing"));
        assert!(remove_status_condition(&mut conditions, "Ready"));
        assert!(!remove_status_condition(&mut conditions, "Ready"));
        assert_eq!(conditions.len(), 1);
    }
}
