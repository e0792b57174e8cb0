//! The soak's controllers (a ConfigMap mirror, a Secret finalizer, a ReplicaSet scaler) and the
//! per-key tracker that records every reconcile's entry and exit.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube_client::ResourceExt;
use kube_client::api::ObjectMeta;
use rein::client::controllerutil::set_controller_reference;
use rein::client::{
    Client, DeleteParams, ListOptions, Patch, PatchParams, PostParams, ignore_already_exists,
    ignore_not_found,
};
use rein::controller::BoxError;
use rein::controller::finalizer::{FinalizerEvent, finalizer};
use rein::controller::{Action, Context, Reconciler, Request};
use rein::scheme::ObjectKey;
use serde_json::json;

/// The namespace every soak object lives in.
pub(crate) const NAMESPACE: &str = "default";
/// The label naming an object's role in the soak (`source`, `mirror`, `guarded`).
pub(crate) const ROLE: &str = "soak.rein.dev/role";
/// The label tying a Pod to its ReplicaSet (also the ReplicaSet's selector).
pub(crate) const SET: &str = "soak.rein.dev/set";
/// The annotation on a source ConfigMap saying which data value its mirror holds.
pub(crate) const MIRRORED: &str = "soak.rein.dev/mirrored";
/// The annotation the writer sets on a guarded Secret.
pub(crate) const WANT: &str = "soak.rein.dev/want";
/// The annotation the finalizer controller copies `WANT` into.
pub(crate) const APPLIED: &str = "soak.rein.dev/applied";
/// The finalizer the finalizer controller puts on guarded Secrets.
pub(crate) const FINALIZER: &str = "soak.rein.dev/cleanup";

/// After writing children (or learning the cache is behind), a reconcile looks again after this.
const RECHECK: Duration = Duration::from_millis(200);

/// The name of the mirror of the source ConfigMap `source`.
pub(crate) fn mirror_name(source: &str) -> String {
    format!("{source}-mirror")
}

/// Records which keys are being reconciled right now, and counts reconciles, errors and any
/// key seen entering a reconcile while already inside one (which must never happen).
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    active: Mutex<HashSet<(&'static str, String)>>,
    violations: AtomicU64,
    first_violation: Mutex<Option<String>>,
    counts: Mutex<BTreeMap<&'static str, (u64, u64)>>,
}

impl Tracker {
    /// Marks `key` of `controller` as being reconciled until the returned guard drops.
    fn enter(self: &Arc<Self>, controller: &'static str, req: &Request) -> Entry {
        let key = (controller, req.to_string());
        let fresh = lock(&self.active).insert(key.clone());
        if !fresh {
            self.violations.fetch_add(1, Ordering::SeqCst);
            lock(&self.first_violation)
                .get_or_insert_with(|| format!("{controller}: {req} reconciled concurrently"));
        }
        Entry {
            tracker: self.clone(),
            key: Some(key).filter(|_| fresh),
        }
    }

    fn record(&self, controller: &'static str, ok: bool) {
        let mut counts = lock(&self.counts);
        let entry = counts.entry(controller).or_default();
        entry.0 += 1;
        if !ok {
            entry.1 += 1;
        }
    }

    /// How many times a key entered a reconcile while already inside one, and the first case.
    pub(crate) fn violations(&self) -> (u64, Option<String>) {
        (
            self.violations.load(Ordering::SeqCst),
            lock(&self.first_violation).clone(),
        )
    }

    /// Reconciles and failed reconciles per controller.
    pub(crate) fn counts(&self) -> BTreeMap<&'static str, (u64, u64)> {
        lock(&self.counts).clone()
    }

    /// Keys inside a reconcile right now.
    pub(crate) fn active(&self) -> usize {
        lock(&self.active).len()
    }
}

/// A key inside a reconcile; leaving (drop) removes it from the active set.
struct Entry {
    tracker: Arc<Tracker>,
    key: Option<(&'static str, String)>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            lock(&self.tracker.active).remove(&key);
        }
    }
}

/// A reconciler wrapped so that every call is recorded by the [`Tracker`].
#[derive(Debug)]
pub(crate) struct Tracked<R> {
    pub(crate) name: &'static str,
    pub(crate) tracker: Arc<Tracker>,
    pub(crate) inner: R,
}

#[async_trait::async_trait]
impl<R: Reconciler<Error = BoxError>> Reconciler for Tracked<R> {
    type Error = BoxError;

