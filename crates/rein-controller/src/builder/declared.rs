//! What a controller's builder declared it works on — the kind it reconciles (`for_`), the
//! kinds it owns and watches — kept in its manager's [`ControllerNames`] so the manager can
//! say which API permissions its controllers need (controller-runtime users write these as
//! `+kubebuilder:rbac` markers by hand).

use rein_scheme::{Object, RestMapping};

use crate::ControllerNames;

/// How a builder named a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Declaration {
    /// `for_` / `for_dynamic`: the reconciled kind, which the controller reads, watches and
    /// updates (finalizers, status).
    Reconciles,
    /// `owns` / `owns_dynamic`: kinds it creates, updates and deletes for the reconciled one.
    Owns,
    /// `watches` / `watches_dynamic`: kinds it only reads and watches.
    Watches,
}

/// One kind a controller declared, with the resource the API serves it as.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeclaredKind {
    /// The controller's name.
    pub controller: String,
    /// How it named the kind.
    pub how: Declaration,
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource (the kind's plural, e.g. `configmaps`).
    pub resource: String,
}

impl DeclaredKind {
    pub(super) fn of<K: Object>(how: Declaration) -> DeclaredKind {
        DeclaredKind {
            controller: String::new(),
            how,
            group: K::group(&()).into_owned(),
            resource: K::plural(&()).into_owned(),
        }
    }

    pub(super) fn of_mapping(how: Declaration, mapping: &RestMapping) -> DeclaredKind {
        DeclaredKind {
            controller: String::new(),
            how,
            group: mapping.gvr.group.clone(),
            resource: mapping.gvr.resource.clone(),
        }
    }
}

impl ControllerNames {
    /// Records what controller `controller` declared (called by the builder's `complete`).
    pub(crate) fn declare(&self, controller: &str, kinds: Vec<DeclaredKind>) {
        let mut declared = self.declared.lock();
        declared.extend(kinds.into_iter().map(|mut k| {
            k.controller = controller.to_owned();
            k
        }));
    }

    /// Every kind the controllers built in this scope declared, in the order they were
    /// built. Kept after a controller is dropped: it is what the program sets up.
    pub fn declared_kinds(&self) -> Vec<DeclaredKind> {
        self.declared.lock().clone()
    }
}
