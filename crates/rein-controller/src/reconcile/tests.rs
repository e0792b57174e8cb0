//! Unit tests for requests, actions and terminal errors.

use std::time::Duration;

use super::*;

#[derive(Debug, thiserror::Error)]
#[error("reconciling widget")]
struct Wrapper(#[source] TerminalError);

#[test]
fn terminal_error_is_found_through_the_source_chain() {
    let plain: BoxError = "boom".into();
    assert!(!is_terminal(&*plain));
    let terminal: BoxError = Box::new(TerminalError::new("bad spec"));
    assert!(is_terminal(&*terminal));
    let wrapped: BoxError = Box::new(Wrapper(TerminalError::new("bad spec")));
    assert!(is_terminal(&*wrapped));
    assert_eq!(TerminalError::new("x").inner().to_string(), "x");
}

#[test]
fn actions() {
    assert!(Action::done().is_zero());
    assert!(Action::requeue_after(Duration::ZERO).is_zero());
    let a = Action::requeue_after(Duration::from_secs(3)).with_priority(5);
    assert_eq!(a.requeue_after_duration(), Some(Duration::from_secs(3)));
    assert_eq!(a.priority(), Some(5));
    assert!(Action::requeue().is_requeue());
}

#[test]
fn requests_display_like_keys() {
    assert_eq!(Request::new("ns", "a").to_string(), "ns/a");
    assert_eq!(Request::cluster_scoped("n1").to_string(), "n1");
    assert_eq!(Request::new("ns", "a").namespace(), Some("ns"));
    assert_eq!(Request::cluster_scoped("n1").name(), "n1");
}