    async fn reconcile(&self, ctx: Context, req: Request) -> Result<Action, BoxError> {
        let _entry = self.tracker.enter(self.name, &req);
        // Yield once inside the critical section, so a second worker on the same key (a bug)
        // has a real chance to overlap and be caught.
        tokio::task::yield_now().await;
        let result = self.inner.reconcile(ctx, req).await;
        self.tracker.record(self.name, result.is_ok());
        result
    }
}

/// Keeps a `<name>-mirror` ConfigMap, owned by the source, holding the source's data, and
/// records on the source (annotation `MIRRORED`) which value the mirror holds.
#[derive(Debug)]
pub(crate) struct Mirror {
    pub(crate) client: Client,
}

#[async_trait::async_trait]
impl Reconciler for Mirror {
    type Error = BoxError;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, BoxError> {
        let Some(source) = ignore_not_found(self.client.get::<ConfigMap>(&req.key).await)? else {
            return Ok(Action::done());
        };
        if source.labels().get(ROLE).map(String::as_str) != Some("source")
            || source.metadata.deletion_timestamp.is_some()
        {
            return Ok(Action::done());
        }
        let data = source.data.clone().unwrap_or_default();
        let key = ObjectKey::new(NAMESPACE, mirror_name(&source.name_any()));
        match ignore_not_found(self.client.get::<ConfigMap>(&key).await)? {
            None => {
                let mut mirror = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(key.name.clone()),
                        namespace: Some(NAMESPACE.to_owned()),
                        labels: Some(BTreeMap::from([(ROLE.to_owned(), "mirror".to_owned())])),
                        ..ObjectMeta::default()
                    },
                    data: Some(data.clone()),
                    ..ConfigMap::default()
                };
                set_controller_reference(&*source, &mut mirror, self.client.scheme())?;
                let created = ignore_already_exists(
                    self.client.create(&mirror, &PostParams::default()).await,
                )?;
                if created.is_none() {
                    // The cache is behind; its data may differ: look again shortly.
                    return Ok(Action::requeue_after(RECHECK));
                }
            }
            Some(mirror) if mirror.data.as_ref() != Some(&data) => {
                let patch = Patch::Merge(json!({ "data": data }));
                self.client
                    .patch::<ConfigMap, _>(&key, &patch, &PatchParams::default())
                    .await?;
            }
            Some(_) => {}
        }
        let value = data.get("v").cloned().unwrap_or_default();
        if source.annotations().get(MIRRORED) != Some(&value) {
            let patch = Patch::Merge(json!({ "metadata": { "annotations": { MIRRORED: value } } }));
            self.client
                .patch::<ConfigMap, _>(&req.key, &patch, &PatchParams::default())
                .await?;
        }
        Ok(Action::done())
    }
}

/// Guards Secrets labelled `role=guarded` with a finalizer: while they live, copies `WANT`
/// into `APPLIED`; once deleted, "cleans up" (counts it) and removes the finalizer.
#[derive(Debug)]
pub(crate) struct Guard {
    pub(crate) client: Client,
    /// Keys whose cleanup ran but whose finalizer is not yet known to be removed.
    pub(crate) pending: Arc<Mutex<HashMap<String, String>>>,
    pub(crate) cleanups: Arc<AtomicU64>,
}

#[async_trait::async_trait]
impl Reconciler for Guard {
    type Error = BoxError;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, BoxError> {
        let client = &self.client;
        let Some(secret) = ignore_not_found(client.get::<Secret>(&req.key).await)? else {
            // Gone: whatever cleanup ran for it is complete.
            lock(&self.pending).remove(&req.to_string());
            return Ok(Action::done());
        };
        if secret.labels().get(ROLE).map(String::as_str) != Some("guarded") {
            return Ok(Action::done());
        }
        let uid = secret.uid().unwrap_or_default();
        let mut cleaned = false;
        let action = finalizer(client, FINALIZER, secret, |event| {
            let cleaned = &mut cleaned;
            let pending = &self.pending;
            let cleanups = &self.cleanups;
            let key = req.key.clone();
            async move {
                match event {
                    FinalizerEvent::Apply(secret) => {
                        let want = secret.annotations().get(WANT).cloned().unwrap_or_default();
                        if secret.annotations().get(APPLIED) != Some(&want) {
                            let patch = Patch::Merge(
                                json!({ "metadata": { "annotations": { APPLIED: want } } }),
                            );
                            client
                                .patch::<Secret, _>(&key, &patch, &PatchParams::default())
                                .await?;
                        }
                    }
                    FinalizerEvent::Cleanup(_) => {
                        lock(pending).insert(key.to_string(), uid);
                        cleanups.fetch_add(1, Ordering::SeqCst);
                        *cleaned = true;
                    }
                }
                Ok::<_, rein::client::Error>(Action::done())
            }
        })
        .await?;
        if cleaned {
            lock(&self.pending).remove(&req.to_string());
        }
        Ok(action)
    }
}

