//! rein-multicluster against several rein-testenv servers in one process: providers, a
//! hub-to-member propagation controller, members added, removed and partitioned.

mod builder;
mod propagation;
mod providers;
mod sharding;
mod support;
