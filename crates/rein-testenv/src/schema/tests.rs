//! Unit tests of the schema module: validation messages, formats, pruning, defaulting, CEL
//! rules and the CRD-level schema checks.

use serde_json::{Value, json};

use super::{VersionSchema, crd_schema_causes};

fn schema(spec: Value) -> VersionSchema {
    VersionSchema::compile(&json!({"type": "object", "properties": {"spec": spec}}))
}

fn messages(s: &VersionSchema, spec: Value, old: Option<Value>) -> Vec<String> {
    let obj = json!({"spec": spec});
    let old = old.map(|o| json!({"spec": o}));
    s.validate(&obj, old.as_ref(), None)
        .iter()
        .map(|c| c.to_error_string())
        .collect()
}

#[test]
fn types_and_numbers_are_worded_like_kube_openapi() {
    let s = schema(json!({"type": "object", "properties": {
        "i": {"type": "integer", "minimum": 1, "maximum": 5, "exclusiveMaximum": true},
        "n": {"type": "number", "multipleOf": 2},
        "b": {"type": "boolean"},
    }}));
    assert_eq!(
        messages(&s, json!({"i": 1.5, "n": 3, "b": "yes"}), None),
        [
            "spec.b: Invalid value: \"string\": spec.b in body must be of type boolean: \"string\"",
            "spec.i: Invalid value: \"number\": spec.i in body must be of type integer: \"number\"",
            "spec.n: Invalid value: 3: spec.n in body should be a multiple of 2",
        ]
    );
    assert_eq!(
        messages(&s, json!({"i": 5, "n": 4.0}), None),
        ["spec.i: Invalid value: 5: spec.i in body should be less than 5"]
    );
    assert!(
        messages(&s, json!({"i": 2.0, "n": 4}), None).is_empty(),
        "2.0 is an integer"
    );
    assert_eq!(
        messages(&s, json!({"i": 0}), None),
        ["spec.i: Invalid value: 0: spec.i in body should be greater than or equal to 1"]
    );
}

#[test]
fn strings_count_characters_and_check_formats() {
    let s = schema(json!({"type": "object", "properties": {
        "s": {"type": "string", "minLength": 2, "maxLength": 3},
        "d": {"type": "string", "format": "date"},
        "t": {"type": "string", "format": "date-time"},
        "u": {"type": "string", "format": "uuid"},
        "b": {"type": "string", "format": "byte"},
        "ip": {"type": "string", "format": "ipv4"},
        "x": {"type": "string", "format": "no-such-format"},
        "i32": {"type": "integer", "format": "int32"},
    }}));
    assert!(
        messages(
            &s,
            json!({"s": "äöü", "d": "2024-02-29", "t": "2024-01-01T00:00:00Z", "u": "123e4567-e89b-12d3-a456-426614174000", "b": "aGk=", "ip": "10.0.0.1", "x": "anything", "i32": 1}),
            None
        )
        .is_empty()
    );
    assert_eq!(
        messages(
            &s,
            json!({"s": "äöüß", "d": "2024-02-30", "t": "noon", "u": "x", "b": "!!", "ip": "1.2.3"}),
            None
        ),
        [
            "spec.b: Invalid value: \"!!\": spec.b in body must be of type byte: \"!!\"",
            "spec.d: Invalid value: \"2024-02-30\": spec.d in body must be of type date: \"2024-02-30\"",
            "spec.ip: Invalid value: \"1.2.3\": spec.ip in body must be of type ipv4: \"1.2.3\"",
            "spec.s: Too long: may not be more than 3 bytes",
            "spec.t: Invalid value: \"noon\": spec.t in body must be of type date-time: \"noon\"",
            "spec.u: Invalid value: \"x\": spec.u in body must be of type uuid: \"x\"",
        ]
    );
}

