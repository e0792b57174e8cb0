//! The EndpointSlice controller of the simulated cluster, as kube's
//! `pkg/controller/endpointslice` (and `k8s.io/endpointslice`'s reconciler) behaves: for every
//! Service with a selector, the Pods it selects that have an IP and are not terminal become
//! endpoints — `addresses` (the Pod IPs of the slice's address type), `conditions` (`ready`:
//! ready and not terminating, or `publishNotReadyAddresses`; `serving`: ready; `terminating`:
//! being deleted), `targetRef`, `nodeName`, `zone` (the node's `topology.kubernetes.io/zone`),
//! `hostname` (a Pod whose subdomain is the Service) — in `discovery.k8s.io/v1` EndpointSlices
//! (`generateName: <service>-`, owned by the Service, labelled `kubernetes.io/service-name`,
//! `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`, the Service's
//! labels and `service.kubernetes.io/headless` for headless Services), one group of slices
//! per set of resolved ports (a named `targetPort` is looked up in each Pod), at most 100
//! endpoints a slice, changing as few slices as kube does; a Service with no endpoints keeps
//! one empty placeholder slice.
//!
//! Not simulated: topology hints and `trafficDistribution`, and the
//! `endpoints.kubernetes.io/last-change-trigger-time` annotation.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, Service, ServicePort};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use rein_client::controllerutil::set_controller_reference;
use rein_client::{Client, DeleteParams, ListOptions, PostParams, ignore_not_found};
use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;
use rein_controller::{Action, BuildError, Context, ControllerManagedBy, Reconciler, Request};
use rein_manager::Manager;
use rein_scheme::ObjectKey;
use rein_scheme::labels::Selector;

use super::Error;
use super::claim::describe;
use super::pods;

/// The controller's name (as kube-controller-manager names it).
pub const NAME: &str = "endpointslice";

/// `kubernetes.io/service-name`: the Service a slice belongs to.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// `endpointslice.kubernetes.io/managed-by`: who manages a slice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";

/// This controller's `managed-by` value.
pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";

/// `service.kubernetes.io/headless`: on the slices of a Service without a cluster IP.
const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// `topology.kubernetes.io/zone`.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// `--max-endpoints-per-slice`'s default.
const MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// Adds the EndpointSlice controller to `mgr`.
pub fn add(mgr: &Manager) -> Result<(), BuildError> {
    let client = mgr.client();
    let services_of_pod = {
        let client = client.clone();
        EnqueueRequestsFromAsyncMapFunc::new(move |pod: Arc<Pod>| {
            let client = client.clone();
            async move { selecting_services(&client, &pod).await }
        })
    };
    ControllerManagedBy::new(mgr)
        .for_::<Service>()
        .owns::<EndpointSlice>()
        .watches::<Pod>(services_of_pod)
        .named(NAME)
        .with_options(super::controller_options())
        .complete(EndpointSliceController { client })
        .map(|_| ())
}

/// The Services of the Pod's namespace whose selector matches it.
async fn selecting_services(client: &Client, pod: &Pod) -> Vec<Request> {
    let Some(namespace) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let Ok(list) = client
        .list::<Service>(&ListOptions::default().namespace(namespace))
        .await
    else {
        return Vec::new();
    };
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    list.items
        .iter()
        .filter(|svc| {
            svc.spec
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .is_some_and(|sel| sel.iter().all(|(k, v)| labels.get(k) == Some(v)))
        })
        .map(|svc| Request::from_object(&**svc))
        .collect()
}

struct EndpointSliceController {
    client: Client,
}

#[async_trait]
impl Reconciler for EndpointSliceController {
    type Error = Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Error> {
        let Some(svc) = ignore_not_found(self.client.get::<Service>(&req.key).await)? else {
            // The garbage collector removes the slices of a deleted Service.
            return Ok(Action::done());
        };
        self.sync_service(&svc).await?;
        Ok(Action::done())
    }
}

/// The slices a sync creates, updates and deletes.
#[derive(Debug, Default)]
struct Changes {
    create: Vec<EndpointSlice>,
    update: Vec<EndpointSlice>,
    delete: Vec<EndpointSlice>,
}

/// The endpoints of one set of resolved ports.
#[derive(Debug, Default)]
struct PortGroup {
    ports: Vec<EndpointPort>,
    /// By [`endpoint_key`].
    endpoints: BTreeMap<String, Endpoint>,
}

