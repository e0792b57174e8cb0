//! kube's `ControllerRefManager`: a controller claims the objects its selector matches —
//! adopting orphans, releasing the ones it owns that no longer match — with strategic merge
//! patches that carry the child's uid as a precondition.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rein_client::controllerutil::set_controller_reference;
use rein_client::{Client, Patch, PatchParams};
use rein_scheme::labels::Selector;
use rein_scheme::{Object, ObjectKey};
use serde_json::json;

use super::Error;
use super::pods::controller_of;

/// One claim pass of `owner` over its candidate children.
pub(crate) struct Claim<'a, O> {
    /// Where to patch children and re-read the owner.
    pub(crate) client: &'a Client,
    /// The would-be controller.
    pub(crate) owner: &'a O,
    /// The owner's selector.
    pub(crate) selector: &'a Selector,
    /// Finalizers an adopted child gets (the Job's tracking finalizer).
    pub(crate) finalizers: &'a [&'a str],
}

impl<O: Object> Claim<'_, O> {
    /// `ClaimObjects`: the children this owner controls after adopting and releasing.
    pub(crate) async fn run<K: Object>(&self, children: Vec<Arc<K>>) -> Result<Vec<Arc<K>>, Error> {
        let owner_uid = self.owner.meta().uid.clone().unwrap_or_default();
        let owner_deleting = self.owner.meta().deletion_timestamp.is_some();
        let mut claimed = Vec::new();
        let mut may_adopt: Option<bool> = None;
        let mut first_error = None;
        for child in children {
            let meta = child.meta();
            let matches = self
                .selector
                .matches(meta.labels.as_ref().unwrap_or(&Default::default()));
            if let Some(reference) = controller_of(meta) {
                if reference.uid != owner_uid {
                    continue;
                }
                if matches {
                    claimed.push(child);
                    continue;
                }
                if owner_deleting {
                    continue;
                }
                if let Err(err) = self.release(&*child, &owner_uid).await {
                    first_error.get_or_insert(err);
                }
                continue;
            }
            if owner_deleting || !matches || meta.deletion_timestamp.is_some() {
                continue;
            }
            if meta.namespace != self.owner.meta().namespace {
                continue;
            }
            // Recheck once, uncached, that the owner is not being deleted (kube #42639).
            let fresh = match may_adopt {
                Some(ok) => ok,
                None => {
                    let ok = match self.recheck().await {
                        Ok(()) => true,
                        Err(err) => {
                            first_error.get_or_insert(err);
                            false
                        }
                    };
                    may_adopt = Some(ok);
                    ok
                }
            };
            if !fresh {
                continue;
            }
            match self.adopt(&*child).await {
                Ok(Some(adopted)) => claimed.push(Arc::new(adopted)),
                Ok(None) => {}
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        match first_error {
            Some(err) => Err(err),
            None => Ok(claimed),
        }
    }

    /// `RecheckDeletionTimestamp`: the owner, read from the server, is the same and not being
    /// deleted.
    async fn recheck(&self) -> Result<(), Error> {
        let key = ObjectKey::from_object(self.owner);
        let fresh = self.client.api_reader().get::<O>(&key).await?;
        let object = describe(self.owner);
        if fresh.meta().uid != self.owner.meta().uid {
            return Err(Error::CannotAdopt {
                object,
                problem: format!(
                    "the original is gone: got uid {:?}, wanted {:?}",
                    fresh.meta().uid,
                    self.owner.meta().uid
                ),
            });
        }
        if fresh.meta().deletion_timestamp.is_some() {
            return Err(Error::CannotAdopt {
                object,
                problem: "it has just been deleted".into(),
            });
        }
        Ok(())
    }

    /// Adds the controller reference (and finalizers); `None` if the child is gone.
    async fn adopt<K: Object>(&self, child: &K) -> Result<Option<K>, Error> {
        let reference = self.reference::<K>(child)?;
        let mut meta = json!({
            "ownerReferences": [reference],
            "uid": child.meta().uid,
        });
        if !self.finalizers.is_empty() {
            meta["finalizers"] = json!(self.finalizers);
        }
        let patch = json!({ "metadata": meta });
        match self
            .client
            .patch::<K, _>(
                &ObjectKey::from_object(child),
                &Patch::Strategic(patch),
                &PatchParams::default(),
            )
            .await
        {
            Ok(adopted) => Ok(Some(adopted)),
            Err(err) if err.is_not_found() => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// Removes the owner reference to `owner_uid`.
    async fn release<K: Object>(&self, child: &K, owner_uid: &str) -> Result<(), Error> {
        let patch = json!({
            "metadata": {
                "ownerReferences": [{ "$patch": "delete", "uid": owner_uid }],
                "uid": child.meta().uid,
            }
        });
        match self
            .client
            .patch::<K, _>(
                &ObjectKey::from_object(child),
                &Patch::Strategic(patch),
                &PatchParams::default(),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(err) if err.is_not_found() => Ok(()),
            Err(err) => Err(err.into()),
        }
    }

    /// The controller reference to the owner, as `metav1.NewControllerRef` makes it.
    fn reference<K: Object>(&self, child: &K) -> Result<OwnerReference, Error> {
        let mut probe = child.clone();
        probe.meta_mut().owner_references = None;
        set_controller_reference(self.owner, &mut probe, self.client.scheme())?;
        controller_of(probe.meta())
            .cloned()
            .ok_or_else(|| Error::Invalid {
                object: describe(self.owner),
                problem: "no controller reference could be made".into(),
            })
    }
}

/// `Kind ns/name`, for errors and logs.
pub(crate) fn describe<K: Object>(obj: &K) -> String {
    format!("{} {}", K::kind(&()), ObjectKey::from_object(obj))
}
