//! Server-side apply and `managedFields` bookkeeping for updates.

use serde_json::{Map, Value, json};

use super::fieldset::{self, FieldPath, FieldSet};
use super::strategy::{self, ListKind};
use super::{FieldConflict, Gvk, PatchError, check_result, schema};

/// The `operation` of a managed-fields entry written by server-side apply.
const APPLY: &str = "Apply";

/// The manager kube-apiserver credits with the fields of an object that has no managedFields.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// One `metadata.managedFields` entry.
#[derive(Debug, Clone)]
struct ManagedEntry {
    manager: String,
    operation: String,
    api_version: String,
    time: Option<String>,
    subresource: Option<String>,
    fields: FieldSet,
}

/// Applies the configuration `applied` (YAML or JSON) for `field_manager`.
///
/// Merges it into `current` (or creates the object when `current` is `None`), refuses with
/// [`PatchError::Conflict`] when it changes fields another manager owns (unless `force`, which
/// takes them over), removes fields this manager applied before and no longer applies (when no
/// other manager owns them), and records the manager's fields in `metadata.managedFields`.
pub(crate) fn server_side_apply(
    current: Option<&Value>,
    applied: &[u8],
    field_manager: &str,
    force: bool,
    gvk: &Gvk,
) -> Result<Value, PatchError> {
    server_side_apply_at(
        current,
        applied,
        field_manager,
        force,
        gvk,
        ApplyScope::default(),
    )
}

/// Where an apply lands: the subresource it goes through and the top-level fields that
/// endpoint resets (a strategy's "reset fields", e.g. `status` on the main resource of a
/// kind with a status subresource).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ApplyScope<'a> {
    /// `status` or `scale`; `None` for the main resource.
    pub(crate) subresource: Option<&'a str>,
    /// Top-level fields the endpoint ignores: dropped from the configuration, so they are
    /// neither changed, nor owned, nor in conflict.
    pub(crate) reset: &'a [&'a str],
}

