"""The JSON summary of a cluster plan, for CI (``generate --format json``)."""

from __future__ import annotations

import json
from typing import Any

from schematic.charts import ChartFit
from schematic.cluster import ClusterPlan
from schematic.render.cozystack import LayoutOrFit, pool_values
from schematic.render.urls import boot_image_url, installer_image

__all__ = ["summary", "summary_json"]


def summary(plan: ClusterPlan, layout: LayoutOrFit = "osimage") -> dict[str, Any]:
    """``{"cluster", "talos", "pools": [...]}``; each pool's ``values`` is in ``layout``
    (and ``cozystack`` names the chart target when ``layout`` is a ChartFit)."""
    head: dict[str, Any] = {"cluster": plan.cluster, "talos": plan.talos.version}
    if isinstance(layout, ChartFit):
        head["cozystack"] = layout.target.name
    return head | {
        "pools": [
            {
                "name": pool.name,
                "schematicID": pool.schematic_id,
                "schematic": pool.canonical,
                "extensions": list(pool.extensions),
                "kernelModules": [
                    {"name": module.name, "parameters": list(module.parameters)}
                    for module in pool.kernel_modules
                ],
                "installer": installer_image(pool),
                "image": boot_image_url(pool),
                "values": pool_values(plan.cluster, pool, layout),
            }
            for pool in plan.pools
        ],
    }


def summary_json(plan: ClusterPlan, layout: LayoutOrFit = "osimage") -> str:
    """The summary as stable JSON text, ending in a newline."""
    return json.dumps(summary(plan, layout), indent=2, ensure_ascii=False) + "\n"
