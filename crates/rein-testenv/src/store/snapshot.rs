//! Consistent reads at an older resourceVersion, rebuilt by undoing later history events
//! (used by paging, which must list one snapshot across pages).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::watch::Expired;
use super::{EventType, ObjKey, Stored, Txn};
use crate::resources::ResKey;

impl Txn<'_> {
    /// Every object of `res` as it was at `rv` (in `namespace` when given), ordered by key.
    pub(crate) fn list_at(
        &self,
        res: &ResKey,
        namespace: Option<&str>,
        rv: u64,
    ) -> Result<Vec<Arc<Stored>>, Expired> {
        if rv >= self.rv() {
            return Ok(self.list_stored(res, namespace));
        }
        self.check_not_compacted(rv)?;
        let mut state: BTreeMap<ObjKey, Arc<Stored>> = self
            .list_stored(res, namespace)
            .into_iter()
            .map(|o| (o.key(), o))
            .collect();
        for event in self.inner.history.iter().rev() {
            if event.rv <= rv {
                break;
            }
            if &event.res != res {
                continue;
            }
            let key = event.object.key();
            if namespace.is_some_and(|ns| ns != key.0) {
                continue;
            }
            match (event.kind, &event.old) {
                (EventType::Added, _) => {
                    state.remove(&key);
                }
                (_, Some(old)) => {
                    state.insert(key, old.clone());
                }
                (_, None) => {}
            }
        }
        Ok(state.into_values().collect())
    }
}

/// The (namespace, name) of a stored object.
pub(crate) fn object_key(obj: &Value) -> ObjKey {
    let meta = obj.get("metadata");
    let field = |f: &str| {
        meta.and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (field("namespace"), field("name"))
}