/// [`server_side_apply`] through an endpoint: the manager's entry is the one recorded for
/// `scope.subresource`, as kube-apiserver keys entries by manager, operation and
/// subresource, and the fields the endpoint resets are left out of the configuration.
pub(crate) fn server_side_apply_at(
    current: Option<&Value>,
    applied: &[u8],
    field_manager: &str,
    force: bool,
    gvk: &Gvk,
    scope: ApplyScope<'_>,
) -> Result<Value, PatchError> {
    let subresource = scope.subresource;
    if field_manager.is_empty() {
        return Err(PatchError::Invalid(
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is \
             required for apply patch"
                .to_string(),
        ));
    }
    let applied: Value = crate::yaml::from_slice(applied).map_err(PatchError::DecodeYaml)?;
    if !applied.is_object() {
        return Err(PatchError::Malformed(
            "the apply configuration must be an object".to_string(),
        ));
    }
    // structured-merge-diff's field manager: an apply configuration claims fields by what it
    // sets, never by sending managedFields.
    if applied
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(PatchError::BadRequest(
            "metadata.managedFields must be nil".to_string(),
        ));
    }
    for required in ["apiVersion", "kind"] {
        if applied.get(required).and_then(Value::as_str).is_none() {
            return Err(PatchError::Malformed(format!(
                "the apply configuration must set {required}"
            )));
        }
    }
    check_result(&applied, gvk)?;
    // The whole configuration is typed first, the endpoint's reset fields included.
    if let Some(root) = gvk.schema()
        && !strategy::is_builtin(gvk)
    {
        let errors = schema::config_errors(root, &applied);
        if !errors.is_empty() {
            return Err(typed_patch_error(&applied, gvk, &errors));
        }
    }
    let mut applied = applied;
    if let Some(fields) = applied.as_object_mut() {
        for field in scope.reset {
            fields.remove(*field);
        }
    }

    let mut object = match current {
        Some(current) => current.clone(),
        None => json!({ "apiVersion": gvk.api_version(), "kind": gvk.kind, "metadata": {} }),
    };
    let mut entries = read_entries(&object);
    if let Some(current) = current
        && entries.is_empty()
    {
        // As kube-apiserver does: an object nobody tracked yet belongs to a stand-in manager,
        // so a first apply still conflicts with values it did not set.
        entries.push(ManagedEntry {
            manager: BEFORE_FIRST_APPLY.to_string(),
            operation: "Update".to_string(),
            api_version: gvk.api_version(),
            time: None,
            subresource: None,
            fields: FieldSet::from_object(current, gvk),
        });
    }
    let applied_set = FieldSet::from_object(&applied, gvk);

    let mut conflicts = Vec::new();
    let mut taken: Vec<(usize, FieldPath)> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        if entry.manager == field_manager {
            continue;
        }
        for leaf in applied_set.leaves() {
            if leaf.last().is_some_and(|key| key == ".") || !entry.fields.contains(&leaf) {
                continue;
            }
            if fieldset::get(&object, &leaf, gvk) != fieldset::get(&applied, &leaf, gvk) {
                conflicts.push(FieldConflict {
                    manager: entry.manager.clone(),
                    api_version: entry.api_version.clone(),
                    operation: entry.operation.clone(),
                    subresource: entry.subresource.clone(),
                    field: fieldset::display(&leaf),
                });
                taken.push((index, leaf));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(PatchError::Conflict(conflicts));
    }
    for (index, leaf) in &taken {
        entries[*index].fields.remove(leaf);
    }

    let mut path = Vec::new();
    merge(&mut object, &applied, gvk, &mut path);

    let previous = entries.iter().position(|e| {
        e.manager == field_manager
            && e.operation == APPLY
            && e.subresource.as_deref() == subresource
    });
    if let Some(previous) = previous {
        let stale: Vec<FieldPath> = entries[previous]
            .fields
            .leaves()
            .into_iter()
            .filter(|leaf| !applied_set.contains_prefix(leaf_target(leaf)))
            .collect();
        for leaf in stale {
            let target = leaf_target(&leaf);
            let owned_elsewhere = entries
                .iter()
                .enumerate()
                .any(|(i, e)| i != previous && e.fields.contains_prefix(target));
            if !owned_elsewhere {
                fieldset::remove(&mut object, &leaf, gvk);
                // structured-merge-diff removes what no manager owns any more: a struct (or
                // map) emptied by the removal goes too, up to the first parent the applied
                // configuration or another manager still holds.
                let mut parent = target.to_vec();
                while parent.pop().is_some() && parent.len() > 1 {
                    let held = applied_set.contains_prefix(&parent)
                        || entries
                            .iter()
                            .enumerate()
                            .any(|(i, e)| i != previous && e.fields.contains_prefix(&parent));
                    let emptied = fieldset::get(&object, &parent, gvk)
                        .is_some_and(|v| v.as_object().is_some_and(Map::is_empty));
                    if held || !emptied {
                        break;
                    }
                    fieldset::remove(&mut object, &parent, gvk);
                }
            }
        }
    }

    let entry = ManagedEntry {
        manager: field_manager.to_string(),
        operation: APPLY.to_string(),
        api_version: applied
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        time: Some(now()),
        subresource: subresource.map(str::to_string),
        fields: applied_set,
    };
    match previous {
        Some(previous) => entries[previous] = entry,
        None => entries.push(entry),
    }
    write_entries(&mut object, entries);
    check_result(&object, gvk)?;
    Ok(object)
}