#[test]
fn objects_arrays_and_composites() {
    let s = schema(json!({"type": "object", "minProperties": 1, "properties": {
        "list": {"type": "array", "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}}}},
        "one": {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
        "no": {"type": "string", "not": {"enum": ["bad"]}},
        "all": {"type": "string", "allOf": [{"minLength": 2}, {"pattern": "^a"}]},
        "nul": {"type": "string"},
        "ios": {"x-kubernetes-int-or-string": true, "maximum": 3},
    }}));
    assert_eq!(
        messages(&s, json!({}), None),
        ["spec: Invalid value: 0: spec in body should have at least 1 properties"]
    );
    assert!(messages(&s, json!({"ios": "80%"}), None).is_empty());
    assert_eq!(
        messages(&s, json!({"ios": 4}), None),
        ["spec.ios: Invalid value: 4: spec.ios in body should be less than or equal to 3"]
    );
    assert_eq!(
        messages(
            &s,
            json!({"list": [{"k": "a"}, {}], "one": 5, "no": "bad", "all": "b", "nul": null, "ios": null}),
            None
        ),
        [
            "spec.all: Invalid value: \"b\": spec.all in body should be at least 2 chars long",
            "spec.all: Invalid value: \"b\": spec.all in body should match '^a'",
            "<nil>: Invalid value: \"\": \"spec.all\" must validate all the schemas (allOf)",
            "spec.ios: Invalid value: \"null\": spec.ios in body must be of type integer,string: \"null\"",
            "spec.list[1].k: Required value",
            "<nil>: Invalid value: \"\": \"spec.no\" must not validate the schema (not)",
            "spec.nul: Invalid value: \"null\": spec.nul in body must be of type string: \"null\"",
            "<nil>: Invalid value: \"\": \"spec.one\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
        ]
    );
}

#[test]
fn pruning_keeps_declared_preserved_and_object_meta_fields() {
    let s = VersionSchema::compile(&json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "integer"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"typed": {"type": "object"}}},
            "res": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}},
            "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}}},
        }},
    }}));
    let mut obj = json!({
        "apiVersion": "g/v1", "kind": "K",
        "metadata": {"name": "n", "labels": {"a": "b"}, "junk": 1},
        "spec": {
            "a": "x", "b": "y",
            "m": {"k1": {"x": 1, "y": 2}},
            "free": {"any": [1], "typed": {"gone": true}},
            "res": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "junk": 1}, "spec": {}, "other": 1},
            "items": [{"n": "a", "o": 1}],
        },
        "top": true,
    });
    let mut pruned = s.prune(&mut obj);
    pruned.sort();
    assert_eq!(
        pruned,
        [
            "metadata.junk",
            "spec.b",
            "spec.free.typed.gone",
            "spec.items[0].o",
            "spec.m.k1.y",
            "spec.res.metadata.junk",
            "spec.res.other",
            "top",
        ]
    );
    assert_eq!(
        obj,
        json!({
            "apiVersion": "g/v1", "kind": "K",
            "metadata": {"name": "n", "labels": {"a": "b"}},
            "spec": {
                "a": "x",
                "m": {"k1": {"x": 1}},
                "free": {"any": [1], "typed": {}},
                "res": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
                "items": [{"n": "a"}],
            },
        })
    );
}

#[test]
fn defaults_fill_missing_and_non_nullable_nulls() {
    let s = schema(json!({"type": "object", "default": {}, "properties": {
        "a": {"type": "integer", "default": 3},
        "b": {"type": "string", "nullable": true, "default": "x"},
        "c": {"type": "string"},
        "nested": {"type": "object", "default": {}, "properties": {"d": {"type": "boolean", "default": true}}},
        "list": {"type": "array", "items": {"type": "object", "properties": {"e": {"type": "string", "default": "e"}}}},
    }}));
    let mut obj = json!({"spec": {"b": null, "c": null, "list": [{}, {"e": "set"}]}});
    s.default(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"a": 3, "b": null, "nested": {"d": true}, "list": [{"e": "e"}, {"e": "set"}]}})
    );
    let mut empty = json!({});
    s.default(&mut empty);
    assert_eq!(
        empty,
        json!({"spec": {"a": 3, "b": "x", "nested": {"d": true}}})
    );
}

