//! `authentication.k8s.io/v1` TokenReview and SelfSubjectReview, and the `token`
//! subresource of ServiceAccounts (TokenRequest).

use serde_json::{Value, json};

use super::{Authn, Grant, TokenOutcome, UserInfo, api_audiences, service_accounts};
use crate::status::ApiError;
use crate::store::Store;

/// The API group of the reviews and TokenRequest.
pub(crate) const GROUP: &str = "authentication.k8s.io";

/// The shortest lifetime a TokenRequest may ask for (10 minutes).
const MIN_EXPIRATION: i64 = 600;
/// The longest (2^32 seconds).
const MAX_EXPIRATION: i64 = 1 << 32;
/// The lifetime when none is asked for (one hour).
const DEFAULT_EXPIRATION: i64 = 3600;

/// A TokenReview: whether `spec.token` authenticates, as whom, for which of
/// `spec.audiences`.
pub(crate) fn token_review(
    authn: &Authn,
    store: &Store,
    mut body: Value,
) -> Result<Value, ApiError> {
    set_type(&mut body, "TokenReview");
    let token = body
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences = strings(body.pointer("/spec/audiences"));
    body["status"] = match authn.token(&token, &audiences, store) {
        TokenOutcome::Authenticated(user, audiences) => json!({
            "authenticated": true,
            "user": user.to_json(),
            "audiences": audiences,
        }),
        TokenOutcome::Unknown => json!({"user": {}}),
        TokenOutcome::Invalid(why) => json!({"user": {}, "error": why}),
    };
    Ok(body)
}

/// A SelfSubjectReview: the requester's own user info.
pub(crate) fn self_subject_review(user: &UserInfo, mut body: Value) -> Value {
    set_type(&mut body, "SelfSubjectReview");
    body["metadata"]["creationTimestamp"] = json!(crate::ops::meta::now());
    body["status"] = json!({"userInfo": user.to_json()});
    body
}

/// A TokenRequest for the ServiceAccount `namespace/name`: a signed token for
/// `spec.audiences` (default: the API's) valid `spec.expirationSeconds` (default one hour).
pub(crate) fn token_request(
    authn: &Authn,
    store: &Store,
    namespace: &str,
    name: &str,
    mut body: Value,
) -> Result<Value, ApiError> {
    set_type(&mut body, "TokenRequest");
    let invalid = |field: &str, value: &Value, why: &str| {
        let message = format!("Invalid value: {value}: {why}");
        ApiError::new(
            422,
            "Invalid",
            format!("TokenRequest.{GROUP} \"{name}\" is invalid: {field}: {message}"),
        )
        .with_details(json!({
            "name": name, "group": GROUP, "kind": "TokenRequest",
            "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}],
        }))
    };
    let seconds = match body.pointer("/spec/expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    if seconds < MIN_EXPIRATION {
        return Err(invalid(
            "spec.expirationSeconds",
            &json!(seconds),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if seconds > MAX_EXPIRATION {
        return Err(invalid(
            "spec.expirationSeconds",
            &json!(seconds),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let sa = store.lock().get(
        &service_accounts(),
        &(namespace.to_string(), name.to_string()),
    );
    let Some(sa) = sa else {
        return Err(ApiError::new(
            404,
            "NotFound",
            format!("serviceaccounts \"{name}\" not found"),
        )
        .with_details(json!({"name": name, "kind": "serviceaccounts"})));
    };
    let mut audiences = strings(body.pointer("/spec/audiences"));
    if audiences.is_empty() {
        audiences = api_audiences();
    }
    let now = jiff::Timestamp::now().as_second();
    let bound = body
        .pointer("/spec/boundObjectRef")
        .filter(|v| !v.is_null());
    let token = authn
        .signer
        .issue(&Grant {
            namespace,
            name,
            uid: crate::store::uid_of(&sa).unwrap_or_default(),
            audiences: &audiences,
            now,
            seconds,
            bound,
        })
        .map_err(|e| {
            ApiError::new(
                500,
                "InternalError",
                format!("an error on the server (\"signing the token: {e}\") has prevented the request from succeeding"),
            )
        })?;
    let expires = jiff::Timestamp::from_second(now + seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    body["metadata"]["name"] = json!(name);
    body["metadata"]["namespace"] = json!(namespace);
    body["metadata"]["creationTimestamp"] = json!(crate::ops::meta::now());
    body["spec"]["audiences"] = json!(audiences);
    body["spec"]["expirationSeconds"] = json!(seconds);
    if body.pointer("/spec/boundObjectRef").is_none() {
        body["spec"]["boundObjectRef"] = Value::Null;
    }
    body["status"] = json!({"token": token, "expirationTimestamp": expires});
    Ok(body)
}

/// Sets `apiVersion` and `kind`, and makes sure `metadata` and `spec` are objects.
fn set_type(body: &mut Value, kind: &str) {
    if !body.is_object() {
        *body = json!({});
    }
    body["apiVersion"] = json!(format!("{GROUP}/v1"));
    body["kind"] = json!(kind);
    for field in ["metadata", "spec"] {
        if !body.get(field).is_some_and(Value::is_object) {
            body[field] = json!({});
        }
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