/// structured-merge-diff's refusal of a configuration, worded as kube-apiserver passes it on:
/// one error on its own, several as an indented list.
fn typed_patch_error(applied: &Value, gvk: &Gvk, errors: &[String]) -> PatchError {
    let meta = |field: &str| {
        applied
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let detail = match errors {
        [only] => only.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    PatchError::TypedPatch(format!(
        "failed to create typed patch object ({}/{}; {gvk}): {detail}",
        meta("namespace"),
        meta("name")
    ))
}

/// Records a non-apply write (`operation` is `Update`) by `manager` in `new`'s managedFields.
///
/// The manager takes ownership of every field it changed (others lose them, without conflict,
/// as in kube-apiserver), fields the write removed leave every manager's set. The write starts
/// from the managedFields it sends, if it sends any, else from the stored ones, as
/// kube-apiserver's `FieldManager.Update` does: a client may edit the entries directly, and
/// this write is then recorded on top of what it sent; one that sends none (absent or `null`,
/// as from a client whose cache stripped them) keeps the stored entries. Sending `[]` or
/// `[{}]` clears the tracking: the write records no entry and leaves the object without
/// managedFields. An update of an object that has no entries (and sends none) records
/// nothing either: like kube-apiserver's `skipNonAppliedManager`, tracking starts only on a
/// create or an apply. An empty `manager` adds no entry of its own.
pub(crate) fn record_update_managed_fields(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation: &str,
    gvk: &Gvk,
) {
    record_update_managed_fields_at(old, new, manager, operation, gvk, None);
}

/// [`record_update_managed_fields`] through a subresource: the manager's entry is the one
/// recorded for `subresource` (`scale`).
pub(crate) fn record_update_managed_fields_at(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation: &str,
    gvk: &Gvk,
    subresource: Option<&str>,
) {
    let sent = match new.pointer("/metadata/managedFields") {
        Some(Value::Array(sent)) if is_reset(sent) => None,
        Some(Value::Array(_)) => Some(read_entries(new)),
        _ => Some(old.map(read_entries).unwrap_or_default()),
    };
    let Some(mut entries) = sent.filter(|entries| !entries.is_empty() || old.is_none()) else {
        // A reset, or an update of an object nobody tracks: no managedFields at all.
        if let Some(Value::Object(meta)) = new.get_mut("metadata") {
            meta.remove("managedFields");
        }
        return;
    };
    let new_set = FieldSet::from_object(new, gvk);
    if old.is_none() && entries.is_empty() {
        // A plain create: the manager owns every field set, and nobody else owns anything.
        if !manager.is_empty() && !new_set.is_empty() {
            entries.push(ManagedEntry {
                manager: manager.to_string(),
                operation: operation.to_string(),
                api_version: gvk.api_version(),
                time: Some(now()),
                subresource: None,
                fields: new_set,
            });
        }
        write_entries(new, entries);
        return;
    }
    // A create that sends entries is an update from an empty object: every field it sets
    // is a change, so its manager takes those fields from the sent entries.
    let old_set = old
        .map(|o| FieldSet::from_object(o, gvk))
        .unwrap_or_default();
    let changed: Vec<FieldPath> = new_set.changed_leaves(&old_set, old, Some(&*new));
    let removed: Vec<FieldPath> = old_set
        .leaves()
        .into_iter()
        .filter(|leaf| !new_set.contains_prefix(leaf))
        .collect();
    for entry in &mut entries {
        for leaf in changed.iter().chain(&removed) {
            entry.fields.remove(leaf);
        }
    }
    if !manager.is_empty() && !changed.is_empty() {
        let api_version = gvk.api_version();
        let position = entries.iter().position(|e| {
            e.manager == manager
                && e.operation == operation
                && e.subresource.as_deref() == subresource
        });
        let index = match position {
            Some(index) => index,
            None => {
                entries.push(ManagedEntry {
                    manager: manager.to_string(),
                    operation: operation.to_string(),
                    api_version: api_version.clone(),
                    time: None,
                    subresource: subresource.map(str::to_string),
                    fields: FieldSet::default(),
                });
                entries.len() - 1
            }
        };
        let entry = &mut entries[index];
        for leaf in &changed {
            entry.fields.insert(leaf);
        }
        entry.api_version = api_version;
        entry.time = Some(now());
    }
    write_entries(new, entries);
}

/// Whether sent managedFields ask for a reset: an empty list, or one entry with nothing set
/// (kube-apiserver's `isResetManagedFields`).
fn is_reset(sent: &[Value]) -> bool {
    match sent {
        [] => true,
        [only] => only.as_object().is_some_and(|entry| {
            entry
                .values()
                .all(|v| v.is_null() || v.as_str() == Some(""))
        }),
        _ => false,
    }
}

/// For a list element's `.` leaf, the element itself; otherwise the leaf.
fn leaf_target(leaf: &[String]) -> &[String] {
    match leaf.split_last() {
        Some((last, rest)) if last == "." => rest,
        _ => leaf,
    }
}

/// Merges an apply configuration into the live object with server-side-apply list semantics.
fn merge(target: &mut Value, applied: &Value, gvk: &Gvk, path: &mut Vec<String>) {
    let (Value::Object(target_map), Value::Object(applied_map)) = (&mut *target, applied) else {
        *target = applied.clone();
        return;
    };
    for (key, value) in applied_map {
        if path.is_empty() && key == "metadata" {
            if let Value::Object(meta) = value {
                let meta: Map<String, Value> = meta
                    .iter()
                    .filter(|(k, _)| *k != "managedFields" && *k != "resourceVersion")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                path.push(key.clone());
                let slot = target_map
                    .entry(key.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                merge(slot, &Value::Object(meta), gvk, path);
                path.pop();
            }
            continue;
        }
        if value.is_null() {
            target_map.remove(key);
            continue;
        }
        path.push(key.clone());
        let segments: Vec<&str> = path.iter().map(String::as_str).collect();
        let atomic = value.is_object() && strategy::map_is_atomic(gvk, &segments);
        match value {
            Value::Object(_) if atomic => {
                target_map.insert(key.clone(), value.clone());
            }
            Value::Object(_) => {
                let slot = target_map
                    .entry(key.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                merge(slot, value, gvk, path);
            }
            Value::Array(items) => {
                let kind = strategy::list_kind(gvk, &segments);
                let existing = match target_map.remove(key) {
                    Some(Value::Array(existing)) => existing,
                    _ => Vec::new(),
                };
                let merged = merge_list(existing, items, kind, gvk, path);
                target_map.insert(key.clone(), Value::Array(merged));
            }
            scalar => {
                target_map.insert(key.clone(), scalar.clone());
            }
        }
        path.pop();
    }
}

/// Merges an applied list into the live one by element identity (the value for a set, the
/// key fields for a map), in structured-merge-diff's order: live elements the configuration
/// does not name keep their place, the configuration's elements come in its order, merged
/// with their live counterparts.
fn merge_list(
    existing: Vec<Value>,
    applied: &[Value],
    kind: ListKind,
    gvk: &Gvk,
    path: &mut Vec<String>,
) -> Vec<Value> {
    let identity = |item: &Value| -> Value {
        match &kind {
            ListKind::Map { keys, .. } => Value::Array(
                keys.iter()
                    .map(|k| kind.key_value(item, k).cloned().unwrap_or(Value::Null))
                    .collect(),
            ),
            _ => item.clone(),
        }
    };
    if kind == ListKind::Atomic {
        return applied.to_vec();
    }
    let lhs_keys: Vec<Value> = existing.iter().map(identity).collect();
    let rhs_keys: Vec<Value> = applied.iter().map(identity).collect();
    let mut shared = rhs_keys
        .iter()
        .filter(|k| lhs_keys.contains(k))
        .collect::<std::collections::VecDeque<_>>();
    let mut next_shared = shared.pop_front();
    let mut lhs: Vec<Option<Value>> = existing.into_iter().map(Some).collect();
    let mut merged = |live: Option<Value>, item: &Value| -> Value {
        match (&kind, live) {
            (ListKind::Map { .. }, Some(mut live)) => {
                merge(&mut live, item, gvk, path);
                live
            }
            _ => item.clone(),
        }
    };
    let mut out = Vec::with_capacity(lhs.len().max(applied.len()));
    let (mut l, mut r) = (0, 0);
    while l < lhs.len() || r < applied.len() {
        if l < lhs.len() && lhs[l].is_none() {
            // Already merged with an earlier element of the configuration.
            l += 1;
            continue;
        }
        let named = |l: usize| rhs_keys.contains(&lhs_keys[l]);
        if l < lhs.len() && r < applied.len() {
            if lhs_keys[l] == rhs_keys[r] {
                out.push(merged(lhs[l].take(), &applied[r]));
                l += 1;
                r += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if named(l) && next_shared.is_some_and(|n| *n != lhs_keys[l]) {
                // Named later in the configuration: it comes in the configuration's order.
                l += 1;
                continue;
            }
        }
        if l < lhs.len() && !named(l) {
            out.extend(lhs[l].take());
            l += 1;
            continue;
        }
        if r < applied.len() {
            let live = (0..lhs.len())
                .find(|&i| lhs[i].is_some() && lhs_keys[i] == rhs_keys[r])
                .and_then(|i| lhs[i].take());
            out.push(merged(live, &applied[r]));
            if next_shared.is_some_and(|n| *n == rhs_keys[r]) {
                next_shared = shared.pop_front();
            }
            r += 1;
            continue;
        }
        // Configuration used up: a live duplicate of an element it named stays.
        out.extend(lhs[l].take());
        l += 1;
    }
    // Live duplicates skipped while the configuration still had elements to place.
    out.extend(lhs.into_iter().flatten());
    out
}

fn read_entries(object: &Value) -> Vec<ManagedEntry> {
    let Some(Value::Array(items)) = object.pointer("/metadata/managedFields") else {
        return Vec::new();
    };
    let text = |item: &Value, key: &str| item.get(key).and_then(Value::as_str).map(str::to_string);
    items
        .iter()
        .map(|item| ManagedEntry {
            manager: text(item, "manager").unwrap_or_default(),
            operation: text(item, "operation").unwrap_or_default(),
            api_version: text(item, "apiVersion").unwrap_or_default(),
            time: text(item, "time"),
            subresource: text(item, "subresource"),
            fields: item
                .get("fieldsV1")
                .map(FieldSet::from_fields_v1)
                .unwrap_or_default(),
        })
        .collect()
}

fn write_entries(object: &mut Value, entries: Vec<ManagedEntry>) {
    let Some(meta) = object
        .as_object_mut()
        .map(|o| o.entry("metadata").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let items: Vec<Value> = entries
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut item = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": e.fields.into_fields_v1(),
            });
            if let Some(time) = e.time {
                item["time"] = Value::String(time);
            }
            if let Some(subresource) = e.subresource {
                item["subresource"] = Value::String(subresource);
            }
            item
        })
        .collect();
    if items.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".to_string(), Value::Array(items));
    }
}

/// The current time as kube-apiserver writes it (RFC 3339, seconds, UTC).
fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
