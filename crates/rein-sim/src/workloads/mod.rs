//! The workload controllers of the simulated cluster: ReplicaSet, Deployment, Job,
//! EndpointSlice, DaemonSet, StatefulSet and the PersistentVolume binder with a simulated
//! provisioner, written as kube-controller-manager's are (`pkg/controller/{replicaset,
//! deployment,job,endpointslice,daemon,statefulset,volume/persistentvolume}`, with
//! `pkg/controller/history` for ControllerRevisions), on rein's manager, controllers and
//! shared cache. Each watches its kind and the objects it owns, and writes the status fields,
//! conditions, annotations and events kube's writes, so kubectl (`rollout status`,
//! `wait --for=condition=complete`) works against them.

pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod endpointslice;
pub mod job;
pub mod persistentvolume;
pub mod replicaset;
pub mod statefulset;

mod claim;
mod error;
mod intstr;
mod podcontrol;
mod pods;
mod revision;

use rein_controller::ControllerOptions;

pub(crate) use error::Error;

/// Adds every workload controller to `mgr` (the simulated cluster calls this once, before it
/// starts the manager).
pub fn add_all(mgr: &rein_manager::Manager) -> Result<(), rein_controller::BuildError> {
    replicaset::add(mgr)?;
    deployment::add(mgr)?;
    job::add(mgr)?;
    cronjob::add(mgr)?;
    endpointslice::add(mgr)?;
    daemonset::add(mgr)?;
    statefulset::add(mgr)?;
    persistentvolume::add(mgr)?;
    Ok(())
}

/// The options of every workload controller: kube-controller-manager's five concurrent syncs
/// (`--concurrent-replicaset-syncs` and friends). Names are unique per manager, so a process
/// (a test binary) may run several simulated clusters, each with its own controllers of the
/// same names.
fn controller_options() -> ControllerOptions {
    ControllerOptions {
        max_concurrent_reconciles: 5,
        ..ControllerOptions::default()
    }
}
