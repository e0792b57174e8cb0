//! Finalizer helpers: add, remove (every occurrence), contains.

use kube_client::Resource;

/// Adds `finalizer` if absent; returns whether the object changed.
pub fn add_finalizer<K: Resource>(obj: &mut K, finalizer: &str) -> bool {
    let finalizers = obj.meta_mut().finalizers.get_or_insert_with(Vec::new);
    if finalizers.iter().any(|f| f == finalizer) {
        return false;
    }
    finalizers.push(finalizer.to_owned());
    true
}

/// Removes every occurrence of `finalizer`; returns whether the object changed.
pub fn remove_finalizer<K: Resource>(obj: &mut K, finalizer: &str) -> bool {
    let Some(finalizers) = obj.meta_mut().finalizers.as_mut() else {
        return false;
    };
    let before = finalizers.len();
    finalizers.retain(|f| f != finalizer);
    before != finalizers.len()
}

/// Whether the object carries `finalizer`.
pub fn contains_finalizer<K: Resource>(obj: &K, finalizer: &str) -> bool {
    obj.meta()
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    #[test]
    fn add_remove_contains() {
        let mut cm = ConfigMap::default();
        assert!(!contains_finalizer(&cm, "a/b"));
        assert!(add_finalizer(&mut cm, "a/b"));
        assert!(!add_finalizer(&mut cm, "a/b"));
        assert!(contains_finalizer(&cm, "a/b"));
        cm.metadata.finalizers.as_mut().unwrap().push("a/b".into());
        assert!(remove_finalizer(&mut cm, "a/b"));
        assert!(!contains_finalizer(&cm, "a/b"));
        assert!(!remove_finalizer(&mut cm, "a/b"));
    }
}
