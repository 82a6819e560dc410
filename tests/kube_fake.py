"""A loopback stand-in for a Kubernetes API server, for running ``APPLY.md``'s kubectl commands
exactly as printed: it answers discovery for the resources those commands name, answers every
object as absent (so ``apply`` creates), and records each write kubectl sends.

Discovery lists what Cozystack registers (cozystack/cozystack at 3c780acd):
``kuberneteses`` and ``kubernetesnodeses`` of ``apps.cozystack.io/v1alpha1``
(``packages/system/kubernetes-rd/cozyrds/kubernetes.yaml``,
``packages/system/kubernetes-nodes-rd/cozyrds/kubernetes-nodes.yaml``), the cluster-scoped
``packages`` of ``cozystack.io/v1alpha1`` (``internal/crdinstall/manifests/
cozystack.io_packages.yaml``), Flux's ``helmreleases`` of ``helm.toolkit.fluxcd.io/v2`` (the
version Cozystack's own charts write), core ``pods`` and ``services``. Nothing is merged here: what
a merge patch does to an object is shown by ``kubectl patch --local`` itself.

Pods and services put in (``put``) are listed, in one namespace or all, as JSON or as the Table
``kubectl get`` asks for (kube_tables.py), so the real kubectl prints its own tables of them.

For ``triage --collect`` it also lists what the collection reads: core ``nodes``, ``events``
and ``secrets``, ``apps/v1`` ``daemonsets`` and KubeVirt's ``virtualmachineinstances`` of
``kubevirt.io/v1``, with the short names the real API server's discovery gives them (``ds``,
``vmi``; kubernetes/kubernetes ``pkg/registry/*/rest`` ``ShortNames()``, kubevirt/kubevirt
``pkg/virt-operator/resource/generate/components/crds.go``). A list or an object is served
where a test puts it in ``objects`` (by its API path, the query left off); a text there is a
container's log (``.../pods/<name>/log``), served as text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kube_tables import TABLE_RESOURCES, table

# group/version → (plural, kind, namespaced)
RESOURCES: dict[str, list[tuple[str, str, bool]]] = {
    "v1": [
        ("pods", "Pod", True),
        ("services", "Service", True),
        ("namespaces", "Namespace", False),
        ("nodes", "Node", False),
        ("events", "Event", True),
        ("secrets", "Secret", True),
    ],
    "apps/v1": [("daemonsets", "DaemonSet", True)],
    "kubevirt.io/v1": [("virtualmachineinstances", "VirtualMachineInstance", True)],
    "apps.cozystack.io/v1alpha1": [
        ("kuberneteses", "Kubernetes", True),
        ("kubernetesnodeses", "KubernetesNodes", True),
    ],
    "cozystack.io/v1alpha1": [("packages", "Package", False)],
    "helm.toolkit.fluxcd.io/v2": [("helmreleases", "HelmRelease", True)],
}
_VERBS = ["get", "list", "create", "update", "patch", "delete"]
# What `kubectl get svc`, `kubectl get po` are resolved by (the API server's discovery).
SHORT_NAMES = {
    **{"pods": ["po"], "services": ["svc"], "namespaces": ["ns"], "nodes": ["no"]},
    **{"events": ["ev"], "daemonsets": ["ds"], "virtualmachineinstances": ["vmi", "vmis"]},
}


@dataclass(frozen=True)
class Write:
    method: str
    path: str
    content_type: str
    body: Any


@dataclass
class FakeServer:
    url: str
    writes: list[Write] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    # Objects that exist, by their API path (a PATCH leaves them as they are).
    objects: dict[str, Any] = field(default_factory=dict)
    # The server's clock, which the ages in its tables are counted from: fixed, so kubectl
    # prints the same bytes on every run.
    now: datetime = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)

    def put(self, obj: dict[str, Any]) -> None:
        """Make a core v1 object exist at its API path (``pods``, ``services``)."""
        plural = {"Pod": "pods", "Service": "services"}[obj["kind"]]
        metadata = obj["metadata"]
        self.objects[f"/api/v1/namespaces/{metadata['namespace']}/{plural}/{metadata['name']}"] = (
            obj
        )

    def listed(self, path: str) -> tuple[str, list[Any]] | None:
        """The resource and the objects a list path names (``/api/v1/pods``,
        ``/api/v1/namespaces/<ns>/services``), in name order as the API server lists them;
        None for a path that is no list of a resource with a table."""
        parts = path.strip("/").split("/")
        if parts[:2] != ["api", "v1"] or parts[-1] not in TABLE_RESOURCES:
            return None
        if len(parts) == 3:
            prefix = "/api/v1/namespaces/"
        elif len(parts) == 5 and parts[2] == "namespaces":
            prefix = f"/api/v1/namespaces/{parts[3]}/"
        else:
            return None
        resource = parts[-1]
        found = [
            (key, obj)
            for key, obj in self.objects.items()
            if key.startswith(prefix) and key.split("/")[-2] == resource
        ]
        return resource, [obj for _, obj in sorted(found)]

    def kubeconfig(self, folder: Path) -> Path:
        path = folder / "kubeconfig"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }
        path.write_text(json.dumps(config))
        return path


def _resource_list(group_version: str) -> dict[str, Any]:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": [
            {
                "name": plural,
                "singularName": "",
                "namespaced": namespaced,
                "kind": kind,
                "verbs": _VERBS,
                "shortNames": SHORT_NAMES.get(plural, []),
            }
            for plural, kind, namespaced in RESOURCES[group_version]
        ],
    }


def _groups() -> dict[str, Any]:
    groups = []
    for group_version in RESOURCES:
        if "/" not in group_version:
            continue
        group, version = group_version.split("/")
        entry = {"groupVersion": group_version, "version": version}
        groups.append({"name": group, "versions": [entry], "preferredVersion": entry})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


_NOT_FOUND = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "reason": "NotFound",
    "code": 404,
}


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def reply(self, code: int, body: Any) -> None:
            # A text is a container's log, which the API server sends as it is.
            text = isinstance(body, str)
            data = body.encode() if text else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain" if text else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            server.reads.append(path)
            if path == "/api":
                self.reply(200, {"kind": "APIVersions", "versions": ["v1"]})
            elif path == "/api/v1":
                self.reply(200, _resource_list("v1"))
            elif path == "/apis":
                self.reply(200, _groups())
            elif path.startswith("/apis/") and path[len("/apis/") :] in RESOURCES:
                self.reply(200, _resource_list(path[len("/apis/") :]))
            elif path == "/openapi/v3":
                self.reply(200, {"paths": {}})
            elif path == "/openapi/v2":
                # No schema for any kind: kubectl's client-side validation then checks only
                # that each document is an object with apiVersion and kind.
                self.reply(200, {"swagger": "2.0", "info": {}, "paths": {}, "definitions": {}})
            elif path in server.objects:
                self.reply(200, server.objects[path])
            elif (listed := server.listed(path)) is not None:
                resource, items = listed
                if "as=Table" in self.headers.get("Accept", ""):
                    self.reply(200, table(resource, items, server.now))
                else:
                    kind = {"pods": "PodList", "services": "ServiceList"}[resource]
                    self.reply(200, {"kind": kind, "apiVersion": "v1", "items": items})
            else:  # every object is absent, and so is the OpenAPI document
                self.reply(404, _NOT_FOUND)

        def write(self, code: int) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            content_type = self.headers.get("Content-Type", "")
            server.writes.append(Write(self.command, self.path.split("?")[0], content_type, body))
            self.reply(code, server.objects.get(self.path.split("?")[0], body))

        def do_POST(self) -> None:
            self.write(201)

        def do_PATCH(self) -> None:
            self.write(200)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def fake_api_server() -> Iterator[FakeServer]:
    """A server on 127.0.0.1 for the duration of the block."""
    server = FakeServer(url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
