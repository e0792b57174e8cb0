//! controller-runtime's client: typed, dynamic, discovery and cache-backed clients, and controllerutil.
//!
//! `rein-client` sits above `rein-scheme` (kinds, keys, selectors), `rein-informer` (shared
//! informers the cache is built on) and `rein-workqueue` (the token bucket behind the request
//! limiter), and below `rein-controller` and `rein-manager`. It talks to the API server through
//! kube-client.
//!
//! - [`Client`]: the delegating client. Reads come from the [`cache::Cache`] unless a kind is
//!   declared uncached; writes go to the server. A cached `get`/`list` hands out the cached
//!   objects themselves as `Arc<K>`, never a copy (`Arc::unwrap_or_clone` for one to modify).
//!   Any kind `K` can also be read, cached and watched as [`PartialObjectMeta<K>`]: its
//!   metadata only (controller-runtime's `PartialObjectMetadata`, `OnlyMetadata`). [`Client::status`], [`Client::sub_resource`],
//!   [`Client::dynamic`] and [`Client::discovery`] hang off it.
//! - [`Error`]: API failures keep the server's `Status`; `is_not_found()` and friends classify.
//! - [`controllerutil`]: owner references, create-or-update/patch, finalizers.
//! - [`crd::install`]: create a CustomResourceDefinition and wait until it is `Established`.
//! - [`metrics::registry`]: the process-wide Prometheus registry.
//! - [`kube_client()`]: the kube-client a manager uses: every request bounded
//!   ([`timeout::RequestTimeouts`]) and throttling retried as client-go does
//!   ([`retry::RetryAfterLayer`]).
//!
//! ```
//! use rein_client::ListOptions;
//! use rein_scheme::ObjectKey;
//!
//! // Keys and list options are plain values; a `Client` needs an API server
//! // (see the `cached_client` example, which starts rein-testenv).
//! let key = ObjectKey::new("default", "gateway");
//! let opts = ListOptions::default().namespace("default").matching_labels([("app", "web")]);
//! assert_eq!(key.to_string(), "default/gateway");
//! assert_eq!(opts.label_selector.to_string(), "app=web");
//! ```

pub mod cache;
mod client;
pub mod controllerutil;
pub mod crd;
pub mod discovery;
pub mod dynamic;
mod endpoint;
mod error;
pub mod limiter;
pub mod metrics;
mod options;
pub mod patch;
pub mod retry;
pub mod timeout;

pub use client::{
    Client, ClientBuilder, ClientOptions, OnTimeout, ReadYourWrites, SubResourceClient,
};
pub use error::{Error, StatusReason, ignore_already_exists, ignore_not_found};
pub use kube_client::core::{DynamicObject, ObjectList, PartialObjectMeta};
pub use options::{
    DeleteParams, ListOptions, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
    ValidationDirective, VersionMatch,
};

/// How [`kube_client()`] stacks its layers over kube-client.
#[derive(Debug, Clone, Copy, Default)]
pub struct KubeClientOptions {
    /// Deadlines of every request ([`timeout::RequestTimeoutLayer`], outermost).
    pub timeouts: timeout::RequestTimeouts,
    /// client-go's client-side QPS/burst limiter ([`limiter::RateLimitLayer`]) for every request
    /// but watches, each retry included; `None` (the default) sends at once.
    /// controller-runtime's `GetConfig` sets 20 QPS with a burst of 30
    /// ([`limiter::RateLimitConfig::default`]).
    pub rate_limit: Option<limiter::RateLimitConfig>,
}

/// A kube-client for `config` as rein's manager uses it: kube-client's own retry (up to 15
/// retries, backing off to 1,000 s) replaced by client-go's ([`retry::RetryAfterLayer`]: only
/// what the server asks for with `Retry-After`, at most 10 times), each attempt waiting for the
/// client-side limiter when [`KubeClientOptions::rate_limit`] is set, and every request, retries
/// and waits included, bounded by [`KubeClientOptions::timeouts`]. Every attempt is recorded in
/// client-go's `rest_client_*` metrics ([`metrics::RestClientMetricsLayer`]).
///
/// To add layers of your own (tracing, a different retry), build the client yourself from
/// kube-client's `ClientBuilder` with these layers and give it to the manager.
pub fn kube_client(
    config: kube_client::Config,
    options: KubeClientOptions,
) -> Result<kube_client::Client, kube_client::Error> {
    let mut config = config;
    config.default_retry = false;
    let host = metrics::RestClientMetricsLayer::host_of(&config.cluster_url);
    let limits = options
        .rate_limit
        .unwrap_or_else(limiter::RateLimitConfig::disabled);
    let builder = kube_client::client::ClientBuilder::try_from(config)?;
    Ok(builder
        // Innermost: every attempt the retry layer makes is counted, as client-go counts them.
        .with_layer(&metrics::RestClientMetricsLayer::new(host))
        // The limiter and the retry layer send a request on, so need a service they can clone.
        .with_layer(&tower::buffer::BufferLayer::new(1024))
        .with_layer(&limiter::RateLimitLayer::new(limits))
        .with_layer(&retry::RetryAfterLayer::default())
        .with_layer(&timeout::RequestTimeoutLayer::new(options.timeouts))
        .build())
}
