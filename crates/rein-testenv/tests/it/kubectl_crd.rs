//! The real kubectl against custom resources (issue 15): client-side and server-side apply,
//! diff, explain, get with printer columns, scale, and deprecated versions.

use serde_json::Value;

use super::kubectl::{Server, fixture};

/// A widget manifest with `replicas` and `tags`.
fn widget(name: &str, replicas: u32, tags: &[&str]) -> String {
    let tags: Vec<String> = tags.iter().map(|t| format!("\"{t}\"")).collect();
    format!(
        "apiVersion: serving.example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n  \
         replicas: {replicas}\n  size: large\n  tags: [{}]\n  ports:\n  - name: http\n    \
         port: 80\n",
        tags.join(", ")
    )
}

/// A server with the widget CRD applied and established.
fn server() -> Server {
    let server = Server::start();
    let out = server.ok(&["apply", "-f", &fixture("widget-crd.yaml")]);
    assert_eq!(
        out.trim(),
        "customresourcedefinition.apiextensions.k8s.io/widgets.serving.example.com created"
    );
    server.ok(&[
        "wait",
        "--for=condition=established",
        "crd/widgets.serving.example.com",
        "--timeout=30s",
    ]);
    server
}

fn managers(object: &Value) -> Vec<(String, String)> {
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or_default().to_string(),
                e["operation"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn client_side_apply_diff_and_explain() {
    let server = server();
    let out = server.ok_with_input(&["apply", "-f", "-"], Some(&widget("one", 1, &["a"])));
    assert_eq!(out.trim(), "widget.serving.example.com/one created");
    // A changed manifest: kubectl computes a JSON merge patch (the OpenAPI document offers
    // no strategic merge patch for custom resources).
    let out = server.ok_with_input(&["apply", "-f", "-"], Some(&widget("one", 2, &["a", "b"])));
    assert_eq!(out.trim(), "widget.serving.example.com/one configured");
    let one = server.json(&["get", "widget", "one"]);
    assert_eq!(one["spec"]["replicas"], 2);
    assert_eq!(one["spec"]["tags"], serde_json::json!(["a", "b"]));
    let out = server.ok_with_input(&["apply", "-f", "-"], Some(&widget("one", 2, &["a", "b"])));
    assert_eq!(out.trim(), "widget.serving.example.com/one unchanged");

    // diff: exit status 1 and a unified diff of the change; nothing stored.
    let output = server.run(&["diff", "-f", "-"], Some(&widget("one", 3, &["a", "b"])));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("-  replicas: 2"), "{stdout}");
    assert!(stdout.contains("+  replicas: 3"), "{stdout}");
    assert_eq!(
        server.json(&["get", "widget", "one"])["spec"]["replicas"],
        2
    );
    let same = server.run(&["diff", "-f", "-"], Some(&widget("one", 2, &["a", "b"])));
    assert_eq!(same.status.code(), Some(0));

    let explained = server.ok(&["explain", "widget.spec"]);
    for wanted in [
        "The desired widget.",
        "ports",
        "Named ports, a map keyed by name.",
    ] {
        assert!(explained.contains(wanted), "{wanted}: {explained}");
    }
    let explained = server.ok(&["explain", "widget.metadata.name"]);
    assert!(explained.contains("Name must be unique"), "{explained}");

    // The strategic merge patch kubectl can still be asked for is refused as the real server
    // refuses it.
    let refused = server.fails(&[
        "patch",
        "widget",
        "one",
        "--type=strategic",
        "-p",
        r#"{"spec":{"replicas":4}}"#,
    ]);
    assert!(
        refused.contains("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"),
        "{refused}"
    );
}

#[test]
fn server_side_apply_with_strict_validation() {
    let server = server();
    let out = server.ok_with_input(
        &["apply", "--server-side", "-f", "-"],
        Some(&widget("two", 1, &["a"])),
    );
    assert_eq!(
        out.trim(),
        "widget.serving.example.com/two serverside-applied"
    );
    let out = server.ok_with_input(
        &["apply", "--server-side", "-f", "-"],
        Some(&widget("two", 2, &["a", "c"])),
    );
    assert_eq!(
        out.trim(),
        "widget.serving.example.com/two serverside-applied"
    );
    let two = server.json(&["get", "widget", "two", "--show-managed-fields"]);
    assert_eq!(two["spec"]["replicas"], 2);
    assert_eq!(
        managers(&two),
        [("kubectl".to_string(), "Apply".to_string())]
    );
    let fields = &two["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    assert!(fields["f:tags"].get("v:\"c\"").is_some(), "{fields}");
    assert!(
        fields["f:ports"].get("k:{\"name\":\"http\"}").is_some(),
        "{fields}"
    );

    let bad = "apiVersion: serving.example.com/v1\nkind: Widget\nmetadata:\n  name: two\nspec:\n  colour: red\n";
    let output = server.run(&["apply", "--server-side", "-f", "-"], Some(bad));
    let stderr = String::from_utf8_lossy(&output.stderr);
    // As kube-apiserver: the configuration does not convert to the schema's type.
    assert!(
        !output.status.success()
            && stderr.contains("failed to create typed patch object")
            && stderr.contains(".spec.colour: field not declared in schema"),
        "{stderr}"
    );
}

#[test]
fn get_shows_printer_columns_and_scale_works() {
    let server = server();
    server.ok_with_input(&["apply", "-f", "-"], Some(&widget("one", 1, &[])));
    let out = server.ok(&["get", "widgets"]);
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(header, ["NAME", "REPLICAS", "SIZE", "READY", "AGE"]);
    // The Ready cell is null (no status yet): kubectl prints nothing for it.
    let row: Vec<&str> = lines.next().expect("a row").split_whitespace().collect();
    assert_eq!(row.len(), 4, "{out}");
    assert_eq!(row[..3], ["one", "1", "large"]);

    let wide = server.ok(&["get", "widgets", "-o", "wide"]);
    let header: Vec<&str> = wide
        .lines()
        .next()
        .expect("a header")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "REPLICAS", "SIZE", "READY", "PORT", "AGE"]);
    let row: Vec<&str> = wide
        .lines()
        .nth(1)
        .expect("a row")
        .split_whitespace()
        .collect();
    assert_eq!(row[..4], ["one", "1", "large", "80"], "{wide}");

    let out = server.ok(&["scale", "widget", "one", "--replicas=4"]);
    assert_eq!(out.trim(), "widget.serving.example.com/one scaled");
    assert_eq!(
        server.json(&["get", "widget", "one"])["spec"]["replicas"],
        4
    );
    let row = server.ok(&["get", "widget", "one", "--no-headers"]);
    assert_eq!(row.split_whitespace().nth(1), Some("4"), "{row}");
}

#[test]
fn deprecated_versions_warn() {
    let server = server();
    let output = server.run(&["get", "widgets.v1beta1.serving.example.com"], None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "Warning: serving.example.com/v1beta1 Widget is deprecated; use serving.example.com/v1 Widget"
        ),
        "{stderr}"
    );
    let current = server.run(&["get", "widgets"], None);
    assert!(
        !String::from_utf8_lossy(&current.stderr).contains("deprecated"),
        "v1 is not deprecated"
    );
}
