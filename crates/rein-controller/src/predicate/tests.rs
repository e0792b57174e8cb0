//! Unit tests for every predicate and the combinators.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::*;

fn pod(
    rv: &str,
    generation: i64,
    labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
) -> Arc<Pod> {
    let map = |kv: &[(&str, &str)]| {
        (!kv.is_empty()).then(|| {
            kv.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>()
        })
    };
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("ns".into()),
            resource_version: Some(rv.into()),
            generation: Some(generation),
            labels: map(labels),
            annotations: map(annotations),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    })
}

fn update(old: Arc<Pod>, new: Arc<Pod>) -> UpdateEvent<Pod> {
    UpdateEvent {
        object_old: old,
        object_new: new,
    }
}

fn create(p: Arc<Pod>) -> CreateEvent<Pod> {
    CreateEvent {
        object: p,
        is_in_initial_list: false,
    }
}

#[test]
fn resource_version_changed() {
    let p = ResourceVersionChanged;
    assert!(!Predicate::<Pod>::update(
        &p,
        &update(pod("1", 1, &[], &[]), pod("1", 1, &[], &[]))
    ));
    assert!(Predicate::<Pod>::update(
        &p,
        &update(pod("1", 1, &[], &[]), pod("2", 1, &[], &[]))
    ));
    assert!(Predicate::<Pod>::create(&p, &create(pod("1", 1, &[], &[]))));
}

#[test]
fn generation_changed() {
    let p = GenerationChanged;
    assert!(!Predicate::<Pod>::update(
        &p,
        &update(pod("1", 1, &[], &[]), pod("2", 1, &[], &[]))
    ));
    assert!(Predicate::<Pod>::update(
        &p,
        &update(pod("1", 1, &[], &[]), pod("2", 2, &[], &[]))
    ));
}

#[test]
fn label_and_annotation_changed_treat_missing_as_empty() {
    let l = LabelChanged;
    let a = AnnotationChanged;
    let plain = pod("1", 1, &[], &[]);
    let labelled = pod("2", 1, &[("app", "x")], &[]);
    let annotated = pod("2", 1, &[], &[("note", "y")]);
    assert!(!Predicate::<Pod>::update(
        &l,
        &update(plain.clone(), pod("2", 1, &[], &[]))
    ));
    assert!(Predicate::<Pod>::update(
        &l,
        &update(plain.clone(), labelled.clone())
    ));
    assert!(!Predicate::<Pod>::update(
        &l,
        &update(plain.clone(), annotated.clone())
    ));
    assert!(Predicate::<Pod>::update(
        &a,
        &update(plain.clone(), annotated)
    ));
    assert!(!Predicate::<Pod>::update(&a, &update(plain, labelled)));
}

#[test]
fn label_selector_predicate() {
    let selector = LabelSelector {
        match_labels: Some([("app".to_owned(), "web".to_owned())].into()),
        ..LabelSelector::default()
    };
    let p = LabelSelectorPredicate::new(&selector).unwrap();
    assert!(Predicate::<Pod>::create(
        &p,
        &create(pod("1", 1, &[("app", "web")], &[]))
    ));
    assert!(!Predicate::<Pod>::create(
        &p,
        &create(pod("1", 1, &[("app", "db")], &[]))
    ));
    assert!(!Predicate::<Pod>::update(
        &p,
        &update(pod("1", 1, &[("app", "web")], &[]), pod("2", 1, &[], &[]))
    ));
    let bad = LabelSelector {
        match_labels: Some([("bad key!".to_owned(), "v".to_owned())].into()),
        ..LabelSelector::default()
    };
    assert!(LabelSelectorPredicate::new(&bad).is_err());
}

#[test]
fn combinators_short_circuit_and_have_identities() {
    let yes: BoxPredicate<Pod> = Arc::new(Funcs::new());
    let no: BoxPredicate<Pod> = Arc::new(Funcs::new().on_create(|_| false));
    let e = create(pod("1", 1, &[], &[]));
    assert!(and::<Pod>(vec![]).create(&e));
    assert!(!or::<Pod>(vec![]).create(&e));
    assert!(!and(vec![yes.clone(), no.clone()]).create(&e));
    assert!(or(vec![no.clone(), yes.clone()]).create(&e));
    assert!(not(no.clone()).create(&e));
    assert!(!not(yes).create(&e));
    // Short circuit: the panicking predicate is never reached.
    let boom: BoxPredicate<Pod> = Arc::new(Funcs::new().on_create(|_| panic!("evaluated")));
    assert!(!and(vec![no.clone(), boom.clone()]).create(&e));
    let yes: BoxPredicate<Pod> = Arc::new(Funcs::new());
    assert!(or(vec![yes, boom]).create(&e));
}

#[test]
fn funcs_and_filter() {
    let only_generic = Funcs::<Pod>::new()
        .on_create(|_| false)
        .on_update(|_| false)
        .on_delete(|_| false);
    let p = pod("1", 1, &[("keep", "yes")], &[]);
    assert!(!only_generic.create(&create(p.clone())));
    assert!(only_generic.generic(&GenericEvent { object: p.clone() }));
    let f = filter(|p: &Pod| {
        p.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("keep"))
    });
    assert!(f.create(&create(p.clone())));
    assert!(f.delete(&DeleteEvent {
        object: p.clone(),
        delete_state_unknown: false
    }));
    assert!(!f.update(&update(p, pod("2", 1, &[], &[]))));
}
