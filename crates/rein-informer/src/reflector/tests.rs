//! Reflector behaviours that need its internal state set as client-go's tests set it, run
//! against rein-testenv over HTTP.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::PostParams;
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::{ApiListerWatcher, ListWatchOptions, RealFifo};

const PATH: &str = "/api/v1/namespaces/default/configmaps";

/// client-go `TestReflectorFullListIfTooLarge`: a relist from a resourceVersion the server
/// has not reached gets 504 Timeout with the `ResourceVersionTooLarge` cause; the reflector
/// then lists from the newest version (`""`) in the same cycle, and the cycle succeeds. Both
/// for a paged list and for a streaming list (whose ERROR event carries the same cause).
#[tokio::test]
async fn full_list_if_too_large() {
    for streaming in [false, true] {
        let env = TestEnv::builder()
            .too_large_rv_wait(Duration::from_millis(20))
            .start()
            .await
            .expect("testenv");
        let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("a".into());
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");

        // Without kube-client's own retries, which would retry the 504 itself.
        let mut config = env.config();
        config.default_retry = false;
        let client = kube_client::Client::try_from(config).expect("client");
        let lw = ApiListerWatcher::<ConfigMap>::new(
            client,
            ListWatchOptions {
                namespace: Some("default".into()),
                ..Default::default()
            },
        );
        let queue: Arc<dyn Fifo<ConfigMap>> = Arc::new(RealFifo::default());
        let reflector = Arc::new(Reflector::new(
            Arc::new(lw),
            queue.clone(),
            ReflectorOptions {
                use_watch_list: streaming,
                ..Default::default()
            },
        ));
        // As if synced against another server whose watch cache was further ahead.
        reflector.last_sync.set("1000000".into());
        let stop = CancellationToken::new();
        let cycle = {
            let reflector = reflector.clone();
            let stop = stop.clone();
            tokio::spawn(async move { reflector.list_and_watch(&stop).await })
        };
        tokio::time::timeout(Duration::from_secs(10), async {
            while reflector.status().phase != ReflectorPhase::Watching {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the reflector reaches its watch: {:?} {:?}",
                reflector.status(),
                env.requests()
            )
        });
        stop.cancel();
        cycle.await.expect("joined").expect("the cycle succeeds");

        let requested: Vec<(bool, Option<String>, u16)> = env
            .requests()
            .into_iter()
            .filter(|r| r.path == PATH && r.method == "GET")
            .map(|r| {
                let rv = r
                    .query
                    .as_deref()
                    .and_then(|q| form_urlencoded_value(q, "resourceVersion"));
                (r.is_watch(), rv, r.status)
            })
            .collect();
        let (first, second) = (&requested[0], &requested[1]);
        assert_eq!(first.1.as_deref(), Some("1000000"), "{requested:?}");
        if streaming {
            assert!(first.0 && first.2 == 200, "a streaming list: {requested:?}");
        } else {
            assert_eq!(first.2, 504, "{requested:?}");
        }
        assert_eq!(
            second.1.as_deref().unwrap_or_default(),
            "",
            "then from the newest version: {requested:?}"
        );
        assert_eq!(second.0, streaming, "{requested:?}");
        assert!(queue.has_synced() || !queue.is_empty());
        assert_ne!(
            reflector.last_sync_resource_version().as_deref(),
            Some("1000000")
        );
    }
}

fn form_urlencoded_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| v.to_owned())
    })
}
