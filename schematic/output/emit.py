"""A plan's files, written into an output directory or compared with one: the steps the library's
``generate`` and ``check`` share, below the entry point (:mod:`schematic.api`) and above the
renderers and the output directory's owner (:mod:`schematic.output.outdir`).
"""

from __future__ import annotations

import dataclasses
import gc
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schematic.errors import UsageError

if TYPE_CHECKING:
    from schematic.output.outdir import OutputIndex, Tree, Written
    from schematic.output.render.kinds import Kind
    from schematic.plan.charts import ChartFit
    from schematic.plan.cluster import ClusterPlan

__all__ = [
    "expected_tree",
    "fit_chart",
    "holds_platform_values",
    "kinds_of",
    "load_plan",
    "one_document_check",
    "paused_collector",
    "recorded_settings",
    "run_notes",
    "select_pools",
    "write_plan",
]


def load_plan(cluster_file: Path, profiles: Sequence[Path]) -> ClusterPlan:
    """The cluster file read and planned (relative profile paths from its directory)."""
    from schematic.inputs.cluster_file import load_cluster
    from schematic.plan.cluster import plan_cluster

    return plan_cluster(
        load_cluster(cluster_file),
        source=str(cluster_file),
        base_dir=cluster_file.parent,
        profile_dirs=tuple(profiles),
    )


# The request's settings an output directory's index records.
RECORDED = ("chart", "layout", "allow_ignored_keys", "profiles", "kinds")


def recorded_settings(
    directory: Path, given: Any
) -> tuple[OutputIndex | None, dict[str, Any], list[str]]:
    """The index of ``directory``; the settings of :data:`RECORDED` as ``check`` uses them:
    those ``given`` sets, else what the index records; and notes about recorded profile
    directories."""
    from schematic.facts.chart_targets import LAYOUTS
    from schematic.output.outdir import read_index, recorded_profile_dirs

    recorded = read_index(directory)
    given = {name: getattr(given, name) for name in RECORDED}
    settings, notes = dict(given), list[str]()
    if recorded is None:
        return recorded, settings, notes
    if not given["profiles"] and recorded.profiles:
        found, notes = recorded_profile_dirs(directory, recorded)
        settings["profiles"] = tuple(found)
    layout = recorded.layout if recorded.layout in LAYOUTS else None
    settings["chart"] = given["chart"] or recorded.chart
    settings["layout"] = given["layout"] or layout
    settings["allow_ignored_keys"] = given["allow_ignored_keys"] or recorded.allow_ignored_keys
    settings["kinds"] = given["kinds"] or tuple(recorded.kinds)
    return recorded, settings, [f"note: {line}" for line in notes]


def streamed_kind(formats: Sequence[str], out: Path | None) -> Kind | None:
    """The one kind ``generate`` prints without ``--out`` (``cozystack`` when none is named);
    None when files are written. Several kinds without a directory is a UsageError."""
    if out is not None:
        return None
    if len(set(formats)) > 1:
        raise UsageError(
            "several kinds go to files: add --out DIR, or print one at a time", "--format"
        )
    return kinds_of(formats or ("cozystack",))[0]


def kinds_of(formats: Sequence[str] | None) -> tuple[Kind, ...]:
    """The kinds of file named (in the renderers' order); the default kinds for none. An
    unknown name is a UsageError."""
    from schematic.output.render.kinds import DEFAULT_KINDS, KINDS

    if not formats:
        return DEFAULT_KINDS
    unknown = [name for name in formats if name not in KINDS]
    if unknown:
        raise UsageError(f"unknown format {unknown[0]!r}; one of {', '.join(KINDS)}", "--format")
    return tuple(kind for kind in KINDS if kind in formats)


def select_pools(plan: ClusterPlan, pools: Sequence[str]) -> ClusterPlan:
    """The plan of the named pools (all for none); a name the cluster file does not have is a
    UsageError listing the ones it has."""
    if not pools:
        return plan
    from schematic.plan.cluster import check_pool_names

    check_pool_names(plan.source, [pool.name for pool in plan.pools], pools)
    wanted = set(pools)
    return dataclasses.replace(plan, pools=tuple(p for p in plan.pools if p.name in wanted))


def one_document_check(plan: ClusterPlan, kind: Kind) -> None:
    """A UsageError when ``kind`` is one document per pool and ``plan`` has several pools:
    its consumer takes the stream as one whole (talosctl patch mc --patch @file, a factory
    POST, a .tf.json file), so several pools' documents would patch or register the wrong pool,
    or not parse."""
    from schematic.output.render.kinds import kind_named

    if kind_named(kind).one_document and len(plan.pools) > 1:
        names = ", ".join(pool.name for pool in plan.pools)
        raise UsageError(
            f"{kind} is one document per pool, and {plan.source} has {len(plan.pools)} pools "
            f"({names}); pick one with --pool NAME, or write each to its file with --out DIR",
            "--format",
        )


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


