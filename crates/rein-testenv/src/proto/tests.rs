//! Tests of the protobuf decoder, on bodies encoded by a tiny test-only encoder.

use serde_json::json;

use super::{ProtoError, decode_body, special::go_duration};

/// A test-only protobuf writer.
#[derive(Default)]
struct Msg(Vec<u8>);

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Msg {
    fn int(mut self, tag: u32, v: i64) -> Msg {
        varint(&mut self.0, u64::from(tag) << 3);
        varint(&mut self.0, v as u64);
        self
    }
    fn bytes(mut self, tag: u32, b: &[u8]) -> Msg {
        varint(&mut self.0, (u64::from(tag) << 3) | 2);
        varint(&mut self.0, b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    fn str(self, tag: u32, s: &str) -> Msg {
        self.bytes(tag, s.as_bytes())
    }
    fn msg(self, tag: u32, m: Msg) -> Msg {
        self.bytes(tag, &m.0)
    }
    fn entry(self, tag: u32, k: &str, v: Msg) -> Msg {
        self.msg(tag, Msg::default().str(1, k).msg(2, v))
    }
    fn entry_str(self, tag: u32, k: &str, v: &str) -> Msg {
        self.msg(tag, Msg::default().str(1, k).str(2, v))
    }
}

fn envelope(api_version: &str, kind: &str, raw: Msg) -> Vec<u8> {
    let mut out = b"k8s\0".to_vec();
    let unknown = Msg::default()
        .msg(1, Msg::default().str(1, api_version).str(2, kind))
        .msg(2, raw)
        .str(3, "")
        .str(4, "");
    out.extend_from_slice(&unknown.0);
    out
}

/// ObjectMeta as Go writes it: every non-pointer field, zeros included.
fn meta(name: &str) -> Msg {
    Msg::default()
        .str(1, name)
        .str(2, "")
        .str(3, "default")
        .str(5, "")
        .str(6, "")
        .int(7, 0)
        .msg(8, Msg::default().int(1, 0).int(2, 0))
        .entry_str(11, "app", "web")
}

#[test]
fn configmap_with_maps_and_bytes() {
    let cm = Msg::default()
        .msg(1, meta("settings"))
        .entry_str(2, "mode", "fast")
        .entry(3, "blob", Msg::default())
        .msg(3, Msg::default().str(1, "bin").bytes(2, &[0, 1, 2]));
    let obj = decode_body(&envelope("v1", "ConfigMap", cm)).unwrap();
    assert_eq!(
        obj,
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "default", "labels": {"app": "web"}},
            "data": {"mode": "fast"},
            "binaryData": {"blob": "", "bin": "AAEC"},
        })
    );
}

#[test]
fn deployment_with_nested_lists_int_or_string_and_inline_structs() {
    let container = Msg::default()
        .str(1, "web")
        .str(2, "nginx:1.27")
        .msg(6, Msg::default().int(3, 8080).str(4, "TCP").str(1, "http"))
        .msg(
            19,
            Msg::default().msg(
                2,
                Msg::default().msg(1, Msg::default().str(1, "app-config")),
            ),
        )
        .msg(8, Msg::default())
        .int(18, 0);
    let strategy = Msg::default().str(1, "RollingUpdate").msg(
        2,
        Msg::default()
            .msg(1, Msg::default().int(1, 1).str(3, "25%"))
            .msg(2, Msg::default().int(1, 0).int(2, 2)),
    );
    let deployment = Msg::default().msg(1, meta("api")).msg(
        2,
        Msg::default().int(1, 3).msg(4, strategy).msg(
            3,
            Msg::default()
                .msg(1, Msg::default().msg(8, Msg::default()))
                .msg(2, Msg::default().msg(2, container).int(4, -1)),
        ),
    );
    let obj = decode_body(&envelope("apps/v1", "Deployment", deployment)).unwrap();
    assert_eq!(obj["spec"]["replicas"], json!(3));
    assert_eq!(
        obj["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 2}})
    );
    let c = &obj["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["name"], "web");
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 8080, "protocol": "TCP", "name": "http"}])
    );
    assert_eq!(
        c["envFrom"],
        json!([{"configMapRef": {"name": "app-config"}}])
    );
    assert_eq!(c["resources"], json!({}));
    assert_eq!(
        obj["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
        json!(-1)
    );
    assert_eq!(obj["spec"]["template"]["metadata"], json!({}));
}

