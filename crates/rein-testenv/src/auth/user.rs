//! [`User`]: a user the server knows, with groups and a bearer token.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// A user of the test server: a name, groups and (optionally) a bearer token.
///
/// Give one to [`TestEnvBuilder::user`] so its token authenticates it, or to
/// [`TestEnv::kubeconfig_for`] for a kubeconfig that sends its token, or (without one) a client
/// certificate issued by the server's CA with `CN=<name>` and `O=<group>` per group.
///
/// [`TestEnvBuilder::user`]: crate::TestEnvBuilder::user
/// [`TestEnv::kubeconfig_for`]: crate::TestEnv::kubeconfig_for
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) groups: Vec<String>,
    pub(crate) token: Option<String>,
}

impl User {
    /// A user named `name`, in no group yet, without a token.
    pub fn new(name: impl Into<String>) -> User {
        User {
            name: name.into(),
            uid: String::new(),
            groups: Vec::new(),
            token: None,
        }
    }

    /// Adds the user to `group` (`system:authenticated` is added to every authenticated user).
    pub fn group(mut self, group: impl Into<String>) -> User {
        self.groups.push(group.into());
        self
    }

    /// The user's uid, as a token file's fourth column gives it (default: none).
    pub fn uid(mut self, uid: impl Into<String>) -> User {
        self.uid = uid.into();
        self
    }

    /// The bearer token that authenticates the user (registered by [`TestEnvBuilder::user`]).
    ///
    /// [`TestEnvBuilder::user`]: crate::TestEnvBuilder::user
    pub fn token(mut self, token: impl Into<String>) -> User {
        self.token = Some(token.into());
        self
    }

    /// The user's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The user's groups, as given.
    pub fn groups(&self) -> &[String] {
        &self.groups
    }

    /// The user's bearer token, if it has one.
    pub fn bearer_token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The identity the server sees for this user.
    pub(crate) fn info(&self) -> UserInfo {
        UserInfo {
            name: self.name.clone(),
            uid: self.uid.clone(),
            groups: self.groups.clone(),
            extra: BTreeMap::new(),
        }
        .authenticated()
    }
}

/// An authenticated identity, as kube-apiserver's `user.Info`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct UserInfo {
    /// The user name.
    pub(crate) name: String,
    /// The uid (empty when unknown).
    pub(crate) uid: String,
    /// The groups.
    pub(crate) groups: Vec<String>,
    /// Extra attributes.
    pub(crate) extra: BTreeMap<String, Vec<String>>,
}

/// The group every authenticated user is in.
pub(crate) const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group of requests without credentials.
pub(crate) const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group whose members may do anything.
pub(crate) const SYSTEM_MASTERS: &str = "system:masters";
/// The name of unauthenticated requests.
pub(crate) const ANONYMOUS: &str = "system:anonymous";

impl UserInfo {
    /// Adds `system:authenticated` unless present, as kube-apiserver's authenticator does.
    pub(crate) fn authenticated(mut self) -> UserInfo {
        if !self.groups.iter().any(|g| g == ALL_AUTHENTICATED) {
            self.groups.push(ALL_AUTHENTICATED.to_string());
        }
        self
    }

    /// The `authentication.k8s.io/v1` `UserInfo` object.
    pub(crate) fn to_json(&self) -> Value {
        let mut out = json!({"username": self.name, "groups": self.groups});
        if !self.uid.is_empty() {
            out["uid"] = json!(self.uid);
        }
        if !self.extra.is_empty() {
            out["extra"] = json!(self.extra);
        }
        out
    }

    /// Reads a `UserInfo`-shaped object (`username`/`user`, `uid`, `groups`, `extra`).
    pub(crate) fn from_spec(spec: &Value, name_field: &str) -> UserInfo {
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let extra = spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), strings(Some(v))))
                    .collect()
            })
            .unwrap_or_default();
        UserInfo {
            name: spec
                .get(name_field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            uid: spec
                .get("uid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            groups: strings(spec.get("groups")),
            extra,
        }
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub(crate) fn service_account_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The namespace and name of a service account's user name, if it is one.
pub(crate) fn split_service_account(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

/// The groups of a service account in `namespace`.
pub(crate) fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{namespace}"),
    ]
}
