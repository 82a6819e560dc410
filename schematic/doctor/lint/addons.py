"""Add-on rules for the Kubernetes app: GPU Operator overrides (TS140, TS141) and HAMi (TS142).

``addons.gpuOperator.valuesOverride`` is merged into the values of Cozystack's gpu-operator
wrapper chart with Helm's ``mergeOverwrite``, which replaces lists; the operator's own values
sit under ``gpu-operator:``, and an override written without that level reaches the wrapper,
which ignores it. The rules look at what the operator will run with
(:func:`schematic.plan.gpupath.effective_operator_values`: its defaults for the vendored version,
the chart's, the override): its driver and toolkit must be off (TS141, also when the addon is
enabled with no override), and a ``devicePlugin.env`` override must hold the chart's own list
and the CDI variables Talos needs — unless the operator runs Talos's own shape, which needs no
variables (:func:`schematic.plan.gpupath.required_device_plugin_env`).
"""

from __future__ import annotations

from typing import Any

from schematic.doctor.lint.findings import Collector
from schematic.doctor.lint.inventory import Cluster, Inventory, Place
from schematic.doctor.lint.loader import Path_
from schematic.plan.gpupath import (
    OperatorRelease,
    effective_operator_values,
    merge_overwrite,
    operator_defaults,
    operator_release,
    required_device_plugin_env,
    talos_device_plugin_env,
)

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


def _check_env(
    place: Place,
    root: Path_,
    where: str,
    obj: str,
    out: Collector,
    release: OperatorRelease,
    runs: dict[str, Any],
) -> None:
    doc = place.doc
    env_path = (*root, "devicePlugin", "env")
    if not doc.has(env_path):
        return
    given = _env_pairs(doc.get(env_path))
    missing = [
        f"{k}={v}" for k, v in required_device_plugin_env(release, runs) if given.get(k) != v
    ]
    if missing:
        replaced = (
            f"replaces the chart's default list (Cozystack {release.name})"
            if release.default_device_plugin_env
            else "replaces the default list"
        )
        # With a CDI list strategy kept, the plugin still hands out CDI devices, and the rest
        # fall back to values that match (TS140's text says where each comes from): said, not
        # failed.
        cdi_kept = "cdi-" in given.get("DEVICE_LIST_STRATEGY", "")
        out.add(
            "TS140",
            message=f"{where}: devicePlugin.env {replaced} and lacks {', '.join(missing)}"
            + (
                "; it keeps a CDI list strategy, so the plugin still hands out CDI devices: "
                "restate the rest to run with the values this tool checked"
                if cdi_kept
                else ""
            ),
            file=doc.file,
            line=doc.line(env_path),
            obj=obj,
            certain=not cdi_kept,
        )


def _check_operator_values(
    place: Place, where: str, obj: str, out: Collector, release: OperatorRelease
) -> None:
    """A HelmRelease of the operator chart itself: its values are the operator's."""
    doc = place.doc
    for root in _operator_roots(place):
        values = doc.get(root)
        runs = merge_overwrite(operator_defaults(release.operator), values)
        _check_env(place, root, where, obj, out, release, runs)
        for component in ("driver", "toolkit"):
            enabled_path = (*root, component, "enabled")
            if doc.get(enabled_path) is True:
                out.add(
                    "TS141",
                    message=f"{where}: {component}.enabled: true; on Talos the {component} "
                    "comes from "
                    "the system extensions",
                    file=doc.file,
                    line=doc.line(enabled_path),
                    obj=obj,
                )


def _check_app_operator(
    cluster: Cluster, where: str, out: Collector, release: OperatorRelease
) -> None:
    """The Kubernetes app's addon: what the operator runs with, the chart's defaults included."""
    doc, addons = cluster.place.doc, (*cluster.base, "addons")
    gpu_operator = (*addons, "gpuOperator")
    override_path = (*gpu_operator, "valuesOverride")
    override = doc.get(override_path)
    said_enabled = doc.get((*gpu_operator, "enabled"))
    # An addon switched off runs nothing to check; an empty override with no say either way
    # (the chart's own values.yaml) is the default, not a choice.
    if said_enabled is False or (said_enabled is not True and not override):
        return
    override = override if isinstance(override, dict) else {}
    runs = effective_operator_values(
        release, override, hami=doc.get((*addons, "hami", "enabled")) is True
    )
    wrapped = (*override_path, "gpu-operator")
    if isinstance(doc.get(wrapped), dict):
        _check_env(Place(doc, override_path), wrapped, where, cluster.name, out, release, runs)
    for component in ("driver", "toolkit"):
        if runs.get(component, {}).get("enabled") is not True:
            continue
        said = doc.get((*wrapped, component, "enabled"))
        unwrapped = (*override_path, component, "enabled")
        if said is True:
            line, text = doc.line((*wrapped, component, "enabled")), f"{component}.enabled: true"
        elif doc.has(unwrapped):
            line = doc.line(unwrapped)
            text = (
                f"{component}.enabled is written without the gpu-operator: level, so the chart "
                f"ignores it and the operator's {component} stays on"
            )
        else:
            line = doc.line(override_path if doc.has(override_path) else gpu_operator)
            text = (
                f"the operator's {component} stays on: Cozystack {release.name}'s addon does "
                f"not turn it off (GPU Operator {release.operator} runs it by default) and the "
                "override does not either"
            )
        out.add(
            "TS141",
            message=f"{where}: {text}; on Talos the {component} comes from the system extensions",
            file=doc.file,
            line=line,
            obj=cluster.name,
        )


def _check_cluster(cluster: Cluster, out: Collector, release: OperatorRelease) -> None:
    doc, base = cluster.place.doc, cluster.base
    addons = (*base, "addons")
    where = f"cluster {cluster.name!r}: addons.gpuOperator"
    _check_app_operator(cluster, where, out, release)
    hami = (*addons, "hami", "enabled")
    gpu_pools = [pool.name for pool in cluster.pools if pool.nvidia_gpus]
    if doc.get(hami) is True and gpu_pools:
        out.add(
            "TS142",
            message=f"cluster {cluster.name!r}: addons.hami.enabled with Talos GPU pools "
            f"({', '.join(gpu_pools)}); HAMi is not wired for CDI on Talos",
            file=doc.file,
            line=doc.line(hami),
            obj=cluster.name,
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
        # A kind-less document is a values file of its own (helm -f).
        kind = str(place.doc.get(("kind",)) or "GPU Operator")
        _check_operator_values(place, f"{kind} {name!r} values", name, out, release)
