"""Add-on rules for the Kubernetes app: GPU Operator overrides (TS140, TS141) and HAMi (TS142).

``addons.gpuOperator.valuesOverride`` is merged into the operator's values with Helm's
``mergeOverwrite``, which replaces lists; Cozystack's chart nests the operator's own values
under ``gpu-operator:``, and an override written without that level is read too. What a
``devicePlugin.env`` override must hold depends on the Cozystack release
(:func:`schematic.gpupath.required_device_plugin_env`): the chart's own default list, which
the override replaces, and the CDI variables Talos needs.
"""

from __future__ import annotations

from typing import Any

from schematic.gpupath import (
    OperatorRelease,
    operator_release,
    required_device_plugin_env,
    talos_device_plugin_env,
)
from schematic.lint.findings import Collector
from schematic.lint.inventory import Cluster, Inventory, Place
from schematic.lint.loader import Path_

__all__ = ["CDI_DEFAULTS", "check_addons"]

# The device plugin variables CDI on Talos needs: the same data `generate` writes.
CDI_DEFAULTS: tuple[tuple[str, str], ...] = talos_device_plugin_env()


def _operator_roots(place: Place) -> list[Path_]:
    """Where the operator's values sit inside an override: under gpu-operator:, or at the top."""
    roots: list[Path_] = []
    if isinstance(place.doc.get((*place.path, "gpu-operator")), dict):
        roots.append((*place.path, "gpu-operator"))
    if isinstance(place.doc.get(place.path), dict):
        roots.append(place.path)
    return roots


def _env_pairs(items: Any) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            value = item.get("value")
            pairs[item["name"]] = value if isinstance(value, str) else str(value)
    return pairs


def _check_operator_values(
    place: Place, where: str, obj: str, out: Collector, release: OperatorRelease
) -> None:
    doc = place.doc
    required = required_device_plugin_env(release)
    for root in _operator_roots(place):
        env_path = (*root, "devicePlugin", "env")
        if doc.has(env_path):
            given = _env_pairs(doc.get(env_path))
            missing = [f"{k}={v}" for k, v in required if given.get(k) != v]
            if missing:
                replaced = (
                    f"replaces the chart's default list (Cozystack {release.name})"
                    if release.default_device_plugin_env
                    else "replaces the default list"
                )
                out.add(
                    "TS140",
                    f"{where}: devicePlugin.env {replaced} and lacks {', '.join(missing)}",
                    doc.file,
                    doc.line(env_path),
                    obj,
                )
        for component in ("driver", "toolkit"):
            enabled_path = (*root, component, "enabled")
            if doc.get(enabled_path) is True:
                out.add(
                    "TS141",
                    f"{where}: {component}.enabled: true; on Talos the {component} comes from "
                    "the system extensions",
                    doc.file,
                    doc.line(enabled_path),
                    obj,
                )


def _check_cluster(cluster: Cluster, out: Collector, release: OperatorRelease) -> None:
    doc, base = cluster.place.doc, cluster.base
    addons = (*base, "addons")
    override = (*addons, "gpuOperator", "valuesOverride")
    where = f"cluster {cluster.name!r}: addons.gpuOperator.valuesOverride"
    if isinstance(doc.get(override), dict):
        _check_operator_values(Place(doc, override), where, cluster.name, out, release)
    hami = (*addons, "hami", "enabled")
    gpu_pools = [pool.name for pool in cluster.pools if pool.nvidia_gpus]
    if doc.get(hami) is True and gpu_pools:
        out.add(
            "TS142",
            f"cluster {cluster.name!r}: addons.hami.enabled with Talos GPU pools "
            f"({', '.join(gpu_pools)}); HAMi is not wired for CDI on Talos",
            doc.file,
            doc.line(hami),
            cluster.name,
        )


def check_addons(
    inventory: Inventory, out: Collector, release: OperatorRelease | None = None
) -> None:
    """TS140, TS141 and TS142 for every Kubernetes app and GPU Operator release; ``release`` is the
    Cozystack release's addon shape (default: the released one)."""
    release = release or operator_release()
    for cluster in inventory.clusters:
        _check_cluster(cluster, out, release)
    for place in inventory.operator_values:
        name = str(place.doc.get(("metadata", "name")) or place.file)
        kind = str(place.doc.get(("kind",)) or "HelmRelease")
        _check_operator_values(place, f"{kind} {name!r} values", name, out, release)
