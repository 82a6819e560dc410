"""What a run starts from and what it tells: the settings a directory's index records (the
defaults of ``check``), the notes of a run, and the collector paused while a plan is built.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schematic.messages import Message

if TYPE_CHECKING:
    from schematic.output.outdir import OutputIndex
    from schematic.plan.charts import ChartFit
    from schematic.plan.cluster import ClusterPlan

__all__ = ["RECORDED", "paused_collector", "recorded_settings", "run_notes"]


# The request's settings an output directory's index records.
RECORDED = ("chart", "layout", "allow_ignored_keys", "profiles", "kinds")


def recorded_settings(
    directory: Path, given: Any
) -> tuple[OutputIndex | None, dict[str, Any], list[Message]]:
    """The index of ``directory``; the settings of :data:`RECORDED` as ``check`` uses them:
    those ``given`` sets, else what the index records; and notes about recorded profile
    directories."""
    from schematic.facts.chart_targets import LAYOUTS
    from schematic.output.outdir import read_index, recorded_profile_dirs

    recorded = read_index(directory)
    given = {name: getattr(given, name) for name in RECORDED}
    settings, notes = dict(given), list[str]()
    if recorded is None:
        return recorded, settings, []
    if not given["profiles"] and recorded.profiles:
        found, notes = recorded_profile_dirs(directory, recorded)
        settings["profiles"] = tuple(found)
    layout = recorded.layout if recorded.layout in LAYOUTS else None
    settings["chart"] = given["chart"] or recorded.chart
    settings["layout"] = given["layout"] or layout
    settings["allow_ignored_keys"] = given["allow_ignored_keys"] or recorded.allow_ignored_keys
    settings["kinds"] = given["kinds"] or tuple(recorded.kinds)
    return recorded, settings, [Message(level="note", cause=line) for line in notes]


def run_notes(
    plan: ClusterPlan,
    fit: ChartFit,
    platform_written: bool,
    removed: Sequence[str] = (),
    more: Sequence[Message] = (),
) -> list[Message]:
    """What a run tells, in order: the pools it removed, then warnings (pools that do not
    work, keys the chart ignores) and notes (modules left unloaded, GPUs the management
    cluster would refuse, then ``more``)."""
    from schematic.plan.cluster import (
        custom_extension_notes,
        hami_notes,
        non_nvidia_gpu_notes,
        unloaded_module_notes,
    )
    from schematic.plan.gpupath import missing_passthrough_note

    defects = [
        Message(
            level="warning",
            source=plan.source,
            pools=(pool.name,),
            cause=f"does not work: {defect}",
        )
        for pool in plan.pools
        if pool.nvidia is not None
        for defect in pool.nvidia.defects
    ]
    # A release the tables have no row for reuses the nearest row's extensions and drivers.
    tables = [
        Message(level="note", source=plan.source, cause=note)
        for note in dict.fromkeys(pool.release.tables_note for pool in plan.pools)
        if note
    ]
    # Without the platform values in this run's output, nothing else says that the
    # management cluster would refuse the pool's VMs.
    passthrough = None if platform_written else missing_passthrough_note(plan)
    return [
        *(
            Message(level="", cause=f"removed pool {name}: it is no longer in {plan.source}")
            for name in removed
        ),
        *fit.warnings,
        *hami_notes(plan),
        *defects,
        *tables,
        *custom_extension_notes(plan),
        *unloaded_module_notes(plan),
        *non_nvidia_gpu_notes(plan),
        *fit.notes,
        *([passthrough] if passthrough else []),
        *more,
    ]


@contextmanager
def paused_collector() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large plan is built and rendered.

    Plans and outputs are acyclic and live until the run ends; with thousands of pools the
    collector's repeated passes over them cost several times the work itself.
    """
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
