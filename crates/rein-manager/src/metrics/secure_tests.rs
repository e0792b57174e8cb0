//! Unit tests of the secure metrics server's review caches: bounded (a flood of distinct
//! bogus tokens over real HTTPS leaves the token cache at its capacity), refusals cached
//! (negative caching), and no answer reused past its lifetime (the paused clock).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::authentication::v1::UserInfo;
use rein_webhook::GeneratedCertificates;
use rustls::pki_types::ServerName;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::cache::{ReviewCache, key};
use super::secure::{AccessFilter, bounded};
use super::{
    ALLOW_CACHE_TTL, DECISION_CACHE_CAPACITY, DENY_CACHE_TTL, MetricsServer, MetricsServerOptions,
    SecureServing, TOKEN_CACHE_CAPACITY, TOKEN_CACHE_TTL,
};

/// The one token the fake API server accepts, for the user `scraper`.
const GOOD_TOKEN: &str = "the-scraper-token";

/// How many reviews of each kind the fake API server answered.
#[derive(Debug, Default)]
struct Reviews {
    tokens: AtomicUsize,
    decisions: AtomicUsize,
}

impl Reviews {
    fn tokens(&self) -> usize {
        self.tokens.load(Ordering::SeqCst)
    }

    fn decisions(&self) -> usize {
        self.decisions.load(Ordering::SeqCst)
    }
}

/// A client of a fake API server answering TokenReviews (only [`GOOD_TOKEN`] is
/// authenticated, as `scraper`) and SubjectAccessReviews (only `scraper` is allowed, and
/// only on `/metrics`), counting them.
fn review_client(reviews: Arc<Reviews>) -> kube_client::Client {
    type BoxError = Box<dyn std::error::Error + Send + Sync>;
    let service = tower::service_fn(move |req: http::Request<kube_client::client::Body>| {
        let reviews = reviews.clone();
        async move {
            let path = req.uri().path().to_string();
            let body = req.into_body().collect().await?.to_bytes();
            let mut review: serde_json::Value = serde_json::from_slice(&body)?;
            if path.ends_with("/tokenreviews") {
                reviews.tokens.fetch_add(1, Ordering::SeqCst);
                review["status"] = if review["spec"]["token"] == GOOD_TOKEN {
                    serde_json::json!({"authenticated": true, "user": {"username": "scraper"}})
                } else {
                    serde_json::json!({"authenticated": false, "error": "invalid token"})
                };
            } else if path.ends_with("/subjectaccessreviews") {
                reviews.decisions.fetch_add(1, Ordering::SeqCst);
                let allowed = review["spec"]["user"] == "scraper"
                    && review["spec"]["nonResourceAttributes"]["path"] == "/metrics";
                review["status"] = serde_json::json!({"allowed": allowed});
            } else {
                return Err::<http::Response<Full<Bytes>>, BoxError>(
                    format!("unexpected request to {path}").into(),
                );
            }
            Ok(http::Response::new(Full::new(Bytes::from(
                review.to_string(),
            ))))
        }
    });
    kube_client::Client::new(service, "default")
}

fn user(name: &str) -> UserInfo {
    UserInfo {
        username: Some(name.to_string()),
        ..UserInfo::default()
    }
}

#[test]
fn a_full_review_cache_drops_the_least_recently_used_entry() {
    let now = Instant::now();
    let ttl = Duration::from_secs(60);
    let mut cache = ReviewCache::new(3);
    for n in 0u8..3 {
        cache.insert(key(&[&[n]]), n, ttl, now);
    }
    // 0 is used again, so 1 is now the least recently used.
    assert_eq!(cache.get(&key(&[&[0]]), now), Some(0));
    for n in 3u8..100 {
        cache.insert(key(&[&[n]]), n, ttl, now);
        assert!(cache.len() <= 3);
        assert_eq!(cache.get(&key(&[&[0]]), now), Some(0), "kept while in use");
    }
    assert_eq!(cache.len(), 3);
    assert_eq!(cache.get(&key(&[&[1]]), now), None);
    assert_eq!(cache.get(&key(&[&[99]]), now), Some(99));
    // Replacing an entry does not evict another.
    cache.insert(key(&[&[99]]), 199, ttl, now);
    assert_eq!(cache.len(), 3);
    assert_eq!(cache.get(&key(&[&[99]]), now), Some(199));
    // Nothing is kept without room.
    let mut none = ReviewCache::new(0);
    none.insert(key(&[b"x"]), 1, ttl, now);
    assert_eq!(none.len(), 0);
}

