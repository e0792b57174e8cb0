//! The fleet controller builder's typed errors.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use rein_controller::{Action, ControllerOptions};
use rein_multicluster::{
    Error, Fleet, FleetControllerBuilder, On, StaticProvider, cluster_reconciler_fn,
};

use crate::support::Hub;

fn noop() -> impl rein_multicluster::ClusterReconciler {
    cluster_reconciler_fn(|_ctx, _req| async { Ok::<_, std::convert::Infallible>(Action::done()) })
}

#[tokio::test]
async fn bad_controllers_are_typed_errors() {
    let hub = Hub::new().await;
    let fleet = Fleet::builder(&hub.mgr, StaticProvider::new())
        .build()
        .unwrap();
    let owns_first = FleetControllerBuilder::new(&fleet)
        .owns::<Pod>(On::members())
        .for_::<ConfigMap>(On::members())
        .complete(noop());
    assert!(
        matches!(owns_first, Err(Error::Build { .. })),
        "{owns_first:?}"
    );
    let no_source = FleetControllerBuilder::new(&fleet)
        .named("x")
        .complete(noop());
    assert!(
        matches!(no_source, Err(Error::Build { .. })),
        "{no_source:?}"
    );
    let bad_name = FleetControllerBuilder::new(&fleet)
        .named("no spaces")
        .for_::<ConfigMap>(On::members())
        .complete(noop());
    assert!(matches!(bad_name, Err(Error::InvalidControllerName { .. })));
    let shared = FleetControllerBuilder::new(&fleet)
        .for_::<ConfigMap>(On::members())
        .options(ControllerOptions {
            rate_limiter: Some(Arc::new(
                rein_workqueue::ExponentialFailureRateLimiter::new(
                    std::time::Duration::from_millis(5),
                    std::time::Duration::from_secs(1),
                ),
            )),
            ..ControllerOptions::default()
        })
        .complete(noop());
    assert!(matches!(shared, Err(Error::Build { .. })));
    FleetControllerBuilder::new(&fleet)
        .for_::<ConfigMap>(On::everywhere())
        .complete(noop())
        .expect("a good one");
    let taken = FleetControllerBuilder::new(&fleet)
        .for_::<ConfigMap>(On::hub())
        .complete(noop());
    assert!(
        matches!(taken, Err(Error::InvalidControllerName { .. })),
        "{taken:?}"
    );
}
