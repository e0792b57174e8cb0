//! `create_or_update` and `create_or_patch`: converge an object on a desired state, writing
//! only when something changed.

use std::sync::Arc;

use serde_json::Value;

use crate::patch::{is_empty_merge_patch, merge_diff};
use crate::{Client, Error, Patch, PatchParams, PostParams};
use rein_scheme::{Object, ObjectKey};

/// What `create_or_update` / `create_or_patch` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperationResult {
    /// Nothing changed; no write was sent.
    Unchanged,
    /// The object did not exist and was created.
    Created,
    /// The object was updated (for `create_or_patch`: everything but the status).
    Updated,
    /// `create_or_patch` patched both the object and its status.
    UpdatedStatus,
    /// `create_or_patch` patched only the status.
    UpdatedStatusOnly,
}

/// Reads the object named by `obj`'s key, applies `mutate`, then creates it (if missing) or
/// updates it (if `mutate` changed anything). `obj` ends up holding what the server stored.
///
/// `mutate` must not change the name or namespace ([`Error::InvalidInput`] if it does).
pub async fn create_or_update<K: Object>(
    client: &Client,
    obj: &mut K,
    mutate: impl FnOnce(&mut K),
) -> Result<OperationResult, Error> {
    try_create_or_update(client, obj, |o: &mut K| {
        mutate(o);
        Ok::<_, Error>(())
    })
    .await
}

/// [`create_or_update`] with a mutate function that may fail (controller-runtime's `MutateFn`
/// returns an error): its error is returned as it is and nothing is written. The error type
/// is the caller's — anything a client [`Error`] converts into (`anyhow::Error`, an
/// operator's own error enum).
pub async fn try_create_or_update<K: Object, E: From<Error>>(
    client: &Client,
    obj: &mut K,
    mutate: impl FnOnce(&mut K) -> Result<(), E>,
) -> Result<OperationResult, E> {
    let key = ObjectKey::from_object(obj);
    match client.get::<K>(&key).await {
        Err(e) if e.is_not_found() => {
            mutate(obj)?;
            check_key(&key, obj)?;
            *obj = client.create(obj, &PostParams::default()).await?;
            Ok(OperationResult::Created)
        }
        Err(e) => Err(e.into()),
        Ok(existing) => {
            let before = to_json(&*existing, &key)?;
            *obj = Arc::unwrap_or_clone(existing);
            mutate(obj)?;
            check_key(&key, obj)?;
            if to_json(obj, &key)? == before {
                return Ok(OperationResult::Unchanged);
            }
            *obj = client.update(obj, &PostParams::default()).await?;
            Ok(OperationResult::Updated)
        }
    }
}

/// Like [`create_or_update`] but writes with merge patches: one for everything except
/// `status` and, if the status changed, one to the status sub-resource. Status is not written
/// on create.
pub async fn create_or_patch<K: Object>(
    client: &Client,
    obj: &mut K,
    mutate: impl FnOnce(&mut K),
) -> Result<OperationResult, Error> {
    try_create_or_patch(client, obj, |o: &mut K| {
        mutate(o);
        Ok::<_, Error>(())
    })
    .await
}

/// [`create_or_patch`] with a mutate function that may fail; see [`try_create_or_update`].
pub async fn try_create_or_patch<K: Object, E: From<Error>>(
    client: &Client,
    obj: &mut K,
    mutate: impl FnOnce(&mut K) -> Result<(), E>,
) -> Result<OperationResult, E> {
    let key = ObjectKey::from_object(obj);
    let existing = match client.get::<K>(&key).await {
        Err(e) if e.is_not_found() => {
            mutate(obj)?;
            check_key(&key, obj)?;
            *obj = client.create(obj, &PostParams::default()).await?;
            return Ok(OperationResult::Created);
        }
        Err(e) => return Err(e.into()),
        Ok(existing) => existing,
    };
    let mut before = to_json(&*existing, &key)?;
    *obj = Arc::unwrap_or_clone(existing);
    mutate(obj)?;
    check_key(&key, obj)?;
    let mut after = to_json(obj, &key)?;
    let status_before = take_status(&mut before);
    let status_after = take_status(&mut after);

    let patch = merge_diff(&before, &after);
    let object_changed = !is_empty_merge_patch(&patch);
    let desired_status = status_after.clone();
    if object_changed {
        *obj = client
            .patch::<K, _>(&key, &Patch::Merge(&patch), &PatchParams::default())
            .await?;
    }
    let status_patch = match (&status_before, &desired_status) {
        (Some(b), Some(a)) if a != b => Some(serde_json::json!({ "status": merge_diff(b, a) })),
        (None, Some(a)) => Some(serde_json::json!({ "status": a })),
        _ => None,
    };
    let Some(status_patch) = status_patch else {
        return Ok(if object_changed {
            OperationResult::Updated
        } else {
            OperationResult::Unchanged
        });
    };
    *obj = client
        .status()
        .patch::<K, _>(&key, &Patch::Merge(&status_patch), &PatchParams::default())
        .await?;
    Ok(if object_changed {
        OperationResult::UpdatedStatus
    } else {
        OperationResult::UpdatedStatusOnly
    })
}

fn take_status(value: &mut Value) -> Option<Value> {
    value
        .as_object_mut()
        .and_then(|m| m.remove("status"))
        .filter(|s| !s.is_null())
}

fn to_json<K: Object>(obj: &K, key: &ObjectKey) -> Result<Value, Error> {
    serde_json::to_value(obj).map_err(|source| Error::Json {
        action: format!("comparing {key} before and after mutation"),
        source,
    })
}

fn check_key<K: Object>(key: &ObjectKey, obj: &K) -> Result<(), Error> {
    if &ObjectKey::from_object(obj) != key {
        return Err(Error::InvalidInput {
            action: format!("mutating {key}"),
            problem: "the mutate function cannot change the object's name or namespace".into(),
        });
    }
    Ok(())
}