#[test]
fn a_review_cache_never_returns_an_expired_entry_and_drops_expired_entries_first() {
    let start = Instant::now();
    let mut cache = ReviewCache::new(3);
    cache.insert(key(&[b"short"]), "short", Duration::from_secs(30), start);
    cache.insert(key(&[b"long"]), "long", Duration::from_secs(300), start);
    cache.insert(key(&[b"other"]), "other", Duration::from_secs(300), start);
    let later = start + Duration::from_secs(30);
    assert_eq!(cache.get(&key(&[b"short"]), later), None, "expired at 30 s");
    assert_eq!(cache.get(&key(&[b"long"]), later), Some("long"));
    cache.insert(key(&[b"short"]), "short", Duration::from_secs(30), start);
    // Full: the expired entry goes, not the least recently used live one.
    cache.insert(key(&[b"new"]), "new", Duration::from_secs(300), later);
    assert_eq!(cache.len(), 3);
    assert_eq!(cache.get(&key(&[b"other"]), later), Some("other"));
    assert_eq!(cache.get(&key(&[b"long"]), later), Some("long"));
    assert_eq!(cache.get(&key(&[b"new"]), later), Some("new"));
}

#[test]
fn review_cache_keys_tell_parts_apart() {
    assert_ne!(key(&[b"ab", b"c"]), key(&[b"a", b"bc"]));
    assert_ne!(key(&[b"token"]), key(&[b"token "]));
    assert_eq!(key(&[b"token"]), key(&[b"token"]));
}

#[test]
fn a_cached_refusal_message_is_cut_at_a_character_boundary() {
    assert_eq!(bounded("invalid token".to_string()), "invalid token");
    let long = format!("a{}", "é".repeat(500));
    let cut = bounded(long.clone());
    assert!(cut.len() <= 256 + '…'.len_utf8(), "{}", cut.len());
    assert!(cut.ends_with('…'));
    assert!(long.starts_with(cut.trim_end_matches('…')));
}

#[tokio::test(start_paused = true)]
async fn token_reviews_refusals_included_are_reused_for_the_token_ttl_and_not_after() {
    let reviews = Arc::new(Reviews::default());
    let filter = AccessFilter::new(review_client(reviews.clone()));

    assert!(filter.authenticate("bogus").await.is_err());
    assert_eq!(reviews.tokens(), 1);
    tokio::time::advance(TOKEN_CACHE_TTL - Duration::from_secs(1)).await;
    assert!(filter.authenticate("bogus").await.is_err());
    assert_eq!(reviews.tokens(), 1, "a refusal is cached");
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(filter.authenticate("bogus").await.is_err());
    assert_eq!(reviews.tokens(), 2, "an expired refusal is not reused");

    let scraper = filter.authenticate(GOOD_TOKEN).await.unwrap();
    assert_eq!(scraper.username.as_deref(), Some("scraper"));
    assert_eq!(reviews.tokens(), 3);
    tokio::time::advance(TOKEN_CACHE_TTL - Duration::from_secs(1)).await;
    filter.authenticate(GOOD_TOKEN).await.unwrap();
    assert_eq!(reviews.tokens(), 3, "an accepted token is cached");
    tokio::time::advance(Duration::from_secs(1)).await;
    filter.authenticate(GOOD_TOKEN).await.unwrap();
    assert_eq!(reviews.tokens(), 4, "an expired answer is not reused");
    // The refused token expired too and went when it was looked up.
    assert_eq!(filter.cached_tokens(), 2);
}