impl EndpointSliceController {
    /// `syncService`.
    async fn sync_service(&self, svc: &Service) -> Result<(), Error> {
        let spec = svc.spec.clone().unwrap_or_default();
        let Some(selector) = spec.selector.clone() else {
            // Slices of Services without a selector are managed by whoever made them.
            return Ok(());
        };
        let namespace = svc.metadata.namespace.clone().unwrap_or_default();
        let selector = Selector::from_map(&selector).map_err(|source| Error::Selector {
            object: describe(svc),
            source,
        })?;
        let pods = self
            .client
            .list::<Pod>(
                &ListOptions::default()
                    .namespace(&namespace)
                    .labels(selector),
            )
            .await?;
        let existing: Vec<EndpointSlice> = self
            .client
            .list::<EndpointSlice>(
                &ListOptions::default()
                    .namespace(&namespace)
                    .matching_labels([
                        (
                            SERVICE_NAME_LABEL,
                            svc.metadata.name.as_deref().unwrap_or_default(),
                        ),
                        (MANAGED_BY_LABEL, CONTROLLER_NAME),
                    ]),
            )
            .await?
            .items
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect();
        let address_types = address_types(svc);
        let mut first_error = None;
        let mut by_type: BTreeMap<String, Vec<EndpointSlice>> = BTreeMap::new();
        let mut unsupported = Vec::new();
        for slice in existing {
            if address_types.contains(&slice.address_type) {
                by_type
                    .entry(slice.address_type.clone())
                    .or_default()
                    .push(slice);
            } else {
                unsupported.push(slice);
            }
        }
        for address_type in &address_types {
            let existing = by_type.remove(address_type).unwrap_or_default();
            if let Err(err) = self
                .reconcile_address_type(svc, &pods.items, existing, address_type)
                .await
            {
                first_error.get_or_insert(err);
            }
        }
        for slice in unsupported {
            if let Err(err) = self.delete(&slice).await {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// `reconcileByAddressType`.
    async fn reconcile_address_type(
        &self,
        svc: &Service,
        pods: &[Arc<Pod>],
        existing: Vec<EndpointSlice>,
        address_type: &str,
    ) -> Result<(), Error> {
        let spec = svc.spec.clone().unwrap_or_default();
        let publish_not_ready = spec.publish_not_ready_addresses == Some(true);
        let mut missing_node = None;
        let mut desired: BTreeMap<String, PortGroup> = BTreeMap::new();
        for pod in pods {
            if !should_be_in_endpoints(pod) {
                continue;
            }
            let ports = endpoint_ports(svc, pod);
            let node = match pod.spec.as_ref().and_then(|s| s.node_name.clone()) {
                Some(name) => {
                    let node = ignore_not_found(
                        self.client
                            .get::<Node>(&ObjectKey::cluster_scoped(name.clone()))
                            .await,
                    )?;
                    if node.is_none() && !publish_not_ready {
                        // Retried later; the slices are updated without this Pod meanwhile.
                        missing_node.get_or_insert(name);
                        continue;
                    }
                    node
                }
                None => None,
            };
            let endpoint = pod_to_endpoint(pod, node.as_deref(), svc, address_type);
            if endpoint.addresses.is_empty() {
                continue;
            }
            let group = desired.entry(port_map_key(&ports)).or_default();
            group.ports = ports;
            group.endpoints.insert(endpoint_key(&endpoint), endpoint);
        }

        let mut by_ports: BTreeMap<String, Vec<EndpointSlice>> = BTreeMap::new();
        let mut to_delete = Vec::new();
        for slice in existing.iter().cloned() {
            if owned_by(&slice, svc) {
                let key = port_map_key(slice.ports.as_deref().unwrap_or_default());
                by_ports.entry(key).or_default().push(slice);
            } else {
                to_delete.push(slice);
            }
        }
        let (mut to_create, mut to_update) = (Vec::new(), Vec::new());
        for (key, group) in desired.iter_mut() {
            let slices = by_ports.remove(key).unwrap_or_default();
            let changes = self.reconcile_port_mapping(svc, slices, group, address_type)?;
            to_create.extend(changes.create);
            to_update.extend(changes.update);
            to_delete.extend(changes.delete);
        }
        // Sets of ports no longer desired.
        to_delete.extend(by_ports.into_values().flatten());

        if existing.len() == to_delete.len() && to_create.is_empty() {
            let placeholder = self.new_slice(svc, Vec::new(), address_type)?;
            if to_delete.len() == 1 && same_placeholder(&to_delete[0], &placeholder) {
                to_delete.clear();
            } else {
                to_create.push(placeholder);
            }
        }
        let changes = Changes {
            create: to_create,
            update: to_update,
            delete: to_delete,
        };
        self.finalize(svc, changes).await?;
        match missing_node {
            Some(node) => Err(Error::Invalid {
                object: describe(svc),
                problem: format!("skipping a Pod: node {node} not found"),
            }),
            None => Ok(()),
        }
    }

    /// `reconcileByPortMapping`: keeps the endpoints of existing slices in place (updated),
    /// drops slices left empty, puts new endpoints into slices being updated, then into the
    /// unchanged slice closest to full, then into new slices.
    fn reconcile_port_mapping(
        &self,
        svc: &Service,
        existing: Vec<EndpointSlice>,
        group: &mut PortGroup,
        address_type: &str,
    ) -> Result<Changes, Error> {
        let (mut to_create, mut to_update, mut to_delete, mut unchanged) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let labels = slice_labels(svc);
        for mut slice in existing {
            let mut changed = slice.metadata.labels.as_ref() != Some(&labels);
            let mut kept = Vec::new();
            for endpoint in std::mem::take(&mut slice.endpoints) {
                match group.endpoints.remove(&endpoint_key(&endpoint)) {
                    Some(want) => {
                        changed |= want != endpoint;
                        kept.push(want);
                    }
                    None => changed = true,
                }
            }
            slice.endpoints = kept;
            if slice.endpoints.is_empty() {
                to_delete.push(slice);
            } else if changed {
                slice.metadata.labels = Some(labels.clone());
                to_update.push(slice);
            } else {
                unchanged.push(slice);
            }
        }
        let mut pending: Vec<Endpoint> =
            std::mem::take(&mut group.endpoints).into_values().collect();
        to_update.sort_by_key(|s: &EndpointSlice| std::cmp::Reverse(s.endpoints.len()));
        for slice in to_update.iter_mut() {
            while slice.endpoints.len() < MAX_ENDPOINTS_PER_SLICE && !pending.is_empty() {
                slice.endpoints.push(pending.remove(0));
            }
        }
        while !pending.is_empty() {
            let fill = if pending.len() < MAX_ENDPOINTS_PER_SLICE {
                slice_to_fill(&unchanged, pending.len())
            } else {
                None
            };
            let mut slice = match fill {
                Some(i) => {
                    let mut slice = unchanged.remove(i);
                    slice.metadata.labels = Some(labels.clone());
                    slice
                }
                None => self.new_slice(svc, group.ports.clone(), address_type)?,
            };
            while slice.endpoints.len() < MAX_ENDPOINTS_PER_SLICE && !pending.is_empty() {
                slice.endpoints.push(pending.remove(0));
            }
            if slice.metadata.name.is_some() {
                to_update.push(slice);
            } else {
                to_create.push(slice);
            }
        }
        Ok(Changes {
            create: to_create,
            update: to_update,
            delete: to_delete,
        })
    }

    /// `newEndpointSlice`.
    fn new_slice(
        &self,
        svc: &Service,
        ports: Vec<EndpointPort>,
        address_type: &str,
    ) -> Result<EndpointSlice, Error> {
        let name = svc.metadata.name.as_deref().unwrap_or_default();
        let mut slice = EndpointSlice {
            metadata: ObjectMeta {
                generate_name: Some(pods::generate_name_prefix(name)),
                namespace: svc.metadata.namespace.clone(),
                labels: Some(slice_labels(svc)),
                ..ObjectMeta::default()
            },
            address_type: address_type.into(),
            endpoints: Vec::new(),
            ports: Some(ports),
        };
        set_controller_reference(svc, &mut slice, self.client.scheme())?;
        Ok(slice)
    }

    /// `finalize`: creates that can reuse a slice about to be deleted update it instead; no
    /// creates for a Service being deleted.
    async fn finalize(&self, svc: &Service, changes: Changes) -> Result<(), Error> {
        let Changes {
            create: mut to_create,
            update: mut to_update,
            delete: mut to_delete,
        } = changes;
        let mut i = 0;
        while i < to_delete.len() && !to_create.is_empty() {
            let reusable = owned_by(&to_delete[i], svc)
                && to_create
                    .last()
                    .is_some_and(|c| c.address_type == to_delete[i].address_type);
            if reusable && let Some(mut slice) = to_create.pop() {
                let old = to_delete.remove(i);
                slice.metadata.name = old.metadata.name;
                slice.metadata.generate_name = old.metadata.generate_name;
                slice.metadata.resource_version = old.metadata.resource_version;
                slice.metadata.uid = old.metadata.uid;
                to_update.push(slice);
            } else {
                i += 1;
            }
        }
        if svc.metadata.deletion_timestamp.is_none() {
            for slice in &to_create {
                self.client.create(slice, &PostParams::default()).await?;
            }
        }
        for slice in &to_update {
            self.client.update(slice, &PostParams::default()).await?;
        }
        for slice in &to_delete {
            self.delete(slice).await?;
        }
        Ok(())
    }

    async fn delete(&self, slice: &EndpointSlice) -> Result<(), Error> {
        match self
            .client
            .delete::<EndpointSlice>(&ObjectKey::from_object(slice), &DeleteParams::default())
            .await
        {
            Ok(()) => Ok(()),
            Err(err) if err.is_not_found() => Ok(()),
            Err(err) => Err(err.into()),
        }
    }
}

/// `ShouldPodBeInEndpoints` (terminating Pods included): not terminal, with an IP.
fn should_be_in_endpoints(pod: &Pod) -> bool {
    if pods::is_terminal(pod) {
        return false;
    }
    let status = pod.status.as_ref();
    status
        .and_then(|s| s.pod_ip.as_deref())
        .is_some_and(|ip| !ip.is_empty())
        || status
            .and_then(|s| s.pod_ips.as_ref())
            .is_some_and(|ips| !ips.is_empty())
}

/// `podToEndpoint`.
fn pod_to_endpoint(pod: &Pod, node: Option<&Node>, svc: &Service, address_type: &str) -> Endpoint {
    let spec = svc.spec.clone().unwrap_or_default();
    let serving = pods::is_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let ready = spec.publish_not_ready_addresses == Some(true) || (serving && !terminating);
    let pod_spec = pod.spec.clone().unwrap_or_default();
    let hostname = pod_spec.hostname.clone().filter(|h| {
        !h.is_empty()
            && pod_spec.subdomain.as_deref() == svc.metadata.name.as_deref()
            && pod.metadata.namespace == svc.metadata.namespace
    });
    Endpoint {
        addresses: addresses(pod, address_type),
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        deprecated_topology: None,
        hints: None,
        hostname,
        node_name: pod_spec.node_name.clone().filter(|n| !n.is_empty()),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        }),
        zone: node
            .and_then(|n| n.metadata.labels.as_ref())
            .and_then(|l| l.get(ZONE_LABEL))
            .filter(|z| !z.is_empty())
            .cloned(),
    }
}

/// `getEndpointAddresses`: the Pod's IPs of `address_type`.
fn addresses(pod: &Pod, address_type: &str) -> Vec<String> {
    let status = pod.status.clone().unwrap_or_default();
    let mut ips: Vec<String> = status
        .pod_ips
        .into_iter()
        .flatten()
        .map(|ip| ip.ip)
        .collect();
    if ips.is_empty() {
        ips.extend(status.pod_ip);
    }
    ips.into_iter()
        .filter(|ip| (address_type == "IPv6") == ip.contains(':'))
        .collect()
}

/// `getEndpointPorts`: each Service port resolved against the Pod (skipped if it cannot be).
fn endpoint_ports(svc: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let spec = svc.spec.clone().unwrap_or_default();
    spec.ports
        .iter()
        .flatten()
        .filter_map(|port| {
            let number = find_port(pod, port)?;
            Some(EndpointPort {
                name: Some(port.name.clone().unwrap_or_default()),
                port: Some(number),
                protocol: Some(port.protocol.clone().unwrap_or_else(|| "TCP".into())),
                app_protocol: port.app_protocol.clone(),
            })
        })
        .collect()
}

/// `findPort`: a number is itself; a name is looked up among the Pod's container (and sidecar)
/// ports of the same protocol.
fn find_port(pod: &Pod, port: &ServicePort) -> Option<i32> {
    let protocol = port.protocol.as_deref().unwrap_or("TCP");
    match port.target_port.as_ref() {
        None => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => {
            let spec = pod.spec.as_ref()?;
            let sidecars = spec
                .init_containers
                .iter()
                .flatten()
                .filter(|c| c.restart_policy.as_deref() == Some("Always"));
            spec.containers
                .iter()
                .chain(sidecars)
                .flat_map(|c| c.ports.iter().flatten())
                .find(|p| {
                    p.name.as_deref() == Some(name.as_str())
                        && p.protocol.as_deref().unwrap_or("TCP") == protocol
                })
                .map(|p| p.container_port)
        }
    }
}

/// The address types the Service's IP families call for (`getAddressTypesForService`).
fn address_types(svc: &Service) -> Vec<String> {
    let spec = svc.spec.clone().unwrap_or_default();
    let mut types: Vec<String> = spec
        .ip_families
        .iter()
        .flatten()
        .filter(|f| *f == "IPv4" || *f == "IPv6")
        .cloned()
        .collect();
    types.sort();
    types.dedup();
    if !types.is_empty() {
        return types;
    }
    match spec.cluster_ip.as_deref() {
        Some(ip) if !ip.is_empty() && ip != "None" => {
            vec![if ip.contains(':') { "IPv6" } else { "IPv4" }.into()]
        }
        _ => vec!["IPv4".into(), "IPv6".into()],
    }
}

/// `setEndpointSliceLabels`: the Service's labels (but the reserved ones), the service name,
/// the manager, and the headless label for a Service without a cluster IP.
fn slice_labels(svc: &Service) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = svc
        .metadata
        .labels
        .iter()
        .flatten()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                SERVICE_NAME_LABEL | MANAGED_BY_LABEL | HEADLESS_LABEL
            )
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let cluster_ip = svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref());
    if cluster_ip.is_none_or(|ip| ip.is_empty() || ip == "None") {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    labels.insert(
        SERVICE_NAME_LABEL.into(),
        svc.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(MANAGED_BY_LABEL.into(), CONTROLLER_NAME.into());
    labels
}

/// `ownedBy`: the slice has an owner reference to the Service.
fn owned_by(slice: &EndpointSlice, svc: &Service) -> bool {
    slice.metadata.owner_references.iter().flatten().any(|o| {
        Some(&o.uid) == svc.metadata.uid.as_ref() && o.kind == "Service" && o.api_version == "v1"
    })
}

/// An endpoint's identity across syncs: its Pod (or its addresses).
fn endpoint_key(endpoint: &Endpoint) -> String {
    match endpoint.target_ref.as_ref() {
        Some(r) => format!(
            "{}/{}/{}",
            r.namespace.as_deref().unwrap_or_default(),
            r.name.as_deref().unwrap_or_default(),
            r.uid.as_deref().unwrap_or_default()
        ),
        None => endpoint.addresses.join(","),
    }
}

/// `NewPortMapKey`: the ports, order-independent.
fn port_map_key(ports: &[EndpointPort]) -> String {
    let mut parts: Vec<String> = ports
        .iter()
        .map(|p| {
            format!(
                "{}/{}/{}/{}",
                p.name.as_deref().unwrap_or_default(),
                p.port.unwrap_or(0),
                p.protocol.as_deref().unwrap_or_default(),
                p.app_protocol.as_deref().unwrap_or_default()
            )
        })
        .collect();
    parts.sort();
    parts.join(",")
}

/// `getSliceToFill`: the slice that would be closest to full with `n` more endpoints.
fn slice_to_fill(slices: &[EndpointSlice], n: usize) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, slice) in slices.iter().enumerate() {
        let total = n + slice.endpoints.len();
        if total > MAX_ENDPOINTS_PER_SLICE {
            continue;
        }
        let diff = MAX_ENDPOINTS_PER_SLICE - total;
        if best.is_none_or(|(_, d)| diff < d) {
            best = Some((i, diff));
            if diff == 0 {
                break;
            }
        }
    }
    best.map(|(i, _)| i)
}

/// `placeholderSliceCompare`: the same namespace, labels, owners, ports, endpoints and
/// address type, whatever the name.
fn same_placeholder(a: &EndpointSlice, b: &EndpointSlice) -> bool {
    let owners = |s: &EndpointSlice| -> Vec<OwnerReference> {
        s.metadata.owner_references.clone().unwrap_or_default()
    };
    a.metadata.namespace == b.metadata.namespace
        && a.metadata.labels.clone().unwrap_or_default()
            == b.metadata.labels.clone().unwrap_or_default()
        && owners(a) == owners(b)
        && a.ports.clone().unwrap_or_default() == b.ports.clone().unwrap_or_default()
        && a.endpoints == b.endpoints
        && a.address_type == b.address_type
}
