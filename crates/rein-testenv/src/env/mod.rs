//! [`TestEnv`]: starts the server on its own runtime thread and hands out a ready client,
//! the kubeconfig, the fault-injection handle and the request log.

pub(crate) mod builder;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use kube_client::config::Kubeconfig;

pub use builder::TestEnvBuilder;

use crate::Error;
use crate::faults::Faults;
use crate::requests::{InFlightRequest, RequestRecord};
use crate::server::State;

/// A running in-process Kubernetes API server; shuts down when dropped.
pub struct TestEnv {
    pub(crate) state: Arc<State>,
    pub(crate) base_url: String,
    pub(crate) client: kube_client::Client,
    pub(crate) config: kube_client::Config,
    pub(crate) kubeconfig: Kubeconfig,
    pub(crate) thread: Option<std::thread::JoinHandle<()>>,
}

impl fmt::Debug for TestEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestEnv")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl TestEnv {
    /// Starts a server with default options: plain HTTP on `127.0.0.1:<ephemeral port>`.
    pub async fn start() -> Result<TestEnv, Error> {
        TestEnv::builder().start().await
    }

    /// A builder for TLS, a bearer token, the watch history size or the listen address.
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder::default()
    }

    /// A kube-client `Client` for this server, ready to use.
    pub fn client(&self) -> kube_client::Client {
        self.client.clone()
    }

    /// The kube-client `Config` for this server.
    pub fn config(&self) -> kube_client::Config {
        self.config.clone()
    }

    /// A kubeconfig document for this server (context `rein-testenv`).
    pub fn kubeconfig(&self) -> Kubeconfig {
        self.kubeconfig.clone()
    }

    /// Writes [`TestEnv::kubeconfig`] as YAML to `path`, for `kubectl --kubeconfig`.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), Error> {
        let yaml = crate::yaml::to_string(&self.kubeconfig).map_err(Error::Serialize)?;
        std::fs::write(path, yaml).map_err(|source| Error::WriteKubeconfig {
            path: path.to_path_buf(),
            source,
        })
    }

    /// A kubeconfig for this server that authenticates as `user`: with its bearer token when
    /// it has one (registered by [`TestEnvBuilder::user`]), else with a client certificate
    /// the server's CA issues now (`CN=<name>`, one `O=<group>` per group; needs
    /// [`TestEnvBuilder::tls`]).
    pub fn kubeconfig_for(&self, user: &crate::User) -> Result<Kubeconfig, Error> {
        let credentials = match &user.token {
            Some(token) => serde_json::json!({"token": token}),
            None => {
                let ca = self.state.auth.ca.as_ref().ok_or_else(|| {
                    Error::ClientCertificate(
                        "client certificates need TLS (TestEnvBuilder::tls)".into(),
                    )
                })?;
                let cert = ca.issue_client(user)?;
                use base64::Engine as _;
                let b64 = base64::engine::general_purpose::STANDARD;
                serde_json::json!({
                    "client-certificate-data": b64.encode(cert.cert_pem),
                    "client-key-data": b64.encode(cert.key_pem),
                })
            }
        };
        self.kubeconfig_with(credentials)
    }

    /// A kubeconfig for this server that sends the bearer `token` (a ServiceAccount's token
    /// from TokenRequest, say).
    pub fn kubeconfig_with_token(&self, token: &str) -> Result<Kubeconfig, Error> {
        self.kubeconfig_with(serde_json::json!({"token": token}))
    }

    /// A kube-client `Config` that authenticates as `user` (see [`TestEnv::kubeconfig_for`]),
    /// e.g. to start a manager as that user.
    pub async fn config_for(&self, user: &crate::User) -> Result<kube_client::Config, Error> {
        config_for(&self.kubeconfig_for(user)?).await
    }

    /// A kube-client `Config` that sends the bearer `token`.
    pub async fn config_with_token(&self, token: &str) -> Result<kube_client::Config, Error> {
        config_for(&self.kubeconfig_with_token(token)?).await
    }

    /// A client for this server that authenticates as `user` (see [`TestEnv::kubeconfig_for`]).
    pub async fn client_for(&self, user: &crate::User) -> Result<kube_client::Client, Error> {
        let config = self.config_for(user).await?;
        kube_client::Client::try_from(config).map_err(Error::Client)
    }

    /// A client for this server that sends the bearer `token`.
    pub async fn client_with_token(&self, token: &str) -> Result<kube_client::Client, Error> {
        let config = self.config_with_token(token).await?;
        kube_client::Client::try_from(config).map_err(Error::Client)
    }

    /// [`TestEnv::kubeconfig`] with its user's credentials replaced by `credentials`.
    fn kubeconfig_with(&self, credentials: serde_json::Value) -> Result<Kubeconfig, Error> {
        let mut doc = serde_json::to_value(&self.kubeconfig).map_err(Error::Kubeconfig)?;
        doc["users"] = serde_json::json!([{"name": "rein-testenv", "user": credentials}]);
        serde_json::from_value(doc).map_err(Error::Kubeconfig)
    }

    /// The server's base URL, e.g. `http://127.0.0.1:40123`.
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> Faults {
        self.state.faults.clone()
    }

    /// The requests answered so far, oldest first: the latest
    /// [`TestEnvBuilder::request_log_capacity`] of them (50,000 by default), each path and
    /// query cut to 2 KiB.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.state.log.lock().snapshot()
    }

    /// The requests received and not answered yet, oldest first, with where each waits: what
    /// a test prints when a client seems stuck, to tell a server that holds a request from a
    /// client that never sent it.
    pub fn requests_in_flight(&self) -> Vec<InFlightRequest> {
        self.state.in_flight.snapshot()
    }

    /// Forgets the requests recorded so far.
    pub fn clear_requests(&self) {
        self.state.log.lock().clear();
    }

    /// The latest resourceVersion the server has handed out.
    pub fn resource_version(&self) -> u64 {
        self.state.store.current_rv()
    }

    /// How many list and watch requests are waiting right now for a resourceVersion the server
    /// has not reached (see [`TestEnvBuilder::too_large_rv_wait`]); lets a test make the write
    /// such a request waits for only once it is waiting.
    pub fn requests_waiting_for_resource_version(&self) -> usize {
        self.state.store.rv_waiters()
    }

    /// Stops the server and waits for its thread to finish.
    pub async fn shutdown(mut self) {
        self.state.shutdown.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }

    /// Waits until the server is stopped (by [`TestEnv::shutdown`] from a clone of nothing:
    /// used by the binary, which stops on a signal).
    pub(crate) fn stop_token(&self) -> tokio_util::sync::CancellationToken {
        self.state.shutdown.clone()
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        self.state.shutdown.cancel();
    }
}

/// Builds a kube-client `Config` for a kubeconfig document.
pub(crate) async fn config_for(kubeconfig: &Kubeconfig) -> Result<kube_client::Config, Error> {
    kube_client::Config::from_custom_kubeconfig(
        kubeconfig.clone(),
        &kube_client::config::KubeConfigOptions::default(),
    )
    .await
    .map_err(Error::Config)
}

/// The binary's entry point lives here so it can use crate internals.
#[doc(hidden)]
pub async fn run_until_signal(env: TestEnv) {
    let stop = env.stop_token();
    wait_for_signal(&stop).await;
    env.shutdown().await;
}

async fn wait_for_signal(stop: &tokio_util::sync::CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            stop.cancelled().await;
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            () = stop.cancelled() => {}
        }
    }
    #[cfg(not(unix))]
    {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = stop.cancelled() => {}
        }
    }
}
