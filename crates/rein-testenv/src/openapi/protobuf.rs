//! The Swagger 2.0 document in gnostic's protobuf form (`openapi.v2.Document` of
//! `github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto`), which kubectl asks for with
//! `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`.
//!
//! kube-openapi makes it by parsing the JSON document with gnostic's compiler and marshalling
//! the result; this walks the JSON document the same way: known keys become the message's
//! fields (written in field-number order, proto3 defaults left out), `x-` keys become
//! `NamedAny` vendor extensions whose `Any.yaml` holds the value as YAML, maps of named things
//! (paths, definitions, properties, responses) become repeated `Named*` pairs in document
//! order, and the `oneof`s are chosen as gnostic chooses them (`$ref` makes a `JsonReference`,
//! a parameter's `in` picks its sub-schema, `additionalProperties` is a schema or a boolean).

use serde_json::{Map, Value};

/// Encodes a Swagger 2.0 JSON document as an `openapi.v2.Document` message.
pub(crate) fn v2_document(doc: &Value) -> Vec<u8> {
    let Some(doc) = doc.as_object() else {
        return Vec::new();
    };
    let mut m = Msg::default();
    m.string(1, str_of(doc, "swagger"));
    if let Some(info) = obj_of(doc, "info") {
        m.message(2, info_message(info));
    }
    m.string(3, str_of(doc, "host"));
    m.string(4, str_of(doc, "basePath"));
    m.strings(5, doc.get("schemes"));
    m.strings(6, doc.get("consumes"));
    m.strings(7, doc.get("produces"));
    if let Some(paths) = obj_of(doc, "paths") {
        let mut p = Msg::default();
        vendor_extensions(&mut p, 1, paths);
        for (name, item) in paths.iter().filter(|(k, _)| k.starts_with('/')) {
            p.message(2, named(name, item.as_object().map(path_item)));
        }
        m.message(8, p);
    }
    if let Some(definitions) = obj_of(doc, "definitions") {
        m.message(9, named_schemas(definitions));
    }
    if let Some(parameters) = obj_of(doc, "parameters") {
        let mut p = Msg::default();
        for (name, param) in parameters {
            p.message(1, named(name, param.as_object().map(parameter)));
        }
        m.message(10, p);
    }
    if let Some(responses) = obj_of(doc, "responses") {
        let mut r = Msg::default();
        for (name, response) in responses {
            r.message(1, named(name, response.as_object().map(response_message)));
        }
        m.message(11, r);
    }
    security_requirements(&mut m, 12, doc.get("security"));
    if let Some(definitions) = obj_of(doc, "securityDefinitions") {
        let mut s = Msg::default();
        for (name, item) in definitions {
            s.message(1, named(name, item.as_object().map(security_definition)));
        }
        m.message(13, s);
    }
    for tag in doc
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(tag) = tag.as_object() {
            let mut t = Msg::default();
            t.string(1, str_of(tag, "name"));
            t.string(2, str_of(tag, "description"));
            external_docs(&mut t, 3, tag);
            vendor_extensions(&mut t, 4, tag);
            m.message(14, t);
        }
    }
    external_docs(&mut m, 15, doc);
    vendor_extensions(&mut m, 16, doc);
    m.0
}

/// One message being written.
#[derive(Debug, Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn key(&mut self, tag: u32, wire: u8) {
        self.varint((u64::from(tag) << 3) | u64::from(wire));
    }

    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.0.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        self.0.push(value as u8);
    }

    fn bytes(&mut self, tag: u32, bytes: &[u8]) {
        self.key(tag, 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    /// A `string` field; proto3 leaves the empty string out.
    fn string(&mut self, tag: u32, value: &str) {
        if !value.is_empty() {
            self.bytes(tag, value.as_bytes());
        }
    }

    /// A `repeated string` field from a JSON array.
    fn strings(&mut self, tag: u32, values: Option<&Value>) {
        for value in values.and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = value.as_str() {
                self.bytes(tag, s.as_bytes());
            }
        }
    }

    /// A `bool` field from a JSON boolean.
    fn boolean(&mut self, tag: u32, value: Option<&Value>) {
        if value.and_then(Value::as_bool) == Some(true) {
            self.key(tag, 0);
            self.varint(1);
        }
    }

    /// An `int64` field from a JSON number.
    fn int64(&mut self, tag: u32, value: Option<&Value>) {
        let n = value.and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)));
        if let Some(n) = n.filter(|n| *n != 0) {
            self.key(tag, 0);
            self.varint(n as u64);
        }
    }

    /// A `double` field from a JSON number.
    fn double(&mut self, tag: u32, value: Option<&Value>) {
        if let Some(f) = value.and_then(Value::as_f64).filter(|f| *f != 0.0) {
            self.key(tag, 1);
            self.0.extend_from_slice(&f.to_le_bytes());
        }
    }

    /// A nested message (written even when empty: it is set).
    fn message(&mut self, tag: u32, inner: Msg) {
        self.bytes(tag, &inner.0);
    }
}

