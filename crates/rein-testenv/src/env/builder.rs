//! [`TestEnvBuilder`]: server options and start-up.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Api;
use kube_client::api::PostParams;
use kube_client::config::Kubeconfig;
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{TestEnv, config_for};
use crate::Error;
use crate::faults::Faults;
use crate::ops::{self, Target, WriteOpts};
use crate::resources::Catalogue;
use crate::server::{self, State};
use crate::store::Store;

/// How many change events the server keeps for watch resumption by default.
pub const DEFAULT_WATCH_HISTORY: usize = 100_000;

/// How long a list or streaming watch waits by default for a resourceVersion the server has not
/// reached yet (kube-apiserver's watch cache waits 3 s).
pub const DEFAULT_TOO_LARGE_RV_WAIT: Duration = Duration::from_secs(3);

/// How long [`TestEnvBuilder::start`] waits for each CRD given to [`TestEnvBuilder::crd`] to
/// be `Established`.
pub const CRD_ESTABLISH_TIMEOUT: Duration = Duration::from_secs(10);

/// Options for [`TestEnv`]; start with [`TestEnv::builder`].
#[derive(Debug, Clone)]
pub struct TestEnvBuilder {
    crds: Vec<CustomResourceDefinition>,
    tls: bool,
    token: Option<String>,
    watch_history: usize,
    listen: SocketAddr,
    bookmark_interval: Duration,
    too_large_rv_wait: Duration,
    validate: bool,
    webhook_services: crate::admission::Services,
    conversion_timeout: Duration,
    users: Vec<crate::User>,
    enforce_rbac: bool,
    plugins: crate::plugins::Plugins,
    kubelet: crate::Kubelet,
    request_log_capacity: usize,
    request_log_export: Option<std::path::PathBuf>,
    timeouts: server::Timeouts,
}

impl Default for TestEnvBuilder {
    fn default() -> TestEnvBuilder {
        TestEnvBuilder {
            crds: Vec::new(),
            tls: false,
            token: None,
            watch_history: DEFAULT_WATCH_HISTORY,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            bookmark_interval: Duration::from_secs(1),
            too_large_rv_wait: DEFAULT_TOO_LARGE_RV_WAIT,
            validate: true,
            webhook_services: crate::admission::Services::default(),
            conversion_timeout: Duration::from_secs(30),
            users: Vec::new(),
            enforce_rbac: false,
            plugins: crate::plugins::Plugins::all(),
            request_log_capacity: crate::requests::DEFAULT_REQUEST_LOG_CAPACITY,
            request_log_export: crate::request_export::path_from_env(),
            kubelet: crate::Kubelet::Absent,
            timeouts: server::Timeouts::default(),
        }
    }
}

impl TestEnvBuilder {
    /// Serve HTTPS with a freshly generated CA (in the kubeconfig and the client's config).
    pub fn tls(mut self, tls: bool) -> TestEnvBuilder {
        self.tls = tls;
        self
    }

    /// Require `Authorization: Bearer <token>` (401 without it); the client sends it.
    pub fn token(mut self, token: impl Into<String>) -> TestEnvBuilder {
        self.token = Some(token.into());
        self
    }

    /// Adds a user: its token (if it has one) authenticates it as its name and groups, plus
    /// `system:authenticated`. Call once per user. Client certificates need no registration:
    /// any certificate the server's CA issued ([`TestEnv::kubeconfig_for`]) authenticates.
    ///
    /// ```
    /// # async fn demo() -> Result<(), rein_testenv::Error> {
    /// use rein_testenv::{TestEnv, User};
    ///
    /// let alice = User::new("alice").group("devs").token("alice-token");
    /// let env = TestEnv::builder().user(alice.clone()).start().await?;
    /// let as_alice = env.client_for(&alice).await?;
    /// # drop((env, as_alice)); Ok(()) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
    /// ```
    ///
    /// [`TestEnv::kubeconfig_for`]: crate::TestEnv::kubeconfig_for
    pub fn user(mut self, user: crate::User) -> TestEnvBuilder {
        self.users.push(user);
        self
    }

    /// Authorize every request against the stored RBAC objects, as a cluster with
    /// `--authorization-mode=RBAC` does (default `false`: every authenticated request is
    /// allowed). Refused requests get 403 with kube-apiserver's message, e.g. `pods is
    /// forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace
    /// "default"`; impersonation needs the `impersonate` verb. The admin (the default
    /// client, in `system:masters`) may do anything; with no [`token`] set, one is generated,
    /// so requests without credentials get 401. Whatever the mode, the
    /// `authorization.k8s.io` reviews answer from the RBAC objects.
    ///
    /// [`token`]: TestEnvBuilder::token
    pub fn enforce_rbac(mut self, enforce: bool) -> TestEnvBuilder {
        self.enforce_rbac = enforce;
        self
    }

