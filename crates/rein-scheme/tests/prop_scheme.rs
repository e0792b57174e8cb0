//! Property tests of the Scheme's decoding of outside JSON (objects from a server or a file)
//! and of object-key parsing: no input panics, bad input is a typed error, and what decodes
//! carries the group/version/kind it was sent with.
//!
//! 256 cases per property by default; set `PROPTEST_CASES` for a longer run.

use proptest::prelude::*;
use rein_scheme::Error;
use rein_scheme::{GroupVersionKind, ObjectKey, Scheme};
use serde_json::{Value, json};

/// 256 cases unless `PROPTEST_CASES` says otherwise.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        any::<String>().prop_map(Value::String),
        "[a-z]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    prop::sample::select(vec![
                        "metadata",
                        "name",
                        "namespace",
                        "labels",
                        "spec",
                        "data",
                        "containers",
                        "replicas",
                        "resourceVersion",
                        "ownerReferences",
                    ])
                    .prop_map(str::to_string),
                    "[a-z]{1,6}",
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// (apiVersion, kind): built-ins the scheme knows, and kinds it does not.
fn type_meta() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        prop::sample::select(vec![
            ("v1", "Pod"),
            ("v1", "ConfigMap"),
            ("v1", "Namespace"),
            ("apps/v1", "Deployment"),
            ("coordination.k8s.io/v1", "Lease"),
            ("example.com/v1", "Widget"),
            ("v1", "NoSuchKind"),
            ("", ""),
            ("a/b/c", "Pod"),
        ])
        .prop_map(|(a, k)| (a.to_string(), k.to_string())),
        (any::<String>(), any::<String>()),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Arbitrary bytes: an object or `Error::Decode`/`MissingTypeMeta`, never a panic.
    #[test]
    fn decode_bytes_never_panics(bytes in prop_oneof![
        any::<Vec<u8>>(),
        any_json().prop_map(|v| serde_json::to_vec(&v).expect("serialises")),
    ]) {
        let scheme = Scheme::with_builtins();
        if let Err(err) = scheme.decode_bytes(&bytes) {
            prop_assert!(matches!(err, Error::Decode { .. } | Error::MissingTypeMeta), "{:?}", err);
        }
    }

    /// Objects with any type meta and any body: a decoded object of the kind it was sent as, or
    /// a typed error; registered kinds decode to their registered GVK.
    #[test]
    fn decode_keeps_the_type_it_was_sent_as(
        (api_version, kind) in type_meta(),
        metadata in any_json(),
        spec in any_json(),
        data in any_json(),
    ) {
        let scheme = Scheme::with_builtins();
        let object = json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": metadata, "spec": spec, "data": data,
        });
        let gvk = GroupVersionKind::from_api_version_kind(&api_version, kind.clone());
        match scheme.decode(object) {
            Ok(obj) => {
                if scheme.recognizes(&gvk) {
                    prop_assert_eq!(scheme.gvk_for_object(obj.as_ref()).ok(), Some(gvk));
                }
            }
            Err(err) => prop_assert!(matches!(err, Error::Decode { .. }), "{:?}", err),
        }
    }

    /// Object keys: any string parses or is a typed error, and what parses prints back to the
    /// same string.
    #[test]
    fn object_keys_parse_or_fail_typed_and_round_trip(input in prop_oneof![
        any::<String>(),
        "[a-z/]{0,8}",
    ]) {
        if let Ok(key) = input.parse::<ObjectKey>() {
            prop_assert_eq!(key.to_string(), input);
        }
    }

    /// Keys built from non-empty, slash-free parts round-trip through their string form.
    #[test]
    fn built_object_keys_round_trip(ns in "[a-z0-9-]{1,10}", name in "[a-z0-9.-]{1,10}", scoped in any::<bool>()) {
        let key = if scoped { ObjectKey::cluster_scoped(name) } else { ObjectKey::new(ns, name) };
        prop_assert_eq!(key.to_string().parse::<ObjectKey>(), Ok(key));
    }
}
