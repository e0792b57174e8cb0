//! `CacheOptions`: which objects the cache holds (namespaces, selectors), how it stores them
//! (transform) and how often informers resync.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use rein_informer::{InformerSpec, MetaTransform, StoreKind};
use rein_scheme::{GroupVersionKind, fields, labels};

use rein_scheme::Object;

/// A function applied to every object's metadata before it is stored (e.g. dropping
/// `managedFields`). It sees metadata only so it works for every kind without re-encoding.
/// The informer factory's [`MetaTransform`].
pub type Transform = MetaTransform;

/// Per-kind overrides of the cache's defaults (controller-runtime's `ByObject`).
#[derive(Clone, Default)]
pub struct ByObject {
    /// Restrict this kind to these namespaces (controller-runtime's `ByObject.Namespaces`),
    /// one watch per namespace; empty: the cache's defaults.
    pub namespaces: Vec<String>,
    /// Only objects matching this label selector are cached.
    pub label_selector: Option<labels::Selector>,
    /// Only objects matching this field selector are cached.
    pub field_selector: Option<fields::Selector>,
    /// Replaces the default transform for this kind.
    pub transform: Option<Transform>,
    /// Replaces the default resync period for this kind.
    pub sync_period: Option<Duration>,
    /// How this kind's informer keeps objects: [`StoreKind::Compact`] keeps them as JSON and
    /// decodes each read (a fraction of the memory, for large fleets read a few objects at a
    /// time); default typed.
    pub store: Option<StoreKind>,
}

impl fmt::Debug for ByObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ByObject")
            .field("namespaces", &self.namespaces)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("transform", &self.transform.is_some())
            .field("sync_period", &self.sync_period)
            .field("store", &self.store)
            .finish()
    }
}

/// How the cache is built (controller-runtime's `cache.Options`).
#[derive(Clone)]
pub struct CacheOptions {
    /// Restrict namespaced kinds to this namespace (`None`: all namespaces).
    pub namespace: Option<String>,
    /// Restrict namespaced kinds to these namespaces (controller-runtime's
    /// `DefaultNamespaces`): one list and watch per namespace, all feeding the kind's one
    /// informer; reads span them, and a read naming another namespace fails with
    /// [`Error::NamespaceNotCached`](crate::Error::NamespaceNotCached). Replaces `namespace`
    /// when not empty.
    pub default_namespaces: Vec<String>,
    /// Only objects matching this label selector are cached (all kinds).
    pub default_label_selector: Option<labels::Selector>,
    /// Only objects matching this field selector are cached (all kinds).
    pub default_field_selector: Option<fields::Selector>,
    /// Applied to every object before it is stored; default drops `metadata.managedFields`.
    pub default_transform: Option<Transform>,
    /// Informer resync period (default 10 hours).
    pub sync_period: Duration,
    /// Per-kind overrides.
    pub by_object: HashMap<GroupVersionKind, ByObject>,
    /// Reads of a kind with no informer yet fail instead of starting one.
    pub reader_fail_on_missing_informer: bool,
    /// How long a read (or [`Cache::informer_for`](super::Cache::informer_for)) waits for a
    /// newly started informer to sync before failing with [`Error::CacheSyncTimeout`]
    /// (controller-runtime's "failed waiting for Informer to sync"); default 2 minutes, as a
    /// controller's `cache_sync_timeout`. `None` waits until the cache stops.
    ///
    /// [`Error::CacheSyncTimeout`]: crate::Error::CacheSyncTimeout
    pub informer_sync_timeout: Option<Duration>,
}

impl Default for CacheOptions {
    fn default() -> Self {
        Self {
            namespace: None,
            default_namespaces: Vec::new(),
            default_label_selector: None,
            default_field_selector: None,
            default_transform: Some(strip_managed_fields()),
            sync_period: Duration::from_secs(10 * 60 * 60),
            by_object: HashMap::new(),
            reader_fail_on_missing_informer: false,
            informer_sync_timeout: Some(Duration::from_secs(120)),
        }
    }
}