    /// Keep this many change events for watch resumption (older versions get 410 Expired).
    pub fn watch_history(mut self, events: usize) -> TestEnvBuilder {
        self.watch_history = events;
        self
    }

    /// Listen on this address (default `127.0.0.1:0`, an ephemeral port).
    pub fn listen(mut self, addr: SocketAddr) -> TestEnvBuilder {
        self.listen = addr;
        self
    }

    /// How often watches with `allowWatchBookmarks` get a BOOKMARK (default 1 s).
    pub fn bookmark_interval(mut self, interval: Duration) -> TestEnvBuilder {
        self.bookmark_interval = interval;
        self
    }

    /// How many answered requests [`TestEnv::requests`] keeps (default 50,000; and never
    /// more than 16 MiB of their paths and queries, each cut to 2 KiB): the oldest are
    /// forgotten beyond it, so a long run or a flood of requests holds bounded memory.
    /// 0 keeps none.
    pub fn request_log_capacity(mut self, capacity: usize) -> TestEnvBuilder {
        self.request_log_capacity = capacity;
        self
    }

    /// Appends every authenticated resource request, as one JSON line (user, groups, verb,
    /// group, version, resource, subresource, namespace, name), to the file at `path`
    /// (`None`: export nothing). The default is the file the `REIN_TESTENV_REQUEST_LOG`
    /// environment variable names ([`REQUEST_LOG_ENV`](crate::REQUEST_LOG_ENV)), so a whole
    /// test suite's requests can be collected from outside it (`cargo rein rbac --from-tests`).
    /// [`start`](TestEnvBuilder::start) fails with [`Error::RequestLogExport`] when the file
    /// cannot be opened.
    pub fn request_log_export(mut self, path: Option<std::path::PathBuf>) -> TestEnvBuilder {
        self.request_log_export = path;
        self
    }

    /// How long a client may take to send a request's headers before its connection is
    /// closed (default 32 s, kube-apiserver's `ReadHeaderTimeout`): on a new connection from
    /// the accept (over TLS, from the end of the handshake) until its first request's headers
    /// are in, so a client that connects and sends nothing is closed too; on a kept-alive
    /// HTTP/1.1 connection from the end of the previous response, so there it also closes an
    /// idle connection when shorter than [`idle_timeout`]. Headers sent a byte at a time do not
    /// keep a connection open. Zero closes every connection at once. The timer runs on the
    /// server's own clock, so a test's paused clock does not shorten it.
    ///
    /// [`idle_timeout`]: TestEnvBuilder::idle_timeout
    pub fn header_read_timeout(mut self, timeout: Duration) -> TestEnvBuilder {
        self.timeouts.header_read = timeout;
        self
    }

    /// How long a connection may stay open with no request in flight before the server closes
    /// it gracefully (default 90 s, kube-apiserver's `IdleTimeout`; HTTP/2 gets a `GOAWAY`). A
    /// request is in flight until its response has been sent to the end, so a connection
    /// carrying an open watch is never idle, however long the watch stays quiet.
    pub fn idle_timeout(mut self, timeout: Duration) -> TestEnvBuilder {
        self.timeouts.idle = timeout;
        self
    }

    /// How long a client of the HTTPS server ([`tls`]) may take from connecting to the end of
    /// its TLS handshake before its connection is dropped (default 32 s: kube-apiserver's Go
    /// server bounds the handshake by its `ReadHeaderTimeout`). A client that connects and
    /// sends no ClientHello is closed at this timeout.
    ///
    /// [`tls`]: TestEnvBuilder::tls
    pub fn tls_handshake_timeout(mut self, timeout: Duration) -> TestEnvBuilder {
        self.timeouts.tls_handshake = timeout;
        self
    }

    /// How long a list (or a streaming watch, `sendInitialEvents=true`) from a resourceVersion
    /// newer than the server's waits for a write to get there (default 3 s, as kube-apiserver's
    /// watch cache). Once it has, the request is answered; if the time runs out first, a list
    /// answers 504 Timeout and a streaming watch an ERROR event, both with the
    /// `ResourceVersionTooLarge` cause. The wait runs on the server's own clock, so a test's
    /// paused clock does not shorten it: set a short wait to see the error quickly.
    pub fn too_large_rv_wait(mut self, wait: Duration) -> TestEnvBuilder {
        self.too_large_rv_wait = wait;
        self
    }

