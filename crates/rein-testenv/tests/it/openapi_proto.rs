//! `/openapi/v2` in gnostic's protobuf form (`openapi.v2.Document`), as kubectl asks for it,
//! decoded here with a wire-format reader of the test's own; ETag, 304 and 406 as
//! kube-openapi answers.

use std::collections::BTreeMap;

use http::header;
use rein_testenv::TestEnv;

const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// One field's value on the wire.
#[derive(Debug, Clone)]
enum Field {
    Varint(u64),
    Bytes(Vec<u8>),
}

/// A message's fields by tag, in wire order.
fn fields(mut bytes: &[u8]) -> BTreeMap<u64, Vec<Field>> {
    fn varint(bytes: &mut &[u8]) -> u64 {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let (byte, rest) = bytes.split_first().expect("varint is truncated");
            *bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return value;
            }
        }
        panic!("varint too long");
    }
    let mut out: BTreeMap<u64, Vec<Field>> = BTreeMap::new();
    while !bytes.is_empty() {
        let key = varint(&mut bytes);
        let field = match key & 7 {
            0 => Field::Varint(varint(&mut bytes)),
            1 => {
                let (value, rest) = bytes.split_at(8);
                bytes = rest;
                Field::Bytes(value.to_vec())
            }
            2 => {
                let len = usize::try_from(varint(&mut bytes)).expect("length fits");
                let (value, rest) = bytes.split_at(len);
                bytes = rest;
                Field::Bytes(value.to_vec())
            }
            other => panic!("unexpected wire type {other}"),
        };
        out.entry(key >> 3).or_default().push(field);
    }
    out
}

fn bytes_at(message: &BTreeMap<u64, Vec<Field>>, tag: u64) -> Vec<Vec<u8>> {
    message
        .get(&tag)
        .into_iter()
        .flatten()
        .filter_map(|f| match f {
            Field::Bytes(b) => Some(b.clone()),
            Field::Varint(_) => None,
        })
        .collect()
}

fn string_at(message: &BTreeMap<u64, Vec<Field>>, tag: u64) -> String {
    bytes_at(message, tag)
        .first()
        .map(|b| String::from_utf8(b.clone()).expect("utf-8"))
        .unwrap_or_default()
}

/// The `Named*` pairs (name = 1, value = 2) at `tag`, by name.
fn named(message: &BTreeMap<u64, Vec<Field>>, tag: u64) -> BTreeMap<String, Vec<u8>> {
    bytes_at(message, tag)
        .iter()
        .map(|pair| {
            let pair = fields(pair);
            (
                string_at(&pair, 1),
                bytes_at(&pair, 2).pop().unwrap_or_default(),
            )
        })
        .collect()
}

