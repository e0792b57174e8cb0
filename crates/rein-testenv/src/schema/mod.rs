//! Structural schemas of custom resources: each CRD version's `openAPIV3Schema` compiled
//! once, then used on every custom-resource write to prune unknown fields, apply defaults,
//! validate values and run `x-kubernetes-validations` CEL rules, as apiextensions-apiserver
//! does; and the schema checks a CRD itself gets ([`crd_schema_causes`]).

mod cause;
mod compile;
mod convert;
mod crd;
mod default;
mod format;
mod library;
mod listtype;
mod node;
mod prune;
mod ratchet;
mod rules;
mod scale;
mod stack;
mod validate;

use std::collections::HashMap;

use regex::Regex;
use serde_json::Value;

use crate::resources::ScalePaths;

pub(crate) use cause::Cause;
pub(crate) use crd::{crd_schema_causes, crd_schema_causes_at};

use node::Node;

/// One CRD version's compiled schema.
#[derive(Debug)]
pub(crate) struct VersionSchema {
    root: Node,
    patterns: HashMap<String, Option<Regex>>,
    has_defaults: bool,
    has_rules: bool,
}

impl VersionSchema {
    /// Compiles `openAPIV3Schema` (never fails; see [`crd_schema_causes`] for the checks a
    /// CRD write makes).
    pub(crate) fn compile(schema: &Value) -> VersionSchema {
        // Rules compile on a large stack (see `stack`); a node tree is built either way.
        let compiled = stack::with_large_stack(|| {
            let mut patterns = HashMap::new();
            let root = Node::compile(schema, &mut patterns);
            (root, patterns)
        });
        let (root, patterns) = compiled.unwrap_or_else(|| {
            let mut patterns = HashMap::new();
            let root = Node::compile(&Value::Object(Default::default()), &mut patterns);
            (root, patterns)
        });
        let has_defaults = root.has_defaults();
        let has_rules = root.has_rules();
        VersionSchema {
            root,
            patterns,
            has_defaults,
            has_rules,
        }
    }

    /// Whether any node has a `default` (reads then need defaulting).
    pub(crate) fn has_defaults(&self) -> bool {
        self.has_defaults
    }

    /// Drops fields the schema does not know (keeping `apiVersion`, `kind` and the
    /// ObjectMeta fields of `metadata`); answers their paths (`spec.foo`) for
    /// `fieldValidation`.
    pub(crate) fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune(&self.root, obj)
    }

    /// Applies `default`s (and drops nulls the schema does not allow), as on decoding.
    pub(crate) fn default(&self, obj: &mut Value) {
        default::apply(&self.root, obj);
    }

    /// The validation causes for `obj` (schema, embedded resources, the scale subresource's
    /// fields, set and map lists, then CEL rules; `old` is the stored object on updates, for
    /// ratcheting and transition rules).
    pub(crate) fn validate(
        &self,
        obj: &Value,
        old: Option<&Value>,
        scale: Option<&ScalePaths>,
    ) -> Vec<Cause> {
        let mut causes = validate::validate(&self.root.raw, obj, &self.patterns);
        prune::check_embedded(&self.root, obj, "", &mut causes);
        if let Some(old) = old {
            causes.retain(|c| !ratchet::unchanged(c, obj, old));
        }
        if let Some(paths) = scale {
            causes.extend(scale::causes(paths, obj));
        }
        // Duplicate items of set and map lists; on update only when the stored object had
        // none (apiextensions-apiserver ratchets them as a whole).
        let duplicates = listtype::validate(&self.root, obj, "");
        if !duplicates.is_empty()
            && old.is_none_or(|old| listtype::validate(&self.root, old, "").is_empty())
        {
            causes.extend(duplicates);
        }
        // Type, enum, required, length and count failures block the CEL rules, as
        // apiextensions-apiserver's `hasBlockingErr` does (when the schema has rules).
        let blocking = causes.iter().any(|c| {
            matches!(
                c.reason,
                "FieldValueNotSupported"
                    | "FieldValueRequired"
                    | "FieldValueTooLong"
                    | "FieldValueTooMany"
                    | "FieldValueTypeInvalid"
            )
        });
        if blocking && self.has_rules {
            causes.push(Cause::invalid(
                "<nil>",
                &Value::Null,
                "some validation rules were not checked because the object was invalid; \
                 correct the existing errors to complete validation",
            ));
        } else if self.has_rules {
            let evaluated = stack::with_large_stack(|| {
                let mut found = Vec::new();
                rules::evaluate(&self.root, obj, old, "", &mut found);
                found
            });
            match evaluated {
                Some(found) => causes.extend(found),
                None => causes.push(Cause::internal(
                    "<nil>",
                    "the validation rules could not be evaluated",
                )),
            }
        }
        let mut seen = std::collections::HashSet::new();
        causes.retain(|c| seen.insert(c.to_error_string()));
        causes
    }
}

#[cfg(test)]
mod tests;
