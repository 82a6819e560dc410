"""What the library plans before the output layer writes: the cluster file read and planned,
the pools asked for, the plan held against its chart (the kinds asked for are
:mod:`schematic.api.kinds_asked`'s). :mod:`schematic.api` chains these;
:mod:`schematic.output.emit` writes or compares what they decided.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from schematic.errors import UsageError

if TYPE_CHECKING:
    from schematic.plan.charts import ChartFit
    from schematic.plan.cluster import ClusterPlan

__all__ = [
    "fit_chart",
    "load_plan",
    "select_pools",
]


def load_plan(cluster_file: Path, profiles: Sequence[Path]) -> ClusterPlan:
    """The cluster file read and planned (relative profile paths from its directory)."""
    from schematic.inputs.cluster_file import load_cluster
    from schematic.plan.cluster import plan_cluster
    from schematic.plan.release import refuse_withdrawn_releases

    cluster = load_cluster(cluster_file)
    refuse_withdrawn_releases(cluster, str(cluster_file))
    return plan_cluster(
        cluster,
        source=str(cluster_file),
        base_dir=cluster_file.parent,
        profile_dirs=tuple(profiles),
    )


def select_pools(plan: ClusterPlan, pools: Sequence[str]) -> ClusterPlan:
    """The plan of the named pools (all for none); a name the cluster file does not have is a
    UsageError listing the ones it has."""
    if not pools:
        return plan
    from schematic.plan.cluster import check_pool_names

    check_pool_names(plan.source, [pool.name for pool in plan.pools], pools)
    wanted = set(pools)
    return dataclasses.replace(plan, pools=tuple(p for p in plan.pools if p.name in wanted))


def fit_chart(
    plan: ClusterPlan,
    chart: str | None,
    layout: str | None,
    insist: bool,
    kinds: Sequence[str] = ("cozystack",),
) -> ChartFit:
    """The plan held against its chart, for an output of ``kinds``: only one carrying the
    chart's values is held to what the chart can load. A bad ``chart`` is a UsageError (a bad
    ``cozystack.version`` in the cluster file is the file's error)."""
    from schematic.facts.chart_targets import LAYOUTS
    from schematic.output.render.kinds import kind_named

    values = any(kind_named(kind).values for kind in kinds)
    objects = any(kind_named(kind).manifest for kind in kinds)
    from schematic.plan.charts import check_chart_name, fit_plan

    if chart is not None:
        try:
            check_chart_name(chart)
        except ValueError as err:
            raise UsageError(str(err), "--chart") from None
    chosen = next((known for known in LAYOUTS if known == layout), None)
    if layout is not None and chosen is None:
        raise UsageError(f"{layout!r} is not a layout: one of {', '.join(LAYOUTS)}", "--layout")
    return fit_plan(plan, chart=chart, layout=chosen, insist=insist, values=values, objects=objects)
