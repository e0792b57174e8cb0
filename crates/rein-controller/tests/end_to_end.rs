//! End-to-end tests against rein-testenv: sources, handlers, the builder, the finalizer helper,
//! the event recorder and the metrics, over real HTTP.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Event, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube_client::Api;
use kube_client::api::{DeleteParams, ListParams, PostParams};
use parking_lot::Mutex;
use rein_client::controllerutil::set_controller_reference;
use rein_controller::event::GenericEvent;
use rein_controller::finalizer::{FinalizerEvent, finalizer};
use rein_controller::handler::{EnqueueRequestForObject, Funcs};
use rein_controller::predicate::MetaFuncs;
use rein_controller::recorder::{
    CONTROLLER_ANNOTATION, EventRecorder, EventType, EventsApi, RECONCILE_ID_ANNOTATION,
    RecorderOptions,
};
use rein_controller::source::{Channel, Kind};
use rein_controller::{
    Action, BoxError, Controller, ControllerHost, ControllerManagedBy, ControllerOptions, Request,
    reconciler_fn,
};
use support::{TestHost, until};

type Log = Arc<Mutex<Vec<Request>>>;

fn recording() -> (Log, impl rein_controller::Reconciler) {
    let log: Log = Arc::default();
    let l = log.clone();
    let r = reconciler_fn(move |_ctx, req: Request| {
        let l = l.clone();
        async move {
            l.lock().push(req);
            Ok::<_, BoxError>(Action::done())
        }
    });
    (log, r)
}

fn count(log: &Log, req: &Request) -> usize {
    log.lock().iter().filter(|r| *r == req).count()
}

