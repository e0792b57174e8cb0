//! Impersonation headers (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-<key>`), each
//! checked against the `impersonate` verb, as kube-apiserver's `WithImpersonation` filter.

use std::collections::BTreeMap;

use http::HeaderMap;
use percent_encoding::percent_decode_str;

use super::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, UserInfo};
use crate::rbac::{Attributes, Decision};
use crate::status::ApiError;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA: &str = "impersonate-extra-";

/// One thing asked to be impersonated (kube-apiserver's `ObjectReference` of it).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Target {
    /// Go's `%v` of the `ObjectReference` kube-apiserver builds (Kind, Namespace, Name, UID,
    /// APIVersion, ResourceVersion, FieldPath).
    fn go_value(&self) -> String {
        let auth = "authentication.k8s.io/v1";
        let fields: [&str; 7] = match self {
            Target::ServiceAccount { namespace, name } => {
                ["ServiceAccount", namespace, name, "", "", "", ""]
            }
            Target::User(name) => ["User", "", name, "", "", "", ""],
            Target::Group(name) => ["Group", "", name, "", "", "", ""],
            Target::Extra { key, value } => ["UserExtra", "", value, "", auth, "", key],
            Target::Uid(uid) => ["UID", "", uid, "", auth, "", ""],
        };
        format!("{{{}}}", fields.join(" "))
    }

    /// The attributes the `impersonate` check is made with.
    fn attributes(&self, requestor: &UserInfo) -> Attributes {
        let mut attrs = Attributes {
            user: requestor.clone(),
            verb: "impersonate".to_string(),
            resource_request: true,
            ..Attributes::default()
        };
        match self {
            Target::ServiceAccount { namespace, name } => {
                attrs.resource = "serviceaccounts".into();
                attrs.namespace = namespace.clone();
                attrs.name = name.clone();
            }
            Target::User(name) => {
                attrs.resource = "users".into();
                attrs.name = name.clone();
            }
            Target::Group(name) => {
                attrs.resource = "groups".into();
                attrs.name = name.clone();
            }
            Target::Extra { key, value } => {
                attrs.api_group = "authentication.k8s.io".into();
                attrs.api_version = "v1".into();
                attrs.resource = "userextras".into();
                attrs.subresource = key.clone();
                attrs.name = value.clone();
            }
            Target::Uid(uid) => {
                attrs.api_group = "authentication.k8s.io".into();
                attrs.api_version = "v1".into();
                attrs.resource = "uids".into();
                attrs.name = uid.clone();
            }
        }
        attrs
    }
}

/// Whether `headers` ask for impersonation at all.
pub(crate) fn requested(headers: &HeaderMap) -> bool {
    headers
        .keys()
        .any(|k| matches!(k.as_str(), USER | GROUP | UID) || k.as_str().starts_with(EXTRA))
}

/// The user `requestor` acts as: itself without impersonation headers, else the impersonated
/// user once `authorize` allowed each part (403 at the first refused, 400 for groups, extras
/// or a uid without a user).
pub(crate) fn impersonate(
    requestor: &UserInfo,
    headers: &HeaderMap,
    mut authorize: impl FnMut(&Attributes) -> Decision,
) -> Result<UserInfo, ApiError> {
    let targets = targets(headers)?;
    if targets.is_empty() {
        return Ok(requestor.clone());
    }
    let groups_given = headers.contains_key(GROUP);
    let mut user = UserInfo::default();
    for target in &targets {
        match target {
            Target::ServiceAccount { namespace, name } => {
                user.name = super::service_account_username(namespace, name);
                if !groups_given {
                    user.groups = super::service_account_groups(namespace);
                }
            }
            Target::User(name) => user.name = name.clone(),
            Target::Group(name) => user.groups.push(name.clone()),
            Target::Extra { key, value } => user
                .extra
                .entry(key.clone())
                .or_default()
                .push(value.clone()),
            Target::Uid(uid) => user.uid = uid.clone(),
        }
        let attrs = target.attributes(requestor);
        let decision = authorize(&attrs);
        if !decision.allowed {
            return Err(crate::rbac::forbidden(&attrs, &decision.reason));
        }
    }
    if user.name != ANONYMOUS {
        if !user
            .groups
            .iter()
            .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED)
        {
            user.groups.push(ALL_AUTHENTICATED.to_string());
        }
    } else if !user.groups.iter().any(|g| g == ALL_UNAUTHENTICATED) {
        user.groups.push(ALL_UNAUTHENTICATED.to_string());
    }
    Ok(user)
}

/// The impersonation requests in `headers`, in kube-apiserver's order (user, groups, extras,
/// uid).
fn targets(headers: &HeaderMap) -> Result<Vec<Target>, ApiError> {
    let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let mut out = Vec::new();
    let user = headers.get(USER).map(text).unwrap_or_default();
    let has_user = !user.is_empty();
    if has_user {
        out.push(match super::split_service_account(&user) {
            Some((namespace, name)) => Target::ServiceAccount {
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
            None => Target::User(user.clone()),
        });
    }
    let mut others = false;
    for group in headers.get_all(GROUP) {
        others = true;
        out.push(Target::Group(text(group)));
    }
    let mut extras: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA) {
            let key = percent_decode_str(key).decode_utf8_lossy().into_owned();
            extras.entry(key).or_default().push(text(value));
        }
    }
    for (key, values) in extras {
        others = true;
        for value in values {
            out.push(Target::Extra {
                key: key.clone(),
                value,
            });
        }
    }
    let uid = headers.get(UID).map(text).unwrap_or_default();
    if !uid.is_empty() {
        others = true;
        out.push(Target::Uid(uid));
    }
    if others && !has_user {
        let listed: Vec<String> = out.iter().map(Target::go_value).collect();
        return Err(ApiError::bad_request(format!(
            "requested [{}] without impersonating a user",
            listed.join(" ")
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn allow(_: &Attributes) -> Decision {
        Decision {
            allowed: true,
            reason: String::new(),
        }
    }

    #[test]
    fn a_service_account_gets_its_groups_unless_groups_are_given() {
        let me = crate::auth::admin();
        let h = headers(&[("Impersonate-User", "system:serviceaccount:ns:robot")]);
        let user = impersonate(&me, &h, allow).unwrap();
        assert_eq!(user.name, "system:serviceaccount:ns:robot");
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
        let h = headers(&[
            ("Impersonate-User", "system:serviceaccount:ns:robot"),
            ("Impersonate-Group", "g"),
        ]);
        assert_eq!(
            impersonate(&me, &h, allow).unwrap().groups,
            ["g", "system:authenticated"]
        );
    }

    #[test]
    fn groups_without_a_user_are_a_bad_request() {
        let me = crate::auth::admin();
        let h = headers(&[("Impersonate-Group", "devs")]);
        let err = impersonate(&me, &h, allow).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "requested [{Group  devs    }] without impersonating a user"
        );
    }

    #[test]
    fn extras_are_decoded_and_lowercased() {
        let me = crate::auth::admin();
        let h = headers(&[
            ("Impersonate-User", "bob"),
            ("Impersonate-Extra-Scopes%2Fa", "x"),
            ("Impersonate-Uid", "42"),
        ]);
        let user = impersonate(&me, &h, allow).unwrap();
        assert_eq!(user.extra.get("scopes/a"), Some(&vec!["x".to_string()]));
        assert_eq!(user.uid, "42");
    }
}
