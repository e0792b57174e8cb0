//! What apiextensions-apiserver's naming and establishing controllers decide: the names a
//! CRD is granted (`status.acceptedNames`) given the names the other CRDs of its group hold,
//! and its `NamesAccepted` and `Established` conditions.

use serde_json::{Value, json};

use super::super::meta::{self, meta_str};

/// The outcome for one CRD.
#[derive(Debug, Clone)]
pub(crate) struct Naming {
    /// The names granted (`status.acceptedNames`).
    pub(crate) accepted: Value,
    /// `NamesAccepted`: (status, reason, message).
    pub(crate) names_accepted: (&'static str, &'static str, String),
    /// `Established`: (status, reason, message).
    pub(crate) established: (&'static str, String, String),
}

/// Works out `crd`'s accepted names and conditions against the other CRDs of its group.
pub(crate) fn decide(crd: &Value, others: &[std::sync::Arc<Value>]) -> Naming {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let own_name = meta_str(crd, "name").unwrap_or_default();
    let mut resources: Vec<String> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for other in others {
        if meta_str(other, "name") == Some(own_name)
            || other.pointer("/spec/group").and_then(Value::as_str) != Some(group)
        {
            continue;
        }
        let a = |f: &str| accepted_str(other, f).to_string();
        resources.push(a("plural"));
        resources.push(a("singular"));
        resources.extend(accepted_list(other, "shortNames"));
        kinds.push(a("kind"));
        kinds.push(a("listKind"));
    }
    resources.retain(|r| !r.is_empty());
    kinds.retain(|k| !k.is_empty());
    let requested = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let req = |f: &str| {
        requested
            .get(f)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut accepted = crd
        .pointer("/status/acceptedNames")
        .filter(|a| a.is_object())
        .cloned()
        .unwrap_or_else(|| json!({"plural": "", "kind": ""}));
    let mut condition: Option<(&'static str, String)> = None;
    for (field, reason, pool) in [
        ("plural", "PluralConflict", &resources),
        ("singular", "SingularConflict", &resources),
    ] {
        match fresh(&req(field), accepted_str(crd, field), pool) {
            Ok(()) => accepted[field] = json!(req(field)),
            Err(e) => condition = Some((reason, e)),
        }
    }
    let requested_short: Vec<String> = list(&requested, "shortNames");
    let accepted_short = accepted_list(crd, "shortNames");
    if requested_short != accepted_short {
        let errs: Vec<String> = requested_short
            .iter()
            .filter(|s| !accepted_short.contains(s))
            .filter_map(|s| fresh(s, "", &resources).err())
            .collect();
        if errs.is_empty() {
            accepted["shortNames"] = json!(requested_short);
        } else {
            let message = if errs.len() == 1 {
                errs.concat()
            } else {
                format!("[{}]", errs.join(", "))
            };
            condition = Some(("ShortNamesConflict", message));
        }
    }
    for (field, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        match fresh(&req(field), accepted_str(crd, field), &kinds) {
            Ok(()) => accepted[field] = json!(req(field)),
            Err(e) => condition = Some((reason, e)),
        }
    }
    match requested.get("categories") {
        Some(c) => accepted["categories"] = c.clone(),
        None => {
            if let Some(o) = accepted.as_object_mut() {
                o.remove("categories");
            }
        }
    }
    let names_accepted = match condition {
        Some((reason, message)) => ("False", reason, message),
        None => ("True", "NoConflicts", "no conflicts found".to_string()),
    };
    let established = if names_accepted.0 == "True" || condition_true(crd, "Established") {
        (
            "True",
            "InitialNamesAccepted".to_string(),
            "the initial names have been accepted".to_string(),
        )
    } else {
        (
            "False",
            "NotAccepted".to_string(),
            "not all names are accepted".to_string(),
        )
    };
    Naming {
        accepted,
        names_accepted,
        established,
    }
}

/// `equalToAcceptedOrFresh`.
fn fresh(requested: &str, accepted: &str, used: &[String]) -> Result<(), String> {
    if requested == accepted || !used.iter().any(|u| u == requested) {
        return Ok(());
    }
    Err(format!("\"{requested}\" is already in use"))
}

fn accepted_str<'a>(crd: &'a Value, field: &str) -> &'a str {
    crd.pointer(&format!("/status/acceptedNames/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn accepted_list(crd: &Value, field: &str) -> Vec<String> {
    crd.pointer("/status/acceptedNames")
        .map(|a| list(a, field))
        .unwrap_or_default()
}

fn list(obj: &Value, field: &str) -> Vec<String> {
    obj.get(field)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `obj` has the condition `kind` with status True.
pub(crate) fn condition_true(obj: &Value, kind: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(kind)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// `SetCRDCondition`: replaces or appends the condition `kind`; the transition time changes
/// only when the status does.
pub(crate) fn set_condition(
    crd: &mut Value,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    if !crd.get("status").is_some_and(Value::is_object) {
        crd["status"] = json!({});
    }
    let conditions = &mut crd["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let fresh = json!({
        "type": kind,
        "status": status,
        "lastTransitionTime": meta::now(),
        "reason": reason,
        "message": message,
    });
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
    {
        Some(existing) => {
            let mut next = fresh;
            if existing.get("status").and_then(Value::as_str) == Some(status)
                && let Some(time) = existing.get("lastTransitionTime")
            {
                next["lastTransitionTime"] = time.clone();
            }
            *existing = next;
        }
        None => list.push(fresh),
    }
}
