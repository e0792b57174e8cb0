//! Writes through admission: a write that some webhook's rules match is first worked out as a
//! dry run (the object as it would be stored), that object goes through the admission
//! webhooks, and the admitted object is then written — so a denied write stores nothing and
//! the stored object is the one the webhooks saw, mutations included.
//!
//! The final write carries the resourceVersion the webhooks saw, so a change by another
//! client in between fails it rather than storing an object no webhook saw; an update then
//! starts again from the new object, as kube-apiserver's `GuaranteedUpdate` does.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use super::objects::{Answer, Ctx};
use super::query::Query;
use crate::admission::{self, Attributes, Operation};
use crate::status::ApiError;

/// A write on a resource path.
#[derive(Debug, Clone, Copy)]
pub(super) enum Write<'a> {
    /// POST to the collection.
    Create,
    /// PUT to an object or its subresource.
    Update(&'a str, Option<&'a str>),
    /// PATCH of an object or its subresource.
    Patch(&'a str, Option<&'a str>),
    /// DELETE of an object.
    Delete(&'a str),
    /// DELETE of the collection.
    DeleteCollection,
}

/// How often an admitted update is tried again when the object changed under the webhooks.
const CONFLICT_RETRIES: usize = 5;

/// Why an admitted write failed: before its final write, or at it.
enum Failed {
    /// The dry run or admission refused it.
    Before(ApiError),
    /// The final write refused it (a conflict there is retried).
    AtCommit(ApiError),
}

impl From<ApiError> for Failed {
    fn from(e: ApiError) -> Failed {
        Failed::Before(e)
    }
}