fn str_of<'a>(obj: &'a Map<String, Value>, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

fn obj_of<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    obj.get(key).and_then(Value::as_object)
}

/// A `Named*` pair: the name, then the value's message when there is one.
fn named(name: &str, value: Option<Msg>) -> Msg {
    let mut pair = Msg::default();
    pair.string(1, name);
    if let Some(value) = value {
        pair.message(2, value);
    }
    pair
}

/// An `Any` holding `value` as YAML, as gnostic's `NewAny` stores it.
fn any(value: &Value) -> Msg {
    let mut a = Msg::default();
    let yaml = crate::yaml::to_string(value).unwrap_or_default();
    a.string(2, &yaml);
    a
}

/// The `x-` keys of `obj` as repeated `NamedAny` at `tag`.
fn vendor_extensions(m: &mut Msg, tag: u32, obj: &Map<String, Value>) {
    for (name, value) in obj.iter().filter(|(k, _)| k.starts_with("x-")) {
        m.message(tag, named(name, Some(any(value))));
    }
}

/// An `ExternalDocs` at `tag` when `obj` has `externalDocs`.
fn external_docs(m: &mut Msg, tag: u32, obj: &Map<String, Value>) {
    if let Some(docs) = obj_of(obj, "externalDocs") {
        let mut d = Msg::default();
        d.string(1, str_of(docs, "description"));
        d.string(2, str_of(docs, "url"));
        vendor_extensions(&mut d, 3, docs);
        m.message(tag, d);
    }
}

/// Repeated `SecurityRequirement` at `tag`: each a map of names to scope lists.
fn security_requirements(m: &mut Msg, tag: u32, security: Option<&Value>) {
    for requirement in security.and_then(Value::as_array).into_iter().flatten() {
        let mut r = Msg::default();
        for (name, scopes) in requirement.as_object().into_iter().flatten() {
            let mut array = Msg::default();
            array.strings(1, Some(scopes));
            r.message(1, named(name, Some(array)));
        }
        m.message(tag, r);
    }
}

fn info_message(info: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.string(1, str_of(info, "title"));
    m.string(2, str_of(info, "version"));
    m.string(3, str_of(info, "description"));
    m.string(4, str_of(info, "termsOfService"));
    if let Some(contact) = obj_of(info, "contact") {
        let mut c = Msg::default();
        c.string(1, str_of(contact, "name"));
        c.string(2, str_of(contact, "url"));
        c.string(3, str_of(contact, "email"));
        vendor_extensions(&mut c, 4, contact);
        m.message(5, c);
    }
    if let Some(license) = obj_of(info, "license") {
        let mut l = Msg::default();
        l.string(1, str_of(license, "name"));
        l.string(2, str_of(license, "url"));
        vendor_extensions(&mut l, 3, license);
        m.message(6, l);
    }
    vendor_extensions(&mut m, 7, info);
    m
}

fn path_item(item: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.string(1, str_of(item, "$ref"));
    for (tag, verb) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        if let Some(op) = obj_of(item, verb) {
            m.message(tag, operation(op));
        }
    }
    parameters_items(&mut m, 9, item.get("parameters"));
    vendor_extensions(&mut m, 10, item);
    m
}

fn operation(op: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.strings(1, op.get("tags"));
    m.string(2, str_of(op, "summary"));
    m.string(3, str_of(op, "description"));
    external_docs(&mut m, 4, op);
    m.string(5, str_of(op, "operationId"));
    m.strings(6, op.get("produces"));
    m.strings(7, op.get("consumes"));
    parameters_items(&mut m, 8, op.get("parameters"));
    if let Some(responses) = obj_of(op, "responses") {
        let mut r = Msg::default();
        for (code, response) in responses.iter().filter(|(k, _)| !k.starts_with("x-")) {
            let Some(response) = response.as_object() else {
                continue;
            };
            // ResponseValue: a JsonReference (2) for `$ref`, else a Response (1).
            let mut value = Msg::default();
            match response.get("$ref").and_then(Value::as_str) {
                Some(reference) => value.message(2, json_reference(reference, response)),
                None => value.message(1, response_message(response)),
            }
            r.message(1, named(code, Some(value)));
        }
        vendor_extensions(&mut r, 2, responses);
        m.message(9, r);
    }
    m.strings(10, op.get("schemes"));
    m.boolean(11, op.get("deprecated"));
    security_requirements(&mut m, 12, op.get("security"));
    vendor_extensions(&mut m, 13, op);
    m
}