    /// Whether writes are validated as kube-apiserver validates them (default `true`). With
    /// `false`, metadata (labels, annotations, owner references, finalizers) and per-kind rules
    /// (Pods' containers, workloads' selectors, Services' ports, immutable fields, data sizes)
    /// are not checked, for a test that must store an object a real server would refuse (422
    /// Invalid). Bodies are still decoded — type errors answer 400 and unknown fields are
    /// dropped — so whatever is stored still reads back through typed clients; names and the
    /// 3 MiB body limit are still enforced.
    pub fn validate_objects(mut self, validate: bool) -> TestEnvBuilder {
        self.validate = validate;
        self
    }

    /// What finishes the graceful deletion of Pods bound to a node (default
    /// [`Kubelet::Absent`](crate::Kubelet::Absent): kept, marked, until a grace-0 delete, as
    /// on a cluster without a kubelet). [`Kubelet::StopsAtOnce`](crate::Kubelet::StopsAtOnce)
    /// removes them in the delete's own transaction, for tests of controllers that expect
    /// their Pods to go; [`Kubelet::StopsAfterGrace`](crate::Kubelet::StopsAfterGrace) once
    /// their `deletionTimestamp` has passed.
    ///
    /// ```
    /// # async fn demo() -> Result<(), rein_testenv::Error> {
    /// use rein_testenv::{Kubelet, TestEnv};
    ///
    /// let env = TestEnv::builder().kubelet(Kubelet::StopsAtOnce).start().await?;
    /// # drop(env); Ok(()) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
    /// ```
    pub fn kubelet(mut self, kubelet: crate::Kubelet) -> TestEnvBuilder {
        self.kubelet = kubelet;
        self
    }

    /// Turns a built-in admission plugin on or off (all are on by default, as in a real
    /// cluster's default plugin set; kube-apiserver's `--disable-admission-plugins`). The
    /// controllers they rely on run either way: every namespace has the `default`
    /// ServiceAccount and the `kube-root-ca.crt` ConfigMap, and ResourceQuotas' `status`
    /// shows their usage.
    ///
    /// ```
    /// # async fn demo() -> Result<(), rein_testenv::Error> {
    /// use rein_testenv::{AdmissionPlugin, TestEnv};
    ///
    /// // Pods keep the spec they are sent: no token volume, no default tolerations.
    /// let env = TestEnv::builder()
    ///     .admission_plugin(AdmissionPlugin::ServiceAccount, false)
    ///     .admission_plugin(AdmissionPlugin::DefaultTolerationSeconds, false)
    ///     .start()
    ///     .await?;
    /// # drop(env); Ok(()) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
    /// ```
    pub fn admission_plugin(mut self, plugin: crate::AdmissionPlugin, on: bool) -> TestEnvBuilder {
        self.plugins.set(plugin, on);
        self
    }

    /// Maps the in-cluster service `namespace/name` on `port` to `addr`: an admission webhook
    /// whose configuration names the service in `clientConfig.service` (with that port, 443
    /// when the configuration gives none) is called at `addr`, with its certificate verified
    /// for `<name>.<namespace>.svc`, as kube-apiserver would reach it in a cluster. Call once
    /// per service.
    ///
    /// ```
    /// # async fn demo() -> Result<(), rein_testenv::Error> {
    /// use rein_testenv::TestEnv;
    ///
    /// let webhook: std::net::SocketAddr = "127.0.0.1:9443".parse().unwrap();
    /// let env = TestEnv::builder()
    ///     .webhook_service("system", "webhook-service", 443, webhook)
    ///     .start()
    ///     .await?;
    /// # drop(env); Ok(()) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
    /// ```
    pub fn webhook_service(
        mut self,
        namespace: &str,
        name: &str,
        port: u16,
        addr: SocketAddr,
    ) -> TestEnvBuilder {
        self.webhook_services.insert(namespace, name, port, addr);
        self
    }

    /// How long a CRD's conversion webhook (`spec.conversion.strategy: Webhook`) has to
    /// answer before the request that needed it fails with 500; 30 seconds by default, whole
    /// seconds (at least one).
    pub fn conversion_webhook_timeout(mut self, timeout: Duration) -> TestEnvBuilder {
        self.conversion_timeout = timeout;
        self
    }

