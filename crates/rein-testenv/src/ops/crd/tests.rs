//! Unit tests of the CRD rules that need no server: validation paths and the naming decision.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{defaults, names, validate};

fn crd(plural: &str, kind: &str, short: &[&str]) -> Value {
    let mut crd = json!({
        "metadata": {"name": format!("{plural}.rein.example.com")},
        "spec": {
            "group": "rein.example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind, "shortNames": short},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}],
        },
    });
    defaults::apply(&mut crd);
    defaults::record_storage_version(&mut crd);
    crd
}

/// `crd` as stored once its names were accepted.
fn accepted(mut crd: Value) -> Arc<Value> {
    crd["status"]["acceptedNames"] = crd["spec"]["names"].clone();
    Arc::new(crd)
}

#[test]
fn a_valid_crd_has_no_causes() {
    assert_eq!(
        validate::create(&crd("gizmos", "Gizmo", &["gz"])),
        Vec::new()
    );
}

#[test]
fn versions_that_differ_are_reported_at_their_own_paths() {
    let mut two = crd("gizmos", "Gizmo", &[]);
    two["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object"}},
         "additionalPrinterColumns": [{"name": "A", "type": "text", "jsonPath": ".a"}]},
        {"name": "v2", "served": true, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}}},
    ]);
    let fields: Vec<String> = validate::create(&two)
        .into_iter()
        .map(|e| e.field)
        .collect();
    assert_eq!(
        fields,
        ["spec.versions[0].additionalPrinterColumns[0].type"]
    );
}

#[test]
fn names_held_by_another_crd_of_the_group_are_refused() {
    let holder = accepted(crd("gizmos", "Gizmo", &["gz"]));
    let fresh = names::decide(
        &crd("widgets", "Widget", &[]),
        std::slice::from_ref(&holder),
    );
    assert_eq!(fresh.names_accepted.0, "True");
    assert_eq!(fresh.established.0, "True");

    let clash = names::decide(
        &crd("gadgets", "Gadget", &["gz"]),
        std::slice::from_ref(&holder),
    );
    assert_eq!(clash.names_accepted.1, "ShortNamesConflict");
    assert_eq!(clash.names_accepted.2, "\"gz\" is already in use");
    assert_eq!(clash.established.1, "NotAccepted");
    assert_eq!(clash.accepted["plural"], "gadgets");
    assert!(clash.accepted.get("shortNames").is_none());

    // The same CRD is not its own rival, and other groups do not count.
    let itself = names::decide(&holder, std::slice::from_ref(&holder));
    assert_eq!(itself.names_accepted.0, "True");
    let mut elsewhere = (*holder).clone();
    elsewhere["spec"]["group"] = json!("other.example.com");
    elsewhere["metadata"]["name"] = json!("gizmos.other.example.com");
    let other_group = names::decide(&crd("gizmos", "Gizmo", &[]), &[Arc::new(elsewhere)]);
    assert_eq!(other_group.names_accepted.0, "True");
}