impl fmt::Debug for CacheOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheOptions")
            .field("namespace", &self.namespace)
            .field("default_namespaces", &self.default_namespaces)
            .field("default_label_selector", &self.default_label_selector)
            .field("default_field_selector", &self.default_field_selector)
            .field("default_transform", &self.default_transform.is_some())
            .field("sync_period", &self.sync_period)
            .field("by_object", &self.by_object)
            .field(
                "reader_fail_on_missing_informer",
                &self.reader_fail_on_missing_informer,
            )
            .field("informer_sync_timeout", &self.informer_sync_timeout)
            .finish()
    }
}

impl CacheOptions {
    /// Restricts namespaced kinds to one namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Restricts namespaced kinds to a set of namespaces, watched one by one
    /// ([`CacheOptions::default_namespaces`]).
    pub fn namespaces<S: Into<String>>(mut self, namespaces: impl IntoIterator<Item = S>) -> Self {
        self.default_namespaces = namespaces.into_iter().map(Into::into).collect();
        self
    }

    /// Whether any kind is restricted to some namespaces.
    pub(crate) fn restricts_namespaces(&self) -> bool {
        self.namespace.is_some()
            || !self.default_namespaces.is_empty()
            || self.by_object.values().any(|b| !b.namespaces.is_empty())
    }

    /// Sets a per-kind override.
    pub fn by_object<K: Object>(mut self, by: ByObject) -> Self {
        let resource = kube_client::core::ApiResource::erase::<K>(&());
        self.by_object.insert(
            GroupVersionKind::new(resource.group, resource.version, resource.kind),
            by,
        );
        self
    }

    /// Sets the resync period.
    pub fn sync_period(mut self, period: Duration) -> Self {
        self.sync_period = period;
        self
    }

    /// The settings every informer starts from: namespace, default selectors, transform and
    /// resync period.
    pub(crate) fn default_spec(&self) -> InformerSpec {
        InformerSpec {
            namespace: self.namespace.clone(),
            namespaces: non_empty(&self.default_namespaces),
            label_selector: self.default_label_selector.as_ref().map(|s| s.to_string()),
            field_selector: self.default_field_selector.as_ref().map(|s| s.to_string()),
            transform: self.default_transform.clone(),
            resync_period: Some(self.sync_period),
            store: None,
        }
    }
    /// The label and field selectors the cache's informer of `gvk` uses: its `ByObject`
    /// override's, else the defaults.
    pub(crate) fn selectors_for(
        &self,
        gvk: &GroupVersionKind,
    ) -> (Option<labels::Selector>, Option<fields::Selector>) {
        let by = self.by_object.get(gvk);
        (
            by.and_then(|b| b.label_selector.clone())
                .or_else(|| self.default_label_selector.clone()),
            by.and_then(|b| b.field_selector.clone())
                .or_else(|| self.default_field_selector.clone()),
        )
    }
}

impl ByObject {
    /// This override as the factory's per-kind spec (unset fields fall back to the defaults).
    pub(crate) fn spec(&self) -> InformerSpec {
        InformerSpec {
            namespace: None,
            namespaces: non_empty(&self.namespaces),
            label_selector: self.label_selector.as_ref().map(|s| s.to_string()),
            field_selector: self.field_selector.as_ref().map(|s| s.to_string()),
            transform: self.transform.clone(),
            resync_period: self.sync_period,
            store: self.store,
        }
    }
}

fn non_empty(namespaces: &[String]) -> Option<Vec<String>> {
    (!namespaces.is_empty()).then(|| namespaces.to_vec())
}

/// The transform controller-runtime recommends: drop `metadata.managedFields`. It is
/// rein-informer's [`drop_managed_fields`](rein_informer::drop_managed_fields), so the
/// informers also skip managedFields while decoding: they are never built.
pub fn strip_managed_fields() -> Transform {
    rein_informer::drop_managed_fields()
}
