//! Tests for the scheme: registration, lookups, construction, decoding, REST mapping.

use std::borrow::Cow;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube_core::{DynamicObject, ObjectMeta, Resource};
use serde::{Deserialize, Serialize};

use super::*;

/// A hand-written custom resource, as `#[derive(CustomResource)]` would generate.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct Widget {
    metadata: ObjectMeta,
    spec: WidgetSpec,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct WidgetSpec {
    size: u32,
}

impl Resource for Widget {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Widget".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "example.com".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "widgets".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[test]
fn empty_scheme_knows_nothing() {
    let scheme = Scheme::new();
    assert!(scheme.all_known_types().is_empty());
    assert!(matches!(
        scheme.gvk_for::<Pod>(),
        Err(Error::NotRegistered { .. })
    ));
    assert!(matches!(
        scheme.type_info(&GroupVersionKind::new("", "v1", "Pod")),
        Err(Error::UnknownKind { .. })
    ));
}

#[test]
fn one_group_registers_its_kinds() {
    let mut scheme = Scheme::new();
    builtins::core_v1::add_to_scheme(&mut scheme);
    assert_eq!(
        scheme.gvk_for::<Pod>().unwrap(),
        GroupVersionKind::new("", "v1", "Pod")
    );
    assert!(!scheme.is_registered::<Deployment>());
    assert!(
        scheme
            .all_known_types()
            .iter()
            .all(|t| t.gvk().group.is_empty())
    );
    let info = scheme.type_info_for::<Namespace>().unwrap();
    assert_eq!(info.scope(), Scope::Cluster);
    assert_eq!(info.plural(), "namespaces");
    assert!(info.type_name().ends_with("Namespace"));
}

#[test]
fn builtins_cover_every_group() {
    let scheme = Scheme::with_builtins();
    let all = scheme.all_known_types();
    assert!(all.len() >= 90, "{}", all.len());
    for (group, kind) in [
        ("apps", "Deployment"),
        ("batch", "CronJob"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("coordination.k8s.io", "Lease"),
        ("apiregistration.k8s.io", "APIService"),
    ] {
        assert!(
            all.iter()
                .any(|t| t.gvk().group == group && t.gvk().kind == kind),
            "{group}/{kind}"
        );
    }
    // Sorted.
    assert!(all.windows(2).all(|w| w[0].gvk() < w[1].gvk()));
}

#[test]
fn custom_types_register_and_map() {
    let mut scheme = Scheme::with_builtins();
    scheme.register::<Widget>();
    let gvk = scheme.gvk_for::<Widget>().unwrap();
    assert_eq!(gvk.to_string(), "example.com/v1, Kind=Widget");
    let mapping = scheme.rest_mapping(&gvk).unwrap();
    assert_eq!(mapping.gvr.resource, "widgets");
    assert!(mapping.is_namespaced());
    assert!(scheme.is_namespaced::<Widget>().unwrap());

    let obj = scheme.new_object(&gvk).unwrap();
    assert!(obj.as_any().is::<Widget>());
    let widget = downcast::<Widget>(obj).unwrap();
    assert_eq!(*widget, Widget::default());
}

#[test]
fn new_object_is_dynamic_for_unknown_kinds() {
    let scheme = Scheme::with_builtins();
    let gvk = GroupVersionKind::new("example.com", "v1", "Gadget");
    let obj = scheme.new_object(&gvk).unwrap();
    assert!(obj.as_any().is::<DynamicObject>());
    assert_eq!(scheme.gvk_for_object(obj.as_ref()).unwrap(), gvk);
    assert!(matches!(
        scheme.new_object(&GroupVersionKind::new("x", "", "")),
        Err(Error::IncompleteKind { .. })
    ));
    assert!(matches!(
        scheme.rest_mapping(&gvk),
        Err(Error::UnknownKind { .. })
    ));
}

#[test]
fn decode_picks_the_registered_type() {
    let scheme = Scheme::with_builtins();
    let pod = scheme
        .decode(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
        }))
        .unwrap();
    assert!(pod.as_any().is::<Pod>());
    assert_eq!(pod.meta().name.as_deref(), Some("p"));
    assert_eq!(scheme.gvk_for_object(pod.as_ref()).unwrap().kind, "Pod");

    let other = scheme
        .decode(serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g"}, "spec": {"x": 1},
        }))
        .unwrap();
    assert!(other.as_any().is::<DynamicObject>());
    assert_eq!(other.to_json().unwrap()["spec"]["x"], 1);
}

#[test]
fn bad_input_gives_typed_errors() {
    let scheme = Scheme::with_builtins();
    assert!(matches!(
        scheme.decode_bytes(b"{not json"),
        Err(Error::Decode { .. })
    ));
    assert!(matches!(
        scheme.decode(serde_json::json!({"metadata": {}})),
        Err(Error::MissingTypeMeta)
    ));
    assert!(matches!(
        scheme.decode(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod", "spec": {"containers": 5},
        })),
        Err(Error::Decode { .. })
    ));
    let msg = scheme.gvk_for::<Widget>().unwrap_err().to_string();
    assert!(
        msg.contains("Widget") && msg.contains("not registered"),
        "{msg}"
    );
}

#[test]
fn subresource_kinds_have_no_rest_mapping() {
    let scheme = Scheme::with_builtins();
    let gvk = scheme.gvk_for::<Scale>().unwrap();
    assert_eq!(scheme.type_info(&gvk).unwrap().scope(), Scope::Subresource);
    assert!(matches!(
        scheme.rest_mapping(&gvk),
        Err(Error::SubresourceOnly { .. })
    ));
}

#[test]
fn rest_mapper_grows() {
    let scheme = Scheme::with_builtins();
    let mapper = scheme.rest_mapper();
    let deploy = mapper
        .mapping(&GroupVersionKind::of::<Deployment>())
        .unwrap();
    assert_eq!(deploy.gvr, GroupVersionResource::of::<Deployment>());
    let gvk = GroupVersionKind::new("example.com", "v1", "Gadget");
    assert!(mapper.mapping(&gvk).is_err());
    let clone = mapper.clone();
    clone.add(RestMapping {
        gvk: gvk.clone(),
        gvr: GroupVersionResource::new("example.com", "v1", "gadgets"),
        scope: Scope::Cluster,
    });
    assert_eq!(mapper.mapping(&gvk).unwrap().gvr.resource, "gadgets");
    assert_eq!(
        mapper.kind_for(&GroupVersionResource::new("example.com", "v1", "gadgets")),
        Some(gvk)
    );
    assert_eq!(
        mapper
            .mapping(&GroupVersionKind::of::<Deployment>())
            .unwrap()
            .api_resource()
            .plural,
        "deployments"
    );
}

#[test]
fn registering_twice_is_idempotent_and_merge_copies() {
    let mut a = Scheme::new();
    a.register::<Widget>();
    // Merge keeps registrations; registering the same type twice under the same GVK is a no-op.
    a.register::<Widget>();
    assert_eq!(a.gvks_for::<Widget>().len(), 1);
    let mut b = Scheme::new();
    b.merge(&a);
    assert!(b.is_registered::<Widget>());
}

#[test]
fn types_without_default_register_with_a_constructor() {
    let mut scheme = Scheme::new();
    scheme.register_with_constructor(|| Widget {
        metadata: ObjectMeta::default(),
        spec: WidgetSpec { size: 7 },
    });
    let obj = scheme
        .new_object(&GroupVersionKind::new("example.com", "v1", "Widget"))
        .unwrap();
    assert_eq!(downcast::<Widget>(obj).unwrap().spec.size, 7);
}