def run_notes(
    plan: ClusterPlan,
    fit: ChartFit,
    platform_written: bool,
    removed: Sequence[str] = (),
    more: Sequence[str] = (),
) -> list[str]:
    """What a run tells, in order: the pools it removed, then ``warning: …`` (pools that do not
    work, keys the chart ignores) and ``note: …`` lines (modules left unloaded, GPUs the
    management cluster would refuse, then ``more``)."""
    from schematic.plan.cluster import hami_notes, non_nvidia_gpu_notes, unloaded_module_notes
    from schematic.plan.gpupath import missing_passthrough_note

    defects = [
        f'{plan.source}: pool "{pool.name}": does not work: {defect}'
        for pool in plan.pools
        if pool.nvidia is not None
        for defect in pool.nvidia.defects
    ]
    warnings = [*fit.warnings, *hami_notes(plan), *defects]
    # A release the tables have no row for reuses the nearest row's extensions and drivers.
    tables = [
        f"{plan.source}: {note}"
        for note in dict.fromkeys(pool.release.tables_note for pool in plan.pools)
        if note
    ]
    notes = [*tables, *unloaded_module_notes(plan), *non_nvidia_gpu_notes(plan), *fit.notes]
    # Without the platform values in this run's output, nothing else says that the
    # management cluster would refuse the pool's VMs.
    passthrough = None if platform_written else missing_passthrough_note(plan)
    notes += [*([passthrough] if passthrough else []), *more]
    return [
        *(f"removed pool {name}: it is no longer in {plan.source}" for name in removed),
        *(f"warning: {line}" for line in warnings),
        *(f"note: {line}" for line in notes),
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


def _own_kustomization(directory: Path, index: OutputIndex | None) -> bool:
    """Whether to write kustomization.yaml: not when DIR holds one this tool did not write
    (its index.yaml does not record it), which is the user's to keep."""
    from schematic.output.outdir import KUSTOMIZATION

    if not os.path.lexists(directory / KUSTOMIZATION):
        return True
    return index is not None and index.owns_kustomization


def _unreachable(
    plan: ClusterPlan, fit: ChartFit, directory: Path, old: OutputIndex | None, tree: Tree
) -> list[str]:
    """Notes for pools whose kernel modules change in DIR while their schematic does not."""
    from schematic.output.outdir import read_owned_file
    from schematic.plan.charts import VALUES_FILES, unreachable_changes

    if old is None:
        return []
    before: dict[str, bytes] = {}
    for pool in plan.pools:
        for name in (f"{pool.name}/{file}" for file in VALUES_FILES):
            if name in tree.files:
                try:
                    content = read_owned_file(directory, name)
                except OSError:
                    continue  # not a file the tool wrote: writing reports it
                if content is not None:
                    before[name] = content
    new_ids = tree.index.schematic_ids()
    return unreachable_changes(
        plan.source, old.schematic_ids(), before, new_ids, tree.files, fit.target
    )


def holds_platform_values(directory: Path) -> bool:
    """Whether ``directory``'s index records the management cluster's platform values."""
    from schematic.output.outdir import read_index
    from schematic.output.render.kinds import PLATFORM_FILE

    index = read_index(directory)
    return index is not None and PLATFORM_FILE in index.files


def write_plan(
    directory: Path,
    plan: ClusterPlan,
    fit: ChartFit,
    kinds: tuple[Kind, ...],
    lock: str | None,
    pools: Sequence[str],
    profiles: Sequence[Path],
    force: bool,
) -> tuple[Tree, Written, list[str]]:
    """Write the plan's tree into ``directory``; the tree, what was written, and the notes."""
    from schematic.output.outdir import LOCK, profile_records, read_index, write_directory
    from schematic.output.render.files import render_tree

    old = read_index(directory)
    kustomization = _own_kustomization(directory, old)
    tree = render_tree(plan, kinds, fit, kustomization=kustomization, lock=lock)
    files = dict(tree.files)
    if lock is not None:
        files[LOCK] = lock.encode()
    index = dataclasses.replace(tree.index, profiles=profile_records(directory, profiles))
    tree = dataclasses.replace(tree, files=files, index=index)
    notes = _unreachable(plan, fit, directory, old, tree)
    written = write_directory(directory, tree, pools=list(pools) or None, force=force)
    notes += [
        f"{directory / name}: not removed ({why}); delete it yourself if it is no longer wanted"
        for name, why in written.kept
    ]
    return tree, written, notes


def _held_lock(path: Path) -> str | None:
    from schematic.safe_yaml import InputKind, read_text

    try:
        return read_text(path, kind=InputKind.OUTPUT_RECORD)
    except OSError:
        return None


def expected_tree(
    directory: Path,
    plan: ClusterPlan,
    fit: ChartFit,
    kinds: tuple[Kind, ...],
    recorded: OutputIndex | None,
    lock: str | None,
    pools: Sequence[str],
    profiles: Sequence[Path],
) -> Tree:
    """What ``generate`` would write into ``directory`` now: the factory's IDs the index
    records kept, and, offline, the lock file neither compared nor extra."""
    from schematic.output.outdir import LOCK, profile_records, recorded_registrations
    from schematic.output.render.files import render_tree
    from schematic.plan.cluster import with_factory_schematics

    names = [pool.name for pool in plan.pools if not pools or pool.name in pools]
    plan = with_factory_schematics(plan, recorded_registrations(directory, recorded, names))
    # Offline, the mirror kinds were written from the lock the directory holds.
    held = lock if lock is not None else _held_lock(directory / LOCK)
    own = _own_kustomization(directory, recorded)
    tree = render_tree(plan, kinds, fit, kustomization=own, lock=held)
    if lock is not None:
        tree = dataclasses.replace(tree, files={**tree.files, LOCK: lock.encode()})
    else:
        covers = tree.covers
        tree = dataclasses.replace(tree, covers=lambda path: path != LOCK and covers(path))
    if recorded is not None and profiles:
        index = dataclasses.replace(tree.index, profiles=profile_records(directory, profiles))
        tree = dataclasses.replace(tree, index=index)
    return tree
