//! controller-runtime's leader-election gauge, `leader_election_master_status{name}`.

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct Labels {
    name: String,
}

fn status() -> &'static Family<Labels, Gauge> {
    static STATUS: OnceLock<Family<Labels, Gauge>> = OnceLock::new();
    STATUS.get_or_init(|| {
        let family = Family::<Labels, Gauge>::default();
        rein_client::metrics::registry().lock().register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            family.clone(),
        );
        family
    })
}

/// Sets the gauge for lease `name`: 1 while this process leads, 0 otherwise.
pub(crate) fn set_leading(name: &str, leading: bool) {
    status()
        .get_or_create(&Labels {
            name: name.to_owned(),
        })
        .set(i64::from(leading));
}