#[tokio::test(start_paused = true)]
async fn access_decisions_are_reused_for_their_ttl_and_not_after() {
    let reviews = Arc::new(Reviews::default());
    let filter = AccessFilter::new(review_client(reviews.clone()));
    let (scraper, intruder) = (user("scraper"), user("intruder"));

    assert!(filter.authorize(&scraper, "get", "/metrics").await.unwrap());
    assert!(
        !filter
            .authorize(&intruder, "get", "/metrics")
            .await
            .unwrap()
    );
    assert_eq!(reviews.decisions(), 2);
    tokio::time::advance(DENY_CACHE_TTL - Duration::from_secs(1)).await;
    assert!(
        !filter
            .authorize(&intruder, "get", "/metrics")
            .await
            .unwrap()
    );
    assert!(filter.authorize(&scraper, "get", "/metrics").await.unwrap());
    assert_eq!(reviews.decisions(), 2, "both cached");
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(
        !filter
            .authorize(&intruder, "get", "/metrics")
            .await
            .unwrap()
    );
    assert_eq!(reviews.decisions(), 3, "a denial expires after 30 s");
    assert!(filter.authorize(&scraper, "get", "/metrics").await.unwrap());
    assert_eq!(reviews.decisions(), 3, "an allowance outlives a denial");
    tokio::time::advance(ALLOW_CACHE_TTL - DENY_CACHE_TTL).await;
    assert!(filter.authorize(&scraper, "get", "/metrics").await.unwrap());
    assert_eq!(reviews.decisions(), 4, "an allowance expires after 5 min");
}

#[tokio::test]
async fn distinct_request_paths_leave_the_decision_cache_at_its_capacity() {
    let reviews = Arc::new(Reviews::default());
    let filter = AccessFilter::new(review_client(reviews.clone()));
    let scraper = user("scraper");
    for n in 0..DECISION_CACHE_CAPACITY + 50 {
        let path = format!("/metrics/{n}/{}", "x".repeat(1000));
        assert!(!filter.authorize(&scraper, "get", &path).await.unwrap());
    }
    assert_eq!(filter.cached_decisions(), DECISION_CACHE_CAPACITY);
    assert_eq!(reviews.decisions(), DECISION_CACHE_CAPACITY + 50);
}

/// One HTTP/1.1 connection over TLS to a secure metrics server, trusting `ca_pem`.
async fn connect(
    server: &MetricsServer,
    ca_pem: &str,
) -> hyper::client::conn::http1::SendRequest<Empty<Bytes>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

/// `GET /metrics` with `token` on `sender`'s connection: the status and body.
async fn scrape(
    sender: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    token: &str,
) -> (u16, String) {
    let request = http::Request::get("/metrics")
        .header("host", "localhost")
        .header("authorization", format!("Bearer {token}"))
        .body(Empty::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn a_flood_of_distinct_bogus_tokens_over_https_leaves_the_token_cache_at_its_capacity() {
    let reviews = Arc::new(Reviews::default());
    let certs = GeneratedCertificates::generate(&["localhost"]).unwrap();
    let server = Arc::new(
        MetricsServer::bind(MetricsServerOptions {
            bind_address: "127.0.0.1:0".parse().unwrap(),
            secure: Some(SecureServing {
                cert: Some(certs.cert_source()),
                client: Some(review_client(reviews.clone())),
                ..SecureServing::default()
            }),
            ..MetricsServerOptions::default()
        })
        .await
        .unwrap(),
    );
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (server, stop) = (server.clone(), stop.clone());
        async move { server.run(stop).await }
    });
    let filter = server.access_filter().expect("authorization is on").clone();
    let mut sender = connect(&server, &certs.ca_pem).await;

    // Long tokens, as an attacker would send: the cache keeps only their digests.
    let bogus = |n: usize| format!("bogus-{n}-{}", "t".repeat(2000));
    let flood = TOKEN_CACHE_CAPACITY + 100;
    for n in 0..flood {
        let (status, body) = scrape(&mut sender, &bogus(n)).await;
        assert_eq!((status, body.as_str()), (500, "Authentication failed\n"));
        assert!(filter.cached_tokens() <= TOKEN_CACHE_CAPACITY);
    }
    assert_eq!(filter.cached_tokens(), TOKEN_CACHE_CAPACITY);
    assert_eq!(reviews.tokens(), flood, "each new token is reviewed once");

    // The latest refusals are reused (negative caching); the oldest were evicted.
    assert_eq!(scrape(&mut sender, &bogus(flood - 1)).await.0, 500);
    assert_eq!(reviews.tokens(), flood);
    assert_eq!(scrape(&mut sender, &bogus(0)).await.0, 500);
    assert_eq!(reviews.tokens(), flood + 1);
    assert_eq!(filter.cached_tokens(), TOKEN_CACHE_CAPACITY);

    // The scraper still gets its metrics.
    let (status, body) = scrape(&mut sender, GOOD_TOKEN).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert_eq!(filter.cached_decisions(), 1);

    stop.cancel();
    drop(sender);
    task.await.unwrap().unwrap();
}