impl Ctx<'_> {
    /// Runs `write`, through the admission webhooks when any could match it.
    pub(super) async fn write(&self, write: Write<'_>) -> Result<Answer, ApiError> {
        let (operation, name, sub) = match write {
            Write::Create => (Operation::Create, "", None),
            Write::Update(name, sub) | Write::Patch(name, sub) => (Operation::Update, name, sub),
            Write::Delete(name) => (Operation::Delete, name, None),
            Write::DeleteCollection => (Operation::Delete, "", None),
        };
        // A server-side apply of an object that does not exist creates it.
        let operation = if matches!(write, Write::Patch(..)) && self.current(name).is_none() {
            Operation::Create
        } else {
            operation
        };
        let probe = self.attributes(operation, name, sub, self.q.dry_run);
        if !admission::wanted(&self.state.store, &probe) {
            return self.run(write);
        }
        match write {
            Write::Delete(name) => self.delete_admitted(name).await,
            Write::DeleteCollection => self.delete_collection_admitted().await,
            Write::Create | Write::Update(..) | Write::Patch(..) => {
                // As kube-apiserver's GuaranteedUpdate, an update whose object changed while
                // the webhooks looked at it starts again from the new object (the client's
                // own preconditions are checked again by the dry run).
                let mut attempts = 0;
                loop {
                    match self.upsert_admitted(write, name, sub).await {
                        Err(Failed::AtCommit(e))
                            if e.code == 409
                                && operation == Operation::Update
                                && attempts < CONFLICT_RETRIES =>
                        {
                            attempts += 1;
                        }
                        Ok(answer) => return Ok(answer),
                        Err(Failed::Before(e) | Failed::AtCommit(e)) => return Err(e),
                    }
                }
            }
        }
    }

    /// The write without admission.
    fn run(&self, write: Write<'_>) -> Result<Answer, ApiError> {
        match write {
            Write::Create => self.create(),
            Write::Update(name, sub) => self.update(name, sub),
            Write::Patch(name, sub) => self.patch(name, sub),
            Write::Delete(name) => self.delete(name),
            Write::DeleteCollection => self.delete_collection(),
        }
    }

    /// Create, update or patch: dry run, admission, then the admitted object written.
    async fn upsert_admitted(
        &self,
        write: Write<'_>,
        name: &str,
        sub: Option<&str>,
    ) -> Result<Answer, Failed> {
        let current = match write {
            Write::Create => None,
            _ => self.current(name),
        };
        let old = current.as_ref().map(|c| self.view(c, sub)).transpose()?;
        let dry_q = Query {
            dry_run: true,
            dry_run_values: vec!["All".to_string()],
            ..self.q.clone()
        };
        let mut dry = self.with(&dry_q, self.bytes, self.content_type, false);
        // kube-apiserver charges quota after the validating webhooks: the final write does.
        dry.plugins = self.plugins.without_quota();
        // kube-apiserver runs mutating webhooks before validation, so a webhook may fill in
        // what validation requires: when the object as built is invalid, the webhooks see the
        // object as sent (and the write validates what they make of it).
        let (built, as_sent) = match dry.run(write) {
            Ok(answer) => (Arc::unwrap_or_clone(answer.body), false),
            Err(e) if e.code == 422 && matches!(write, Write::Create | Write::Update(_, None)) => {
                (self.as_sent(current.is_none())?, true)
            }
            Err(e) => return Err(e.into()),
        };
        let operation = if current.is_some() {
            Operation::Update
        } else {
            Operation::Create
        };
        let name = built
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(name)
            .to_string();
        // A create names its object as sent: empty when the name comes from `generateName`
        // (kube-apiserver makes it after mutating admission).
        let sent_name = match write {
            Write::Create => self
                .as_sent(true)?
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            _ => name.clone(),
        };
        let attrs = self.attributes(operation, &sent_name, sub, self.q.dry_run);
        let admitted = admission::admit(
            &self.state.store,
            &self.state.webhook_services,
            &attrs,
            old.as_ref(),
            Some(built),
        )
        .await?;
        let object = admitted.object.unwrap_or_default();
        let bytes = Bytes::from(serde_json::to_vec(&object).unwrap_or_default());
        let mut commit = self.with(self.q, &bytes, "application/json", !as_sent);
        commit.reinvoke_plugins = admitted.changed;
        let mut answer = match operation {
            Operation::Create => commit.create(),
            _ => commit.update(&name, sub),
        }
        .map_err(Failed::AtCommit)?;
        answer.warnings.extend(admitted.warnings);
        Ok(answer)
    }

    /// Delete: the stored object admitted, then deleted.
    async fn delete_admitted(&self, name: &str) -> Result<Answer, ApiError> {
        let Some(current) = self.current(name) else {
            return self.delete(name);
        };
        let dry_run = self.delete_opts()?.dry_run;
        let attrs = self.attributes(Operation::Delete, name, None, dry_run);
        let old = self.view(&current, None)?;
        let admitted = admission::admit(
            &self.state.store,
            &self.state.webhook_services,
            &attrs,
            Some(&old),
            None,
        )
        .await?;
        let mut answer = self.delete(name)?;
        answer.warnings.extend(admitted.warnings);
        Ok(answer)
    }

    /// Delete collection: each object it would delete admitted (the first refusal fails the
    /// request), then the collection deleted.
    async fn delete_collection_admitted(&self) -> Result<Answer, ApiError> {
        let dry_run = self.delete_opts()?.dry_run;
        let dry_q = Query {
            dry_run: true,
            dry_run_values: vec!["All".to_string()],
            ..self.q.clone()
        };
        let victims = self
            .with(&dry_q, self.bytes, self.content_type, false)
            .delete_collection()?;
        let mut warnings = Vec::new();
        let items = victims
            .body
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for old in &items {
            let name = old
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let attrs = self.attributes(Operation::Delete, name, None, dry_run);
            let admitted = admission::admit(
                &self.state.store,
                &self.state.webhook_services,
                &attrs,
                Some(old),
                None,
            )
            .await?;
            warnings.extend(admitted.warnings);
        }
        let mut answer = self.delete_collection()?;
        answer.warnings.extend(warnings);
        Ok(answer)
    }

    /// The request's object as sent, with the type and (for a create) the namespace it
    /// is written with.
    fn as_sent(&self, create: bool) -> Result<Value, ApiError> {
        let mut obj = self.decode()?;
        let def = &self.path.def;
        let Some(map) = obj.as_object_mut() else {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        };
        map.entry("apiVersion")
            .or_insert_with(|| Value::String(def.api_version(&self.path.version)));
        map.entry("kind")
            .or_insert_with(|| Value::String(def.kind.clone()));
        if create
            && def.namespaced
            && let Some(ns) = &self.path.namespace
            && let Some(meta) = map
                .entry("metadata")
                .or_insert_with(|| Value::Object(serde_json::Map::new()))
                .as_object_mut()
        {
            meta.entry("namespace")
                .or_insert_with(|| Value::String(ns.clone()));
        }
        Ok(obj)
    }

    fn attributes(
        &self,
        operation: Operation,
        name: &str,
        sub: Option<&str>,
        dry_run: bool,
    ) -> Attributes {
        Attributes::new(
            &self.path.def,
            &self.path.version,
            sub,
            operation,
            self.path.namespace.as_deref(),
            name,
            dry_run,
        )
    }
}
