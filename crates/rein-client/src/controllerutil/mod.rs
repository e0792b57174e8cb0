//! controller-runtime's `controllerutil`: owner and controller references, create-or-update
//! and create-or-patch, finalizers.

mod finalizer;
mod owner;
mod upsert;

pub use finalizer::{add_finalizer, contains_finalizer, remove_finalizer};
pub use owner::{
    ControllerReferenceOptions, has_controller_reference, has_owner_reference,
    remove_controller_reference, remove_owner_reference, set_controller_reference,
    set_controller_reference_with, set_owner_reference,
};
pub use upsert::{
    OperationResult, create_or_patch, create_or_update, try_create_or_patch, try_create_or_update,
};
