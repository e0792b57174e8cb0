//! The authorization attributes of an HTTP request, as kube-apiserver's
//! `RequestInfoFactory` reads them from the method, path and query (before routing, so a
//! request for an unknown resource is authorized like any other).

use http::Method;
use percent_encoding::percent_decode_str;

use super::Attributes;
use crate::auth::UserInfo;

/// The attributes of `method path?query` sent by `user`.
pub(crate) fn attributes(
    user: &UserInfo,
    method: &Method,
    path: &str,
    query: Option<&str>,
) -> Attributes {
    let mut attrs = Attributes {
        user: user.clone(),
        verb: method.as_str().to_ascii_lowercase(),
        path: path.to_string(),
        ..Attributes::default()
    };
    let parts: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    if parts.len() < 3 {
        return attrs;
    }
    let mut rest: &[String] = match parts[0].as_str() {
        "api" => &parts[1..],
        "apis" if parts.len() >= 4 => {
            attrs.api_group = parts[1].clone();
            &parts[2..]
        }
        _ => return attrs,
    };
    attrs.resource_request = true;
    attrs.api_version = rest[0].clone();
    rest = &rest[1..];
    let special = matches!(rest[0].as_str(), "watch" | "proxy");
    if special {
        if rest.len() < 2 {
            return attrs;
        }
        attrs.verb = rest[0].clone();
        rest = &rest[1..];
    } else {
        attrs.verb = match *method {
            Method::POST => "create",
            Method::GET | Method::HEAD => "get",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            _ => "",
        }
        .to_string();
    }
    if rest[0] == "namespaces" && rest.len() > 1 {
        attrs.namespace = rest[1].clone();
        if rest.len() > 2 && !matches!(rest[2].as_str(), "status" | "finalize") {
            rest = &rest[2..];
        }
    }
    attrs.resource = rest[0].clone();
    if rest.len() >= 2 {
        attrs.name = rest[1].clone();
    }
    if rest.len() >= 3 && attrs.verb != "proxy" {
        attrs.subresource = rest[2].clone();
    }
    if attrs.name.is_empty() && attrs.verb == "get" {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let watch = pairs
            .iter()
            .any(|(k, v)| k == "watch" && matches!(v.as_str(), "true" | "1"));
        attrs.verb = if watch { "watch" } else { "list" }.to_string();
        if let Some((_, selector)) = pairs.iter().find(|(k, _)| k == "fieldSelector")
            && let Some(name) = exact_name(selector)
        {
            attrs.name = name;
        }
    }
    if attrs.name.is_empty() && attrs.verb == "delete" {
        attrs.verb = "deletecollection".to_string();
    }
    attrs
}

/// The name a field selector requires exactly (`metadata.name=x` or `==x`).
fn exact_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let rest = term.trim().strip_prefix("metadata.name")?;
        let value = rest
            .strip_prefix("==")
            .or_else(|| rest.strip_prefix('='))?
            .trim();
        (!value.is_empty() && !value.contains('/') && value != "." && value != "..")
            .then(|| value.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(method: Method, path: &str, query: Option<&str>) -> Attributes {
        attributes(&UserInfo::default(), &method, path, query)
    }

    #[test]
    fn resource_requests() {
        let a = at(Method::GET, "/api/v1/namespaces/default/pods", None);
        assert_eq!(
            (a.verb.as_str(), a.namespace.as_str(), a.resource.as_str()),
            ("list", "default", "pods")
        );
        let a = at(Method::GET, "/api/v1/pods", Some("watch=true"));
        assert_eq!((a.verb.as_str(), a.namespace.as_str()), ("watch", ""));
        let a = at(
            Method::GET,
            "/apis/apps/v1/watch/namespaces/x/deployments/d",
            None,
        );
        assert_eq!(
            (a.verb.as_str(), a.api_group.as_str(), a.name.as_str()),
            ("watch", "apps", "d")
        );
        let a = at(
            Method::PUT,
            "/apis/apps/v1/namespaces/x/deployments/d/status",
            None,
        );
        assert_eq!(
            (a.verb.as_str(), a.subresource.as_str()),
            ("update", "status")
        );
        let a = at(Method::DELETE, "/api/v1/namespaces/x/configmaps", None);
        assert_eq!(a.verb, "deletecollection");
        let a = at(Method::GET, "/api/v1/namespaces/x", None);
        assert_eq!(
            (a.resource.as_str(), a.name.as_str(), a.namespace.as_str()),
            ("namespaces", "x", "x")
        );
        let a = at(Method::PUT, "/api/v1/namespaces/x/finalize", None);
        assert_eq!(
            (a.resource.as_str(), a.subresource.as_str()),
            ("namespaces", "finalize")
        );
        let a = at(
            Method::GET,
            "/api/v1/namespaces/x/pods",
            Some("fieldSelector=metadata.name%3Dweb"),
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", "web"));
    }

    #[test]
    fn non_resource_requests() {
        for path in [
            "/api",
            "/api/v1",
            "/apis/apps/v1",
            "/healthz",
            "/openapi/v2",
        ] {
            let a = at(Method::GET, path, None);
            assert!(!a.resource_request, "{path}");
            assert_eq!(a.verb, "get");
        }
        assert_eq!(at(Method::POST, "/metrics", None).verb, "post");
    }
}
