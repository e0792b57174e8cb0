#!/usr/bin/env python3
"""Fidelity sweep: the official Kubernetes Python client against a running API server.

Exercises what operators do through `kubernetes` (typed APIs, CustomObjectsApi, the dynamic
client, `utils.create_from_yaml`, `watch.Watch`) and checks the answers against what
kube-apiserver v1.33 gives. Each check prints `ok` or `FAIL` with the reason; the last line is
`N passed, N failed`, and the exit status is 1 when any failed.

    python3 sweep.py --kubeconfig /tmp/kc [-k substring]

rein-testenv runs it in `sweep::python_client_sweep` (`tests/it/sweep.rs`) when
`python3 -c 'import kubernetes'` works (`REIN_PYTHON` names another interpreter).
"""

import argparse
import datetime
import json
import os
import sys
import tempfile
import threading
import time
import traceback
import uuid

from kubernetes import client, config, dynamic, utils, watch
from kubernetes.client.rest import ApiException

CHECKS = []
KNOWN = {}


def check(fn=None, *, known=None):
    """Registers a check; `known` names a documented difference of rein-testenv that makes it
    fail (docs/testenv.md): such a failure is reported but not counted."""
    def register(fn):
        CHECKS.append(fn)
        if known:
            KNOWN[fn.__name__] = known
        return fn
    return register(fn) if fn else register


class Failed(Exception):
    """A check's expectation did not hold."""


def expect(cond, what):
    if not cond:
        raise Failed(what)


def eq(got, want, what):
    if got != want:
        raise Failed(f"{what}: got {got!r}, want {want!r}")


def api_error(fn, *args, **kwargs):
    """Calls fn, expects an ApiException, returns (status, decoded body)."""
    try:
        fn(*args, **kwargs)
    except ApiException as err:
        body = err.body
        if isinstance(body, bytes):
            body = body.decode()
        try:
            decoded = json.loads(body) if body else None
        except ValueError:
            decoded = body
        return err.status, decoded
    raise Failed(f"{getattr(fn, '__name__', fn)} should have failed")


def expect_status(got, code, reason, message=None, details=None):
    status, body = got
    eq(status, code, "HTTP status")
    expect(isinstance(body, dict), f"a Status body, got {body!r}")
    eq(body.get("kind"), "Status", "body kind")
    eq(body.get("apiVersion"), "v1", "body apiVersion")
    eq(body.get("status"), "Failure", "Status.status")
    eq(body.get("code"), code, "Status.code")
    eq(body.get("reason"), reason, "Status.reason")
    if message is not None:
        eq(body.get("message"), message, "Status.message")
    if details is not None:
        eq(body.get("details"), details, "Status.details")
    return body


def raw_request(method, path, body=None, content_type="application/json", query=""):
    """A plain HTTP request to the configured server; returns (status, headers, text)."""
    import urllib3

    cfg = client.Configuration.get_default_copy()
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = content_type
        if not isinstance(body, (str, bytes)):
            body = json.dumps(body)
    headers.update(cfg.api_key and {"Authorization": cfg.api_key.get("authorization", "")} or {})
    if not headers.get("Authorization"):
        headers.pop("Authorization", None)
    http = urllib3.PoolManager(
        cert_reqs="CERT_REQUIRED" if cfg.verify_ssl else "CERT_NONE",
        ca_certs=cfg.ssl_ca_cert,
        cert_file=cfg.cert_file,
        key_file=cfg.key_file,
    )
    url = cfg.host + path + (("?" + query) if query else "")
    resp = http.request(method, url, body=body, headers=headers, preload_content=True)
    return resp.status, resp.headers, resp.data.decode()