#[test]
fn cel_rules_report_messages_reasons_and_transition_rules() {
    let s = schema(json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max", "fieldPath": ".min"},
            {"rule": "self.max == oldSelf.max", "message": "max is immutable", "reason": "FieldValueForbidden"},
            {"rule": "has(self.name) && self.name.startsWith('w')", "reason": "FieldValueRequired", "messageExpression": "'name must start with w, got ' + (has(self.name) ? self.name : 'nothing')"},
            {"rule": "self.tags.all(t, t.size() <= 3) && self.tags.exists(t, t == 'a') && self.tags.size() < 5"},
            {"rule": "self.name.matches('^[a-z]+$')"},
            {"rule": "self.tags.size() < 3", "reason": "FieldValueDuplicate"},
        ],
        "properties": {
            "min": {"type": "integer"}, "max": {"type": "integer"},
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "ratio": {"type": "number", "x-kubernetes-validations": [{"rule": "self < 1.5"}]},
        },
    }));
    let ok = json!({"min": 1, "max": 2, "name": "web", "tags": ["a"], "ratio": 1});
    assert!(messages(&s, ok.clone(), Some(ok.clone())).is_empty());
    assert_eq!(
        messages(
            &s,
            json!({"min": 3, "max": 2, "name": "Web9", "tags": ["long", "a", "b"], "ratio": 2}),
            None
        ),
        [
            "spec.min: Invalid value: min must not exceed max",
            "spec: Required value: name must start with w, got Web9",
            "spec: Invalid value: failed rule: self.tags.all(t, t.size() <= 3) && self.tags.exists(t, t == 'a') && self.tags.size() < 5",
            "spec: Invalid value: failed rule: self.name.matches('^[a-z]+$')",
            "spec: Duplicate value",
            "spec.ratio: Invalid value: 2: failed rule: self < 1.5",
        ]
    );
    assert_eq!(
        messages(
            &s,
            json!({"min": 1, "max": 3, "name": "web", "tags": ["a"]}),
            Some(ok)
        ),
        ["spec: Forbidden: max is immutable"]
    );
    // A runtime error is a cause, not a panic.
    let missing = messages(&s, json!({"max": 3, "name": "web", "tags": ["a"]}), None);
    assert_eq!(
        missing,
        [
            "spec: Invalid value: \"object\": no such key: min evaluating rule: min must not exceed max"
        ]
    );
}

#[test]
fn rules_that_do_not_compile_answer_compile_errors() {
    let s = schema(json!({"type": "object", "x-kubernetes-validations": [
        {"rule": "self.items.isSortedBy()"},
        {"rule": "self.a ==="},
        {"rule": "other > 1"},
    ]}));
    let got = messages(&s, json!({}), None);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got[0].starts_with(
            "spec: Invalid value: \"object\": rule compile error: compilation failed: ERROR: <input>:1:"
        ) && got[0].contains("undeclared reference to 'isSortedBy' (in container '')"),
        "{got:?}"
    );
    assert!(
        got[1].contains("rule compile error: compilation failed: ERROR"),
        "{got:?}"
    );
    assert!(
        got[2].contains("undeclared reference to 'other'"),
        "{got:?}"
    );
}

