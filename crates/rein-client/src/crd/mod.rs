//! Installing CustomResourceDefinitions and waiting until the server serves them.
//!
//! A CRD is usable once its `Established` condition is `True`: before that, requests for its
//! kind answer 404. [`install`] creates the CRD (or replaces the spec of one already there) and
//! waits for that condition, bounded by a timeout; [`wait_established`] only waits. A CRD
//! whose names clash with another's (`NamesAccepted=False`) fails at once with
//! [`CrdError::NamesNotAccepted`] rather than running into the timeout.
//!
//! With the `derive` feature of the `rein` facade the CRD comes from
//! `#[derive(CustomResource)]`: `rein_client::crd::install(&client, &Widget::crd(), timeout)`.

mod error;

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition,
};
use tokio::time::Instant;

pub use error::CrdError;

use crate::{Client, PostParams};
use rein_scheme::ObjectKey;

/// How often [`wait_established`] reads the CRD again while it waits.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Creates `crd`, or replaces the spec of the CRD of that name if one exists, then waits up to
/// `timeout` until it is `Established` ([`wait_established`]). Returns the CRD as the server
/// last reported it.
///
/// Writes and reads go straight to the API server (never through the client's cache).
///
/// ```
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
///
/// use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
///
/// let env = rein_testenv::TestEnv::start().await?;
/// let client = rein_client::Client::new(env.client());
/// // With the `rein` facade's derive: `Widget::crd()`.
/// let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "widgets.demo.rein.dev"},
///     "spec": {
///         "group": "demo.rein.dev", "scope": "Namespaced",
///         "names": {"plural": "widgets", "kind": "Widget"},
///         "versions": [{"name": "v1", "served": true, "storage": true,
///             "schema": {"openAPIV3Schema": {"type": "object"}}}],
///     },
/// }))?;
/// let crd = rein_client::crd::install(&client, &crd, Duration::from_secs(10)).await?;
/// assert_eq!(crd.metadata.name.as_deref(), Some("widgets.demo.rein.dev"));
/// # Ok(()) }
/// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
/// ```
pub async fn install(
    client: &Client,
    crd: &CustomResourceDefinition,
    timeout: Duration,
) -> Result<CustomResourceDefinition, CrdError> {
    let deadline = Instant::now() + timeout;
    let name = crd.metadata.name.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(CrdError::Unnamed);
    }
    let reader = client.api_reader();
    let pp = PostParams::default();
    let written = match reader.create(crd, &pp).await {
        Ok(created) => created,
        Err(err) if err.is_already_exists() => {
            let key = ObjectKey::cluster_scoped(&name);
            let mut current: CustomResourceDefinition = reader
                .get(&key)
                .await
                .map(std::sync::Arc::unwrap_or_clone)
                .map_err(|source| CrdError::Read {
                    name: name.clone(),
                    source,
                })?;
            current.spec = crd.spec.clone();
            reader
                .update(&current, &pp)
                .await
                .map_err(|source| CrdError::Write {
                    name: name.clone(),
                    source,
                })?
        }
        Err(source) => return Err(CrdError::Write { name, source }),
    };
    if let Some(done) = check(&name, &written)? {
        return Ok(done);
    }
    wait_until(&reader, &name, timeout, deadline).await
}

/// Waits up to `timeout` until the CRD called `name` is `Established`; returns it as the server
/// reported it then.
///
/// Fails with [`CrdError::NamesNotAccepted`] as soon as the server reports
/// `NamesAccepted=False`, and with [`CrdError::Timeout`] (carrying the last conditions seen) when
/// the time is up.
pub async fn wait_established(
    client: &Client,
    name: &str,
    timeout: Duration,
) -> Result<CustomResourceDefinition, CrdError> {
    let deadline = Instant::now() + timeout;
    wait_until(&client.api_reader(), name, timeout, deadline).await
}

async fn wait_until(
    reader: &Client,
    name: &str,
    timeout: Duration,
    deadline: Instant,
) -> Result<CustomResourceDefinition, CrdError> {
    let key = ObjectKey::cluster_scoped(name);
    let mut last = Vec::new();
    loop {
        let read = tokio::time::timeout_at(deadline, reader.get::<CustomResourceDefinition>(&key));
        match read.await {
            Ok(Ok(crd)) => {
                if let Some(done) = check(name, &crd)? {
                    return Ok(done);
                }
                last = conditions(&crd).to_vec();
            }
            // Not there yet, or the server hiccuped: try again until the deadline.
            Ok(Err(err)) if err.is_not_found() || err.is_timeout() => {}
            Ok(Err(source)) => {
                return Err(CrdError::Read {
                    name: name.to_owned(),
                    source,
                });
            }
            Err(_elapsed) => {}
        }
        if Instant::now() + POLL_INTERVAL >= deadline {
            return Err(CrdError::Timeout {
                name: name.to_owned(),
                after: timeout,
                conditions: last,
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// `Some(crd)` once established, an error once its names are refused, `None` while pending.
fn check(
    name: &str,
    crd: &CustomResourceDefinition,
) -> Result<Option<CustomResourceDefinition>, CrdError> {
    let conditions = conditions(crd);
    if let Some(refused) = conditions
        .iter()
        .find(|c| c.type_ == "NamesAccepted" && c.status == "False")
    {
        return Err(CrdError::NamesNotAccepted {
            name: name.to_owned(),
            reason: refused.reason.clone().unwrap_or_default(),
            message: refused.message.clone().unwrap_or_default(),
        });
    }
    let established = conditions
        .iter()
        .any(|c| c.type_ == "Established" && c.status == "True");
    Ok(established.then(|| crd.clone()))
}

fn conditions(crd: &CustomResourceDefinition) -> &[CustomResourceDefinitionCondition] {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