/// Keeps `spec.replicas` Pods named `<set>-<i>`, owned by the ReplicaSet, and writes the count
/// and the observed generation into its status.
#[derive(Debug)]
pub(crate) struct Scaler {
    pub(crate) client: Client,
}

#[async_trait::async_trait]
impl Reconciler for Scaler {
    type Error = BoxError;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, BoxError> {
        let Some(set) = ignore_not_found(self.client.get::<ReplicaSet>(&req.key).await)? else {
            return Ok(Action::done());
        };
        if set.metadata.deletion_timestamp.is_some() {
            return Ok(Action::done());
        }
        let name = set.name_any();
        let spec = set.spec.clone().unwrap_or_default();
        let replicas = usize::try_from(spec.replicas.unwrap_or(1)).unwrap_or(0);
        let pods = self
            .client
            .list::<Pod>(
                &ListOptions::default()
                    .namespace(NAMESPACE)
                    .matching_labels([(SET, name.as_str())]),
            )
            .await?;
        let uid = set.uid();
        let owned: Vec<&Pod> = pods
            .items
            .iter()
            .map(|p| &**p)
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| {
                p.owner_references()
                    .iter()
                    .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref())
            })
            .collect();
        let mut count = 0;
        let mut unconfirmed = false;
        for i in 0..replicas {
            let pod_name = format!("{name}-{i}");
            if owned.iter().any(|p| p.name_any() == pod_name) {
                count += 1;
                continue;
            }
            let mut pod: Pod = serde_json::from_value(json!({
                "metadata": {
                    "name": pod_name,
                    "namespace": NAMESPACE,
                    "labels": { SET: name },
                },
                "spec": { "containers": [{ "name": "main", "image": "soak:1" }] },
            }))?;
            set_controller_reference(&*set, &mut pod, self.client.scheme())?;
            ignore_already_exists(self.client.create(&pod, &PostParams::default()).await)?;
            // Created now, or AlreadyExists because the cache is behind: either way this Pod's
            // whole life may pass unseen by the cache (created and deleted inside a watch gap
            // that ends in a relist), and then no event would ever come for it. Look again
            // once the cache had time to show it (the ReplicaSet controller's "expectations").
            unconfirmed = true;
            count += 1;
        }
        for pod in &owned {
            let index = pod
                .name_any()
                .strip_prefix(&format!("{name}-"))
                .and_then(|i| i.parse::<usize>().ok());
            if index.is_none_or(|i| i >= replicas) {
                let key = ObjectKey::new(NAMESPACE, pod.name_any());
                ignore_not_found(
                    self.client
                        .delete::<Pod>(&key, &DeleteParams::default())
                        .await,
                )?;
                unconfirmed = true;
            }
        }
        let status = set.status.clone().unwrap_or_default();
        let generation = set.metadata.generation;
        if usize::try_from(status.replicas).ok() != Some(count)
            || status.observed_generation != generation
        {
            let patch = Patch::Merge(json!({
                "status": { "replicas": count, "observedGeneration": generation }
            }));
            self.client
                .status()
                .patch::<ReplicaSet, _>(&req.key, &patch, &PatchParams::default())
                .await?;
        }
        if unconfirmed {
            return Ok(Action::requeue_after(RECHECK));
        }
        Ok(Action::done())
    }
}

/// Locks a std mutex, ignoring poison (a panicking reconcile must not hide the figures).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tracker_flags_a_key_entered_twice_and_not_two_keys() {
        let tracker = Arc::new(Tracker::default());
        let a = Request::new(NAMESPACE, "a");
        let first = tracker.enter("c", &a);
        let other_key = tracker.enter("c", &Request::new(NAMESPACE, "b"));
        let other_controller = tracker.enter("d", &a);
        assert_eq!(tracker.violations().0, 0);
        let second = tracker.enter("c", &a);
        assert_eq!(tracker.violations().0, 1);
        assert!(
            tracker
                .violations()
                .1
                .is_some_and(|m| m.contains("default/a"))
        );
        drop((second, other_key, other_controller));
        // The overlapping entry must not end the first one's claim on the key.
        assert_eq!(tracker.active(), 1);
        drop(first);
        assert_eq!(tracker.active(), 0);
        let _again = tracker.enter("c", &a);
        assert_eq!(tracker.violations().0, 1);
    }
}