    /// Installs `crd` when the server starts (envtest's `CRDInstallOptions`): [`start`] creates
    /// it through the API, as a client would, and returns only once it is `Established`, so
    /// its kind is served from the first request. Call once per CRD.
    ///
    /// ```
    /// # async fn demo() -> Result<(), rein_testenv::Error> {
    /// use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    /// use rein_testenv::TestEnv;
    ///
    /// let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
    ///     "metadata": {"name": "widgets.demo.rein.dev"},
    ///     "spec": {
    ///         "group": "demo.rein.dev", "scope": "Namespaced",
    ///         "names": {"plural": "widgets", "kind": "Widget"},
    ///         "versions": [{"name": "v1", "served": true, "storage": true,
    ///             "schema": {"openAPIV3Schema": {"type": "object"}}}],
    ///     },
    /// })).unwrap();
    /// let env = TestEnv::builder().crd(crd).start().await?;
    /// # drop(env); Ok(()) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
    /// ```
    ///
    /// [`start`]: TestEnvBuilder::start
    pub fn crd(mut self, crd: CustomResourceDefinition) -> TestEnvBuilder {
        self.crds.push(crd);
        self
    }

    /// Starts the server on its own runtime thread and builds a client for it; then installs
    /// the CRDs given to [`TestEnvBuilder::crd`] and waits until each is `Established`.
    pub async fn start(self) -> Result<TestEnv, Error> {
        let listener = std::net::TcpListener::bind(self.listen).map_err(|source| Error::Bind {
            addr: self.listen,
            source,
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| Error::Bind {
                addr: self.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind {
            addr: self.listen,
            source,
        })?;
        let admin_token = match (&self.token, self.enforce_rbac) {
            (Some(token), _) => Some(token.clone()),
            (None, true) => Some(crate::ops::meta::new_uid()),
            (None, false) => None,
        };
        let tls = if self.tls {
            Some(crate::tls::generate(addr.ip())?)
        } else {
            None
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let base_url = format!("{scheme}://{addr}");

        let (ca_pem, acceptor, ca) = match tls {
            Some(t) => (Some(t.ca_pem), Some(t.acceptor), Some(t.ca)),
            None => (None, None, None),
        };
        let auth =
            crate::auth::Authn::new(admin_token.clone(), &self.users, ca, self.enforce_rbac)?;
        let root_ca_pem = match &ca_pem {
            Some(pem) => pem.clone(),
            None => crate::tls::generate_ca_pem()?,
        };
        let store = Arc::new(Store::new(self.watch_history));
        store.set_write_hook(Box::new(crate::plugins::Controllers::new(
            root_ca_pem,
            self.kubelet,
        )));
        let request_export = self
            .request_log_export
            .as_deref()
            .map(crate::request_export::RequestExport::open)
            .transpose()?;
        let state = Arc::new(State {
            catalogue: Catalogue::new(),
            store: store.clone(),
            faults: Faults::new(store),
            log: Mutex::new(crate::requests::RequestLog::new(self.request_log_capacity)),
            request_export,
            in_flight: crate::requests::InFlight::default(),
            auth,
            enforce_rbac: self.enforce_rbac,
            bookmark_interval: self.bookmark_interval,
            too_large_rv_wait: self.too_large_rv_wait,
            validate: self.validate,
            shutdown: CancellationToken::new(),
            server_address: addr.to_string(),
            webhook_services: self.webhook_services.clone(),
            conversion_timeout: self.conversion_timeout,
            plugins: self.plugins,
            timeouts: self.timeouts,
        });
        seed_namespaces(&state);
        seed_kubernetes_service(&state, addr);
        crate::rbac::bootstrap::seed(&state);

        // Over TLS without a token, the kubeconfig's user is an admin client certificate: a
        // user with no credentials at all makes kubectl prompt for a username and password.
        let admin_cert = match (&admin_token, state.auth.ca.as_ref()) {
            (None, Some(ca)) => Some(
                ca.issue_client(&crate::User::new("rein-testenv-admin").group("system:masters"))?,
            ),
            _ => None,
        };
        let kubeconfig = kubeconfig(
            &base_url,
            ca_pem.as_deref(),
            admin_token.as_deref(),
            admin_cert.as_ref(),
        )?;
        let thread_state = state.clone();
        let kubelet = self.kubelet;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("rein-apiserver")
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        let thread = std::thread::Builder::new()
            .name("rein-apiserver".to_string())
            .spawn(move || {
                runtime.block_on(async move {
                    if kubelet == crate::Kubelet::StopsAfterGrace {
                        tokio::spawn(crate::kubelet::run(
                            thread_state.store.clone(),
                            thread_state.shutdown.clone(),
                        ));
                    }
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => server::serve(listener, acceptor, thread_state).await,
                        Err(e) => tracing::error!(error = %e, "rein-apiserver could not listen"),
                    }
                });
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
            .map_err(Error::Runtime)?;

        let config = config_for(&kubeconfig).await?;
        let client = kube_client::Client::try_from(config.clone()).map_err(Error::Client)?;
        let env = TestEnv {
            state,
            base_url,
            client,
            config,
            kubeconfig,
            thread: Some(thread),
        };
        for crd in &self.crds {
            install_crd(&env.client, crd).await?;
        }
        Ok(env)
    }
}

/// Creates `crd` and waits (bounded by [`CRD_ESTABLISH_TIMEOUT`]) until it is `Established`.
async fn install_crd(
    client: &kube_client::Client,
    crd: &CustomResourceDefinition,
) -> Result<(), Error> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.create(&PostParams::default(), crd)
        .await
        .map_err(|source| Error::InstallCrd {
            name: name.clone(),
            source,
        })?;
    let wait = async {
        loop {
            let crd = api.get(&name).await.map_err(|source| Error::InstallCrd {
                name: name.clone(),
                source,
            })?;
            let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
            if let Some(refused) = conditions
                .iter()
                .find(|c| c.type_ == "NamesAccepted" && c.status == "False")
            {
                return Err(Error::CrdNotEstablished {
                    name: name.clone(),
                    reason: refused.message.clone().unwrap_or_default(),
                });
            }
            if conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(CRD_ESTABLISH_TIMEOUT, wait)
        .await
        .unwrap_or_else(|_| {
            Err(Error::CrdNotEstablished {
                name: name.clone(),
                reason: format!("not Established after {CRD_ESTABLISH_TIMEOUT:?}"),
            })
        })
}

/// Creates the namespaces a fresh cluster has.
fn seed_namespaces(state: &State) {
    let Some(def) = state.catalogue.lookup("", "v1", "namespaces") else {
        return;
    };
    let target = Target {
        catalogue: &state.catalogue,
        def: &def,
        version: "v1",
    };
    let mut txn = state.store.lock();
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        let _ = ops::create(&mut txn, target, None, ns, &WriteOpts::default());
    }
    crate::plugins::Controllers::seed(&mut txn);
}

/// The `kubernetes` Service in `default` every cluster has (kube-apiserver's bootstrap
/// controller), with its Endpoints and EndpointSlice pointing at this server.
fn seed_kubernetes_service(state: &State, addr: std::net::SocketAddr) {
    let (ip, port) = (addr.ip().to_string(), addr.port());
    let address_type = if addr.is_ipv4() { "IPv4" } else { "IPv6" };
    let objects = [
        (
            "services",
            "v1",
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "namespace": "default",
                    "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}}),
        ),
        (
            "endpoints",
            "v1",
            json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "kubernetes", "namespace": "default",
                    "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                "subsets": [{"addresses": [{"ip": ip}],
                    "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}),
        ),
        (
            "endpointslices",
            "v1",
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "kubernetes", "namespace": "default",
                    "labels": {"kubernetes.io/service-name": "kubernetes"}},
                "addressType": address_type,
                "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}),
        ),
    ];
    let mut txn = state.store.lock();
    for (plural, version, obj) in objects {
        let group = if plural == "endpointslices" {
            "discovery.k8s.io"
        } else {
            ""
        };
        let Some(def) = state.catalogue.lookup(group, version, plural) else {
            continue;
        };
        let target = Target {
            catalogue: &state.catalogue,
            def: &def,
            version,
        };
        let _ = ops::create(
            &mut txn,
            target,
            Some("default"),
            obj,
            &WriteOpts::default(),
        );
    }
}

/// A kubeconfig with one cluster, user and context, all named `rein-testenv`.
fn kubeconfig(
    server: &str,
    ca_pem: Option<&str>,
    token: Option<&str>,
    cert: Option<&crate::auth::ClientCert>,
) -> Result<Kubeconfig, Error> {
    let mut cluster = json!({"server": server});
    if let Some(pem) = ca_pem {
        cluster["certificate-authority-data"] = json!(STANDARD.encode(pem));
    }
    let mut user = json!({});
    if let Some(token) = token {
        user["token"] = json!(token);
    }
    if let Some(cert) = cert {
        user["client-certificate-data"] = json!(STANDARD.encode(&cert.cert_pem));
        user["client-key-data"] = json!(STANDARD.encode(&cert.key_pem));
    }
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "rein-testenv", "cluster": cluster}],
        "users": [{"name": "rein-testenv", "user": user}],
        "contexts": [{"name": "rein-testenv", "context": {"cluster": "rein-testenv", "user": "rein-testenv", "namespace": "default"}}],
        "current-context": "rein-testenv",
    });
    serde_json::from_value(doc).map_err(Error::Kubeconfig)
}
