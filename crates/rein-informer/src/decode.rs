//! Decoding objects with `metadata.managedFields` skipped in the JSON itself, so a cache that
//! drops them never builds them.
//!
//! A realistic Pod's managedFields are about half its JSON, and decoded they are a tree of
//! small maps: building that tree only to drop it in a transform costs CPU and leaves the heap
//! fragmented by thousands of short-lived allocations per object. [`WithoutManagedFields`]
//! wraps the deserializer of any kind: at the top level it watches for the `metadata` key,
//! and inside `metadata` it passes over `managedFields` with `IgnoredAny` (no allocation);
//! every other key and value goes to the kind's own `Deserialize` untouched.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, MapAccess, Visitor,
};

/// `K` decoded without its `metadata.managedFields` (left `None`).
#[derive(Debug, Clone)]
pub struct WithoutManagedFields<K>(pub K);

impl<'de, K: de::Deserialize<'de>> de::Deserialize<'de> for WithoutManagedFields<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        K::deserialize(Level {
            inner: deserializer,
            depth: Depth::Object,
        })
        .map(WithoutManagedFields)
    }
}

/// Where in the object a wrapped deserializer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// The object itself: its `metadata` value is wrapped in turn.
    Object,
    /// The object's `metadata`: `managedFields` is skipped.
    Metadata,
}

/// A deserializer whose maps are filtered at `depth`; everything else is passed through.
struct Level<D> {
    inner: D,
    depth: Depth,
}

/// A visitor whose `visit_map` gets a filtering [`LevelMap`].
struct LevelVisitor<V> {
    inner: V,
    depth: Depth,
}

/// A map whose keys are looked at before the inner visitor sees them.
struct LevelMap<A> {
    inner: A,
    depth: Depth,
    /// The last key handed out was `metadata` (at the object's level).
    metadata_next: bool,
}

/// A value seed that wraps the value's deserializer at `depth`.
struct LevelSeed<S> {
    inner: S,
    depth: Depth,
}

macro_rules! forward_plain {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.inner.$method(visitor)
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Level<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_any(LevelVisitor {
            inner: visitor,
            depth: self.depth,
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_map(LevelVisitor {
            inner: visitor,
            depth: self.depth,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_struct(
            name,
            fields,
            LevelVisitor {
                inner: visitor,
                depth: self.depth,
            },
        )
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_option(LevelVisitor {
            inner: visitor,
            depth: self.depth,
        })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_newtype_struct(
            name,
            LevelVisitor {
                inner: visitor,
                depth: self.depth,
            },
        )
    }

    forward_plain! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32
        deserialize_f64 deserialize_char deserialize_str deserialize_string deserialize_bytes
        deserialize_byte_buf deserialize_unit deserialize_seq deserialize_identifier
        deserialize_ignored_any
    }

    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_i128(visitor)
    }

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_u128(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_tuple(len, visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_tuple_struct(name, len, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_enum(name, variants, visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty))*) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
                self.inner.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for LevelVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(LevelMap {
            inner: map,
            depth: self.depth,
            metadata_next: false,
        })
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(Level {
            inner: deserializer,
            depth: self.depth,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(Level {
            inner: deserializer,
            depth: self.depth,
        })
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        self.inner.visit_borrowed_str(v)
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
        self.inner.visit_borrowed_bytes(v)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_seq(seq)
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(data)
    }

    forward_visit! {
        visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64)
        visit_i128(i128) visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64)
        visit_u128(u128) visit_f32(f32) visit_f64(f64) visit_char(char) visit_str(&str)
        visit_string(String) visit_bytes(&[u8]) visit_byte_buf(Vec<u8>)
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for LevelMap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        loop {
            let Some(key) = self.inner.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            let name = key.as_str();
            match self.depth {
                Depth::Metadata if name == "managedFields" => {
                    self.inner.next_value::<IgnoredAny>()?;
                    continue;
                }
                Depth::Object => self.metadata_next = name == "metadata",
                Depth::Metadata => {}
            }
            return match key {
                Key::Borrowed(s) => seed
                    .deserialize(de::value::BorrowedStrDeserializer::new(s))
                    .map(Some),
                Key::Owned(s) => seed.deserialize(s.into_deserializer()).map(Some),
            };
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, Self::Error> {
        if std::mem::take(&mut self.metadata_next) {
            self.inner.next_value_seed(LevelSeed {
                inner: seed,
                depth: Depth::Metadata,
            })
        } else {
            self.inner.next_value_seed(seed)
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for LevelSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.inner.deserialize(Level {
            inner: deserializer,
            depth: self.depth,
        })
    }
}

/// A map key, borrowed from the input where the format allows it.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }

        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use kube_client::core::{DynamicObject, ObjectList, PartialObjectMeta, WatchEvent};
    use serde_json::json;

    use super::WithoutManagedFields;

    fn pod_json() -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "labels": {"app": "web", "managedFields": "a label, kept"},
                "managedFields": [{
                    "manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:phase": {}}}
                }],
                "resourceVersion": "7"
            },
            "spec": {"containers": [{"name": "app", "image": "app:1",
                "env": [{"name": "metadata", "value": "not the object's"}]}]},
            "status": {"phase": "Running"}
        })
    }

    #[test]
    fn a_pod_decodes_whole_but_for_its_managed_fields() {
        let text = pod_json().to_string();
        let stripped: WithoutManagedFields<Pod> = serde_json::from_str(&text).unwrap();
        let mut expected: Pod = serde_json::from_str(&text).unwrap();
        assert!(expected.metadata.managed_fields.is_some());
        expected.metadata.managed_fields = None;
        assert_eq!(stripped.0, expected);
        assert_eq!(
            stripped.0.metadata.labels.unwrap()["managedFields"],
            "a label, kept"
        );
    }

    #[test]
    fn watch_events_lists_and_other_shapes_skip_managed_fields_too() {
        let line = json!({"type": "MODIFIED", "object": pod_json()}).to_string();
        let event: WatchEvent<WithoutManagedFields<Pod>> = serde_json::from_str(&line).unwrap();
        let WatchEvent::Modified(pod) = event else {
            panic!("not a MODIFIED event");
        };
        assert_eq!(pod.0.metadata.managed_fields, None);
        assert_eq!(pod.0.metadata.resource_version.as_deref(), Some("7"));

        let list =
            json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "9"},
            "items": [pod_json(), pod_json()]})
            .to_string();
        let list: ObjectList<WithoutManagedFields<Pod>> = serde_json::from_str(&list).unwrap();
        assert_eq!(list.items.len(), 2);
        assert!(
            list.items
                .iter()
                .all(|p| p.0.metadata.managed_fields.is_none())
        );

        let text = pod_json().to_string();
        let meta: WithoutManagedFields<PartialObjectMeta<Pod>> =
            serde_json::from_str(&text).unwrap();
        assert_eq!(meta.0.metadata.managed_fields, None);
        assert_eq!(meta.0.metadata.name.as_deref(), Some("web"));
        let dynamic: WithoutManagedFields<DynamicObject> = serde_json::from_str(&text).unwrap();
        assert_eq!(dynamic.0.metadata.managed_fields, None);
        assert_eq!(dynamic.0.data["status"]["phase"], "Running");
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for text in [
            "[1, 2]",
            "{\"metadata\": 5}",
            "{\"metadata\": {\"managedFields\": ",
        ] {
            assert!(serde_json::from_str::<WithoutManagedFields<Pod>>(text).is_err());
        }
    }
}
