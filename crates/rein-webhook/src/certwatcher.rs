//! A serving certificate loaded from files and re-read when they change (controller-runtime's
//! `certwatcher`), so rotated certificates (cert-manager, projected secrets) are picked up
//! without a restart.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::error::Error;
use super::tls::{parse_certs, parse_key};

/// How often, at most, a handshake re-reads the files to look for a change.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);

struct State {
    current: Arc<CertifiedKey>,
    cert_pem: String,
    key_pem: String,
    checked: Instant,
}

/// Serves the certificate in `cert_path`/`key_path`, swapping in a new pair when the files'
/// contents change and both parse; a broken pair is logged and the previous one kept.
pub(crate) struct CertWatcher {
    cert_path: PathBuf,
    key_path: PathBuf,
    state: Mutex<State>,
}

impl fmt::Debug for CertWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertWatcher")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

impl CertWatcher {
    /// Loads the pair once; errors here are the caller's (the server does not start).
    pub(crate) fn load(cert_path: PathBuf, key_path: PathBuf) -> Result<Self, Error> {
        let (cert_pem, key_pem) = read_pair(&cert_path, &key_path)?;
        let current = certified_key(&cert_pem, &key_pem, &cert_path.display().to_string())?;
        Ok(Self {
            cert_path,
            key_path,
            state: Mutex::new(State {
                current,
                cert_pem,
                key_pem,
                checked: Instant::now(),
            }),
        })
    }

    fn refresh(&self, state: &mut State) {
        state.checked = Instant::now();
        let (cert_pem, key_pem) = match read_pair(&self.cert_path, &self.key_path) {
            Ok(pair) => pair,
            Err(err) => {
                tracing::warn!(error = %err, "re-reading the webhook certificate failed; keeping the current one");
                return;
            }
        };
        if cert_pem == state.cert_pem && key_pem == state.key_pem {
            return;
        }
        match certified_key(&cert_pem, &key_pem, &self.cert_path.display().to_string()) {
            Ok(current) => {
                tracing::info!(path = %self.cert_path.display(), "webhook certificate reloaded");
                *state = State {
                    current,
                    cert_pem,
                    key_pem,
                    checked: state.checked,
                };
            }
            // Half-written rotation: try again on a later handshake.
            Err(err) => {
                tracing::warn!(error = %err, "the new webhook certificate does not load; keeping the current one");
            }
        }
    }
}

impl ResolvesServerCert for CertWatcher {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let mut state = self.state.lock();
        if state.checked.elapsed() >= CHECK_INTERVAL {
            self.refresh(&mut state);
        }
        Some(state.current.clone())
    }
}

fn read_pair(cert_path: &PathBuf, key_path: &PathBuf) -> Result<(String, String), Error> {
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path).map_err(|source| Error::ReadFile {
            path: path.clone(),
            source,
        })
    };
    Ok((read(cert_path)?, read(key_path)?))
}

fn certified_key(cert_pem: &str, key_pem: &str, what: &str) -> Result<Arc<CertifiedKey>, Error> {
    let certs = parse_certs(cert_pem, what)?;
    let key = parse_key(key_pem, what)?;
    let provider = rustls::crypto::ring::default_provider();
    let certified = CertifiedKey::from_der(certs, key, &provider).map_err(Error::Tls)?;
    Ok(Arc::new(certified))
}
