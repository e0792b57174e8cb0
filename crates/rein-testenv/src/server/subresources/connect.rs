//! `pods/log` and the connect verbs (`exec`, `attach`, `portforward`) as kube-apiserver's
//! `LogLocation`, `ExecLocation`, `AttachLocation` and `PortForwardLocation` answer them: the
//! container named (or the only one) must exist; a Pod not bound to a node has no logs yet
//! (204 No Content) and nothing to connect to (400 `pod … does not have a host assigned`);
//! for a bound Pod the Node must exist (404 otherwise) and have an address, and then the
//! kubelet at that address is dialled — there is none behind rein-testenv, so the answer is
//! the 500 kube-apiserver gives when the dial is refused.

use serde_json::Value;

use super::{Ctx, Response, current, plain_error};
use crate::server::body;
use crate::status::ApiError;

/// The kubelet port when the Node does not publish one (`--kubelet-port`).
const KUBELET_PORT: i64 = 10250;

/// kube-apiserver's default `--kubelet-preferred-address-types`.
const ADDRESS_TYPES: [&str; 5] = [
    "Hostname",
    "InternalDNS",
    "InternalIP",
    "ExternalDNS",
    "ExternalIP",
];

/// GET `pods/{name}/log`.
pub(super) fn log(ctx: &Ctx<'_>, name: &str, raw_query: Option<&str>) -> Response {
    match log_answer(ctx, name, raw_query) {
        Ok(()) => {
            let mut resp = body::text(204, "");
            resp.headers_mut().remove(http::header::CONTENT_TYPE);
            resp
        }
        Err(e) => body::error(&e),
    }
}

fn log_answer(ctx: &Ctx<'_>, name: &str, raw_query: Option<&str>) -> Result<(), ApiError> {
    let pod = current(ctx, name)?;
    let params = params(raw_query);
    let container = choose_container(&pod, name, param(&params, "container"))?;
    let Some(node) = node_name(&pod) else {
        // No host yet: an empty stream.
        return Ok(());
    };
    let (host, port) = kubelet_address(ctx, node)?;
    let mut query: Vec<(String, String)> = Vec::new();
    for flag in ["follow", "previous", "timestamps"] {
        if param(&params, flag).is_some_and(|v| matches!(v, "true" | "1" | "True")) {
            query.push((flag.to_string(), "true".to_string()));
        }
    }
    for number in ["sinceSeconds", "tailLines", "limitBytes"] {
        if let Some(v) = param(&params, number) {
            query.push((number.to_string(), v.to_string()));
        }
    }
    query.sort();
    let query = if query.is_empty() {
        String::new()
    } else {
        let encoded: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("?{}", encoded.join("&"))
    };
    let namespace = ctx.path.namespace.as_deref().unwrap_or_default();
    Err(plain_error(format!(
        "Get \"https://{host}:{port}/containerLogs/{namespace}/{name}/{container}{query}\": \
         {}",
        refused(&host, port)
    )))
}

/// GET or POST `pods/{name}/exec|attach|portforward`.
pub(super) fn stream(
    ctx: &Ctx<'_>,
    name: &str,
    sub: &str,
    raw_query: Option<&str>,
) -> Result<(u16, Value), ApiError> {
    let pod = current(ctx, name)?;
    if sub != "portforward" {
        let params = params(raw_query);
        choose_container(&pod, name, param(&params, "container"))?;
    }
    let Some(node) = node_name(&pod) else {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    };
    let (host, port) = kubelet_address(ctx, node)?;
    Err(plain_error(format!(
        "error dialing backend: {}",
        refused(&host, port)
    )))
}

/// What dialling a kubelet nobody runs gives.
fn refused(host: &str, port: i64) -> String {
    format!("dial tcp {host}:{port}: connect: connection refused")
}

fn params(raw: Option<&str>) -> Vec<(String, String)> {
    raw.map(|q| {
        form_urlencoded::parse(q.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    })
    .unwrap_or_default()
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The Pod's node, if it is bound to one.
fn node_name(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// Every container name of the Pod: init containers, containers, ephemeral containers (the
/// order of `podutil.VisitContainers`).
fn container_names(pod: &Value) -> Vec<&str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .filter_map(|f| pod.pointer(&format!("/spec/{f}")).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect()
}

/// `validateContainer`: the container asked for must exist; without one, the Pod must have
/// exactly one (regular) container.
fn choose_container(pod: &Value, name: &str, asked: Option<&str>) -> Result<String, ApiError> {
    if let Some(asked) = asked.filter(|c| !c.is_empty()) {
        if container_names(pod).contains(&asked) {
            return Ok(asked.to_string());
        }
        return Err(ApiError::bad_request(format!(
            "container {asked} is not valid for pod {name}"
        )));
    }
    let regular: Vec<&str> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    match regular.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {name}"
        ))),
        _ => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {name}, choose one of: [{}]",
            container_names(pod).join(" ")
        ))),
    }
}

/// `NodeConnectionInfoGetter.GetConnectionInfo`: the Node (404 when missing), its preferred
/// address and kubelet port.
fn kubelet_address(ctx: &Ctx<'_>, node: &str) -> Result<(String, i64), ApiError> {
    let nodes = ctx
        .state
        .catalogue
        .lookup("", "v1", "nodes")
        .ok_or_else(ApiError::no_route)?;
    let obj = ctx
        .state
        .store
        .lock()
        .get(&nodes.key(), &(String::new(), node.to_string()))
        .ok_or_else(|| ApiError::not_found(&nodes, node))?;
    let addresses: Vec<(&str, &str)> = obj
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| {
            Some((
                a.get("type").and_then(Value::as_str)?,
                a.get("address").and_then(Value::as_str)?,
            ))
        })
        .collect();
    let host = ADDRESS_TYPES
        .iter()
        .find_map(|t| addresses.iter().find(|(kind, _)| kind == t))
        .map(|(_, address)| address.to_string());
    let Some(host) = host else {
        let known: Vec<String> = addresses
            .iter()
            .map(|(kind, address)| format!("{{{kind} {address}}}"))
            .collect();
        return Err(plain_error(format!(
            "no preferred addresses found; known addresses: [{}]",
            known.join(" ")
        )));
    };
    let port = obj
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
        .filter(|p| *p > 0)
        .unwrap_or(KUBELET_PORT);
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    Ok((host, port))
}
