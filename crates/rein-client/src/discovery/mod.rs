//! `DiscoveryClient`: what groups, versions and resources the API server serves, and REST
//! mappings for kinds the scheme does not know.

#[cfg(test)]
mod tests;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube_client::core::discovery::v2::APIGroupDiscovery;
use rein_scheme::{
    GroupVersion, GroupVersionKind, GroupVersionResource, RestMapper, RestMapping, Scope,
};

use crate::Error;

/// One resource the server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedResource {
    /// Kind, resource and scope.
    pub mapping: RestMapping,
    /// The verbs it supports (`get`, `list`, `watch`, …).
    pub verbs: Vec<String>,
    /// Its sub-resources (`status`, `scale`, …).
    pub subresources: Vec<String>,
    /// Short names (`po`, `deploy`).
    pub short_names: Vec<String>,
}

/// Asks the API server what it serves (client-go's discovery client).
#[derive(Clone)]
pub struct DiscoveryClient {
    kube: kube_client::Client,
}

impl std::fmt::Debug for DiscoveryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveryClient").finish_non_exhaustive()
    }
}

impl DiscoveryClient {
    /// A discovery client over a kube-client.
    pub fn new(kube: kube_client::Client) -> Self {
        Self { kube }
    }

    /// Every group/version served, core (`v1`) first, preferred versions first within a group.
    pub async fn server_group_versions(&self) -> Result<Vec<GroupVersion>, Error> {
        let action = "discovering the served API groups";
        let core = self
            .kube
            .list_core_api_versions()
            .await
            .map_err(|e| Error::from_kube(action, e))?;
        let mut out: Vec<GroupVersion> = core
            .versions
            .iter()
            .map(|v| GroupVersion::new("", v))
            .collect();
        let groups = self
            .kube
            .list_api_groups()
            .await
            .map_err(|e| Error::from_kube(action, e))?;
        for group in groups.groups {
            let preferred = group.preferred_version.as_ref().map(|p| p.version.clone());
            let mut versions: Vec<String> =
                group.versions.iter().map(|v| v.version.clone()).collect();
            versions.sort_by_key(|v| Some(v) != preferred.as_ref());
            out.extend(
                versions
                    .into_iter()
                    .map(|v| GroupVersion::new(&group.name, v)),
            );
        }
        Ok(out)
    }

    /// The resources of one group/version.
    pub async fn server_resources_for(
        &self,
        gv: &GroupVersion,
    ) -> Result<Vec<ServedResource>, Error> {
        let action = format!("discovering the resources of {gv}");
        let list = if gv.group.is_empty() {
            self.kube.list_core_api_resources(&gv.version).await
        } else {
            self.kube.list_api_group_resources(&gv.api_version()).await
        }
        .map_err(|e| Error::from_kube(action, e))?;
        Ok(resources_of(gv, &list))
    }

    /// Every resource of every served group/version: from aggregated discovery (two requests,
    /// `/api` and `/apis`, as client-go asks since Kubernetes 1.30), or, when the server does
    /// not answer it, from the legacy documents (one request per group/version).
    pub async fn server_resources(&self) -> Result<Vec<ServedResource>, Error> {
        match self.server_resources_aggregated().await {
            Ok(resources) => Ok(resources),
            Err(err) => {
                tracing::debug!(error = %err, "aggregated discovery failed; using the legacy documents");
                self.server_resources_legacy().await
            }
        }
    }

    /// Every resource of every served group/version from aggregated discovery
    /// (`apidiscovery.k8s.io/v2`); fails when the server does not serve it.
    pub async fn server_resources_aggregated(&self) -> Result<Vec<ServedResource>, Error> {
        let action = "reading aggregated discovery";
        let core = self
            .kube
            .list_core_api_versions_aggregated()
            .await
            .map_err(|e| Error::from_kube(action, e))?;
        let groups = self
            .kube
            .list_api_groups_aggregated()
            .await
            .map_err(|e| Error::from_kube(action, e))?;
        // A server without aggregated discovery answers the legacy documents (the request
        // accepts them too), which decode as empty lists: every server serves core `v1`.
        if core.items.is_empty() {
            return Err(Error::NotServed {
                action: action.to_owned(),
                gvk: GroupVersionKind::new("apidiscovery.k8s.io", "v2", "APIGroupDiscoveryList"),
            });
        }
        Ok(core
            .items
            .iter()
            .chain(groups.items.iter())
            .flat_map(aggregated_resources)
            .collect())
    }