def raw_json(method, path, body=None, content_type="application/json", query=""):
    status, _, text = raw_request(method, path, body, content_type, query)
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def attr(obj, *names):
    """The first of names that obj has (the generated clients spell some differently)."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    raise AttributeError(f"{type(obj).__name__} has none of {names}")


def with_content_type(ctx, content_type):
    """A Ctx whose requests carry this Content-Type (kubernetes <= 33 has no _content_type)."""
    api_client = client.ApiClient(configuration=ctx.api.configuration)
    api_client.set_default_header("Content-Type", content_type)
    other = Ctx(api_client)
    other.ns = ctx.ns
    return other


def as_dict(ctx, obj):
    """A model as its JSON dict (kubernetes >= 35 already answers some calls with a dict)."""
    return obj if isinstance(obj, dict) else ctx.api.sanitize_for_serialization(obj)


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def meta(n, labels=None):
    return client.V1ObjectMeta(name=n, labels=labels)


def deployment(n, replicas=1, app=None):
    app = app or n
    return client.V1Deployment(
        metadata=meta(n, {"app": app}),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels={"app": app}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": app}),
                spec=client.V1PodSpec(
                    containers=[client.V1Container(name="app", image="example/app:1.0")]
                ),
            ),
        ),
    )


class Ctx:
    """What every check gets: the APIs and a namespace of its own."""

    def __init__(self, api_client):
        self.api = api_client
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.coord = client.CoordinationV1Api(api_client)
        self.rbac = client.RbacAuthorizationV1Api(api_client)
        self.net = client.NetworkingV1Api(api_client)
        self.policy = client.PolicyV1Api(api_client)
        self.ext = client.ApiextensionsV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.ns = None

    def fresh_namespace(self):
        self.ns = name("sweep")
        self.core.create_namespace(client.V1Namespace(metadata=meta(self.ns)))
        return self.ns


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("-k", dest="only", help="run only checks whose name contains this")
    args = parser.parse_args()
    config.load_kube_config(config_file=args.kubeconfig)
    api_client = client.ApiClient()
    import kubernetes

    print(f"kubernetes (python client) {kubernetes.__version__}")
    passed = failed = known = 0
    for fn in CHECKS:
        if args.only and args.only not in fn.__name__:
            continue
        ctx = Ctx(api_client)
        try:
            ctx.fresh_namespace()
            fn(ctx)
        except Exception as err:  # noqa: BLE001 - any client error is a finding
            if isinstance(err, Failed):
                why = str(err)
            else:
                tb = traceback.format_exc().strip().splitlines()
                where = [line.strip() for line in tb if 'sweep.py", line' in line][-1:]
                why = f"{type(err).__name__}: {str(err)[:800]} {where}"
            if fn.__name__ in KNOWN:
                known += 1
                print(f"KNOWN {fn.__name__} ({KNOWN[fn.__name__]}): {why}")
            else:
                failed += 1
                print(f"FAIL {fn.__name__}: {why}")
        else:
            passed += 1
            note = " (marked as a known difference: remove the mark)" if fn.__name__ in KNOWN else ""
            print(f"ok   {fn.__name__}{note}")
    print(f"{known} known differences")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


# ---------------------------------------------------------------------------------------------
# Discovery and version


@check
def version_info(ctx):
    info = client.VersionApi(ctx.api).get_code()
    eq(info.major, "1", "major")
    eq(info.minor, "33", "minor")
    expect(info.git_version.startswith("v1.33."), f"gitVersion {info.git_version}")
    expect(info.platform and info.go_version and info.compiler, "platform, goVersion, compiler")


@check
def discovery_documents(ctx):
    versions = client.CoreApi(ctx.api).get_api_versions()
    eq(versions.versions, ["v1"], "/api versions")
    expect(attr(versions, "server_address_by_client_cidrs", "server_address_by_client_cid_rs"), "/api serverAddressByClientCIDRs")
    groups = client.ApisApi(ctx.api).get_api_versions()
    names = [g.name for g in groups.groups]
    for want in ["apps", "batch", "coordination.k8s.io", "rbac.authorization.k8s.io",
                 "networking.k8s.io", "policy", "apiextensions.k8s.io"]:
        expect(want in names, f"group {want} in /apis")
    res = ctx.core.get_api_resources()
    by_name = {r.name: r for r in res.resources}
    eq(by_name["pods"].singular_name, "pod", "pods singularName")
    eq(by_name["pods"].kind, "Pod", "pods kind")
    expect(by_name["pods"].namespaced, "pods namespaced")
    expect("deletecollection" in by_name["configmaps"].verbs, "configmaps verbs")
    apps = ctx.apps.get_api_resources()
    scale = {r.name: r for r in apps.resources}["deployments/scale"]
    eq((scale.group, scale.version, scale.kind), ("autoscaling", "v1", "Scale"), "deployments/scale gvk")
    eq(sorted(scale.verbs), ["get", "patch", "update"], "deployments/scale verbs")


# ---------------------------------------------------------------------------------------------
# Core CRUD and errors


@check
def configmap_crud_and_errors(ctx):
    n = name("cm")
    cm = ctx.core.create_namespaced_config_map(
        ctx.ns, client.V1ConfigMap(metadata=meta(n, {"a": "1"}), data={"k": "v"})
    )
    expect(cm.metadata.uid and cm.metadata.resource_version, "uid and resourceVersion")
    expect(isinstance(cm.metadata.creation_timestamp, datetime.datetime), "creationTimestamp")
    got = ctx.core.read_namespaced_config_map(n, ctx.ns)
    eq(got.data, {"k": "v"}, "data")
    got.data["k"] = "w"
    updated = ctx.core.replace_namespaced_config_map(n, ctx.ns, got)
    expect(updated.metadata.resource_version != cm.metadata.resource_version, "new resourceVersion")
    # A stale resourceVersion.
    cm.data = {"k": "stale"}
    expect_status(
        api_error(ctx.core.replace_namespaced_config_map, n, ctx.ns, cm),
        409,
        "Conflict",
        f'Operation cannot be fulfilled on configmaps "{n}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        {"name": n, "kind": "configmaps"},
    )
    expect_status(
        api_error(ctx.core.create_namespaced_config_map, ctx.ns,
                  client.V1ConfigMap(metadata=meta(n))),
        409,
        "AlreadyExists",
        f'configmaps "{n}" already exists',
        {"name": n, "kind": "configmaps"},
    )
    expect_status(
        api_error(ctx.core.read_namespaced_config_map, "nope", ctx.ns),
        404,
        "NotFound",
        'configmaps "nope" not found',
        {"name": "nope", "kind": "configmaps"},
    )
    status = as_dict(ctx, ctx.core.delete_namespaced_config_map(n, ctx.ns))
    eq(status["status"], "Success", "delete Status")
    eq(status["details"], {"name": n, "kind": "configmaps", "uid": cm.metadata.uid}, "delete details")
    expect_status(api_error(ctx.core.delete_namespaced_config_map, n, ctx.ns), 404, "NotFound")


@check
def invalid_name_is_422_with_causes(ctx):
    body = expect_status(
        api_error(ctx.core.create_namespaced_config_map, ctx.ns,
                  client.V1ConfigMap(metadata=meta("Bad_Name"))),
        422,
        "Invalid",
    )
    eq(body["details"]["name"], "Bad_Name", "details.name")
    eq(body["details"]["kind"], "ConfigMap", "details.kind")
    causes = body["details"]["causes"]
    eq([(c["reason"], c["field"]) for c in causes], [("FieldValueInvalid", "metadata.name")], "causes")
    expect(body["message"].startswith('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain'), body["message"])


@check
def missing_namespace_is_404(ctx):
    expect_status(
        api_error(ctx.core.create_namespaced_config_map, "no-such-ns",
                  client.V1ConfigMap(metadata=meta("x"))),
        404,
        "NotFound",
        'namespaces "no-such-ns" not found',
        {"name": "no-such-ns", "kind": "namespaces"},
    )


@check
def dry_run_create_stores_nothing(ctx):
    n = name("dry")
    cm = ctx.core.create_namespaced_config_map(
        ctx.ns, client.V1ConfigMap(metadata=meta(n), data={"a": "b"}), dry_run="All"
    )
    eq(cm.metadata.name, n, "dry-run answer")
    expect(cm.metadata.uid, "dry-run answer has a uid")
    expect_status(api_error(ctx.core.read_namespaced_config_map, n, ctx.ns), 404, "NotFound")


@check
def secret_string_data(ctx):
    n = name("sec")
    s = ctx.core.create_namespaced_secret(
        ctx.ns, client.V1Secret(metadata=meta(n), string_data={"user": "admin"})
    )
    eq(s.type, "Opaque", "default type")
    eq(s.data, {"user": "YWRtaW4="}, "stringData folded into data")
    eq(s.string_data, None, "stringData not returned")


@check
def service_cluster_ip(ctx):
    n = name("svc")
    svc = ctx.core.create_namespaced_service(
        ctx.ns,
        client.V1Service(
            metadata=meta(n),
            spec=client.V1ServiceSpec(
                selector={"app": n}, ports=[client.V1ServicePort(port=80, target_port=8080)]
            ),
        ),
    )
    expect(svc.spec.cluster_ip, "clusterIP allocated")
    eq(attr(svc.spec, "cluster_ips", "cluster_i_ps"), [svc.spec.cluster_ip], "clusterIPs")
    eq(svc.spec.type, "ClusterIP", "type")
    eq(svc.spec.ports[0].protocol, "TCP", "port protocol")
    eq(svc.spec.ip_families, ["IPv4"], "ipFamilies")
    eq(svc.spec.ip_family_policy, "SingleStack", "ipFamilyPolicy")
    eq(svc.spec.internal_traffic_policy, "Cluster", "internalTrafficPolicy")


@check
def service_node_port_allocated(ctx):
    n = name("np")
    svc = ctx.core.create_namespaced_service(
        ctx.ns,
        client.V1Service(
            metadata=meta(n),
            spec=client.V1ServiceSpec(
                type="NodePort", selector={"app": n}, ports=[client.V1ServicePort(port=80)]
            ),
        ),
    )
    port = svc.spec.ports[0].node_port
    expect(port is not None and 30000 <= port <= 32767, f"nodePort allocated: {port}")
    eq(svc.spec.external_traffic_policy, "Cluster", "externalTrafficPolicy")


@check
def pod_status_patch_and_time_precision(ctx):
    n = name("pod")
    pod = ctx.core.create_namespaced_pod(
        ctx.ns,
        client.V1Pod(
            metadata=meta(n, {"app": "p"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
        ),
    )
    eq(pod.status.phase, "Pending", "phase")
    eq(pod.spec.containers[0].image_pull_policy, "Always", "imagePullPolicy for no tag")
    eq(pod.spec.enable_service_links, True, "enableServiceLinks default")
    t = "2026-01-02T03:04:05.678901Z"
    patched = ctx.core.patch_namespaced_pod_status(
        n, ctx.ns,
        {"status": {"phase": "Running", "startTime": t,
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": t}]}},
    )
    eq(patched.status.phase, "Running", "patched phase")
    raw_pod = raw_json("GET", f"/api/v1/namespaces/{ctx.ns}/pods/{n}")[1]
    eq(raw_pod["status"]["startTime"], "2026-01-02T03:04:05Z", "metav1.Time keeps whole seconds")
    eq(raw_pod["status"]["conditions"][0]["lastTransitionTime"], "2026-01-02T03:04:05Z", "condition time")
    pods = ctx.core.list_namespaced_pod(ctx.ns, field_selector="status.phase=Running")
    eq([p.metadata.name for p in pods.items], [n], "field selector status.phase")


@check
def unknown_field_selector_is_400(ctx):
    expect_status(
        api_error(ctx.core.list_namespaced_config_map, ctx.ns, field_selector="data.k=v"),
        400,
        "BadRequest",
        '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"',
    )
    expect_status(
        api_error(ctx.core.list_namespaced_pod, ctx.ns, field_selector="spec.foo=v"),
        400,
        "BadRequest",
        "field label not supported: spec.foo",
    )


@check
def bad_label_selector_is_400(ctx):
    status, body = api_error(ctx.core.list_namespaced_config_map, ctx.ns, label_selector="a b")
    eq(status, 400, "status")
    eq(body["reason"], "BadRequest", "reason")
    eq(body["message"], "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt", "message")


@check
def label_selectors(ctx):
    for i, tier in enumerate(["a", "b", "c"]):
        ctx.core.create_namespaced_config_map(
            ctx.ns, client.V1ConfigMap(metadata=meta(f"l{i}", {"tier": tier, "sweep": "yes"}))
        )
    got = ctx.core.list_namespaced_config_map(ctx.ns, label_selector="tier in (a,c),sweep")
    eq(sorted(c.metadata.name for c in got.items), ["l0", "l2"], "in + exists")
    got = ctx.core.list_namespaced_config_map(ctx.ns, label_selector="tier!=a,sweep=yes")
    eq(sorted(c.metadata.name for c in got.items), ["l1", "l2"], "!=")
    got = ctx.core.list_namespaced_config_map(ctx.ns, field_selector="metadata.name=l1")
    eq([c.metadata.name for c in got.items], ["l1"], "metadata.name")
    eq(got.kind, "ConfigMapList", "list kind")
    eq(got.api_version, "v1", "list apiVersion")


# ---------------------------------------------------------------------------------------------
# Paging and deletecollection


@check
def list_paging(ctx):
    for i in range(5):
        ctx.core.create_namespaced_config_map(
            ctx.ns, client.V1ConfigMap(metadata=meta(f"p{i}", {"page": "yes"}))
        )
    first = ctx.core.list_namespaced_config_map(ctx.ns, limit=2)
    eq(len(first.items), 2, "first page")
    expect(first.metadata._continue, "continue token")
    eq(first.metadata.remaining_item_count, 4, "remainingItemCount (5 + kube-root-ca.crt - 2)")
    seen = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    while token:
        page = ctx.core.list_namespaced_config_map(ctx.ns, limit=2, _continue=token)
        seen += [c.metadata.name for c in page.items]
        eq(page.metadata.resource_version, first.metadata.resource_version, "snapshot rv")
        token = page.metadata._continue
    eq(sorted(seen), sorted(["kube-root-ca.crt"] + [f"p{i}" for i in range(5)]), "every item once")
    # With a selector, etcd does not count what is left.
    sel = ctx.core.list_namespaced_config_map(ctx.ns, limit=2, label_selector="page=yes")
    eq(len(sel.items), 2, "selector page")
    eq(sel.metadata.remaining_item_count, None, "no remainingItemCount with a selector")
    expect_status(
        api_error(ctx.core.list_namespaced_config_map, ctx.ns, limit=2, _continue="garbage"),
        400,
        "BadRequest",
    )


@check
def delete_collection(ctx):
    for i in range(3):
        ctx.core.create_namespaced_config_map(
            ctx.ns, client.V1ConfigMap(metadata=meta(f"d{i}", {"del": "yes" if i < 2 else "no"}))
        )
    status, body = raw_json(
        "DELETE", f"/api/v1/namespaces/{ctx.ns}/configmaps", query="labelSelector=del%3Dyes"
    )
    eq(status, 200, "deletecollection status")
    eq(body.get("kind"), "ConfigMapList", "deletecollection answers the deleted items' list")
    eq(sorted(i["metadata"]["name"] for i in body.get("items", [])), ["d0", "d1"], "deleted items")
    ctx.core.delete_collection_namespaced_config_map(ctx.ns, label_selector="del=no")
    left = ctx.core.list_namespaced_config_map(ctx.ns, label_selector="del")
    eq(left.items, [], "all gone")


# ---------------------------------------------------------------------------------------------
# Patches


@check
def deployment_patches(ctx):
    n = name("dep")
    ctx.apps.create_namespaced_deployment(ctx.ns, deployment(n))
    # Strategic merge (the client's default for a dict): containers merge by name.
    d = ctx.apps.patch_namespaced_deployment(
        n, ctx.ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "1"}]}]}}}},
    )
    c = d.spec.template.spec.containers
    eq([(x.name, x.image) for x in c], [("app", "example/app:1.0")], "SMP keeps the image")
    eq([(e.name, e.value) for e in c[0].env], [("A", "1")], "SMP adds env")
    # Merge patch replaces the list.
    d = with_content_type(ctx, "application/merge-patch+json").apps.patch_namespaced_deployment(
        n, ctx.ns, {"metadata": {"labels": {"extra": "yes"}}}
    )
    eq(d.metadata.labels, {"app": n, "extra": "yes"}, "merge patch labels")
    # JSON patch (a list body).
    d = ctx.apps.patch_namespaced_deployment(
        n, ctx.ns, [{"op": "replace", "path": "/spec/replicas", "value": 3}]
    )
    eq(d.spec.replicas, 3, "JSON patch replicas")
    expect(d.metadata.generation >= 3, f"generation bumped: {d.metadata.generation}")
    # A failing JSON patch test.
    status, body = api_error(
        ctx.apps.patch_namespaced_deployment, n, ctx.ns,
        [{"op": "test", "path": "/spec/replicas", "value": 9}],
    )
    eq(status, 422, "failing test op")
    eq(body["reason"], "Invalid", "failing test reason")
    # A JSON patch on a missing path.
    status, body = api_error(
        ctx.apps.patch_namespaced_deployment, n, ctx.ns,
        [{"op": "replace", "path": "/spec/nope/x", "value": 1}],
    )
    eq(status, 422, "replace on a missing path")
    # A patch that breaks validation.
    body = expect_status(
        api_error(ctx.apps.patch_namespaced_deployment, n, ctx.ns, {"spec": {"replicas": -1}}),
        422,
        "Invalid",
    )
    eq(body["details"]["causes"][0]["field"], "spec.replicas", "cause field")
    eq(body["details"]["kind"], "Deployment", "details.kind")
    eq(body["details"]["group"], "apps", "details.group")


@check
def merge_patch_of_an_array(ctx):
    # kubernetes <= 33 sends CustomObjectsApi patches as merge patches, a JSON patch included.
    ctx.core.create_namespaced_config_map(ctx.ns, client.V1ConfigMap(metadata=meta("m")))
    status, body = raw_json("PATCH", f"/api/v1/namespaces/{ctx.ns}/configmaps/m",
                            [{"op": "add", "path": "/data", "value": {}}], "application/merge-patch+json")
    eq((status, body["reason"], body["details"]["causes"][0]["field"]), (422, "Invalid", "patch"), "array")
    status, body = raw_json("PATCH", f"/api/v1/namespaces/{ctx.ns}/configmaps/m", "null",
                            "application/merge-patch+json")
    eq((status, body["message"]), (400, "Invalid JSON Patch"), "null")


@check
def server_side_apply(ctx):
    n = name("ssa")
    apply = with_content_type(ctx, "application/apply-patch+yaml").core
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}, "data": {"a": "1"}}
    got = apply.patch_namespaced_config_map(n, ctx.ns, cm, field_manager="sweep")
    eq(got.data, {"a": "1"}, "applied data")
    managers = [(m.manager, m.operation) for m in got.metadata.managed_fields]
    eq(managers, [("sweep", "Apply")], "managedFields")
    other = dict(cm, data={"a": "2"})
    body = expect_status(
        api_error(apply.patch_namespaced_config_map, n, ctx.ns, other, field_manager="other"),
        409,
        "Conflict",
        'Apply failed with 1 conflict: conflict with "sweep": .data.a',
    )
    eq(body["details"]["causes"],
       [{"reason": "FieldManagerConflict", "message": 'conflict with "sweep"', "field": ".data.a"}],
       "conflict causes")
    got = apply.patch_namespaced_config_map(n, ctx.ns, other, field_manager="other", force=True)
    eq(got.data, {"a": "2"}, "forced apply")
    # Apply without fieldManager.
    expect_status(api_error(apply.patch_namespaced_config_map, n, ctx.ns, cm), 422, "Invalid")
    # force on a non-apply patch.
    status, _ = api_error(ctx.core.patch_namespaced_config_map, n, ctx.ns, {"data": {"b": "1"}}, force=True)
    eq(status, 422, "force on a strategic merge patch")


# ---------------------------------------------------------------------------------------------
# Subresources


@check
def deployment_scale_and_status(ctx):
    n = name("sc")
    ctx.apps.create_namespaced_deployment(ctx.ns, deployment(n, replicas=2))
    scale = ctx.apps.read_namespaced_deployment_scale(n, ctx.ns)
    eq(scale.kind, "Scale", "kind")
    eq(scale.api_version, "autoscaling/v1", "apiVersion")
    eq(scale.spec.replicas, 2, "spec.replicas")
    eq(scale.status.selector, f"app={n}", "status.selector")
    scale = ctx.apps.patch_namespaced_deployment_scale(n, ctx.ns, {"spec": {"replicas": 4}})
    eq(scale.spec.replicas, 4, "patched scale")
    scale.spec.replicas = 5
    scale = ctx.apps.replace_namespaced_deployment_scale(n, ctx.ns, scale)
    eq(scale.spec.replicas, 5, "replaced scale")
    eq(ctx.apps.read_namespaced_deployment(n, ctx.ns).spec.replicas, 5, "deployment follows")
    d = ctx.apps.patch_namespaced_deployment_status(
        n, ctx.ns, {"status": {"replicas": 5, "readyReplicas": 5, "observedGeneration": 1}}
    )
    eq((d.status.replicas, d.status.ready_replicas), (5, 5), "status patch")
    d = ctx.apps.patch_namespaced_deployment(n, ctx.ns, {"status": {"replicas": 1}})
    eq(d.status.replicas, 5, "status ignored on the main resource")
    expect_status(
        api_error(ctx.apps.read_namespaced_deployment_scale, "nope", ctx.ns),
        404,
        "NotFound",
        'deployments.apps "nope" not found',
        {"name": "nope", "group": "apps", "kind": "deployments"},
    )


# ---------------------------------------------------------------------------------------------
# Other groups


@check
def cronjob_schedule_validated(ctx):
    n = name("cj")
    body = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": n},
            "spec": {"schedule": "nonsense", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox:1"}]}}}}}}
    body = expect_status(api_error(ctx.batch.create_namespaced_cron_job, ctx.ns, body), 422, "Invalid")
    eq(body["details"]["causes"][0]["field"], "spec.schedule", "cause field")


@check
def batch_job_and_cronjob(ctx):
    n = name("job")
    job = ctx.batch.create_namespaced_job(
        ctx.ns,
        client.V1Job(
            metadata=meta(n),
            spec=client.V1JobSpec(
                template=client.V1PodTemplateSpec(
                    spec=client.V1PodSpec(
                        restart_policy="Never",
                        containers=[client.V1Container(name="c", image="busybox:1")],
                    )
                )
            ),
        ),
    )
    eq(job.spec.backoff_limit, 6, "backoffLimit")
    expect(job.spec.selector is not None, "Job selector defaulted")
    labels = job.spec.template.metadata.labels or {}
    eq(labels.get("batch.kubernetes.io/controller-uid"), job.metadata.uid, "controller-uid label")
    eq(labels.get("batch.kubernetes.io/job-name"), n, "job-name label")
    cj = ctx.batch.create_namespaced_cron_job(
        ctx.ns,
        client.V1CronJob(
            metadata=meta(name("cj")),
            spec=client.V1CronJobSpec(
                schedule="*/5 * * * *",
                job_template=client.V1JobTemplateSpec(
                    spec=client.V1JobSpec(
                        template=client.V1PodTemplateSpec(
                            spec=client.V1PodSpec(
                                restart_policy="OnFailure",
                                containers=[client.V1Container(name="c", image="busybox:1")],
                            )
                        )
                    )
                ),
            ),
        ),
    )
    eq(cj.spec.concurrency_policy, "Allow", "concurrencyPolicy")
    eq(cj.spec.successful_jobs_history_limit, 3, "successfulJobsHistoryLimit")
    job = ctx.batch.patch_namespaced_job_status(
        n, ctx.ns, {"status": {"active": 1, "startTime": "2026-01-02T03:04:05Z"}}
    )
    eq(job.status.active, 1, "job status patch")
    jobs = ctx.batch.list_namespaced_job(ctx.ns)
    eq([j.metadata.name for j in jobs.items], [n], "jobs")
    ctx.batch.delete_namespaced_job(n, ctx.ns, propagation_policy="Background")


@check
def lease_microtime(ctx):
    n = name("lease")
    now = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc)
    lease = ctx.coord.create_namespaced_lease(
        ctx.ns,
        client.V1Lease(
            metadata=meta(n),
            spec=client.V1LeaseSpec(
                holder_identity="me", lease_duration_seconds=15, acquire_time=now, renew_time=now
            ),
        ),
    )
    eq(lease.spec.renew_time, now, "renewTime keeps microseconds")
    raw_lease = raw_json("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ctx.ns}/leases/{n}")[1]
    eq(raw_lease["spec"]["renewTime"], "2026-01-02T03:04:05.678901Z", "MicroTime on the wire")
    # A MicroTime without fractional seconds does not parse as RFC3339Micro.
    status, body = raw_json(
        "PATCH", f"/apis/coordination.k8s.io/v1/namespaces/{ctx.ns}/leases/{n}",
        {"spec": {"renewTime": "2026-01-02T03:04:05Z"}}, "application/merge-patch+json",
    )
    eq(status, 422, f"MicroTime without fraction: {body}")


@check
def rbac_objects(ctx):
    role = ctx.rbac.create_namespaced_role(
        ctx.ns,
        client.V1Role(
            metadata=meta("reader"),
            rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get", "list"])],
        ),
    )
    eq(role.rules[0].verbs, ["get", "list"], "rules")
    rb = ctx.rbac.create_namespaced_role_binding(
        ctx.ns,
        client.V1RoleBinding(
            metadata=meta("reader"),
            role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="reader"),
            subjects=[client.RbacV1Subject(kind="User", name="alice", api_group="rbac.authorization.k8s.io")]
            if hasattr(client, "RbacV1Subject")
            else [client.V1Subject(kind="User", name="alice", api_group="rbac.authorization.k8s.io")],
        ),
    )
    rb.role_ref.name = "writer"
    body = expect_status(
        api_error(ctx.rbac.replace_namespaced_role_binding, "reader", ctx.ns, rb), 422, "Invalid"
    )
    eq(body["details"]["causes"][0]["field"], "roleRef", "roleRef immutable")
    cr_name = name("cr")
    cr = ctx.rbac.create_cluster_role({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": cr_name},
        "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}],
    })
    eq(attr(cr.rules[0], "non_resource_urls", "non_resource_ur_ls"), ["/healthz"], "nonResourceURLs")
    ctx.rbac.delete_cluster_role(cr_name)


@check
def networking_objects(ctx):
    ing = ctx.net.create_namespaced_ingress(
        ctx.ns,
        client.V1Ingress(
            metadata=meta("web"),
            spec=client.V1IngressSpec(
                rules=[client.V1IngressRule(
                    host="example.com",
                    http=client.V1HTTPIngressRuleValue(paths=[client.V1HTTPIngressPath(
                        path="/", path_type="Prefix",
                        backend=client.V1IngressBackend(service=client.V1IngressServiceBackend(
                            name="web", port=client.V1ServiceBackendPort(number=80))),
                    )]),
                )]
            ),
        ),
    )
    eq(ing.spec.rules[0].host, "example.com", "ingress host")
    np = ctx.net.create_namespaced_network_policy(
        ctx.ns,
        client.V1NetworkPolicy(
            metadata=meta("deny"),
            spec=client.V1NetworkPolicySpec(pod_selector=client.V1LabelSelector()),
        ),
    )
    eq(np.spec.policy_types, ["Ingress"], "policyTypes defaulted")


@check
def ingress_host_validated(ctx):
    status, _ = api_error(
        ctx.net.create_namespaced_ingress, ctx.ns,
        client.V1Ingress(metadata=meta("bad"), spec=client.V1IngressSpec(rules=[client.V1IngressRule(host="*.*.bad")])),
    )
    eq(status, 422, "bad ingress host")


@check
def policy_pdb(ctx):
    pdb = ctx.policy.create_namespaced_pod_disruption_budget(
        ctx.ns,
        client.V1PodDisruptionBudget(
            metadata=meta("pdb"),
            spec=client.V1PodDisruptionBudgetSpec(
                min_available=1, selector=client.V1LabelSelector(match_labels={"app": "x"})
            ),
        ),
    )
    eq(pdb.spec.min_available, 1, "minAvailable")
    pdb = ctx.policy.patch_namespaced_pod_disruption_budget_status(
        "pdb", ctx.ns, {"status": {"currentHealthy": 1, "desiredHealthy": 1, "disruptionsAllowed": 0, "expectedPods": 1}}
    )
    eq(pdb.status.current_healthy, 1, "status patch")
    status, body = api_error(
        ctx.policy.create_namespaced_pod_disruption_budget, ctx.ns,
        client.V1PodDisruptionBudget(
            metadata=meta("both"),
            spec=client.V1PodDisruptionBudgetSpec(min_available=1, max_unavailable=1),
        ),
    )
    eq(status, 422, "minAvailable and maxUnavailable")


@check
def statefulset_and_daemonset(ctx):
    n = name("sts")
    sts = ctx.apps.create_namespaced_stateful_set(
        ctx.ns,
        client.V1StatefulSet(
            metadata=meta(n),
            spec=client.V1StatefulSetSpec(
                service_name=n,
                selector=client.V1LabelSelector(match_labels={"app": n}),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels={"app": n}),
                    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x:1")]),
                ),
            ),
        ),
    )
    eq(sts.spec.pod_management_policy, "OrderedReady", "podManagementPolicy")
    eq(sts.spec.update_strategy.type, "RollingUpdate", "updateStrategy")
    scale = ctx.apps.read_namespaced_stateful_set_scale(n, ctx.ns)
    eq(scale.spec.replicas, 1, "sts scale")
    ds = ctx.apps.create_namespaced_daemon_set(
        ctx.ns,
        client.V1DaemonSet(
            metadata=meta("ds"),
            spec=client.V1DaemonSetSpec(
                selector=client.V1LabelSelector(match_labels={"app": "ds"}),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels={"app": "ds"}),
                    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x:1")]),
                ),
            ),
        ),
    )
    eq(ds.spec.update_strategy.rolling_update.max_unavailable, 1, "DaemonSet maxUnavailable")


@check
def node_cluster_scoped(ctx):
    n = name("node")
    node = ctx.core.create_node(client.V1Node(metadata=meta(n)))
    expect(node.metadata.namespace is None, "no namespace")
    node = ctx.core.patch_node_status(
        n, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    )
    eq(node.status.conditions[0].type, "Ready", "node status")
    ctx.core.patch_node(n, {"spec": {"unschedulable": True}})
    nodes = ctx.core.list_node(field_selector=f"spec.unschedulable=true,metadata.name={n}")
    eq([x.metadata.name for x in nodes.items], [n], "node field selector")
    ctx.core.delete_node(n)


@check
def delete_propagation(ctx):
    n = name("own")
    owner = ctx.core.create_namespaced_config_map(ctx.ns, client.V1ConfigMap(metadata=meta(n)))
    ref = client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name=n, uid=owner.metadata.uid, block_owner_deletion=True
    )
    ctx.core.create_namespaced_config_map(
        ctx.ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=n + "-dep", owner_references=[ref]))
    )
    # Foreground with orphanDependents=false spelled out: 202 and the object back.
    status, body = raw_json(
        "DELETE", f"/api/v1/namespaces/{ctx.ns}/configmaps/{n}",
        {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"},
    )
    eq(status, 200, "foreground delete status")
    eq(body.get("kind"), "ConfigMap", "foreground delete answers the object")
    eq(body["metadata"].get("finalizers"), ["foregroundDeletion"], "foreground finalizer")
    expect(body["metadata"].get("deletionTimestamp"), "deletionTimestamp")
    deadline = time.time() + 10
    while time.time() < deadline:
        left = [c.metadata.name for c in ctx.core.list_namespaced_config_map(ctx.ns).items]
        if n not in left and n + "-dep" not in left:
            break
        time.sleep(0.1)
    else:
        raise Failed(f"cascade did not finish: {left}")
    # Precondition failure.
    ctx.core.create_namespaced_config_map(ctx.ns, client.V1ConfigMap(metadata=meta("pc")))
    status, body = api_error(
        ctx.core.delete_namespaced_config_map, "pc", ctx.ns,
        body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="wrong")),
    )
    eq(status, 409, "precondition")
    eq(body["reason"], "Conflict", "precondition reason")
    expect("Precondition failed: UID in precondition: wrong" in body["message"], body["message"])


# ---------------------------------------------------------------------------------------------
# Watches


def watch_events(fn, *args, actions=None, **kwargs):
    """Runs a Watch with a timeout in a thread, performs actions, returns the events."""
    w = watch.Watch()
    events = []
    ready = threading.Event()
    err = []

    def run():
        try:
            for ev in w.stream(fn, *args, **kwargs):
                ready.set()
                events.append(ev)
        except Exception as e:  # noqa: BLE001
            err.append(e)
        finally:
            ready.set()

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)
    if actions:
        actions()
    t.join(30)
    expect(not t.is_alive(), "watch ended with timeoutSeconds")
    if err:
        raise err[0]
    return w, events


@check
def watch_from_resource_version(ctx):
    rv = ctx.core.list_namespaced_config_map(ctx.ns).metadata.resource_version

    def actions():
        ctx.core.create_namespaced_config_map(ctx.ns, client.V1ConfigMap(metadata=meta("w1"), data={"a": "1"}))
        ctx.core.patch_namespaced_config_map("w1", ctx.ns, {"data": {"a": "2"}})
        ctx.core.delete_namespaced_config_map("w1", ctx.ns)

    w, events = watch_events(
        ctx.core.list_namespaced_config_map, ctx.ns, resource_version=rv, timeout_seconds=2,
        allow_watch_bookmarks=True, actions=actions,
    )
    typed = [(e["type"], e["object"].metadata.name) for e in events if e["type"] != "BOOKMARK"]
    eq(typed, [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")], "events")
    expect(int(w.resource_version) > int(rv), "watch resourceVersion advanced")
    for e in events:
        if e["type"] == "BOOKMARK":
            eq(e["raw_object"]["kind"], "ConfigMap", "bookmark kind")
            eq(e["raw_object"]["apiVersion"], "v1", "bookmark apiVersion")


@check
def watch_initial_state_and_label_transitions(ctx):
    ctx.core.create_namespaced_config_map(ctx.ns, client.V1ConfigMap(metadata=meta("x", {"w": "in"})))

    def actions():
        ctx.core.patch_namespaced_config_map("x", ctx.ns, {"metadata": {"labels": {"w": "out"}}})
        ctx.core.patch_namespaced_config_map("x", ctx.ns, {"metadata": {"labels": {"w": "in"}}})

    _, events = watch_events(
        ctx.core.list_namespaced_config_map, ctx.ns, label_selector="w=in", timeout_seconds=2,
        actions=actions,
    )
    eq([(e["type"], e["object"].metadata.name) for e in events],
       [("ADDED", "x"), ("DELETED", "x"), ("ADDED", "x")], "label transitions")


@check
def watch_streaming_list(ctx):
    ctx.core.create_namespaced_config_map(ctx.ns, client.V1ConfigMap(metadata=meta("s1")))
    _, events = watch_events(
        ctx.core.list_namespaced_config_map, ctx.ns, timeout_seconds=1, allow_watch_bookmarks=True,
        send_initial_events=True, resource_version_match="NotOlderThan",
    )
    names = sorted(e["object"].metadata.name for e in events if e["type"] == "ADDED")
    eq(names, ["kube-root-ca.crt", "s1"], "initial events")
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    expect(bookmarks, "a bookmark")
    eq(bookmarks[0]["raw_object"]["metadata"]["annotations"], {"k8s.io/initial-events-end": "true"}, "initial-events-end")


@check
def watch_errors(ctx):
    # A watch with a bad field selector fails before streaming.
    try:
        for _ in watch.Watch().stream(ctx.core.list_namespaced_config_map, ctx.ns,
                                      field_selector="nope=1", timeout_seconds=1):
            pass
    except ApiException as err:
        eq(err.status, 400, "bad field selector on a watch")
    else:
        raise Failed("a watch with a bad field selector should fail")
    # sendInitialEvents without resourceVersionMatch.
    try:
        for _ in watch.Watch().stream(ctx.core.list_namespaced_config_map, ctx.ns,
                                      send_initial_events=True, timeout_seconds=1):
            pass
    except ApiException as err:
        eq(err.status, 422, "sendInitialEvents without resourceVersionMatch")
    else:
        raise Failed("sendInitialEvents without resourceVersionMatch should fail")


@check
def watch_all_namespaces_and_cluster_scoped(ctx):
    def actions():
        ctx.core.create_namespaced_config_map(ctx.ns, client.V1ConfigMap(metadata=meta("all")))

    rv = ctx.core.list_config_map_for_all_namespaces(limit=1).metadata.resource_version
    _, events = watch_events(
        ctx.core.list_config_map_for_all_namespaces, resource_version=rv, timeout_seconds=1,
        actions=actions,
    )
    eq([(e["type"], e["object"].metadata.namespace) for e in events if e["object"].metadata.name == "all"],
       [("ADDED", ctx.ns)], "all-namespaces watch")
    rv = ctx.core.list_namespace().metadata.resource_version
    other = name("wns")

    def ns_actions():
        ctx.core.create_namespace(client.V1Namespace(metadata=meta(other)))

    _, events = watch_events(ctx.core.list_namespace, resource_version=rv, timeout_seconds=1, actions=ns_actions)
    expect(("ADDED", other) in [(e["type"], e["object"].metadata.name) for e in events], "namespace watch")
    ctx.core.delete_namespace(other)


# ---------------------------------------------------------------------------------------------
# CRDs, custom objects and the dynamic client

GROUP = "sweep.example.com"


def ensure_crd(ctx):
    plural = "widgets"
    crd_name = f"{plural}.{GROUP}"
    try:
        ctx.ext.read_custom_resource_definition(crd_name)
        return plural
    except ApiException as err:
        if err.status != 404:
            raise
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                              "labelSelectorPath": ".status.selector"},
                },
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer", "minimum": 1, "default": 1},
                            "replicas": {"type": "integer"},
                            "colour": {"type": "string", "enum": ["red", "blue"]},
                        }},
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"},
                            "selector": {"type": "string"},
                            "phase": {"type": "string"},
                        }},
                    },
                }},
            }],
        },
    }
    ctx.ext.create_custom_resource_definition(body)
    deadline = time.time() + 10
    while time.time() < deadline:
        crd = ctx.ext.read_custom_resource_definition(crd_name)
        conds = {c.type: c.status for c in (crd.status.conditions or [])}
        if conds.get("Established") == "True":
            return plural
        time.sleep(0.1)
    raise Failed("CRD not Established")


@check
def crd_typed_status(ctx):
    ensure_crd(ctx)
    crd = ctx.ext.read_custom_resource_definition(f"widgets.{GROUP}")
    eq(crd.status.accepted_names.kind, "Widget", "acceptedNames")
    eq(crd.status.stored_versions, ["v1"], "storedVersions")
    eq(crd.spec.conversion.strategy, "None", "conversion defaulted")
    eq(crd.spec.names.list_kind, "WidgetList", "listKind")


@check
def custom_objects(ctx):
    plural = ensure_crd(ctx)
    obj = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"},
           "spec": {"replicas": 1, "colour": "red"}}
    got = ctx.custom.create_namespaced_custom_object(GROUP, "v1", ctx.ns, plural, obj)
    eq(got["spec"]["size"], 1, "default applied")
    got = ctx.custom.get_namespaced_custom_object(GROUP, "v1", ctx.ns, plural, "w")
    eq(got["kind"], "Widget", "kind")
    lst = ctx.custom.list_namespaced_custom_object(GROUP, "v1", ctx.ns, plural)
    eq(lst["kind"], "WidgetList", "list kind")
    eq([i["metadata"]["name"] for i in lst["items"]], ["w"], "list items")
    got = ctx.custom.patch_namespaced_custom_object(GROUP, "v1", ctx.ns, plural, "w", {"spec": {"colour": "blue"}})
    eq(got["spec"]["colour"], "blue", "merge patch")
    got = with_content_type(ctx, "application/json-patch+json").custom.patch_namespaced_custom_object(
        GROUP, "v1", ctx.ns, plural, "w", [{"op": "replace", "path": "/spec/size", "value": 3}]
    )
    eq(got["spec"]["size"], 3, "JSON patch")
    body = expect_status(
        api_error(ctx.custom.patch_namespaced_custom_object, GROUP, "v1", ctx.ns, plural, "w",
                  {"spec": {"colour": "green"}}),
        422,
        "Invalid",
    )
    eq(body["details"]["causes"][0]["field"], "spec.colour", "enum cause field")
    eq(body["details"]["causes"][0]["reason"], "FieldValueNotSupported", "enum cause reason")
    got = ctx.custom.patch_namespaced_custom_object_status(
        GROUP, "v1", ctx.ns, plural, "w", {"status": {"phase": "Ready", "replicas": 1, "selector": "app=w"}}
    )
    eq(got["status"]["phase"], "Ready", "status patch")
    scale = ctx.custom.get_namespaced_custom_object_scale(GROUP, "v1", ctx.ns, plural, "w")
    eq(scale["kind"], "Scale", "scale kind")
    eq(scale["apiVersion"], "autoscaling/v1", "scale apiVersion")
    eq(scale["spec"]["replicas"], 1, "scale spec")
    eq(scale["status"], {"replicas": 1, "selector": "app=w"}, "scale status")
    scale = ctx.custom.patch_namespaced_custom_object_scale(GROUP, "v1", ctx.ns, plural, "w", {"spec": {"replicas": 4}})
    eq(scale["spec"]["replicas"], 4, "scale patch")
    applied = with_content_type(ctx, "application/apply-patch+yaml").custom.patch_namespaced_custom_object(
        GROUP, "v1", ctx.ns, plural, "w",
        {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"colour": "red"}},
        field_manager="sweep", force=True,
    )
    eq(applied["spec"]["colour"], "red", "apply on a custom object")
    status, body = api_error(
        with_content_type(ctx, "application/strategic-merge-patch+json").custom.patch_namespaced_custom_object,
        GROUP, "v1", ctx.ns, plural, "w", {"spec": {"colour": "red"}},
    )
    eq(status, 415, "strategic merge patch on a custom resource")
    eq(body["reason"], "UnsupportedMediaType", "415 reason")
    expect_status(
        api_error(ctx.custom.get_namespaced_custom_object, GROUP, "v1", ctx.ns, plural, "nope"),
        404,
        "NotFound",
        f'widgets.{GROUP} "nope" not found',
        {"name": "nope", "group": GROUP, "kind": "widgets"},
    )
    deleted = ctx.custom.delete_namespaced_custom_object(GROUP, "v1", ctx.ns, plural, "w")
    eq(deleted["kind"], "Status", "custom object delete answers a Status")
    eq(deleted["status"], "Success", "Success")
    eq(deleted["details"]["group"], GROUP, "details.group")


@check
def custom_object_watch(ctx):
    plural = ensure_crd(ctx)
    rv = ctx.custom.list_namespaced_custom_object(GROUP, "v1", ctx.ns, plural)["metadata"]["resourceVersion"]

    def actions():
        ctx.custom.create_namespaced_custom_object(
            GROUP, "v1", ctx.ns, plural,
            {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "cw"}, "spec": {}},
        )
        ctx.custom.delete_namespaced_custom_object(GROUP, "v1", ctx.ns, plural, "cw")

    _, events = watch_events(
        ctx.custom.list_namespaced_custom_object, GROUP, "v1", ctx.ns, plural,
        resource_version=rv, timeout_seconds=1, actions=actions,
    )
    eq([(e["type"], e["object"]["metadata"]["name"]) for e in events], [("ADDED", "cw"), ("DELETED", "cw")], "events")


@check
def unknown_resource_is_404(ctx):
    status, _, text = raw_request("GET", f"/apis/nothere.example.com/v1/namespaces/{ctx.ns}/things")
    eq(status, 404, "unknown group")
    eq(text.strip(), "404 page not found", "unknown group body")
    status, _, text = raw_request("GET", f"/apis/{GROUP}/v1/namespaces/{ctx.ns}/gadgets")
    eq((status, text.strip()), (404, "404 page not found"), "unknown resource of a CRD group")
    # Under /api and the built-in groups, kube-apiserver's go-restful container answers a Status.
    for path in [f"/api/v1/namespaces/{ctx.ns}/things", f"/apis/apps/v1/namespaces/{ctx.ns}/things"]:
        status, body = raw_json("GET", path)
        eq(status, 404, path)
        eq(body.get("message"), "the server could not find the requested resource", path)
    try:
        ctx.custom.get_namespaced_custom_object("nothere.example.com", "v1", ctx.ns, "things", "x")
    except ApiException as err:
        eq(err.status, 404, "CustomObjectsApi on a missing CRD")
    else:
        raise Failed("a missing CRD should answer 404")


@check
def dynamic_client(ctx):
    ensure_crd(ctx)
    dyn = dynamic.DynamicClient(ctx.api)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    cms.create(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"}, "data": {"a": "1"}},
               namespace=ctx.ns)
    got = cms.get(name="dyn", namespace=ctx.ns)
    eq(got.data.a, "1", "dynamic get")
    got = cms.patch(name="dyn", namespace=ctx.ns, body={"data": {"b": "2"}},
                    content_type="application/merge-patch+json")
    eq(dict(got.data), {"a": "1", "b": "2"}, "dynamic merge patch")
    got = cms.server_side_apply(
        body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"}, "data": {"c": "3"}},
        namespace=ctx.ns, field_manager="sweep", force_conflicts=True,
    ) if hasattr(cms, "server_side_apply") else dyn.server_side_apply(
        cms, body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"}, "data": {"c": "3"}},
        namespace=ctx.ns, field_manager="sweep", force_conflicts=True,
    )
    eq(got.data.c, "3", "dynamic apply")
    lst = cms.get(namespace=ctx.ns, label_selector="")
    expect("dyn" in [i.metadata.name for i in lst.items], "dynamic list")
    deps = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    dep = ctx.api.sanitize_for_serialization(deployment("dd"))
    deps.create(body=dep, namespace=ctx.ns)
    scale = dyn.resources.get(api_version="apps/v1", kind="Deployment").subresources["scale"]
    got = scale.get(name="dd", namespace=ctx.ns)
    eq(got.spec.replicas, 1, "dynamic scale")
    widgets = dyn.resources.get(api_version=f"{GROUP}/v1", kind="Widget")
    widgets.create(body={"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "dw"}, "spec": {}},
                   namespace=ctx.ns)
    eq(widgets.get(name="dw", namespace=ctx.ns).spec.size, 1, "dynamic custom object")
    found = dyn.resources.search(kind="Widget")
    expect(found, "search finds the CRD kind")
    rv = cms.get(namespace=ctx.ns).metadata.resourceVersion
    events = []
    for ev in dyn.watch(cms, namespace=ctx.ns, resource_version=rv, timeout=1):
        events.append(ev)
    eq(events, [], "nothing changed")
    deleted = cms.delete(name="dyn", namespace=ctx.ns)
    eq(deleted.status, "Success", "dynamic delete")
    eq(deleted.details.kind, "configmaps", "dynamic delete details")
    try:
        cms.get(name="dyn", namespace=ctx.ns)
    except dynamic.exceptions.NotFoundError as err:
        eq(err.status, 404, "NotFoundError status")
        eq(json.loads(err.body)["reason"], "NotFound", "NotFoundError body")
    else:
        raise Failed("a dynamic get of a deleted object should fail")
    try:
        cms.create(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}, namespace=ctx.ns)
    except dynamic.exceptions.UnprocessibleEntityError as err:
        eq(json.loads(err.body)["reason"], "Invalid", "422 body")
    else:
        raise Failed("a bad name should fail")


@check
def create_from_yaml(ctx):
    here = os.path.dirname(os.path.abspath(__file__))
    fixture = os.path.join(here, "..", "fixtures", "objects.yaml")
    created = utils.create_from_yaml(ctx.api, fixture, namespace=ctx.ns)
    kinds = sorted(type(o).__name__ for group in created for o in group)
    expect("V1Deployment" in kinds and "V1ConfigMap" in kinds, f"created {kinds}")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(
            "apiVersion: v1\nkind: List\nitems:\n"
            "- apiVersion: v1\n  kind: ServiceAccount\n  metadata:\n    name: robot\n"
            "- apiVersion: rbac.authorization.k8s.io/v1\n  kind: Role\n  metadata:\n    name: r\n"
            "  rules:\n  - apiGroups: ['']\n    resources: [pods]\n    verbs: [get]\n"
        )
        path = f.name
    try:
        utils.create_from_yaml(ctx.api, path, namespace=ctx.ns)
        ctx.core.read_namespaced_service_account("robot", ctx.ns)
        ctx.rbac.read_namespaced_role("r", ctx.ns)
        try:
            utils.create_from_yaml(ctx.api, path, namespace=ctx.ns)
        except utils.FailToCreateError as err:
            eq([e.status for e in err.api_exceptions], [409, 409], "second create conflicts")
        else:
            raise Failed("creating twice should fail")
    finally:
        os.unlink(path)
    # apply=True (server-side apply) where the client has it.
    import inspect

    if "apply" in inspect.signature(utils.create_from_yaml).parameters:
        utils.create_from_yaml(ctx.api, fixture, namespace=ctx.ns, apply=True)


@check
def service_account_token(ctx):
    tr = ctx.core.create_namespaced_service_account_token(
        "default", ctx.ns, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=["x"]))
    ) if hasattr(client, "AuthenticationV1TokenRequest") else ctx.core.create_namespaced_service_account_token(
        "default", ctx.ns, client.V1TokenRequest(spec=client.V1TokenRequestSpec(audiences=["x"]))
    )
    expect(tr.status.token.count(".") == 2, "a JWT")
    expect(isinstance(tr.status.expiration_timestamp, datetime.datetime), "expirationTimestamp")


@check
def strict_field_validation_and_generate_name(ctx):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"},
            "data": {"a": "b"}, "bogus": 1}
    status, err = raw_json("POST", f"/api/v1/namespaces/{ctx.ns}/configmaps", body, query="fieldValidation=Strict")
    eq(status, 400, "strict")
    eq(err["message"], 'strict decoding error: unknown field "bogus"', "strict message")
    del body["bogus"]
    cm = ctx.core.create_namespaced_config_map(ctx.ns, body)
    expect(cm.metadata.name.startswith("gen-") and len(cm.metadata.name) == 9, cm.metadata.name)


@check
def custom_object_status_and_cluster_list(ctx):
    plural = ensure_crd(ctx)
    got = ctx.custom.create_namespaced_custom_object(
        GROUP, "v1", ctx.ns, plural,
        {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "s"},
         "spec": {"size": 2}, "status": {"phase": "Ignored"}},
    )
    eq(got.get("status"), None, "status dropped on create")
    got["status"] = {"phase": "Set"}
    got = ctx.custom.replace_namespaced_custom_object_status(GROUP, "v1", ctx.ns, plural, "s", got)
    eq(got["status"], {"phase": "Set"}, "status replaced")
    everywhere = ctx.custom.list_cluster_custom_object(GROUP, "v1", plural, label_selector="")
    expect(("s", ctx.ns) in [(i["metadata"]["name"], i["metadata"]["namespace"]) for i in everywhere["items"]],
           "cluster-wide list")
    body = expect_status(
        api_error(ctx.custom.create_namespaced_custom_object, GROUP, "v1", ctx.ns, plural,
                  {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "t"}, "spec": {"size": 0}}),
        422,
        "Invalid",
    )
    eq(body["message"], f'Widget.{GROUP} "t" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1', "minimum message")


@check
def hpa_v2_defaults(ctx):
    hpa = client.AutoscalingV2Api(ctx.api).create_namespaced_horizontal_pod_autoscaler(
        ctx.ns,
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
         "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 5,
                  "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}},
    )
    eq(hpa.spec.min_replicas, 1, "minReplicas")
    eq([(m.type, m.resource.name, m.resource.target.average_utilization) for m in hpa.spec.metrics],
       [("Resource", "cpu", 80)], "metrics default")
    behavior = as_dict(ctx, hpa.spec.behavior)
    eq(behavior, {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]},
    }, "behavior defaults")


@check
def storage_defaults(ctx):
    pvc = ctx.core.create_namespaced_persistent_volume_claim(ctx.ns, {
        "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    eq((pvc.spec.volume_mode, pvc.status.phase), ("Filesystem", "Pending"), "claim")
    n = name("sc")
    sc = client.StorageV1Api(ctx.api).create_storage_class(
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": n},
         "provisioner": "example.com/disk"})
    eq((sc.reclaim_policy, sc.volume_binding_mode), ("Delete", "Immediate"), "storage class")
    client.StorageV1Api(ctx.api).delete_storage_class(n)


@check
def endpoint_slice_and_webhook_defaults(ctx):
    es = client.DiscoveryV1Api(ctx.api).create_namespaced_endpoint_slice(ctx.ns, {
        "metadata": {"name": "e"}, "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}],
        "ports": [{"port": 80}]})
    eq((es.ports[0].name, es.ports[0].protocol), ("", "TCP"), "slice port")
    n = name("vwc")
    wh = client.AdmissionregistrationV1Api(ctx.api).create_validating_webhook_configuration({
        "metadata": {"name": n}, "webhooks": [{
            "name": "w.example.com", "clientConfig": {"url": "https://127.0.0.1:1/x"},
            "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "namespaceSelector": {"matchLabels": {"never": "matches"}}}]})
    w = wh.webhooks[0]
    eq((w.failure_policy, w.match_policy, w.timeout_seconds), ("Fail", "Equivalent", 10), "webhook")
    client.AdmissionregistrationV1Api(ctx.api).delete_validating_webhook_configuration(n)


@check
def namespace_lifecycle(ctx):
    n = name("nsl")
    ctx.core.create_namespace(client.V1Namespace(metadata=meta(n)))
    got = ctx.core.read_namespace(n)
    eq(got.status.phase, "Active", "phase")
    eq(got.metadata.labels, {"kubernetes.io/metadata.name": n}, "name label")
    ctx.core.delete_namespace(n)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            ctx.core.read_namespace(n)
        except ApiException as err:
            eq(err.status, 404, "gone")
            break
        time.sleep(0.1)
    else:
        raise Failed("namespace not deleted")


if __name__ == "__main__":
    main()