fn pod(name: &str, labels: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("nginx".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

#[tokio::test]
async fn pod_events_reach_the_reconciler() {
    let host = TestHost::start().await;
    let (log, r) = recording();
    let c = ControllerManagedBy::new(&host)
        .for_::<Pod>()
        .named("e2e-pods")
        .complete(r)
        .unwrap();
    assert_eq!(c.watch_count(), 1);
    let handles = host.run();
    let pods: Api<Pod> = Api::namespaced(host.kube(), "default");
    pods.create(&PostParams::default(), &pod("p1", &[("app", "a")]))
        .await
        .unwrap();
    let req = Request::new("default", "p1");
    until("the create reaches the reconciler", || {
        count(&log, &req) >= 1
    })
    .await;
    let before = count(&log, &req);
    pods.delete("p1", &DeleteParams::default()).await.unwrap();
    until("the delete reaches the reconciler", || {
        count(&log, &req) > before
    })
    .await;
    host.stop.cancel();
    for h in handles {
        h.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn owned_pod_events_enqueue_the_owner() {
    let host = TestHost::start().await;
    let (log, r) = recording();
    ControllerManagedBy::new(&host)
        .for_::<ReplicaSet>()
        .owns::<Pod>()
        .with_options(ControllerOptions {
            skip_name_validation: true,
            ..ControllerOptions::default()
        })
        .complete(r)
        .unwrap();
    let handles = host.run();
    let labels: BTreeMap<String, String> = [("app".to_owned(), "web".to_owned())].into();
    let rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some("rs1".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(0),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: pod("x", &[]).spec,
            }),
            ..ReplicaSetSpec::default()
        }),
        ..ReplicaSet::default()
    };
    let rs = Api::<ReplicaSet>::namespaced(host.kube(), "default")
        .create(&PostParams::default(), &rs)
        .await
        .unwrap();
    let owner = Request::new("default", "rs1");
    until("the replica set is reconciled", || count(&log, &owner) >= 1).await;
    let before = count(&log, &owner);

    let mut owned = pod("owned", &[("app", "web")]);
    set_controller_reference(&rs, &mut owned, &host.scheme()).unwrap();
    Api::<Pod>::namespaced(host.kube(), "default")
        .create(&PostParams::default(), &owned)
        .await
        .unwrap();
    until("the owned pod's event enqueues its owner", || {
        count(&log, &owner) > before
    })
    .await;
    assert_eq!(
        count(&log, &Request::new("default", "owned")),
        0,
        "the pod itself is not enqueued"
    );
    host.stop.cancel();
    for h in handles {
        h.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn funcs_handler_enqueues_a_fixed_request() {
    let host = TestHost::start().await;
    let (log, r) = recording();
    let c = Controller::new("e2e-configmaps", r, ControllerOptions::default()).unwrap();
    c.watch(
        Kind::<ConfigMap>::new(&host.cache()),
        Funcs::new().on_create(|_, q| q.add(Request::new("bbb", "abc"))),
        vec![],
    );
    host.add(Arc::new(c)).unwrap();
    let handles = host.run();
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("cm1".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(host.kube(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let fixed = Request::new("bbb", "abc");
    until("the fixed request is reconciled", || {
        count(&log, &fixed) >= 1
    })
    .await;
    assert!(log.lock().iter().all(|r| *r == fixed));
    host.stop.cancel();
    for h in handles {
        h.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn channel_source_with_a_generic_only_filter() {
    let host = TestHost::start().await;
    let (log, r) = recording();
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    ControllerManagedBy::new(&host)
        .named("e2e-channel")
        .watches_source(
            Channel::<Pod>::new(rx).buffer_size(1),
            EnqueueRequestForObject,
        )
        .with_event_filter(MetaFuncs::generic_only())
        .complete(r)
        .unwrap();
    let handles = host.run();
    for i in 0..3 {
        tx.send(GenericEvent::new(pod(&format!("tick-{i}"), &[])))
            .await
            .unwrap();
    }
    until("every generic event is reconciled", || {
        log.lock().len() >= 3
    })
    .await;
    host.stop.cancel();
    for h in handles {
        h.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn the_finalizer_helper_cleans_up_before_deletion() {
    let host = TestHost::start().await;
    let cleaned: Arc<Mutex<Vec<String>>> = Arc::default();
    let client = host.client();
    let c = cleaned.clone();
    let r = reconciler_fn(move |_ctx, req: Request| {
        let (client, c) = (client.clone(), c.clone());
        async move {
            let Some(cm) = rein_client::ignore_not_found(client.get::<ConfigMap>(&req.key).await)?
            else {
                return Ok(Action::done());
            };
            let action = finalizer(&client, "example.com/cleanup", cm, |event| async move {
                if let FinalizerEvent::Cleanup(cm) = event {
                    c.lock().push(cm.metadata.name.clone().unwrap_or_default());
                }
                Ok::<_, BoxError>(Action::done())
            })
            .await?;
            Ok::<_, BoxError>(action)
        }
    });
    ControllerManagedBy::new(&host)
        .for_::<ConfigMap>()
        .named("e2e-finalizer")
        .complete(r)
        .unwrap();
    let handles = host.run();
    let api = Api::<ConfigMap>::namespaced(host.kube(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("guarded".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    api.create(&PostParams::default(), &cm).await.unwrap();
    let mut has_finalizer = false;
    for _ in 0..1500 {
        let got = api.get("guarded").await.unwrap();
        if got
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "example.com/cleanup")
        {
            has_finalizer = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(has_finalizer, "the helper adds its finalizer");
    api.delete("guarded", &DeleteParams::default())
        .await
        .unwrap();
    until("cleanup ran", || {
        cleaned.lock().iter().any(|n| n == "guarded")
    })
    .await;
    let mut gone = false;
    for _ in 0..1500 {
        if api.get_opt("guarded").await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(gone, "the object is deleted once the finalizer is removed");
    host.stop.cancel();
    for h in handles {
        h.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn the_event_recorder_counts_repeats_and_rate_limits() {
    let host = TestHost::start().await;
    let options = RecorderOptions {
        api: EventsApi::Core,
        ..RecorderOptions::default()
    };
    let recorder = EventRecorder::new(host.kube(), "e2e-recorder", options);
    let mut target = pod("target", &[]);
    target.metadata.uid = Some("uid-target".into());
    for _ in 0..3 {
        recorder.normal(&target, "Synced", "synced successfully");
    }
    let mut spammed = pod("spammed", &[]);
    spammed.metadata.uid = Some("uid-spammed".into());
    for i in 0..30 {
        recorder.warning(&spammed, &format!("Reason{i}"), "something happened");
    }
    let mut marker = pod("marker", &[]);
    marker.metadata.uid = Some("uid-marker".into());
    recorder.normal(&marker, "Done", "marker");

    let events: Api<Event> = Api::namespaced(host.kube(), "default");
    let about = |list: &[Event], name: &str| -> Vec<Event> {
        list.iter()
            .filter(|e| e.involved_object.name.as_deref() == Some(name))
            .cloned()
            .collect()
    };
    let mut list = Vec::new();
    for _ in 0..1500 {
        list = events.list(&ListParams::default()).await.unwrap().items;
        if !about(&list, "marker").is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let synced = about(&list, "target");
    assert_eq!(synced.len(), 1, "identical events are counted on one Event");
    assert_eq!(synced[0].count, Some(3));
    assert_eq!(synced[0].type_.as_deref(), Some("Normal"));
    assert_eq!(
        about(&list, "spammed").len(),
        25,
        "the burst allows 25 events per object"
    );
}

/// With the default options the recorder finds events.k8s.io/v1 on the server and writes there
/// (client-go's `tools/events`); events recorded inside a reconcile carry its controller and id.
#[tokio::test]
async fn the_event_recorder_writes_events_k8s_io_with_the_reconcile_id() {
    use k8s_openapi::api::events::v1::Event as EventV1;

    let host = TestHost::start().await;
    let recorder = EventRecorder::new(host.kube(), "e2e-events", RecorderOptions::default());
    let ids: Arc<Mutex<Vec<u64>>> = Arc::default();
    let (rec, seen) = (recorder.clone(), ids.clone());
    let r = reconciler_fn(move |ctx, req: Request| {
        let (rec, seen) = (rec.clone(), seen.clone());
        async move {
            seen.lock().push(ctx.reconcile_id());
            let mut about = pod(&req.key.name, &[]);
            about.metadata.uid = Some(format!("uid-{}", req.key.name));
            rec.event_with_action(
                &about,
                EventType::Normal,
                "Reconciled",
                "Reconcile",
                "reconciled the pod",
            );
            Ok::<_, BoxError>(Action::done())
        }
    });
    let c = Controller::new("e2e-events-ctl", r, ControllerOptions::default()).unwrap();
    c.queue().add(Request::new("default", "watched"));
    host.add(Arc::new(c)).unwrap();
    let handles = host.run();
    until("the request is reconciled", || ids.lock().len() == 1).await;

    // The same event again, outside a reconcile: a repeat that keeps the event's annotations.
    let mut watched = pod("watched", &[]);
    watched.metadata.uid = Some("uid-watched".into());
    recorder.event_with_action(
        &watched,
        EventType::Normal,
        "Reconciled",
        "Reconcile",
        "reconciled the pod",
    );
    let mut outside = pod("outside", &[]);
    outside.metadata.uid = Some("uid-outside".into());
    for _ in 0..3 {
        recorder.warning(&outside, "Failed", "it failed");
    }
    let api: Api<EventV1> = Api::namespaced(host.kube(), "default");
    let mut list = Vec::new();
    for _ in 0..1500 {
        list = api.list(&ListParams::default()).await.unwrap().items;
        let series = list
            .iter()
            .find(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("outside"))
            .and_then(|e| e.series.as_ref().map(|s| s.count));
        let repeated = list
            .iter()
            .find(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("watched"))
            .and_then(|e| e.series.as_ref().map(|s| s.count));
        if series == Some(3) && repeated == Some(2) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let regarding = |name: &str| -> Vec<&EventV1> {
        list.iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .collect()
    };
    let reconciled = regarding("watched");
    assert_eq!(reconciled.len(), 1, "{list:#?}");
    let e = reconciled[0];
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(2));
    assert_eq!(e.note.as_deref(), Some("reconciled the pod"));
    assert_eq!(e.action.as_deref(), Some("Reconcile"));
    assert_eq!(e.reason.as_deref(), Some("Reconciled"));
    assert_eq!(e.reporting_controller.as_deref(), Some("e2e-events"));
    assert!(
        e.reporting_instance
            .as_deref()
            .is_some_and(|i| !i.is_empty())
    );
    assert!(e.event_time.is_some());
    let annotations = e.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations.get(CONTROLLER_ANNOTATION).map(String::as_str),
        Some("e2e-events-ctl")
    );
    assert_eq!(
        annotations.get(RECONCILE_ID_ANNOTATION),
        Some(&ids.lock()[0].to_string()),
        "the event carries the reconcile id of the reconcile's span"
    );

    let repeated = regarding("outside");
    assert_eq!(repeated.len(), 1, "identical events become one series");
    let e = repeated[0];
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(3));
    assert_eq!(
        e.action.as_deref(),
        Some("Failed"),
        "the reason doubles as the action"
    );
    assert!(
        e.metadata
            .annotations
            .as_ref()
            .is_none_or(|a| !a.contains_key(RECONCILE_ID_ANNOTATION)),
        "an event recorded outside a reconcile names none"
    );
    host.stop.cancel();
    for h in handles {
        h.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn controller_metrics_use_controller_runtime_names() {
    let host = TestHost::start().await;
    let (log, r) = recording();
    let c = Controller::new("e2e-metrics", r, ControllerOptions::default()).unwrap();
    c.queue().add(Request::new("default", "m"));
    host.add(Arc::new(c)).unwrap();
    let handles = host.run();
    until("the request is reconciled", || log.lock().len() == 1).await;
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &rein_client::metrics::registry().lock())
        .unwrap();
    for name in [
        "controller_runtime_reconcile_total{controller=\"e2e-metrics\",result=\"success\"} 1",
        "controller_runtime_reconcile_total{controller=\"e2e-metrics\",result=\"requeue_after\"} 0",
        "controller_runtime_reconcile_errors_total{controller=\"e2e-metrics\"} 0",
        "controller_runtime_max_concurrent_reconciles{controller=\"e2e-metrics\"} 1",
        "controller_runtime_reconcile_time_seconds_bucket",
        "workqueue_adds_total{name=\"e2e-metrics\",controller=\"e2e-metrics\"} 1",
    ] {
        assert!(text.contains(name), "missing {name} in\n{text}");
    }
    host.stop.cancel();
    for h in handles {
        h.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn the_builder_rejects_incomplete_controllers() {
    use rein_controller::BuildError;
    let host = TestHost::start().await;
    let (_, r) = recording();
    let err = ControllerManagedBy::new(&host)
        .for_::<Pod>()
        .for_::<Pod>()
        .complete(r)
        .unwrap_err();
    assert!(matches!(err, BuildError::ForCalledTwice));
    let (_, r) = recording();
    let err = ControllerManagedBy::new(&host)
        .owns::<Pod>()
        .named("x")
        .complete(r)
        .unwrap_err();
    assert!(matches!(err, BuildError::OwnsWithoutFor));
    let (_, r) = recording();
    let err = ControllerManagedBy::new(&host)
        .named("nothing")
        .complete(r)
        .unwrap_err();
    assert!(matches!(err, BuildError::NoWatches));
    let (_, r) = recording();
    let err = ControllerManagedBy::new(&host)
        .watches::<Pod>(EnqueueRequestForObject)
        .complete(r)
        .unwrap_err();
    assert!(matches!(err, BuildError::NoName));
    // The default name is the lowercase kind of the for_ type.
    let (_, r) = recording();
    let c = ControllerManagedBy::new(&host)
        .for_::<ConfigMap>()
        .with_options(ControllerOptions {
            skip_name_validation: true,
            ..ControllerOptions::default()
        })
        .complete(r)
        .unwrap();
    assert_eq!(c.name(), "configmap");
}

/// An async map function reads the cache to find what a Pod maps to: the ConfigMaps whose
/// `app` label matches the Pod's.
#[tokio::test]
async fn an_async_map_func_reading_the_cache_enqueues_what_it_finds() {
    use rein_client::ListOptions;
    use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;

    let host = TestHost::start().await;
    let (log, r) = recording();
    let client = host.client();
    let handler = EnqueueRequestsFromAsyncMapFunc::new(move |pod: Arc<Pod>| {
        let client = client.clone();
        async move {
            let Some(app) = pod.metadata.labels.as_ref().and_then(|l| l.get("app")) else {
                return Vec::new();
            };
            let options = ListOptions::default()
                .namespace("default")
                .matching_labels([("app", app.clone())]);
            match client.list::<ConfigMap>(&options).await {
                Ok(list) => list
                    .items
                    .iter()
                    .filter_map(|cm| cm.metadata.name.clone())
                    .map(|name| Request::new("default", name))
                    .collect(),
                Err(_) => Vec::new(),
            }
        }
    });
    ControllerManagedBy::new(&host)
        .named("e2e-async-map")
        .watches::<Pod>(handler)
        .complete(r)
        .unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(host.kube(), "default");
    for (name, app) in [("cfg-web", "web"), ("cfg-db", "db")] {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"app": app}}
        }))
        .unwrap();
        configmaps
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }
    let handles = host.run();
    let pods: Api<Pod> = Api::namespaced(host.kube(), "default");
    pods.create(&PostParams::default(), &pod("web-1", &[("app", "web")]))
        .await
        .unwrap();
    let web = Request::new("default", "cfg-web");
    until("the Pod maps to its ConfigMap", || count(&log, &web) >= 1).await;
    assert_eq!(count(&log, &Request::new("default", "cfg-db")), 0);
    host.stop.cancel();
    for h in handles {
        h.await.unwrap().unwrap();
    }
}

/// A ReplicaSet with no replicas, as the owner in builder tests.
fn replica_set(name: &str) -> ReplicaSet {
    let labels: BTreeMap<String, String> = [("app".to_owned(), name.to_owned())].into();
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(0),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: pod("x", &[]).spec,
            }),
            ..ReplicaSetSpec::default()
        }),
        ..ReplicaSet::default()
    }
}

#[tokio::test]
async fn the_builder_takes_dynamic_and_metadata_only_kinds() {
    use rein_client::PartialObjectMeta;
    use rein_scheme::GroupVersionKind;

    let host = TestHost::start().await;
    let client = host.client();
    let rs_mapping = client
        .rest_mapping(&GroupVersionKind::new("apps", "v1", "ReplicaSet"))
        .await
        .unwrap();
    let pod_mapping = client
        .rest_mapping(&GroupVersionKind::new("", "v1", "Pod"))
        .await
        .unwrap();
    let options = ControllerOptions {
        skip_name_validation: true,
        ..ControllerOptions::default()
    };
    let (dynamic_log, r) = recording();
    ControllerManagedBy::new(&host)
        .for_dynamic(&rs_mapping)
        .owns_dynamic(&pod_mapping)
        .named("dynamic")
        .with_options(options.clone())
        .complete(r)
        .unwrap();
    let (meta_log, r) = recording();
    ControllerManagedBy::new(&host)
        .for_::<PartialObjectMeta<ReplicaSet>>()
        .owns::<PartialObjectMeta<Pod>>()
        .named("metadata")
        .with_options(options)
        .complete(r)
        .unwrap();
    let handles = host.run();

    let rs = Api::<ReplicaSet>::namespaced(host.kube(), "default")
        .create(&PostParams::default(), &replica_set("rs1"))
        .await
        .unwrap();
    let owner = Request::new("default", "rs1");
    until("both controllers reconcile the replica set", || {
        count(&dynamic_log, &owner) >= 1 && count(&meta_log, &owner) >= 1
    })
    .await;
    let before = (count(&dynamic_log, &owner), count(&meta_log, &owner));

    let mut owned = pod("owned", &[("app", "rs1")]);
    set_controller_reference(&rs, &mut owned, &host.scheme()).unwrap();
    Api::<Pod>::namespaced(host.kube(), "default")
        .create(&PostParams::default(), &owned)
        .await
        .unwrap();
    until(
        "the owned pod enqueues its owner in both controllers",
        || count(&dynamic_log, &owner) > before.0 && count(&meta_log, &owner) > before.1,
    )
    .await;
    let pod_req = Request::new("default", "owned");
    assert_eq!(count(&dynamic_log, &pod_req), 0);
    assert_eq!(count(&meta_log, &pod_req), 0);

    // The metadata-only controller's Pods are cached without spec; no full Pod informer.
    let cache = host.cache();
    assert!(cache.existing_informer_for::<Pod>().is_none());
    let pods = cache
        .existing_informer_for::<PartialObjectMeta<Pod>>()
        .unwrap()
        .indexer()
        .list();
    assert_eq!(pods.len(), 1);
    assert!(
        serde_json::to_value(&*pods[0])
            .unwrap()
            .get("spec")
            .is_none()
    );
    host.stop.cancel();
    for h in handles {
        h.await.unwrap().unwrap();
    }
}