    /// Every resource of every served group/version from the legacy documents.
    pub async fn server_resources_legacy(&self) -> Result<Vec<ServedResource>, Error> {
        let mut out = Vec::new();
        for gv in self.server_group_versions().await? {
            out.extend(self.server_resources_for(&gv).await?);
        }
        Ok(out)
    }

    /// Every GVR served.
    pub async fn server_gvrs(&self) -> Result<Vec<GroupVersionResource>, Error> {
        Ok(self
            .server_resources()
            .await?
            .into_iter()
            .map(|r| r.mapping.gvr)
            .collect())
    }

    /// The REST mapping of a kind, from its group/version's resource list; also records
    /// every mapping of that group/version in `mapper`.
    pub async fn mapping_for(
        &self,
        gvk: &GroupVersionKind,
        mapper: &RestMapper,
    ) -> Result<RestMapping, Error> {
        let resources = self.server_resources_for(&gvk.group_version()).await;
        let resources = match resources {
            Ok(r) => r,
            Err(e) if e.is_not_found() => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut found = None;
        for r in resources {
            if &r.mapping.gvk == gvk {
                found = Some(r.mapping.clone());
            }
            mapper.add(r.mapping);
        }
        found.ok_or_else(|| Error::NotServed {
            action: format!("mapping kind {gvk} to a resource"),
            gvk: gvk.clone(),
        })
    }

    /// The REST mapping of a resource collection (kind and scope), from discovery.
    pub async fn mapping_for_resource(
        &self,
        gvr: &GroupVersionResource,
        mapper: &RestMapper,
    ) -> Result<RestMapping, Error> {
        let resources = self.server_resources_for(&gvr.group_version()).await?;
        let mut found = None;
        for r in resources {
            if &r.mapping.gvr == gvr {
                found = Some(r.mapping.clone());
            }
            mapper.add(r.mapping);
        }
        found.ok_or_else(|| Error::NotServed {
            action: format!("mapping resource {gvr} to a kind"),
            gvk: GroupVersionKind::new(&gvr.group, &gvr.version, ""),
        })
    }
}

/// The resources of one group of an aggregated discovery document.
fn aggregated_resources(group: &APIGroupDiscovery) -> Vec<ServedResource> {
    let name = group
        .metadata
        .as_ref()
        .and_then(|m| m.name.clone())
        .unwrap_or_default();
    let mut out = Vec::new();
    for version in &group.versions {
        let Some(v) = version.version.as_deref() else {
            continue;
        };
        for r in &version.resources {
            let Some(resource) = r.resource.as_deref() else {
                continue;
            };
            let kind = r.response_kind.as_ref();
            let gvk = GroupVersionKind::new(
                kind.and_then(|k| k.group.as_deref())
                    .filter(|g| !g.is_empty())
                    .unwrap_or(&name),
                kind.and_then(|k| k.version.as_deref())
                    .filter(|v| !v.is_empty())
                    .unwrap_or(v),
                kind.and_then(|k| k.kind.as_deref()).unwrap_or_default(),
            );
            out.push(ServedResource {
                mapping: RestMapping {
                    gvk,
                    gvr: GroupVersionResource::new(&name, v, resource),
                    scope: if r.scope.as_deref() == Some("Namespaced") {
                        Scope::Namespaced
                    } else {
                        Scope::Cluster
                    },
                },
                verbs: r.verbs.clone(),
                subresources: r
                    .subresources
                    .iter()
                    .filter_map(|s| s.subresource.clone())
                    .collect(),
                short_names: r.short_names.clone(),
            });
        }
    }
    out
}

fn resources_of(gv: &GroupVersion, list: &APIResourceList) -> Vec<ServedResource> {
    let mut out: Vec<ServedResource> = Vec::new();
    for r in &list.resources {
        if let Some((parent, sub)) = r.name.split_once('/') {
            if let Some(p) = out.iter_mut().find(|p| p.mapping.gvr.resource == parent) {
                p.subresources.push(sub.to_owned());
            }
            continue;
        }
        let group = r
            .group
            .clone()
            .filter(|g| !g.is_empty())
            .unwrap_or_else(|| gv.group.clone());
        let version = r
            .version
            .clone()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| gv.version.clone());
        out.push(ServedResource {
            mapping: RestMapping {
                gvk: GroupVersionKind::new(&group, &version, &r.kind),
                gvr: GroupVersionResource::new(&group, &version, &r.name),
                scope: if r.namespaced {
                    Scope::Namespaced
                } else {
                    Scope::Cluster
                },
            },
            verbs: r.verbs.clone(),
            subresources: Vec::new(),
            short_names: r.short_names.clone().unwrap_or_default(),
        });
    }
    out
}
