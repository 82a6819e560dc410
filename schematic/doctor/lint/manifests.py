"""Rendered-manifest rules that are not about one pool: the control-plane Service (TS131).

A Service counts as a tenant control plane when it serves 6443 (or a port named
``kube-apiserver``) and carries Kamaji's labels or selector (``kamaji.clastix.io/*``) or the
``cluster.x-k8s.io/role: control-plane`` label. A KamajiControlPlane counts through
``spec.network.additionalServicePorts``. (Boot-disk versus installer schematic, TS130, is a
pool rule in :mod:`schematic.doctor.lint.pools`.)
"""

from __future__ import annotations

from typing import Any

from schematic.doctor.lint.findings import Collector
from schematic.doctor.lint.inventory import Inventory, Place

__all__ = ["TRUSTD_PORT", "check_manifests"]

TRUSTD_PORT = 50001
_APISERVER_PORT = 6443


def _ports(items: Any) -> list[dict[str, Any]]:
    return [p for p in items if isinstance(p, dict)] if isinstance(items, list) else []


def _has_port(ports: list[dict[str, Any]], number: int) -> bool:
    return any(number in (p.get("port"), p.get("targetPort")) for p in ports)


def _is_control_plane(place: Place, ports: list[dict[str, Any]]) -> bool:
    doc = place.doc
    serves_api = _has_port(ports, _APISERVER_PORT) or any(
        p.get("name") == "kube-apiserver" for p in ports
    )
    keys: list[str] = []
    for path in (("metadata", "labels"), ("spec", "selector")):
        found = doc.get(path)
        if isinstance(found, dict):
            keys += found
    labels = doc.get(("metadata", "labels"))
    role = labels.get("cluster.x-k8s.io/role") if isinstance(labels, dict) else None
    return serves_api and (
        any(key.startswith("kamaji.clastix.io/") for key in keys) or role == "control-plane"
    )


def check_manifests(inventory: Inventory, out: Collector) -> None:
    # Certain where the inputs show Talos workers (which get their certificates from trustd on
    # the control-plane endpoint) and no Service of them serves trustd's port; otherwise the
    # workers may not be Talos, or reach trustd through a Service not among the inputs.
    serves_trustd = any(
        _has_port(_ports(place.doc.get(("spec", "ports"))), TRUSTD_PORT)
        for place in inventory.services
    )
    certain = bool(inventory.pools) and not serves_trustd
    for place in inventory.services:
        ports = _ports(place.doc.get(("spec", "ports")))
        if _is_control_plane(place, ports) and not _has_port(ports, TRUSTD_PORT):
            name = str(place.doc.get(("metadata", "name")) or "")
            out.add(
                "TS131",
                message=f"Service {name!r} serves the tenant API server but not port {TRUSTD_PORT} "
                "(trustd); Talos workers cannot get their certificates",
                file=place.file,
                line=place.doc.line(("spec", "ports")),
                obj=name,
                certain=certain,
            )
    for place in inventory.control_planes:
        path = ("spec", "network", "additionalServicePorts")
        ports = _ports(place.doc.get(path))
        if not _has_port(ports, TRUSTD_PORT):
            name = str(place.doc.get(("metadata", "name")) or "")
            out.add(
                "TS131",
                message=f"KamajiControlPlane {name!r}: spec.network.additionalServicePorts lacks "
                f"{TRUSTD_PORT} (talos-trustd); Talos workers cannot get their certificates",
                file=place.file,
                line=place.doc.line(path),
                obj=name,
                certain=certain,
            )