fn json_reference(reference: &str, obj: &Map<String, Value>) -> Msg {
    let mut r = Msg::default();
    r.string(1, reference);
    r.string(2, str_of(obj, "description"));
    r
}

/// Repeated `ParametersItem`: a `JsonReference` (2) for `$ref`, else a `Parameter` (1).
fn parameters_items(m: &mut Msg, tag: u32, parameters: Option<&Value>) {
    for param in parameters.and_then(Value::as_array).into_iter().flatten() {
        let Some(param) = param.as_object() else {
            continue;
        };
        let mut item = Msg::default();
        match param.get("$ref").and_then(Value::as_str) {
            Some(reference) => item.message(2, json_reference(reference, param)),
            None => item.message(1, parameter(param)),
        }
        m.message(tag, item);
    }
}

/// A `Parameter`: a `BodyParameter` (1) when `in` is `body`, else a `NonBodyParameter` (2)
/// holding the sub-schema `in` names.
fn parameter(param: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    let location = str_of(param, "in");
    if location == "body" {
        let mut b = Msg::default();
        b.string(1, str_of(param, "description"));
        b.string(2, str_of(param, "name"));
        b.string(3, location);
        b.boolean(4, param.get("required"));
        if let Some(schema) = obj_of(param, "schema") {
            b.message(5, schema_message(schema));
        }
        vendor_extensions(&mut b, 6, param);
        m.message(1, b);
        return m;
    }
    // Header, path: no allowEmptyValue, so their later fields sit one tag lower.
    let (choice, allow_empty) = match location {
        "header" => (1, false),
        "formData" => (2, true),
        "query" => (3, true),
        _ => (4, false),
    };
    let mut s = Msg::default();
    s.boolean(1, param.get("required"));
    s.string(2, location);
    s.string(3, str_of(param, "description"));
    s.string(4, str_of(param, "name"));
    let next = if allow_empty {
        s.boolean(5, param.get("allowEmptyValue"));
        6
    } else {
        5
    };
    primitive_fields(&mut s, next, param);
    let mut non_body = Msg::default();
    non_body.message(choice, s);
    m.message(2, non_body);
    m
}

/// The run of fields the parameter sub-schemas, `PrimitivesItems` and `Header` share, from
/// `type` at `first` to the vendor extensions: `type, format, items, collectionFormat,
/// default, maximum, exclusiveMaximum, minimum, exclusiveMinimum, maxLength, minLength,
/// pattern, maxItems, minItems, uniqueItems, enum, multipleOf`, then (unless `Header`, whose
/// `description` comes first) the extensions.
fn primitive_fields(m: &mut Msg, first: u32, obj: &Map<String, Value>) {
    m.string(first, str_of(obj, "type"));
    m.string(first + 1, str_of(obj, "format"));
    if let Some(items) = obj_of(obj, "items") {
        m.message(first + 2, primitives_items(items));
    }
    m.string(first + 3, str_of(obj, "collectionFormat"));
    if let Some(default) = obj.get("default") {
        m.message(first + 4, any(default));
    }
    m.double(first + 5, obj.get("maximum"));
    m.boolean(first + 6, obj.get("exclusiveMaximum"));
    m.double(first + 7, obj.get("minimum"));
    m.boolean(first + 8, obj.get("exclusiveMinimum"));
    m.int64(first + 9, obj.get("maxLength"));
    m.int64(first + 10, obj.get("minLength"));
    m.string(first + 11, str_of(obj, "pattern"));
    m.int64(first + 12, obj.get("maxItems"));
    m.int64(first + 13, obj.get("minItems"));
    m.boolean(first + 14, obj.get("uniqueItems"));
    for value in obj
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(first + 15, any(value));
    }
    m.double(first + 16, obj.get("multipleOf"));
    vendor_extensions(m, first + 17, obj);
}

fn primitives_items(items: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    primitive_fields(&mut m, 1, items);
    m
}