#[test]
fn crd_schema_checks_name_kube_apiservers_paths() {
    let causes = crd_schema_causes(
        1,
        &json!({"type": "object", "properties": {
            "spec": {"properties": {
                "list": {"type": "array"},
                "bad": {"type": "string", "pattern": "("},
                "tricky": {"type": "string", "anyOf": [{"type": "string", "default": "x"}]},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": false},
            },
            "x-kubernetes-validations": [
                {"rule": "self.size() > 1 && sorted(self)"},
                {"rule": ""},
                {"rule": "self.x > 1", "reason": "Nope"},
            ]},
        }}),
    );
    let got: Vec<String> = causes.iter().map(|c| c.to_error_string()).collect();
    let p = "spec.versions[1].schema.openAPIV3Schema.properties[spec]";
    for want in [
        format!("{p}.properties[list].items: Required value: must be specified"),
        format!("{p}.properties[tricky].anyOf[0].type: Forbidden: must be empty to be structural"),
        format!(
            "{p}.properties[tricky].anyOf[0].default: Forbidden: must be undefined to be structural"
        ),
        format!(
            "{p}.properties[free].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
        ),
        format!("{p}.type: Required value: must not be empty for specified object fields"),
        format!("{p}.x-kubernetes-validations[1].rule: Required value: rule is not specified"),
        format!(
            "{p}.x-kubernetes-validations[2].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
        ),
    ] {
        assert!(got.contains(&want), "{want} not in {got:#?}");
    }
    assert!(
        got.iter().any(|g| g.starts_with(&format!("{p}.properties[bad].pattern: Invalid value: \"(\": must be a valid regular expression, but isn't: "))),
        "{got:#?}"
    );
    let compile = got
        .iter()
        .find(|g| g.starts_with(&format!("{p}.x-kubernetes-validations[0].rule: ")))
        .expect("a compile error");
    assert!(
        compile.contains("Invalid value: apiextensions.ValidationRule{Rule:\"self.size() > 1 && sorted(self)\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:")
            && compile.contains("undeclared reference to 'sorted'"),
        "{compile}"
    );
    assert_eq!(
        crd_schema_causes(0, &json!({"type": "string"}))[0].to_error_string(),
        "spec.versions[0].schema.openAPIV3Schema.type: Invalid value: \"string\": must be object at the root"
    );
    assert!(crd_schema_causes(0, &json!({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-validations": [{"rule": "self.all(k, k.size() > 0)"}]}}})).is_empty());
}

#[test]
fn hostile_schemas_do_not_panic() {
    let mut deep = json!({"type": "object"});
    for _ in 0..500 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let s = VersionSchema::compile(&deep);
    let mut obj = json!({"a": {"a": {"a": 1}}});
    s.prune(&mut obj);
    s.default(&mut obj);
    let _ = s.validate(&obj, None, None);
    let odd = VersionSchema::compile(
        &json!({"type": 7, "properties": [], "items": "x", "pattern": "(", "x-kubernetes-validations": "no"}),
    );
    let _ = odd.validate(&json!({"x": 1}), None, None);
    let _ = crd_schema_causes(0, &json!("not an object"));
}

#[test]
fn kubernetes_list_and_regex_functions_work() {
    let s = schema(json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.nums.isSorted()", "message": "sorted"},
            {"rule": "self.nums.sum() < 10", "message": "sum"},
            {"rule": "self.nums.min() >= 0 && self.nums.max() <= 5", "message": "range"},
            {"rule": "self.nums.indexOf(2) == 1 && self.nums.lastIndexOf(9) == -1", "message": "index"},
            {"rule": "self.text.find('[0-9]+') == '42' && self.text.findAll('[a-z]').size() == 3 && self.text.findAll('[a-z]', 1) == ['a']", "message": "regex"},
            {"rule": "self.text.lowerAscii().startsWith('a') && self.text.contains('42') && size(self.text) == 5", "message": "strings"},
            {"rule": "self.nums.exists_one(n, n == 3) && self.nums.map(n, n * 2).filter(n, n > 2).size() == 2", "message": "macros"},
            {"rule": "duration(self.wait) < duration('1h') && timestamp(self.at).getFullYear() == 2024", "message": "time"},
            {"rule": "self.typedAt > timestamp('2024-01-01T00:00:00Z') && self.typedWait < duration('1h') && self.day.getFullYear() == 2024 && self.raw == b'hi'", "message": "typed"},
        ],
        "properties": {
            "nums": {"type": "array", "items": {"type": "integer"}},
            "text": {"type": "string"},
            "wait": {"type": "string"},
            "at": {"type": "string"},
            "typedAt": {"type": "string", "format": "date-time"},
            "typedWait": {"type": "string", "format": "duration"},
            "day": {"type": "string", "format": "date"},
            "raw": {"type": "string", "format": "byte"},
        },
    }));
    assert_eq!(
        messages(
            &s,
            json!({"nums": [1, 2, 3], "text": "ab42c", "wait": "30m", "at": "2024-05-01T10:00:00Z",
                "typedAt": "2024-05-01T10:00:00+02:00", "typedWait": "1m30.5s", "day": "2024-02-29", "raw": "aGk="}),
            None
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        messages(
            &s,
            json!({"nums": [3, 2, 9], "text": "xy1", "wait": "2h", "at": "2023-05-01T10:00:00Z",
                "typedAt": "2023-05-01T10:00:00Z", "typedWait": "2h", "day": "2023-01-01", "raw": "aGk="}),
            None
        ),
        [
            "spec: Invalid value: sorted",
            "spec: Invalid value: sum",
            "spec: Invalid value: range",
            "spec: Invalid value: index",
            "spec: Invalid value: regex",
            "spec: Invalid value: strings",
            "spec: Invalid value: macros",
            "spec: Invalid value: time",
            "spec: Invalid value: typed",
        ]
    );
}

#[test]
fn updates_ratchet_errors_on_unchanged_values() {
    let s = schema(json!({"type": "object", "required": ["must"],
        "x-kubernetes-validations": [{"rule": "self.n < 5", "message": "small"}],
        "properties": {
            "name": {"type": "string", "maxLength": 3},
            "n": {"type": "integer"},
            "list": {"type": "array", "items": {"type": "string", "maxLength": 1}},
            "must": {"type": "string"},
        },
    }));
    let old = json!({"name": "toolong", "n": 1, "list": ["xx"], "must": "x"});
    assert!(
        messages(
            &s,
            json!({"name": "toolong", "n": 2, "list": ["xx"], "must": "x"}),
            Some(old.clone())
        )
        .is_empty()
    );
    assert_eq!(
        messages(
            &s,
            json!({"name": "longer", "n": 2, "list": ["xx", "y"]}),
            Some(old.clone())
        ),
        [
            "spec.list[0]: Too long: may not be more than 1 bytes",
            "spec.name: Too long: may not be more than 3 bytes",
            "spec.must: Required value",
            "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
    let stored = json!({"name": "ok", "n": 9, "must": "x"});
    assert!(
        messages(&s, stored.clone(), Some(stored.clone())).is_empty(),
        "an unchanged rule failure ratchets"
    );
    assert_eq!(
        messages(&s, json!({"name": "ok", "n": 8, "must": "x"}), Some(stored)),
        ["spec: Invalid value: small"]
    );
}

#[test]
fn deep_or_huge_rules_are_answered_not_crashes() {
    let nested = format!("{}self.n == 5{}", "(".repeat(90), ")".repeat(90));
    let chain = format!("self.n == 0{}", " || self.n == 1".repeat(400));
    let sum = format!("{} == 3000", vec!["1"; 3000].join(" + "));
    let allowed = format!("{} == 240", vec!["1"; 240].join(" + "));
    let longest = format!("{} == 1", vec!["1"; 24_000].join("+(")) + &")".repeat(23_999);
    let huge = format!("'{}' == self.s", "x".repeat(100_001));
    let s = schema(json!({"type": "object", "x-kubernetes-validations": [
        {"rule": nested, "message": "nested"},
        {"rule": chain, "message": "chain"},
        {"rule": sum, "message": "sum"},
        {"rule": longest, "message": "longest"},
        {"rule": allowed, "message": "allowed"},
        {"rule": "self == self", "message": "deep value"},
        {"rule": huge, "message": "huge"},
    ]}));
    let mut deep = json!(1);
    for _ in 0..120 {
        deep = json!({"d": deep});
    }
    let got = messages(&s, json!({"n": 5, "s": "x", "deep": deep}), None);
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got[0], "spec: Invalid value: chain", "{got:?}");
    assert!(
        got.iter()
            .any(|g| g.contains("max recursion depth exceeded: 250")),
        "the 3000-term sum nests too deep: {got:?}"
    );
    assert!(
        got.last()
            .is_some_and(|g| g
                .contains("expression code point size exceeds limit: size: 100013, limit 100000")),
        "{got:?}"
    );
}

#[test]
fn embedded_resources_need_a_well_formed_api_version_and_kind() {
    let s = schema(json!({"type": "object", "properties": {
        "a": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        "b": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        "c": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
    }}));
    assert_eq!(
        messages(
            &s,
            json!({"a": {"kind": "Pod"}, "b": {"apiVersion": "a/b/c", "kind": "Bad_Kind"}, "c": {"apiVersion": 1, "kind": ""}}),
            None
        ),
        [
            "spec.a.apiVersion: Required value: must not be empty",
            "spec.b.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
            "spec.b.kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "spec.c.apiVersion: Invalid value: 1: must be a string",
            "spec.c.kind: Invalid value: \"\": must not be empty",
        ]
    );
}

#[test]
fn set_and_map_lists_refuse_duplicates() {
    let s = schema(json!({"type": "object", "properties": {
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        "pairs": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
            "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}},
    }}));
    assert_eq!(
        messages(
            &s,
            json!({
                "set": ["x", "y", "x", "x"],
                "ports": [{"name": "http", "port": 1}, {"name": "http", "port": 2}],
                "pairs": [{"a": "k", "b": 1}, {"a": "k", "b": 2}, {"a": "k", "b": 1}],
            }),
            None
        ),
        [
            "spec.pairs[2]: Duplicate value: map[string]interface {}{\"a\":\"k\", \"b\":1}",
            "spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"http\"}",
            "spec.set[2]: Duplicate value: \"x\"",
        ]
    );
    let old = json!({"set": ["x", "x"]});
    assert!(
        messages(&s, json!({"set": ["x", "x"], "ports": []}), Some(old)).is_empty(),
        "ratcheted"
    );
}

#[test]
fn optional_old_self_rules_run_on_create_too() {
    let s = schema(json!({"type": "object",
        "x-kubernetes-validations": [{
            "rule": "!oldSelf.hasValue() || self.v >= oldSelf.value().v",
            "optionalOldSelf": true,
            "message": "v may only grow",
        }, {
            "rule": "oldSelf.hasValue() || self.v < 10",
            "optionalOldSelf": true,
            "message": "start small",
        }],
        "properties": {"v": {"type": "integer"}},
    }));
    assert!(messages(&s, json!({"v": 1}), None).is_empty());
    assert_eq!(
        messages(&s, json!({"v": 11}), None),
        ["spec: Invalid value: start small"]
    );
    assert!(messages(&s, json!({"v": 12}), Some(json!({"v": 11}))).is_empty());
    assert_eq!(
        messages(&s, json!({"v": 3}), Some(json!({"v": 11}))),
        ["spec: Invalid value: v may only grow"]
    );
}

#[test]
fn scale_fields_must_be_non_negative_int32s() {
    let s = schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let paths = crate::resources::ScalePaths {
        spec_replicas: "/spec/replicas".to_string(),
        status_replicas: "/status/replicas".to_string(),
        label_selector: Some("/status/selector".to_string()),
    };
    let got: Vec<String> = s
        .validate(
            &json!({"spec": {"replicas": -1}, "status": {"replicas": "two", "selector": 3}}),
            None,
            Some(&paths),
        )
        .iter()
        .map(|c| c.to_error_string())
        .collect();
    assert_eq!(
        got,
        [
            ".spec.replicas: Invalid value: -1: should be a non-negative integer",
            ".status.replicas: Invalid value: 0: .status.replicas accessor error: two is of the type string, expected int64",
            ".status.selector: Invalid value: \"\": .status.selector accessor error: 3 is of the type int64, expected string",
        ]
    );
    let big = s.validate(
        &json!({"spec": {"replicas": 2147483648_i64}}),
        None,
        Some(&paths),
    );
    assert_eq!(
        big[0].to_error_string(),
        ".spec.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647"
    );
}

/// Compiles `source` as a rule is compiled and evaluates it with `self` = `value` and, when
/// given, `oldSelf` = `old` (already a CEL value: an optional for `optionalOldSelf` rules).
fn eval(source: &str, value: Value, old: Option<cel::Value>) -> Result<cel::Value, String> {
    let program = super::compile::compile(source)?;
    let mut ctx = cel::Context::with_env(super::compile::env().clone());
    ctx.add_variable_from_value("self", super::convert::to_cel(&value, None));
    if let Some(old) = old {
        ctx.add_variable_from_value("oldSelf", old);
    }
    program.execute(&ctx).map_err(|e| e.to_string())
}

fn optional(value: Option<Value>) -> cel::Value {
    let inner = match value {
        Some(v) => cel::objects::OptionalValue::of(super::convert::to_cel(&v, None)),
        None => cel::objects::OptionalValue::none(),
    };
    cel::Value::Opaque(std::sync::Arc::new(inner))
}

#[test]
fn optional_library_functions_compile_and_evaluate() {
    let obj = json!({"a": {"b": "x"}, "list": [1, 2], "empty": "", "zero": 0});
    for source in [
        // Constructors and accessors.
        "optional.of(1).hasValue()",
        "!optional.none().hasValue()",
        "optional.of(1).value() == 1",
        "optional.of('').hasValue()",
        "!optional.ofNonZeroValue('').hasValue()",
        "!optional.ofNonZeroValue(self.zero).hasValue()",
        "optional.ofNonZeroValue(self.a).value().b == 'x'",
        "optional.none().orValue(5) == 5",
        "optional.of(1).orValue(5) == 1",
        "optional.none().or(optional.of(2)).value() == 2",
        "optional.of(1).or(optional.of(2)).value() == 1",
        "!optional.none().or(optional.none()).hasValue()",
        "optional.of(1) == optional.of(1)",
        "optional.none() == optional.none()",
        "optional.of(1) != optional.none()",
        // The macros.
        "optional.of(41).optMap(v, v + 1).value() == 42",
        "!optional.none().optMap(v, v + 1).hasValue()",
        "optional.of(1).optFlatMap(v, optional.of(v * 3)).value() == 3",
        "!optional.of(1).optFlatMap(v, optional.none()).hasValue()",
        "!optional.none().optFlatMap(v, optional.of(v)).hasValue()",
        "self.?a.optMap(a, a.b).value() == 'x'",
        "self.?a.optFlatMap(a, a.?b).value() == 'x'",
        "!self.?a.optFlatMap(a, a.?missing).hasValue()",
        // Optional field selection and indexing.
        "self.?a.?b.value() == 'x'",
        "self.?a.b.value() == 'x'",
        "!self.?missing.hasValue()",
        "!self.?missing.?b.hasValue()",
        "self.?missing.b.orValue('d') == 'd'",
        "self.a[?'b'].value() == 'x'",
        "!self.a[?'c'].hasValue()",
        "self.list[?1].value() == 2",
        "!self.list[?5].hasValue()",
        "self[?'a'].?b.orValue('') == 'x'",
        // Optional entries of list and map literals.
        "[?self.?a.?b, ?self.?missing, 3] == ['x', 3]",
        "[?optional.of(1), ?optional.none()].size() == 1",
        "{?'k': self.?a.?b, ?'m': self.?missing}.size() == 1",
        "{?'k': optional.of(1)}['k'] == 1",
        // A variable named as the namespace does not hide its functions.
        "optional.of(3).optMap(optional, optional * 2).value() == 6",
        "type(optional.none()) == optional_type",
        "type(self.?a) == optional_type",
        // Inside comprehensions.
        "self.list.all(i, optional.of(i).optMap(v, v > 0).orValue(false))",
    ] {
        assert_eq!(
            eval(source, obj.clone(), None),
            Ok(cel::Value::Bool(true)),
            "{source}"
        );
    }
    assert_eq!(
        eval("optional.none().value() == 1", obj.clone(), None),
        Err("Error executing function 'value': optional.none() dereference".to_string())
    );
}

#[test]
fn opt_map_on_an_optional_old_self() {
    let rule = "oldSelf.optMap(o, o == self).orValue(true)";
    // Create: no old value, oldSelf is optional.none().
    assert_eq!(
        eval(rule, json!("a"), Some(optional(None))),
        Ok(cel::Value::Bool(true))
    );
    // Update: oldSelf is optional.of(old).
    assert_eq!(
        eval(rule, json!("a"), Some(optional(Some(json!("a"))))),
        Ok(cel::Value::Bool(true))
    );
    assert_eq!(
        eval(rule, json!("b"), Some(optional(Some(json!("a"))))),
        Ok(cel::Value::Bool(false))
    );
    assert_eq!(
        eval(
            "oldSelf.optFlatMap(o, o == self ? optional.none() : optional.of(o)).hasValue()",
            json!("b"),
            Some(optional(Some(json!("a"))))
        ),
        Ok(cel::Value::Bool(true))
    );
    assert_eq!(
        eval(
            "oldSelf.?v.orValue(0) <= self.v",
            json!({"v": 2}),
            Some(optional(Some(json!({"v": 1}))))
        ),
        Ok(cel::Value::Bool(true))
    );
    assert_eq!(
        eval(
            "oldSelf.?v.orValue(0) <= self.v",
            json!({"v": 2}),
            Some(optional(None))
        ),
        Ok(cel::Value::Bool(true))
    );
}

#[test]
fn optional_rules_in_a_schema_ratchet_on_old_self() {
    let s = schema(json!({"type": "object",
        "properties": {"name": {"type": "string", "x-kubernetes-validations": [{
            "rule": "oldSelf.optMap(o, o == self).orValue(true)",
            "optionalOldSelf": true,
            "message": "may not change once set",
        }]}},
    }));
    assert!(messages(&s, json!({"name": "a"}), None).is_empty());
    assert!(messages(&s, json!({"name": "a"}), Some(json!({"name": "a"}))).is_empty());
    // Absent before: oldSelf is none, so it may be set.
    assert!(messages(&s, json!({"name": "b"}), Some(json!({}))).is_empty());
    assert_eq!(
        messages(&s, json!({"name": "b"}), Some(json!({"name": "a"}))),
        ["spec.name: Invalid value: \"b\": may not change once set"]
    );
}

#[test]
fn undeclared_namespaced_functions_are_still_compile_errors() {
    for (source, name) in [
        ("optional.some(1).hasValue()", "some"),
        ("optional.of(1).hasValue() && other", "other"),
        ("optional.of(nope).hasValue()", "nope"),
        ("self.?a.optMap(v, w).hasValue()", "w"),
        ("optional.of(1).optMap(v, v).valueOr(1)", "valueOr"),
        ("optional == 1", "optional"),
    ] {
        let err = super::compile::compile(source).expect_err(source);
        assert!(
            err.starts_with("compilation failed: ERROR: <input>:1:")
                && err.contains(&format!(
                    "undeclared reference to '{name}' (in container '')"
                )),
            "{source}: {err}"
        );
    }
    let err = super::compile::compile("optional.of(1).optMap(1 + 1, 2).hasValue()")
        .expect_err("a macro's variable must be a name");
    assert!(err.contains("argument must be a simple name"), "{err}");
}

#[test]
fn optional_old_self_needs_a_rule_reading_old_self() {
    let p = "spec.versions[0].schema.openAPIV3Schema.properties[spec]";
    let got: Vec<String> = crd_schema_causes(
        0,
        &json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "oldSelf.optMap(o, o == self).orValue(true)", "optionalOldSelf": true},
                {"rule": "!oldSelf.hasValue() || oldSelf.value() == self", "optionalOldSelf": false},
                {"rule": "self.size() > 0", "optionalOldSelf": false},
                {"rule": "optional.of(self).hasValue()", "optionalOldSelf": true},
            ],
        }}}),
    )
    .iter()
    .map(|c| c.to_error_string())
    .collect();
    assert_eq!(
        got,
        [
            format!(
                "{p}.x-kubernetes-validations[2].optionalOldSelf: Invalid value: false: may not be set if oldSelf is not used in rule"
            ),
            format!(
                "{p}.x-kubernetes-validations[3].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
            ),
        ]
    );
}

#[test]
fn an_empty_optional_old_self_dereferenced_is_kubes_runtime_error() {
    let s = schema(json!({"type": "object",
        "properties": {"name": {"type": "string", "x-kubernetes-validations": [{
            "rule": "oldSelf.value() == self",
            "optionalOldSelf": true,
        }]}},
    }));
    assert_eq!(
        messages(&s, json!({"name": "a"}), None),
        [
            "spec.name: Invalid value: \"string\": optional.none() dereference evaluating rule: oldSelf.value() == self"
        ]
    );
    assert!(messages(&s, json!({"name": "a"}), Some(json!({"name": "a"}))).is_empty());
}
