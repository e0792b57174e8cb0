//! Unit tests of leader-election configuration and the Lease record mapping.

use std::time::Duration;

use super::*;

fn config(lease: u64, renew: u64, retry: u64) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_millis(lease),
        renew_deadline: Duration::from_millis(renew),
        retry_period: Duration::from_millis(retry),
        ..LeaderElectionConfig::default()
    }
}

fn reason(config: &LeaderElectionConfig) -> &'static str {
    match config.validate() {
        Err(Error::InvalidConfig { reason }) => reason,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn defaults_are_valid_and_conventional() {
    let config = LeaderElectionConfig::default();
    config.validate().unwrap();
    assert_eq!(config.lease_duration, Duration::from_secs(15));
    assert_eq!(config.renew_deadline, Duration::from_secs(10));
    assert_eq!(config.retry_period, Duration::from_secs(2));
    assert_eq!(config.lease_duration_seconds(), 15);
    assert_eq!(config.request_timeout(), Duration::from_secs(5));
}

#[test]
fn validation_follows_client_go_order_and_messages() {
    assert_eq!(
        reason(&config(10_000, 10_000, 2_000)),
        "leaseDuration must be greater than renewDeadline"
    );
    assert_eq!(
        reason(&config(15_000, 2_400, 2_000)),
        "renewDeadline must be greater than retryPeriod*JitterFactor"
    );
    assert_eq!(
        reason(&config(15_000, 10_000, 0)),
        "retryPeriod must be greater than zero"
    );
    assert_eq!(
        reason(&config(900, 500, 100)),
        "leaseDuration must be at least one second (Leases store whole seconds)"
    );
    config(1_000, 500, 100).validate().unwrap();
}

#[test]
fn record_round_trips_through_a_lease_spec() {
    let record = LeaderElectionRecord {
        holder_identity: "a".into(),
        lease_duration_seconds: 15,
        leader_transitions: 3,
        ..LeaderElectionRecord::default()
    };
    let spec = record.to_spec();
    assert_eq!(spec.holder_identity.as_deref(), Some("a"));
    assert_eq!(spec.lease_transitions, Some(3));
    assert_eq!(LeaderElectionRecord::from_spec(&spec), record);
    assert_ne!(
        record.raw(),
        LeaderElectionRecord {
            leader_transitions: 4,
            ..record.clone()
        }
        .raw()
    );
}

#[test]
fn identities_are_unique() {
    let a = default_identity();
    let b = default_identity();
    assert_ne!(a, b);
    assert!(a.contains('_'), "{a}");
}

#[test]
fn acquire_retries_are_jittered_within_one_to_2_2_retry_periods() {
    let config = LeaderElectionConfig::default();
    assert_eq!(config.acquire_backoff(0.0), Duration::from_secs(2));
    assert_eq!(config.acquire_backoff(0.5), Duration::from_millis(3200));
    assert!(config.acquire_backoff(0.999_999) < Duration::from_millis(4400));
    assert_eq!(config.acquire_backoff(7.0), Duration::from_millis(4400));
}