fn response_message(response: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.string(1, str_of(response, "description"));
    if let Some(schema) = obj_of(response, "schema") {
        // SchemaItem: a FileSchema (2) for `type: file`, else a Schema (1).
        let mut item = Msg::default();
        if str_of(schema, "type") == "file" {
            let mut f = Msg::default();
            f.string(1, str_of(schema, "format"));
            f.string(2, str_of(schema, "title"));
            f.string(3, str_of(schema, "description"));
            if let Some(default) = schema.get("default") {
                f.message(4, any(default));
            }
            f.strings(5, schema.get("required"));
            f.string(6, "file");
            f.boolean(7, schema.get("readOnly"));
            external_docs(&mut f, 8, schema);
            if let Some(example) = schema.get("example") {
                f.message(9, any(example));
            }
            vendor_extensions(&mut f, 10, schema);
            item.message(2, f);
        } else {
            item.message(1, schema_message(schema));
        }
        m.message(2, item);
    }
    if let Some(headers) = obj_of(response, "headers") {
        let mut h = Msg::default();
        for (name, header) in headers {
            let value = header.as_object().map(|header| {
                let mut hm = Msg::default();
                // Header: the shared run without extensions, then description (18), then
                // the extensions (19).
                let mut plain = header.clone();
                plain.retain(|k, _| !k.starts_with("x-"));
                primitive_fields(&mut hm, 1, &plain);
                hm.string(18, str_of(header, "description"));
                vendor_extensions(&mut hm, 19, header);
                hm
            });
            h.message(1, named(name, value));
        }
        m.message(3, h);
    }
    if let Some(examples) = obj_of(response, "examples") {
        let mut e = Msg::default();
        for (name, value) in examples {
            e.message(1, named(name, Some(any(value))));
        }
        m.message(4, e);
    }
    vendor_extensions(&mut m, 5, response);
    m
}

/// `Definitions` or `Properties`: repeated `NamedSchema` at field 1.
fn named_schemas(schemas: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    for (name, schema) in schemas {
        m.message(1, named(name, schema.as_object().map(schema_message)));
    }
    m
}

fn schema_message(schema: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.string(1, str_of(schema, "$ref"));
    m.string(2, str_of(schema, "format"));
    m.string(3, str_of(schema, "title"));
    m.string(4, str_of(schema, "description"));
    if let Some(default) = schema.get("default") {
        m.message(5, any(default));
    }
    m.double(6, schema.get("multipleOf"));
    m.double(7, schema.get("maximum"));
    m.boolean(8, schema.get("exclusiveMaximum"));
    m.double(9, schema.get("minimum"));
    m.boolean(10, schema.get("exclusiveMinimum"));
    m.int64(11, schema.get("maxLength"));
    m.int64(12, schema.get("minLength"));
    m.string(13, str_of(schema, "pattern"));
    m.int64(14, schema.get("maxItems"));
    m.int64(15, schema.get("minItems"));
    m.boolean(16, schema.get("uniqueItems"));
    m.int64(17, schema.get("maxProperties"));
    m.int64(18, schema.get("minProperties"));
    m.strings(19, schema.get("required"));
    for value in schema
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(20, any(value));
    }
    match schema.get("additionalProperties") {
        Some(Value::Object(inner)) => {
            let mut a = Msg::default();
            a.message(1, schema_message(inner));
            m.message(21, a);
        }
        Some(Value::Bool(b)) => {
            let mut a = Msg::default();
            // A oneof member is written even when false.
            a.key(2, 0);
            a.varint(u64::from(*b));
            m.message(21, a);
        }
        _ => {}
    }
    match schema.get("type") {
        Some(Value::String(t)) => {
            let mut t_msg = Msg::default();
            t_msg.string(1, t);
            m.message(22, t_msg);
        }
        Some(types @ Value::Array(_)) => {
            let mut t_msg = Msg::default();
            t_msg.strings(1, Some(types));
            m.message(22, t_msg);
        }
        _ => {}
    }
    match schema.get("items") {
        Some(Value::Object(inner)) => {
            let mut i = Msg::default();
            i.message(1, schema_message(inner));
            m.message(23, i);
        }
        Some(Value::Array(list)) => {
            let mut i = Msg::default();
            for inner in list.iter().filter_map(Value::as_object) {
                i.message(1, schema_message(inner));
            }
            m.message(23, i);
        }
        _ => {}
    }
    for inner in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(inner) = inner.as_object() {
            m.message(24, schema_message(inner));
        }
    }
    if let Some(properties) = obj_of(schema, "properties") {
        m.message(25, named_schemas(properties));
    }
    m.string(26, str_of(schema, "discriminator"));
    m.boolean(27, schema.get("readOnly"));
    if let Some(xml) = obj_of(schema, "xml") {
        let mut x = Msg::default();
        x.string(1, str_of(xml, "name"));
        x.string(2, str_of(xml, "namespace"));
        x.string(3, str_of(xml, "prefix"));
        x.boolean(4, xml.get("attribute"));
        x.boolean(5, xml.get("wrapped"));
        vendor_extensions(&mut x, 6, xml);
        m.message(28, x);
    }
    external_docs(&mut m, 29, schema);
    if let Some(example) = schema.get("example") {
        m.message(30, any(example));
    }
    vendor_extensions(&mut m, 31, schema);
    m
}