async fn get(env: &TestEnv, path: &str, headers: &[(&str, &str)]) -> http::Response<Vec<u8>> {
    let mut request = http::Request::get(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let resp = env
        .client()
        .send(request.body(Vec::new()).expect("request").map(Into::into))
        .await
        .expect("sends");
    let (parts, body) = resp.into_parts();
    let bytes = http_body_util::BodyExt::collect(body)
        .await
        .expect("reads")
        .to_bytes();
    http::Response::from_parts(parts, bytes.to_vec())
}

#[tokio::test]
async fn v2_protobuf_decodes_as_gnostic_document() {
    let env = TestEnv::start().await.expect("starts");
    let resp = get(&env, "/openapi/v2", &[("accept", PROTOBUF)]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()[header::CONTENT_TYPE],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    let doc = fields(resp.body());
    assert_eq!(string_at(&doc, 1), "2.0");
    let info = fields(&bytes_at(&doc, 2)[0]);
    assert_eq!(string_at(&info, 1), "Kubernetes");

    // definitions (9) → NamedSchema; the Pod schema's type (22), properties (25), and its
    // x-kubernetes-group-version-kind extension (31) as YAML.
    let definitions = named(&fields(&bytes_at(&doc, 9)[0]), 1);
    let pod = fields(&definitions["io.k8s.api.core.v1.Pod"]);
    let kind = fields(&bytes_at(&pod, 22)[0]);
    assert_eq!(string_at(&kind, 1), "object");
    let properties = named(&fields(&bytes_at(&pod, 25)[0]), 1);
    let spec = fields(&properties["spec"]);
    assert_eq!(
        string_at(&spec, 1),
        "#/definitions/io.k8s.api.core.v1.PodSpec"
    );
    let extensions = named(&pod, 31);
    let gvk = fields(&extensions["x-kubernetes-group-version-kind"]);
    let yaml: serde_json::Value = serde_saphyr::from_str(&string_at(&gvk, 2)).expect("yaml");
    assert_eq!(yaml[0]["kind"], "Pod");
    assert_eq!(yaml[0]["version"], "v1");

    // A map-valued schema: additionalProperties (21) holds a Schema (1).
    let meta = fields(&definitions["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]);
    let meta_properties = named(&fields(&bytes_at(&meta, 25)[0]), 1);
    let labels = fields(&meta_properties["labels"]);
    let additional = fields(&bytes_at(&labels, 21)[0]);
    let value_schema = fields(&bytes_at(&additional, 1)[0]);
    assert_eq!(
        string_at(&fields(&bytes_at(&value_schema, 22)[0]), 1),
        "string"
    );

    // paths (8) → NamedPathItem (2); GET (2) of the pod list names its operation (5) and
    // carries parameters (8), a query parameter as NonBodyParameter (2) → query (3).
    let paths = named(&fields(&bytes_at(&doc, 8)[0]), 2);
    let pods = fields(&paths["/api/v1/namespaces/{namespace}/pods"]);
    let list = fields(&bytes_at(&pods, 2)[0]);
    assert_eq!(string_at(&list, 5), "listCoreV1NamespacedPod");
    let pod_path = fields(&paths["/api/v1/namespaces/{namespace}/pods/{name}"]);
    let patch = fields(&bytes_at(&pod_path, 8)[0]);
    let mut query_names = Vec::new();
    let mut body_names = Vec::new();
    for item in bytes_at(&patch, 8) {
        let parameter = fields(&bytes_at(&fields(&item), 1)[0]);
        if let Some(body) = bytes_at(&parameter, 1).pop() {
            let body = fields(&body);
            body_names.push(string_at(&body, 2));
            // required (4) is a bool: varint 1.
            assert!(matches!(
                body.get(&4).map(Vec::as_slice),
                Some([Field::Varint(1)])
            ));
        }
        if let Some(non_body) = bytes_at(&parameter, 2).pop()
            && let Some(query) = bytes_at(&fields(&non_body), 3).pop()
        {
            query_names.push(string_at(&fields(&query), 4));
        }
    }
    assert!(
        query_names.iter().any(|n| n == "fieldValidation"),
        "query parameters: {query_names:?}"
    );
    assert_eq!(body_names, ["body"]);
}

#[tokio::test]
async fn v2_etag_not_modified_and_not_acceptable() {
    let env = TestEnv::start().await.expect("starts");
    let json = get(&env, "/openapi/v2", &[]).await;
    assert_eq!(json.status(), 200);
    assert_eq!(json.headers()[header::CONTENT_TYPE], "application/json");
    let etag = json.headers()[header::ETAG]
        .to_str()
        .expect("ascii")
        .to_string();
    assert!(etag.starts_with('"') && etag.len() == 130, "etag {etag}");
    assert_eq!(json.headers()[header::VARY], "Accept");

    // The protobuf form shares the JSON form's ETag.
    let proto = get(&env, "/openapi/v2", &[("accept", PROTOBUF)]).await;
    assert_eq!(proto.headers()[header::ETAG], etag.as_str());
    let cached = get(
        &env,
        "/openapi/v2",
        &[("accept", PROTOBUF), ("if-none-match", &etag)],
    )
    .await;
    assert_eq!(cached.status(), 304);
    assert!(cached.body().is_empty());

    let refused = get(&env, "/openapi/v2", &[("accept", "text/html")]).await;
    assert_eq!(refused.status(), 406);
    let v3 = get(
        &env,
        "/openapi/v3/api/v1",
        &[("accept", "application/json")],
    )
    .await;
    assert_eq!(v3.status(), 200);
    assert!(v3.headers().contains_key(header::ETAG));
}
