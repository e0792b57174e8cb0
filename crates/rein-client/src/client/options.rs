//! `ClientOptions`: how a client routes reads and stamps writes.

use std::collections::HashSet;

use kube_client::core::params::ValidationDirective;
use rein_scheme::GroupVersionKind;

use super::ReadYourWrites;
use rein_scheme::Object;

/// How the delegating client behaves (controller-runtime's `client.Options` + `CacheOptions`).
///
/// ```
/// use k8s_openapi::api::core::v1::Secret;
/// use rein_client::ClientOptions;
///
/// let opts = ClientOptions::default().uncached::<Secret>().field_owner("my-operator");
/// assert_eq!(opts.uncached.len(), 1);
/// assert!(opts.read_your_writes.enabled, "read-your-own-writes is on by default");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Kinds always read from the API server, never the cache (`DisableFor`).
    pub uncached: HashSet<GroupVersionKind>,
    /// Read dynamic objects through the cache too (default: straight from the server).
    pub cache_unstructured: bool,
    /// The field manager stamped on writes that do not name one.
    pub field_owner: Option<String>,
    /// Send every write as a dry run.
    pub dry_run: bool,
    /// The `fieldValidation` of every create, update and patch that does not set its own
    /// (controller-runtime's `client.WithFieldValidation`); `None` leaves it to the server,
    /// whose default is `Warn` (unknown fields dropped with a `Warning` header).
    pub field_validation: Option<ValidationDirective>,
    /// Whether and how long a cached read waits for the cache to reach this client's own
    /// earlier writes of the kind (default: on, 5 s, then answer from the cache); see
    /// [`ReadYourWrites`] for exactly what it guarantees.
    pub read_your_writes: ReadYourWrites,
}

impl ClientOptions {
    /// Reads of `K` bypass the cache.
    pub fn uncached<K: Object>(mut self) -> Self {
        let resource = kube_client::core::ApiResource::erase::<K>(&());
        self.uncached.insert(GroupVersionKind::new(
            resource.group,
            resource.version,
            resource.kind,
        ));
        self
    }

    /// Reads of dynamic objects go through the cache.
    pub fn cache_unstructured(mut self, enabled: bool) -> Self {
        self.cache_unstructured = enabled;
        self
    }

    /// Default field manager for writes.
    pub fn field_owner(mut self, owner: impl Into<String>) -> Self {
        self.field_owner = Some(owner.into());
        self
    }

    /// Every write is a dry run.
    pub fn dry_run(mut self, enabled: bool) -> Self {
        self.dry_run = enabled;
        self
    }

    /// Default `fieldValidation` for writes (e.g. `Strict` turns unknown or duplicate fields
    /// into a 400 instead of a warning).
    pub fn field_validation(mut self, validation: ValidationDirective) -> Self {
        self.field_validation = Some(validation);
        self
    }

    /// Read-your-own-writes settings ([`ReadYourWrites::disabled`] turns it off).
    pub fn read_your_writes(mut self, read_your_writes: ReadYourWrites) -> Self {
        self.read_your_writes = read_your_writes;
        self
    }
}