#[test]
fn times_quantities_and_raw_extensions() {
    let event = Msg::default()
        .msg(1, meta("e").msg(8, Msg::default().int(1, 1_700_000_000)))
        .msg(2, Msg::default().str(1, "Pod"))
        .msg(10, Msg::default().int(1, 1_700_000_000).int(2, 123_456_000));
    let obj = decode_body(&envelope("v1", "Event", event)).unwrap();
    assert_eq!(
        obj["metadata"]["creationTimestamp"],
        json!("2023-11-14T22:13:20Z")
    );
    assert_eq!(obj["eventTime"], json!("2023-11-14T22:13:20.123456Z"));
    assert_eq!(obj["involvedObject"], json!({"kind": "Pod"}));
    let quota = Msg::default().msg(1, meta("q")).msg(
        2,
        Msg::default().entry(1, "cpu", Msg::default().str(1, "500m")),
    );
    let obj = decode_body(&envelope("v1", "ResourceQuota", quota)).unwrap();
    assert_eq!(obj["spec"]["hard"], json!({"cpu": "500m"}));
    let revision = Msg::default()
        .msg(1, meta("r"))
        .msg(2, Msg::default().bytes(1, br#"{"spec":{"x":1}}"#))
        .int(3, 2);
    let obj = decode_body(&envelope("apps/v1", "ControllerRevision", revision)).unwrap();
    assert_eq!(obj["data"], json!({"spec": {"x": 1}}));
    assert_eq!(obj["revision"], json!(2));
}

#[test]
fn bad_bodies_are_errors_not_panics() {
    assert!(matches!(decode_body(b"{}"), Err(ProtoError::Magic)));
    let mut truncated = envelope("v1", "ConfigMap", Msg::default().msg(1, meta("x")));
    truncated.truncate(truncated.len() - 3);
    assert!(decode_body(&truncated).is_err());
    assert!(matches!(
        decode_body(&envelope("example.com/v1", "Widget", Msg::default())),
        Err(ProtoError::UnknownKind { .. })
    ));
    let wrong_wire = Msg::default().int(1, 5);
    assert!(matches!(
        decode_body(&envelope("v1", "ConfigMap", wrong_wire)),
        Err(ProtoError::WireType { .. })
    ));
    let bad_utf8 = Msg::default().msg(1, Msg::default().bytes(1, &[0xff, 0xfe]));
    assert!(matches!(
        decode_body(&envelope("v1", "ConfigMap", bad_utf8)),
        Err(ProtoError::Utf8(_))
    ));
    for cut in 0..40 {
        let body = envelope("v1", "Secret", Msg::default().msg(1, meta("s")));
        let _ = decode_body(&body[..cut.min(body.len())]);
    }
}

#[test]
fn durations_print_like_go() {
    assert_eq!(go_duration(0), "0s");
    assert_eq!(go_duration(1_500_000_000), "1.5s");
    assert_eq!(go_duration(90_000_000_000), "1m30s");
    assert_eq!(go_duration(3_600_000_000_000), "1h0m0s");
    assert_eq!(go_duration(250_000_000), "250ms");
    assert_eq!(go_duration(-2_000_000_000), "-2s");
}

/// Random corruptions of a valid body never panic the decoder (they decode or fail cleanly).
#[test]
fn corrupted_bodies_never_panic() {
    use rand::{Rng, SeedableRng};
    let container = Msg::default().str(1, "web").str(2, "nginx");
    let pod = Msg::default()
        .msg(1, meta("p"))
        .msg(2, Msg::default().msg(2, container).int(4, 30));
    let body = envelope("v1", "Pod", pod);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for _ in 0..5_000 {
        let mut mutated = body.clone();
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(4..mutated.len());
            mutated[at] = rng.random();
        }
        let cut = rng.random_range(4..=mutated.len());
        let _ = decode_body(&mutated[..cut]);
    }
}

#[test]
fn an_explicit_zero_replicas_is_kept_but_zero_non_pointers_are_dropped() {
    let deployment = Msg::default()
        .msg(1, meta("d"))
        .msg(2, Msg::default().int(1, 0).int(5, 0));
    let obj = decode_body(&envelope("apps/v1", "Deployment", deployment)).unwrap();
    assert_eq!(obj["spec"], json!({"replicas": 0}));
}

/// A CRD whose schema nests `levels` deep through `allOf` (JSONSchemaProps is recursive, so
/// only the decoder's depth guard bounds how deep a hostile body goes).
fn crd_nested(levels: usize) -> Vec<u8> {
    let mut schema = Msg::default().str(5, "object");
    for _ in 0..levels {
        schema = Msg::default().msg(25, schema);
    }
    let version = Msg::default()
        .str(1, "v1")
        .int(2, 1)
        .msg(4, Msg::default().msg(1, schema));
    let spec = Msg::default().str(1, "example.com").msg(7, version);
    let crd = Msg::default()
        .msg(1, meta("things.example.com"))
        .msg(2, spec);
    envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd)
}

#[test]
fn hostile_nesting_is_refused_at_the_depth_guard_not_by_the_stack() {
    let shallow = decode_body(&crd_nested(40)).expect("40 levels decode");
    let mut schema = &shallow["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    for _ in 0..40 {
        schema = &schema["allOf"][0];
    }
    assert!(schema.is_object(), "the innermost schema is kept: {schema}");
    // Far past the guard (64 levels): an error, never a stack overflow.
    assert!(matches!(
        decode_body(&crd_nested(1_000)),
        Err(ProtoError::TooDeep)
    ));
}
