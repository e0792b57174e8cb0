//! Escalation prevention, as kube-apiserver's RBAC registry (the `policybased` storage of
//! roles, clusterroles, rolebindings and clusterrolebindings) applies it to every create and
//! update (patches and server-side applies included): a user may grant, through a Role or
//! ClusterRole, or through a binding, only permissions she already holds, unless she is in
//! `system:masters`, may `escalate` the role resource (Roles and ClusterRoles) or may `bind`
//! the role a binding names.
//!
//! kube-apiserver makes these checks with its RBAC authorizer. rein-testenv makes them only
//! when RBAC is enforced ([`TestEnvBuilder::enforce_rbac`]): without it every request is
//! authorized, every user in effect holds every permission, and no write is refused.
//!
//! [`TestEnvBuilder::enforce_rbac`]: crate::TestEnvBuilder::enforce_rbac

use std::collections::HashMap;

use serde_json::{Value, json};

use super::rules::{self, Part};
use super::{Attributes, RBAC_GROUP, aggregate_errors, authorize, quote, role_rules, visit_rules};
use crate::auth::{SYSTEM_MASTERS, UserInfo};
use crate::resources::ResourceDef;
use crate::status::ApiError;
use crate::store::Txn;

/// A write of an object, as its request addresses it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    /// Who writes.
    pub(crate) user: &'a UserInfo,
    /// The resource written.
    pub(crate) def: &'a ResourceDef,
    /// The namespace in the path (empty: none).
    pub(crate) namespace: &'a str,
    /// The name in the path (empty: a create, whose object names itself).
    pub(crate) name: &'a str,
}

/// The RBAC kinds whose writes are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

/// Beyond this many parts (one verb on one group, resource and name), the rules a write
/// grants are checked rule by rule, each against a single rule held, instead of part by part:
/// kube cuts them into every combination, which a hostile body of a few megabytes makes
/// billions of.
const MAX_PARTS: usize = 100_000;

