"""The kinds of output a request asks for, and whether the plan can be given in them: one
printed kind, one document per pool, one Talos release per consumer's cluster."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from schematic.errors import UsageError

if TYPE_CHECKING:
    from schematic.output.render.kinds import Kind
    from schematic.plan.cluster import ClusterPlan

__all__ = [
    "kinds_of",
    "one_document_check",
    "one_release_check",
    "same_patch_per_schematic_check",
    "streamed_kind",
]


def streamed_kind(formats: Sequence[str], out: Path | None) -> Kind | None:
    """The one kind ``generate`` prints without ``--out`` (``cozystack`` when none is named);
    None when files are written. Several kinds without a directory is a UsageError."""
    if out is not None:
        return None
    if len(set(formats)) > 1:
        raise UsageError(
            "several kinds go to files: add --out DIR, or print one at a time", "--format"
        )
    name = formats[0] if formats else "cozystack"
    kinds_of((name,))  # an unknown name is a UsageError
    return name


def kinds_of(formats: Sequence[str] | None) -> tuple[Kind, ...]:
    """The kinds of file named (in the renderers' order); the default kinds for none. An
    unknown name is a UsageError."""
    from schematic.output.render.kinds import DEFAULT_KINDS, KINDS, kind_named

    if not formats:
        return DEFAULT_KINDS
    unknown = [name for name in formats if name not in KINDS]
    if unknown:
        raise UsageError(f"unknown format {unknown[0]!r}; one of {', '.join(KINDS)}", "--format")
    # A kind's file may refer to another kind's (topf's node entry to schematic.yaml).
    named = {*formats, *(also for name in formats for also in kind_named(name).writes_too)}
    return tuple(kind for kind in KINDS if kind in named)


def one_release_check(plan: ClusterPlan, kinds: Sequence[Kind]) -> None:
    """A UsageError when a kind whose consumer runs one Talos release per cluster (an Omni
    cluster template: its Cluster's ``talos.version``) is asked for pools on several releases:
    one template would mix their configs (KernelModuleConfig documents Talos 1.13 lacks)."""
    from schematic.output.render.kinds import kind_named

    single = [kind for kind in kinds if kind_named(kind).one_release]
    releases: dict[str, list[str]] = {}
    for pool in plan.pools:
        releases.setdefault(pool.talos.version, []).append(pool.name)
    if single and len(releases) > 1:
        held = "; ".join(f"{', '.join(names)} on {version}" for version, names in releases.items())
        raise UsageError(
            f"{plan.source}: {single[0]} runs one Talos release per cluster, and the pools are "
            f"on {len(releases)} ({held}); give them one release, or write each release's "
            "pools with --pool NAME",
            "--format",
        )


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


def same_patch_per_schematic_check(plan: ClusterPlan, kinds: Sequence[Kind]) -> None:
    """A UsageError when a kind whose consumer tells pools apart by schematic ID alone (topf's
    patch guard, ``.SchematicID``) is asked for pools that share a schematic but need different
    patches: every node of either pool would get both (the modules of one, the parameters of
    the other)."""
    from schematic.output.render.kinds import kind_named
    from schematic.output.render.topf import patch_documents

    told = [kind for kind in kinds if kind_named(kind).same_patch_per_schematic]
    if not told:
        return
    patches: dict[str, dict[str, list[str]]] = {}
    for pool in plan.pools:
        body = repr(patch_documents(pool))
        patches.setdefault(pool.schematic_id, {}).setdefault(body, []).append(pool.name)
    for schematic_id, bodies in patches.items():
        if len(bodies) > 1:
            names = ", ".join(name for group in bodies.values() for name in group)
            raise UsageError(
                f"{plan.source}: {told[0]} applies a patch to every node of a schematic, and "
                f"pools {names} share schematic {schematic_id} with different patches (their "
                "kernelModules or installer differ): each node would get all of them; give "
                "those pools the same kernelModules, or make them one pool",
                "--format",
            )