fn security_definition(item: &Map<String, Value>) -> Msg {
    let mut inner = Msg::default();
    let kind = str_of(item, "type");
    let flow = str_of(item, "flow");
    let choice = match (kind, flow) {
        ("basic", _) => {
            inner.string(1, kind);
            inner.string(2, str_of(item, "description"));
            vendor_extensions(&mut inner, 3, item);
            1
        }
        ("apiKey", _) => {
            inner.string(1, kind);
            inner.string(2, str_of(item, "name"));
            inner.string(3, str_of(item, "in"));
            inner.string(4, str_of(item, "description"));
            vendor_extensions(&mut inner, 5, item);
            2
        }
        (_, flow) => {
            inner.string(1, kind);
            inner.string(2, flow);
            if let Some(scopes) = obj_of(item, "scopes") {
                let mut s = Msg::default();
                for (name, value) in scopes {
                    let mut pair = Msg::default();
                    pair.string(1, name);
                    pair.string(2, value.as_str().unwrap_or(""));
                    s.message(1, pair);
                }
                inner.message(3, s);
            }
            let mut next = 4;
            if matches!(flow, "implicit" | "accessCode") {
                inner.string(next, str_of(item, "authorizationUrl"));
                next += 1;
            }
            if flow != "implicit" {
                inner.string(next, str_of(item, "tokenUrl"));
                next += 1;
            }
            inner.string(next, str_of(item, "description"));
            vendor_extensions(&mut inner, next + 1, item);
            match flow {
                "implicit" => 3,
                "password" => 4,
                "application" => 5,
                _ => 6,
            }
        }
    };
    let mut m = Msg::default();
    m.message(choice, inner);
    m
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::v2_document;

    #[test]
    fn oneofs_and_extensions_encode_as_gnostic_marshals_them() {
        // Document{swagger: "2.0", definitions: {A: {additionalProperties: false}}, x-a: 1}:
        // the false boolean of the oneof is written; the extension's value is YAML.
        let doc = json!({
            "swagger": "2.0",
            "definitions": {"A": {"additionalProperties": false}},
            "x-a": 1,
        });
        let expected: &[u8] = &[
            0x0a, 0x03, b'2', b'.', b'0', // swagger = 1
            0x4a, 0x0c, // definitions = 9
            0x0a, 0x0a, // NamedSchema
            0x0a, 0x01, b'A', // name
            0x12, 0x05, // value: Schema
            0xaa, 0x01, 0x02, 0x10, 0x00, // additional_properties = 21 { boolean = 2: false }
            0x82, 0x01, 0x0b, // vendor_extension = 16
            0x0a, 0x03, b'x', b'-', b'a', // name
            0x12, 0x04, 0x12, 0x02, b'1', b'\n', // value: Any { yaml = 2: "1\n" }
        ];
        assert_eq!(v2_document(&doc), expected);
    }

    #[test]
    fn references_pick_the_json_reference_member() {
        let doc = json!({"paths": {"/x": {"parameters": [{"$ref": "#/parameters/p"}]}}});
        let mut expected = vec![
            0x42, 0x1c, // paths = 8
            0x12, 0x1a, // path = 2: NamedPathItem
            0x0a, 0x02, b'/', b'x', // name
            0x12, 0x14, // value: PathItem
            0x4a, 0x12, // parameters = 9: ParametersItem
            0x12, 0x10, // json_reference = 2
            0x0a, 0x0e, // _ref = 1
        ];
        expected.extend_from_slice(b"#/parameters/p");
        assert_eq!(v2_document(&doc), expected);
    }
}
