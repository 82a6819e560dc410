"""The nodes a cluster runs, read from ``kubectl get nodes -o json``: what a rollout plan needs.

Each item is a Kubernetes ``Node`` (core/v1): its name, labels, annotations and addresses. Only
those are read; the rest of the object (status, conditions) is left alone. Talos writes the
schematic a node runs as the annotation ``extensions.talos.dev/schematic`` (siderolabs/talos
``pkg/machinery/constants`` ``K8sExtensionPrefix``, Talos 1.8 and later).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schematic.errors import UsageError, printable
from schematic.safe_yaml import InputKind, read_problem, read_text

__all__ = [
    "CONTROL_PLANE_LABEL",
    "POOL_LABEL",
    "RUNNING_SCHEMATIC",
    "ClusterNode",
    "read_nodes",
]

# The label Kubernetes (kubeadm, Talos) gives control-plane nodes.
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
# The label a rollout selects a pool's nodes by. A node may set it itself from its machine
# config (machine.nodeLabels): NodeRestriction lets a kubelet set node.kubernetes.io/ labels.
POOL_LABEL = "node.kubernetes.io/pool"
RUNNING_SCHEMATIC = "extensions.talos.dev/schematic"
_OPTION = "--nodes-from"
# Addresses talosctl reaches a node by, most useful first.
_ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname")


@dataclass(frozen=True)
class ClusterNode:
    """One Node of ``kubectl get nodes -o json``."""

    name: str
    address: str  # what talosctl --nodes takes: the first InternalIP, else the name
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)

    def annotation(self, key: str) -> str | None:
        return dict(self.annotations).get(key)

    @property
    def control_plane(self) -> bool:
        return self.label(CONTROL_PLANE_LABEL) is not None


def _strings(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{where} is not a mapping of strings")
    return tuple(sorted(value.items()))


def _address(status: Any, name: str) -> str:
    addresses = status.get("addresses") if isinstance(status, dict) else None
    found: dict[str, str] = {}
    for entry in addresses if isinstance(addresses, list) else ():
        if isinstance(entry, dict):
            kind, address = entry.get("type"), entry.get("address")
            if isinstance(kind, str) and isinstance(address, str) and kind not in found:
                found[kind] = address
    return next((found[kind] for kind in _ADDRESS_TYPES if kind in found), name)


def _node(item: Any, index: int) -> ClusterNode:
    where = f"items[{index}]"
    if not isinstance(item, dict) or item.get("kind", "Node") != "Node":
        raise ValueError(f"{where} is not a Node")
    metadata = item.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where} has no metadata.name")
    assert isinstance(metadata, dict)
    return ClusterNode(
        name=name,
        address=_address(item.get("status"), name),
        labels=_strings(metadata.get("labels"), f"{where}.metadata.labels"),
        annotations=_strings(metadata.get("annotations"), f"{where}.metadata.annotations"),
    )


def read_nodes(path: Path) -> tuple[ClusterNode, ...]:
    """The nodes of a ``kubectl get nodes -o json`` file (a ``List`` or one ``Node``), in name
    order; a :class:`UsageError` naming the file and the item for anything else."""
    shown = printable(str(path), one_line=True)
    try:
        text = read_text(path, kind=InputKind.OTHER)
    except OSError as err:
        raise UsageError(f"{shown}: {read_problem(err)}", _OPTION) from None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise UsageError(
            f"{shown}: not JSON ({err}); give the output of kubectl get nodes -o json", _OPTION
        ) from None
    items = [document] if isinstance(document, dict) and document.get("kind") == "Node" else None
    if items is None:
        found = document.get("items") if isinstance(document, dict) else None
        if not isinstance(found, list):
            raise UsageError(
                f"{shown}: no items: give the output of kubectl get nodes -o json", _OPTION
            )
        items = found
    try:
        nodes = [_node(item, index) for index, item in enumerate(items)]
    except ValueError as err:
        raise UsageError(f"{shown}: {err}", _OPTION) from None
    return tuple(sorted(nodes, key=lambda node: node.name))
