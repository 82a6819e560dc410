"""The JSON summary of a cluster plan, for CI (``generate --format json``)."""

from __future__ import annotations

import json
from typing import Any

from schematic.output.render.cozystack import LayoutOrFit, pool_values
from schematic.output.render.gpupath import operator_release_of
from schematic.output.render.urls import media_summary
from schematic.plan.charts import ChartFit
from schematic.plan.cluster import ClusterPlan, PoolPlan, pools_label
from schematic.plan.gpupath import management_gpus, platform_values, smoke_test_pod, tenant_addons

__all__ = [
    "chart_summary",
    "decision_lines",
    "pool_decision",
    "pool_record",
    "summary",
    "summary_json",
]


def chart_summary(fit: ChartFit) -> dict[str, Any]:
    """The chart target and what it means for the pools: whether it was assumed (no
    cozystack.version, no --chart), whether it reads kernelModules (yes, no, unverified) and
    how a machine-config change reaches the workers."""
    target = fit.target
    return {
        "target": target.name,
        "title": target.title,
        "assumed": fit.assumption is not None,
        # False where no chart in the sources this tool was checked against reads the keys.
        "verified": target.verified,
        "layout": fit.layout,
        "kernelModules": target.kernel_modules_support,
        "machineConfigChanges": target.machine_config_changes,
        "chartRef": target.chart_ref.to_json(),
    }


def summary(plan: ClusterPlan, layout: LayoutOrFit = "osimage") -> dict[str, Any]:
    """``{"cluster", "talos", "pools": [...], "gpuPath": {...}}``; each pool's ``values`` is
    in ``layout`` (and ``cozystack`` names the chart target when ``layout`` is a ChartFit).
    ``gpuPath`` holds the tenant addons values, each passed-through GPU and whether Cozystack's
    default list permits it, and the platform values for those it does not (or null)."""
    head: dict[str, Any] = {"cluster": plan.cluster, "talos": plan.talos.version}
    # The chart and the GPU path (the tenant's addons, KubeVirt passthrough) are Cozystack's:
    # left out where no pool is a Cozystack pool.
    cozystack = any(pool.tenant_pool for pool in plan.pools)
    if isinstance(layout, ChartFit) and cozystack:
        head["cozystack"] = layout.target.name
        head["chart"] = chart_summary(layout)
    body: dict[str, Any] = {
        "pools": [
            {
                "name": pool.name,
                # The pool's own release: the file's, or its own talos.version.
                "talos": pool.talos.version,
                # The packaged release whose extensions and drivers planned it (the nearest
                # one when the tables have no row for ``talos``).
                "plannedWith": pool.release.planned_with,
                "schematicID": pool.schematic_id,
                "schematic": pool.canonical,
                "extensions": list(pool.extensions),
                "nvidia": pool_decision(pool),
                "kernelModules": [
                    {"name": module.name, "parameters": list(module.parameters)}
                    for module in pool.kernel_modules
                ],
                "installer": pool.references.installer,
                "image": pool.references.boot_image,
                **media_summary(pool),
                "media": {medium.kind: medium.url for medium in pool.references.media},
                # A bare-metal or board pool is no KubernetesNodes object: no values.
                "values": pool_values(plan.cluster, pool, layout) if pool.tenant_pool else None,
                # The Pod that proves the pool's GPUs work (None: no GPU).
                "smokeTest": smoke_test_pod(plan, pool),
            }
            for pool in plan.pools
        ],
    }
    return head | body | ({"gpuPath": _gpu_path(plan, layout)} if cozystack else {})


def pool_decision(pool: PoolPlan) -> dict[str, Any] | None:
    """The pool's NVIDIA decision for CI to assert on: ``{"flavour", "tier", "driverBranch",
    "driver", "containerToolkit", "gpus", "reasons", "notes"}``; None for a pool without an
    NVIDIA GPU. ``tier`` is null on Talos < 1.8 (one unsuffixed driver)."""
    decision = pool.nvidia
    if decision is None:
        return None
    return {
        "flavour": decision.flavour,
        "tier": decision.tier,
        "driverBranch": decision.driver_branch,
        "driver": decision.driver,
        "containerToolkit": decision.container_toolkit,
        "gpus": [
            {"id": gpu.id, "name": gpu.name, "chip": gpu.chip, "architecture": gpu.architecture}
            for gpu in decision.gpus
        ],
        "reasons": list(decision.reasons),
        "notes": list(decision.notes),
    }


def pool_record(pool: PoolPlan) -> dict[str, Any]:
    """A pool's index entry: its name, its schematic IDs, extensions and media options."""
    entry: dict[str, Any] = {"name": pool.name, "schematicID": pool.schematic_id}
    if pool.offline_schematic_id is not None:
        # A factory stamped the schematic: `check` matches the pool by its offline ID.
        entry["offlineSchematicID"] = pool.offline_schematic_id
    entry["extensions"] = list(pool.extensions)
    # The NVIDIA decision (null without an NVIDIA GPU), for CI to show and assert on.
    entry["nvidia"] = pool_decision(pool)
    entry.update(media_summary(pool))
    if pool.offline_boot_schematic_id is not None:
        # Likewise for the boot media's schematic (its stamped body is in urls.yaml).
        entry["offlineBootSchematicID"] = pool.offline_boot_schematic_id
    return entry


def decision_lines(plan: ClusterPlan) -> list[str]:
    """One line per distinct NVIDIA choice, naming its pools (``cluster.yaml: pool "rtx6000":
    NVIDIA open kernel modules, tier production, driver 595.91.07, container toolkit v1.19.1``);
    none without NVIDIA GPUs. Pools sharing a choice share a line, so thousands stay short."""
    groups: dict[str, list[str]] = {}
    for pool in plan.pools:
        decision = pool.nvidia
        if decision is None:
            continue
        tier = f"tier {decision.tier}" if decision.tier else "no tier (unsuffixed)"
        choice = (
            f"NVIDIA {decision.flavour} kernel modules, {tier}, driver {decision.driver}, "
            f"container toolkit {decision.container_toolkit}"
        )
        groups.setdefault(choice, []).append(pool.name)
    return [f"{pools_label(plan.source, names)}: {choice}" for choice, names in groups.items()]


def _gpu_path(plan: ClusterPlan, layout: LayoutOrFit) -> dict[str, Any]:
    release = operator_release_of(layout)
    return {
        "gpuOperatorShape": release.name,
        "addons": tenant_addons(plan, release, plan.hami),
        "passthrough": [
            {
                "id": gpu.gpu_id,
                "resourceName": gpu.resource_name,
                "pools": list(gpu.pools),
                "permittedByDefault": gpu.permitted_by_default,
            }
            for gpu in management_gpus(plan)
        ],
        "platformValues": platform_values(plan),
    }


def summary_json(plan: ClusterPlan, layout: LayoutOrFit = "osimage") -> str:
    """The summary as stable JSON text, ending in a newline."""
    return json.dumps(summary(plan, layout), indent=2, ensure_ascii=False) + "\n"