/// Checks the write of `new` over `old` (none: a create, or an update that creates) as
/// kube-apiserver's policy-based RBAC storage does. Writes of other resources pass. The error
/// is kube's: 403 Forbidden when the write would grant what its user does not hold, or the
/// registry's error when a binding's role cannot be read.
pub(crate) fn check(
    txn: &Txn<'_>,
    req: &Request<'_>,
    old: Option<&Value>,
    new: &Value,
) -> Result<(), ApiError> {
    if req.def.group != RBAC_GROUP {
        return Ok(());
    }
    let kind = match req.def.plural.as_str() {
        "roles" => Kind::Role,
        "clusterroles" => Kind::ClusterRole,
        "rolebindings" => Kind::RoleBinding,
        "clusterrolebindings" => Kind::ClusterRoleBinding,
        _ => return Ok(()),
    };
    // `EscalationAllowed`: members of system:masters may grant anything.
    if req.user.groups.iter().any(|g| g == SYSTEM_MASTERS) {
        return Ok(());
    }
    // What kube-apiserver's handlers refuse before the storage is reached is left to the
    // write: a body that is no object, a name or namespace other than the path's.
    if !new.is_object() || contradicts_path(req, new) {
        return Ok(());
    }
    let plural = req.def.plural.as_str();
    let name = if req.name.is_empty() {
        text(new, "/metadata/name")
    } else {
        req.name
    };
    // `IsOnlyMutatingGCFields`: an update of nothing but what the garbage collector changes.
    let gc_only = old.is_some_and(|old| only_gc_fields(old, new));
    match kind {
        Kind::Role | Kind::ClusterRole => {
            // `RoleEscalationAuthorized`: the request's own resource, namespace and name.
            if gc_only
                || allowed(
                    txn,
                    req.user,
                    "escalate",
                    req.namespace,
                    RBAC_GROUP,
                    plural,
                    req.name,
                )
            {
                return Ok(());
            }
            let granted = array(new, "rules");
            confirm_no_escalation(txn, req.user, req.namespace, &granted)
                .map_err(|why| forbidden(plural, name, &why))?;
            // An aggregationRule can gather anything: setting, changing or dropping one takes
            // every permission there is.
            let aggregating = |obj: &Value| {
                obj.pointer("/aggregationRule/clusterRoleSelectors")
                    .and_then(Value::as_array)
                    .is_some_and(|s| !s.is_empty())
            };
            if kind == Kind::ClusterRole
                && (aggregating(new) || old.is_some_and(aggregating))
                && confirm_no_escalation(txn, req.user, "", &full_authority()).is_err()
            {
                return Err(forbidden(
                    plural,
                    name,
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
            Ok(())
        }
        Kind::RoleBinding | Kind::ClusterRoleBinding => {
            if gc_only {
                return Ok(());
            }
            let role_ref = defaulted_role_ref(new);
            // `BindingAuthorized`: `bind` on the role named, in the binding's namespace.
            let resource = match text(&role_ref, "/kind") {
                "Role" => Some("roles"),
                "ClusterRole" => Some("clusterroles"),
                _ => None,
            };
            if let Some(resource) = resource {
                let group = text(&role_ref, "/apiGroup");
                let role = text(&role_ref, "/name");
                if allowed(txn, req.user, "bind", req.namespace, group, resource, role) {
                    return Ok(());
                }
            }
            let granted =
                role_rules(txn, &role_ref, req.namespace).map_err(|e| e.to_api_error())?;
            confirm_no_escalation(txn, req.user, req.namespace, &granted)
                .map_err(|why| forbidden(plural, name, &why))
        }
    }
}

/// Whether `new` names another object than the path, or another namespace (for a create),
/// which kube-apiserver's handlers answer with 400 before the storage checks anything.
fn contradicts_path(req: &Request<'_>, new: &Value) -> bool {
    if req.name.is_empty() {
        let namespace = text(new, "/metadata/namespace");
        req.def.namespaced && !namespace.is_empty() && namespace != req.namespace
    } else {
        let name = text(new, "/metadata/name");
        !name.is_empty() && name != req.name
    }
}

/// Whether `user` may `verb` the `group` resource `resource` named `name` in `namespace`.
fn allowed(
    txn: &Txn<'_>,
    user: &UserInfo,
    verb: &str,
    namespace: &str,
    group: &str,
    resource: &str,
    name: &str,
) -> bool {
    let attrs = Attributes {
        user: user.clone(),
        verb: verb.to_string(),
        resource_request: true,
        namespace: namespace.to_string(),
        api_group: group.to_string(),
        api_version: "*".to_string(),
        resource: resource.to_string(),
        name: name.to_string(),
        ..Attributes::default()
    };
    authorize(txn, &attrs).allowed
}

/// kube's `ConfirmNoEscalation`: `Ok` when the rules `user` holds in `namespace`
/// (cluster-wide ones included) cover `granted`, else the reason, naming what is missing.
fn confirm_no_escalation(
    txn: &Txn<'_>,
    user: &UserInfo,
    namespace: &str,
    granted: &[Value],
) -> Result<(), String> {
    let mut held = Vec::new();
    let mut errors = Vec::new();
    visit_rules(txn, user, namespace, |_, rule, err| {
        if let Some(rule) = rule {
            held.push(rule.clone());
        }
        if let Some(err) = err {
            errors.push(err.to_api_error().message);
        }
        true
    });
    let parts = granted
        .iter()
        .map(rules::part_count)
        .fold(0, usize::saturating_add);
    let missing = if parts <= MAX_PARTS {
        let missing = rules::uncovered(&held, granted);
        if missing.is_empty() {
            return Ok(());
        }
        describe_parts(&missing)
    } else {
        let mut missing: Vec<String> = granted
            .iter()
            .filter(|rule| !held.iter().any(|h| rules::covers_whole(h, rule)))
            .map(describe_rule)
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        missing.sort();
        missing.dedup();
        missing
    };
    let mut message = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        quote(&user.name),
        go_strings(&user.groups.iter().map(String::as_str).collect::<Vec<_>>()),
        missing.join("\n")
    );
    if !errors.is_empty() {
        message.push_str(&format!(
            "; resolution errors: [{}]",
            aggregate_errors(&errors)
        ));
    }
    Err(message)
}

/// kube's `CompactRules` over the missing parts (those of one group, resource and name
/// merged, their verbs in order), each written by `CompactString`, sorted and without
/// duplicates (the `sets.String` kube collects them in).
fn describe_parts(parts: &[Part<'_>]) -> Vec<String> {
    type Key<'a> = (&'a str, &'a str, Option<&'a str>);
    let mut index: HashMap<Key<'_>, usize> = HashMap::new();
    let mut merged: Vec<(Key<'_>, Vec<&str>)> = Vec::new();
    let mut lines = Vec::new();
    for part in parts {
        match *part {
            Part::Url { url, verb } => lines.push(compact_string(&[], &[], &[url], &[], &[verb])),
            Part::Resource {
                group,
                resource,
                name,
                verb,
            } => {
                let key = (group, resource, name);
                match index.get(&key) {
                    Some(&i) => merged[i].1.push(verb),
                    None => {
                        index.insert(key, merged.len());
                        merged.push((key, vec![verb]));
                    }
                }
            }
        }
    }
    for ((group, resource, name), verbs) in merged {
        lines.push(compact_string(
            &[group],
            &[resource],
            &[],
            name.as_slice(),
            &verbs,
        ));
    }
    lines.sort();
    lines.dedup();
    lines
}

/// `CompactString` of a whole rule.
fn describe_rule(rule: &Value) -> String {
    let field = |name: &str| rules::list(rule, name);
    compact_string(
        &field("apiGroups"),
        &field("resources"),
        &field("nonResourceURLs"),
        &field("resourceNames"),
        &field("verbs"),
    )
}

/// kube's `CompactString` of a policy rule: its non-empty fields, in this order.
fn compact_string(
    groups: &[&str],
    resources: &[&str],
    urls: &[&str],
    names: &[&str],
    verbs: &[&str],
) -> String {
    let fields = [
        ("APIGroups", groups),
        ("Resources", resources),
        ("NonResourceURLs", urls),
        ("ResourceNames", names),
        ("Verbs", verbs),
    ];
    let parts: Vec<String> = fields
        .iter()
        .filter(|(_, values)| !values.is_empty())
        .map(|(label, values)| format!("{label}:{}", go_strings(values)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn go_strings(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| quote(v)).collect();
    format!("[{}]", quoted.join(" "))
}

/// `*` on everything: what setting an aggregationRule takes.
fn full_authority() -> Vec<Value> {
    vec![
        json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
        json!({"verbs": ["*"], "nonResourceURLs": ["*"]}),
    ]
}

/// 403 Forbidden as kube's `NewForbidden` words it for the RBAC resource `plural`.
fn forbidden(plural: &str, name: &str, why: &str) -> ApiError {
    let qualified = format!("{plural}.{RBAC_GROUP}");
    let message = if name.is_empty() {
        format!("{qualified} is forbidden: {why}")
    } else {
        format!("{qualified} {} is forbidden: {why}", quote(name))
    };
    let mut details = json!({"group": RBAC_GROUP, "kind": plural});
    if !name.is_empty() {
        details["name"] = json!(name);
    }
    ApiError::forbidden(message).with_details(details)
}

/// A binding's `roleRef`, with the `apiGroup` rbac/v1 defaults it to.
fn defaulted_role_ref(binding: &Value) -> Value {
    let mut role_ref = binding.get("roleRef").cloned().unwrap_or_else(|| json!({}));
    if text(&role_ref, "/apiGroup").is_empty() && role_ref.is_object() {
        role_ref["apiGroup"] = json!(RBAC_GROUP);
    }
    role_ref
}

/// The metadata kube's `IsOnlyMutatingGCFields` lets an update change.
const GC_FIELDS: [&str; 4] = ["ownerReferences", "finalizers", "selfLink", "managedFields"];

/// kube's `IsOnlyMutatingGCFields`: whether `new` is `old` but for the garbage collector's
/// fields, compared as Go compares the decoded objects (defaults applied; absent, `null` and
/// empty alike).
fn only_gc_fields(old: &Value, new: &Value) -> bool {
    let comparable = |obj: &Value| {
        let mut obj = obj.clone();
        if let Some(map) = obj.as_object_mut() {
            map.remove("apiVersion");
            map.remove("kind");
            if let Some(Value::Object(meta)) = map.get_mut("metadata") {
                for field in GC_FIELDS {
                    meta.remove(field);
                }
            }
            if let Some(role_ref) = map.get("roleRef").cloned() {
                let defaulted = defaulted_role_ref(&json!({ "roleRef": role_ref }));
                map.insert("roleRef".into(), defaulted);
            }
            for subject in map
                .get_mut("subjects")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                let kind = subject.get("kind").and_then(Value::as_str);
                if matches!(kind, Some("User" | "Group"))
                    && text(subject, "/apiGroup").is_empty()
                    && subject.is_object()
                {
                    subject["apiGroup"] = json!(RBAC_GROUP);
                }
            }
        }
        prune_empty(&mut obj);
        obj
    };
    comparable(old) == comparable(new)
}

/// Drops, at every depth, the fields holding `null`, `""`, `[]` or `{}` (Go's zero values,
/// which decode and compare as absent ones do).
fn prune_empty(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for v in map.values_mut() {
                prune_empty(v);
            }
            map.retain(|_, v| !is_empty(v));
        }
        Value::Array(items) => items.iter_mut().for_each(prune_empty),
        _ => {}
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// The string at `pointer` (empty when absent or not a string).
fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The array `field` of `obj` (empty when absent or not an array).
fn array(obj: &Value, field: &str) -> Vec<Value> {
    obj.get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;
    use crate::rbac::rbac_key;
    use crate::resources::Catalogue;
    use crate::store::Store;

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            ..UserInfo::default()
        }
    }

    fn def(plural: &str) -> Arc<ResourceDef> {
        Catalogue::new()
            .lookup(RBAC_GROUP, "v1", plural)
            .expect("an RBAC resource")
    }

    /// A store holding `roles` (namespaced in `default` when they are Roles) and a binding of
    /// each to alice.
    fn store(roles: &[Value]) -> Store {
        let store = Store::new(100);
        let mut txn = store.lock();
        for role in roles {
            let name = role["metadata"]["name"].as_str().unwrap().to_string();
            let (plural, ns, binding) = match role["kind"].as_str() {
                Some("Role") => ("roles", "default", "rolebindings"),
                _ => ("clusterroles", "", "clusterrolebindings"),
            };
            txn.insert(&rbac_key(plural), (ns.into(), name.clone()), role.clone());
            let mut meta = json!({"name": name});
            if !ns.is_empty() {
                meta["namespace"] = json!(ns);
            }
            txn.insert(
                &rbac_key(binding),
                (ns.into(), name.clone()),
                json!({"metadata": meta, "subjects": [{"kind": "User", "name": "alice"}],
                       "roleRef": {"kind": role["kind"], "name": name,
                                   "apiGroup": RBAC_GROUP}}),
            );
        }
        drop(txn);
        store
    }

    fn role(kind: &str, name: &str, rules: Value) -> Value {
        json!({"kind": kind, "metadata": {"name": name}, "rules": rules})
    }

    fn write(
        store: &Store,
        plural: &str,
        namespace: &str,
        name: &str,
        old: Option<&Value>,
        new: &Value,
    ) -> Result<(), ApiError> {
        let user = alice();
        let def = def(plural);
        let req = Request {
            user: &user,
            def: &def,
            namespace,
            name,
        };
        check(&store.lock(), &req, old, new)
    }

    #[test]
    fn rbac_escalation_names_the_missing_parts_as_kube_does() {
        let store = store(&[role(
            "Role",
            "pods",
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]),
        )]);
        let new = role(
            "Role",
            "wider",
            json!([
                {"apiGroups": [""], "resources": ["pods", "secrets"],
                 "verbs": ["get", "list", "delete"]},
                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"],
                 "resourceNames": ["a", "b"]},
                {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            ]),
        );
        let err = write(&store, "roles", "default", "", None, &new).expect_err("403");
        assert_eq!((err.code, err.reason), (403, "Forbidden"));
        assert_eq!(
            err.message,
            "roles.rbac.authorization.k8s.io \"wider\" is forbidden: user \"alice\" \
             (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC \
             permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\" \"delete\"]}\n\
             {APIGroups:[\"apps\"], Resources:[\"deployments\"], ResourceNames:[\"a\"], \
             Verbs:[\"get\"]}\n\
             {APIGroups:[\"apps\"], Resources:[\"deployments\"], ResourceNames:[\"b\"], \
             Verbs:[\"get\"]}\n\
             {NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}"
        );
        assert_eq!(
            err.details,
            Some(json!({"group": RBAC_GROUP, "kind": "roles", "name": "wider"}))
        );
        // What she holds she may grant; in another namespace she holds nothing.
        let held = role(
            "Role",
            "same",
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]),
        );
        write(&store, "roles", "default", "", None, &held).expect("covered");
        let err = write(&store, "roles", "other", "", None, &held).expect_err("403");
        assert_eq!(err.code, 403);
        // A generated name is not known yet: kube names no object.
        let generated = json!({"metadata": {"generateName": "x-"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]});
        let err = write(&store, "roles", "default", "", None, &generated).expect_err("403");
        assert!(
            err.message
                .starts_with("roles.rbac.authorization.k8s.io is forbidden: user \"alice\""),
            "{}",
            err.message
        );
        assert_eq!(
            err.details,
            Some(json!({"group": RBAC_GROUP, "kind": "roles"}))
        );
    }

    #[test]
    fn rbac_escalation_covers_wildcards_subresources_and_urls() {
        let store = store(&[role(
            "ClusterRole",
            "broad",
            json!([
                {"apiGroups": ["*"], "resources": ["*/status", "configmaps"], "verbs": ["*"]},
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                 "resourceNames": ["s1", "s2"]},
                {"nonResourceURLs": ["/debug/*"], "verbs": ["get"]},
            ]),
        )]);
        let ok = role(
            "ClusterRole",
            "narrow",
            json!([
                {"apiGroups": ["apps", ""], "resources": ["deployments/status", "configmaps"],
                 "verbs": ["update", "patch"]},
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                 "resourceNames": ["s2"]},
                {"nonResourceURLs": ["/debug/pprof"], "verbs": ["get"]},
            ]),
        );
        write(&store, "clusterroles", "", "", None, &ok).expect("covered");
        for rules in [
            json!([{"apiGroups": [""], "resources": ["deployments"], "verbs": ["get"]}]),
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                    "resourceNames": ["s3"]}]),
            json!([{"nonResourceURLs": ["/debug"], "verbs": ["get"]}]),
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get"]}]),
        ] {
            let new = role("ClusterRole", "x", rules.clone());
            let err = write(&store, "clusterroles", "", "", None, &new).expect_err("403");
            assert_eq!(err.code, 403, "{rules}");
        }
    }

    #[test]
    fn rbac_escalation_is_skipped_for_escalate_bind_masters_and_gc_fields() {
        let store = store(&[
            role(
                "ClusterRole",
                "escalator",
                json!([{"apiGroups": [RBAC_GROUP], "resources": ["roles"],
                        "verbs": ["escalate"]}]),
            ),
            role(
                "ClusterRole",
                "binder",
                json!([{"apiGroups": [RBAC_GROUP], "resources": ["clusterroles"],
                        "verbs": ["bind"], "resourceNames": ["cluster-admin"]}]),
            ),
        ]);
        let everything = role(
            "Role",
            "all",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
        );
        write(&store, "roles", "default", "", None, &everything).expect("escalate");
        // `escalate` on roles is not on clusterroles.
        let cluster = role("ClusterRole", "all", everything["rules"].clone());
        assert_eq!(
            write(&store, "clusterroles", "", "", None, &cluster)
                .expect_err("403")
                .code,
            403
        );
        let binding = |role: &str| {
            json!({"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "alice"}],
                   "roleRef": {"kind": "ClusterRole", "name": role}})
        };
        write(
            &store,
            "clusterrolebindings",
            "",
            "",
            None,
            &binding("cluster-admin"),
        )
        .expect("bind, the roleRef's apiGroup defaulted");
        // A role she may not bind is checked: a missing one is the registry's 404.
        let err = write(
            &store,
            "clusterrolebindings",
            "",
            "",
            None,
            &binding("ghost"),
        )
        .expect_err("404");
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                404,
                "clusterroles.rbac.authorization.k8s.io \"ghost\" not found"
            )
        );
        let err = write(
            &store,
            "rolebindings",
            "default",
            "",
            None,
            &json!({"metadata": {"name": "b"}, "roleRef": {"kind": "Group", "name": "x"}}),
        )
        .expect_err("500");
        assert_eq!(
            (err.code, err.message.as_str()),
            (500, "unsupported role reference kind: \"Group\"")
        );

        // system:masters may write anything.
        let masters = UserInfo {
            name: "root".into(),
            groups: vec![SYSTEM_MASTERS.into()],
            ..UserInfo::default()
        };
        let def = def("clusterroles");
        let req = Request {
            user: &masters,
            def: &def,
            namespace: "",
            name: "",
        };
        check(&store.lock(), &req, None, &cluster).expect("system:masters");

        // An update of the garbage collector's fields only is not checked; any other is.
        let old = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "all", "uid": "u", "resourceVersion": "5",
                         "managedFields": [{"manager": "a"}]},
            "rules": cluster["rules"]});
        let mut gc = old.clone();
        gc["metadata"]["finalizers"] = json!(["example.com/keep"]);
        gc["metadata"]["ownerReferences"] = json!([{"name": "o"}]);
        gc["metadata"]["managedFields"] = json!([]);
        gc["metadata"]["annotations"] = json!({});
        write(&store, "clusterroles", "", "all", Some(&old), &gc).expect("GC fields only");
        let mut labelled = gc.clone();
        labelled["metadata"]["labels"] = json!({"a": "b"});
        let err = write(&store, "clusterroles", "", "all", Some(&old), &labelled).expect_err("403");
        assert_eq!(err.code, 403);
        // A name other than the path's is left to the update, which answers 400.
        let mut renamed = labelled.clone();
        renamed["metadata"]["name"] = json!("other");
        write(&store, "clusterroles", "", "all", Some(&old), &renamed).expect("left to the write");
    }

    #[test]
    fn rbac_escalation_guards_aggregation_rules() {
        // Much, but not `escalate` (which `*` verbs would include).
        let store = store(&[role(
            "ClusterRole",
            "most",
            json!([{"apiGroups": ["*"], "resources": ["*"],
                    "verbs": ["get", "list", "create", "update"]}]),
        )]);
        let aggregated = json!({"metadata": {"name": "agg"}, "aggregationRule":
            {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}});
        let err = write(&store, "clusterroles", "", "", None, &aggregated).expect_err("403");
        assert_eq!(
            err.message,
            "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have \
             cluster-admin privileges to use the aggregationRule"
        );
        // Dropping one takes the same.
        let plain = json!({"metadata": {"name": "agg"}, "rules": []});
        let err =
            write(&store, "clusterroles", "", "agg", Some(&aggregated), &plain).expect_err("403");
        assert_eq!(err.code, 403);
        let empty = json!({"metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": []}});
        write(&store, "clusterroles", "", "", None, &empty).expect("selects nothing");
    }

    #[test]
    fn rbac_escalation_resolution_errors_follow_the_missing_rules() {
        let store = store(&[]);
        let mut txn = store.lock();
        txn.insert(
            &rbac_key("clusterrolebindings"),
            (String::new(), "dangling".into()),
            json!({"metadata": {"name": "dangling"},
                   "subjects": [{"kind": "Group", "name": "dev"}],
                   "roleRef": {"kind": "ClusterRole", "name": "gone", "apiGroup": RBAC_GROUP}}),
        );
        drop(txn);
        let new = role(
            "ClusterRole",
            "x",
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
        );
        let err = write(&store, "clusterroles", "", "", None, &new).expect_err("403");
        assert!(
            err.message.ends_with(
                "not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], \
                 Verbs:[\"get\"]}; resolution errors: [clusterroles.rbac.authorization.k8s.io \
                 \"gone\" not found]"
            ),
            "{}",
            err.message
        );
    }

    #[test]
    fn rbac_escalation_decides_hostile_rule_products_rule_by_rule() {
        let many =
            |prefix: &str| -> Vec<String> { (0..1000).map(|i| format!("{prefix}{i}")).collect() };
        let hostile = role(
            "ClusterRole",
            "huge",
            json!([{"apiGroups": many("g"), "resources": many("r"), "verbs": many("v")}]),
        );
        let admin = store(&[role(
            "ClusterRole",
            "admin-ish",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
        )]);
        let started = std::time::Instant::now();
        write(&admin, "clusterroles", "", "", None, &hostile).expect("held");
        let nobody = store(&[]);
        let err = write(&nobody, "clusterroles", "", "", None, &hostile).expect_err("403");
        assert!(
            err.message
                .contains("not currently held:\n{APIGroups:[\"g0\" \"g1\""),
            "{}",
            &err.message[..300]
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
