//! Deltas (what the queues carry) and deleted-object tombstones (what delete handlers receive).

use std::sync::Arc;

/// What kind of change a [`Delta`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// The object was added (watch `ADDED`).
    Added,
    /// The object was modified (watch `MODIFIED`).
    Updated,
    /// The object was deleted, or a relist found it missing.
    Deleted,
    /// A relist returned the object (DeltaFIFO with `emit_replaced`).
    Replaced,
    /// A periodic resync, or a relist without `emit_replaced`.
    Sync,
    /// RealFIFO: one atomic replacement of the whole contents.
    ReplacedAll,
    /// RealFIFO: one atomic resync of the whole contents.
    SyncAll,
    /// RealFIFO: a watch bookmark advancing the resource version.
    Bookmark,
}

/// An object a delete handler receives: the object itself, or a tombstone when the deletion was
/// discovered by a relist and the final state is unknown (client-go's `DeletedFinalStateUnknown`).
#[derive(Debug)]
pub enum DeletedObject<K> {
    /// The deleted object, as the watch reported it.
    Object(Arc<K>),
    /// The deletion was missed; `obj` is the last state the cache knew (possibly stale).
    Tombstone {
        /// The object's key.
        key: String,
        /// The last known state.
        obj: Arc<K>,
    },
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeletedObject::Object(o) => DeletedObject::Object(o.clone()),
            DeletedObject::Tombstone { key, obj } => DeletedObject::Tombstone {
                key: key.clone(),
                obj: obj.clone(),
            },
        }
    }
}

impl<K> DeletedObject<K> {
    /// The object, or the last known state for a tombstone.
    pub fn object(&self) -> &Arc<K> {
        match self {
            DeletedObject::Object(o) => o,
            DeletedObject::Tombstone { obj, .. } => obj,
        }
    }

    /// True for a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, DeletedObject::Tombstone { .. })
    }
}

/// The payload of a [`Delta`].
#[derive(Debug)]
pub enum DeltaObject<K> {
    /// One object (or a tombstone, for deletions found by relist).
    Object(DeletedObject<K>),
    /// The full new contents ([`DeltaType::ReplacedAll`]) and the list's resource version.
    List {
        /// Every listed object.
        objects: Vec<Arc<K>>,
        /// The list's resource version.
        resource_version: String,
    },
    /// No payload ([`DeltaType::SyncAll`]).
    None,
    /// A resource version ([`DeltaType::Bookmark`]).
    ResourceVersion(String),
}

impl<K> Clone for DeltaObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeltaObject::Object(o) => DeltaObject::Object(o.clone()),
            DeltaObject::List {
                objects,
                resource_version,
            } => DeltaObject::List {
                objects: objects.clone(),
                resource_version: resource_version.clone(),
            },
            DeltaObject::None => DeltaObject::None,
            DeltaObject::ResourceVersion(rv) => DeltaObject::ResourceVersion(rv.clone()),
        }
    }
}

/// One change to one object (or, for RealFIFO's atomic operations, to the whole set).
#[derive(Debug)]
pub struct Delta<K> {
    /// What happened.
    pub kind: DeltaType,
    /// To what.
    pub object: DeltaObject<K>,
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        Delta {
            kind: self.kind,
            object: self.object.clone(),
        }
    }
}

impl<K> Delta<K> {
    /// A delta carrying one object.
    pub fn object(kind: DeltaType, obj: Arc<K>) -> Self {
        Delta {
            kind,
            object: DeltaObject::Object(DeletedObject::Object(obj)),
        }
    }

    /// A `Deleted` delta carrying a tombstone.
    pub fn tombstone(key: String, obj: Arc<K>) -> Self {
        Delta {
            kind: DeltaType::Deleted,
            object: DeltaObject::Object(DeletedObject::Tombstone { key, obj }),
        }
    }

    /// The object (or tombstone) this delta carries, if it carries one.
    pub fn as_object(&self) -> Option<&DeletedObject<K>> {
        match &self.object {
            DeltaObject::Object(o) => Some(o),
            _ => None,
        }
    }

    /// True if the payload is a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self.as_object(), Some(DeletedObject::Tombstone { .. }))
    }
}
