//! The simulated cluster against rein-testenv, over real HTTP: scheduling, the kubelet's Pod
//! life cycle, nodes and their Leases, and kubectl against it. One binary, grouped by area.

mod kubectl;
mod kubelet;
mod nodes;
mod scheduling;
mod support;
