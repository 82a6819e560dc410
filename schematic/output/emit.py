"""A plan's files written into an output directory or compared with one: the output layer's
part of ``generate`` and ``check``. The library entry point (:mod:`schematic.api`) plans and
decides; this module renders the tree, hands it to the directory's owner
(:mod:`schematic.output.outdir`) and says what writing kept.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from schematic.messages import Message

if TYPE_CHECKING:
    from schematic.output.outdir import OutputIndex, Tree, Written
    from schematic.output.render.kinds import Kind
    from schematic.plan.charts import ChartFit
    from schematic.plan.cluster import ClusterPlan

__all__ = ["expected_tree", "write_plan"]


def _own_kustomization(directory: Path, index: OutputIndex | None) -> bool:
    """Whether to write kustomization.yaml: not when DIR holds one this tool did not write
    (its index.yaml does not record it), which is the user's to keep."""
    from schematic.output.outdir import KUSTOMIZATION

    if not os.path.lexists(directory / KUSTOMIZATION):
        return True
    return index is not None and index.owns_kustomization


def _unreachable(
    plan: ClusterPlan, fit: ChartFit, directory: Path, old: OutputIndex | None, tree: Tree
) -> list[Message]:
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


def write_plan(
    directory: Path,
    plan: ClusterPlan,
    fit: ChartFit,
    kinds: tuple[Kind, ...],
    lock: str | None,
    pools: Sequence[str],
    profiles: Sequence[Path],
    force: bool,
) -> tuple[Tree, Written, list[Message]]:
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
        Message(
            level="note",
            source=str(directory / name),
            cause=f"not removed ({why})",
            fix="delete it yourself if it is no longer wanted",
        )
        for name, why in written.kept
    ]
    notes += [
        Message(
            level="note",
            source=str(directory / name),
            cause="the journal an interrupted run left names it, but it does not hold what "
            "that run wrote: not a file talos-schematic wrote, left as it is",
            fix="nothing to do: the journal is gone",
        )
        for name in written.disowned
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
