//! The built-in resource types and their schemas, generated from k8s-openapi on first use.

use std::any::type_name;
use std::sync::OnceLock;

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::patch::Gvk;
use crate::patch::strategy::{self, ListKind};

/// One built-in resource: where it is served and which definition describes it.
#[derive(Debug, Clone)]
pub(super) struct BuiltinResource {
    pub(super) gvk: Gvk,
    pub(super) plural: &'static str,
    pub(super) namespaced: bool,
    /// The definition name, e.g. `io.k8s.api.core.v1.Pod`.
    pub(super) definition: String,
}

/// Every built-in resource and every definition they reference, with the `x-kubernetes-*`
/// extensions kube-apiserver publishes.
#[derive(Debug)]
pub(super) struct Builtins {
    pub(super) resources: Vec<BuiltinResource>,
    /// Definitions keyed by name; `$ref`s point at `#/definitions/<name>`.
    pub(super) definitions: Map<String, Value>,
}

/// The built-in schemas, built on first use (not at server start-up).
pub(super) fn builtins() -> &'static Builtins {
    static BUILTINS: OnceLock<Builtins> = OnceLock::new();
    BUILTINS.get_or_init(build)
}

fn build() -> Builtins {
    let mut generator = SchemaSettings::draft07()
        .with(|settings| {
            settings.meta_schema = None;
            settings.transforms.clear();
        })
        .into_generator();
    let resources = collect(&mut generator);
    let mut definitions = generator.take_definitions(false);
    for resource in &resources {
        if let Some(Value::Object(schema)) = definitions.get_mut(&resource.definition) {
            schema.insert(
                "x-kubernetes-group-version-kind".to_string(),
                json!([{
                    "group": resource.gvk.group,
                    "version": resource.gvk.version,
                    "kind": resource.gvk.kind,
                }]),
            );
        }
    }
    for (name, schema) in definitions.iter_mut() {
        add_list_extensions(name, schema);
    }
    Builtins {
        resources,
        definitions,
    }
}

/// Adds `x-kubernetes-patch-*` and `x-kubernetes-list-*` to the list properties of `schema`.
fn add_list_extensions(definition: &str, schema: &mut Value) {
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    for (property, property_schema) in properties.iter_mut() {
        let Value::Object(property_schema) = property_schema else {
            continue;
        };
        if property_schema.get("type").and_then(Value::as_str) != Some("array") {
            continue;
        }
        let extensions = match strategy::definition_list_kind(definition, property) {
            ListKind::Atomic => json!({"x-kubernetes-list-type": "atomic"}),
            ListKind::Set => json!({
                "x-kubernetes-list-type": "set",
                "x-kubernetes-patch-strategy": "merge",
            }),
            ListKind::Map {
                merge_key, keys, ..
            } => json!({
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": keys,
                "x-kubernetes-patch-merge-key": merge_key,
                "x-kubernetes-patch-strategy": "merge",
            }),
        };
        if let Value::Object(extensions) = extensions {
            property_schema.extend(extensions);
        }
    }
}

fn resource<K>(generator: &mut SchemaGenerator) -> BuiltinResource
where
    K: k8s_openapi::Resource + JsonSchema,
{
    generator.subschema_for::<K>();
    BuiltinResource {
        gvk: Gvk::new(K::GROUP, K::VERSION, K::KIND),
        plural: K::URL_PATH_SEGMENT,
        namespaced: type_name::<K::Scope>().ends_with("NamespaceResourceScope"),
        definition: K::schema_name().into_owned(),
    }
}

macro_rules! builtin_resources {
    ($($ty:path),* $(,)?) => {
        fn collect(generator: &mut SchemaGenerator) -> Vec<BuiltinResource> {
            vec![$(resource::<$ty>(generator)),*]
        }
    };
}

crate::resources::with_builtin_types!(builtin_resources);
