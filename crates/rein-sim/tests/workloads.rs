//! The workload controllers (ReplicaSet, Deployment, Job, EndpointSlice) against
//! rein-testenv: each test starts an API server and a simulated cluster on it (nodes,
//! scheduler, kubelet and the controllers), creates workloads with a plain kube client and
//! waits, with a deadline, for what kube-controller-manager would make of them.

#[path = "workloads/support.rs"]
mod support;

#[path = "workloads/cronjob.rs"]
mod cronjob;
#[path = "workloads/daemonset.rs"]
mod daemonset;
#[path = "workloads/deployment.rs"]
mod deployment;
#[path = "workloads/endpointslice.rs"]
mod endpointslice;
#[path = "workloads/job.rs"]
mod job;
#[path = "workloads/replicaset.rs"]
mod replicaset;
#[path = "workloads/statefulset.rs"]
mod statefulset;
