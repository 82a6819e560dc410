"""How an upgrade reaches the running nodes: each pool's installer, its nodes, and a safe order.

A node keeps its extensions across ``talosctl upgrade`` only when the image it is upgraded to
carries its schematic: the pool's installer for the target release. :func:`plan_rollout` turns
an :class:`~schematic.plan.upgrade.UpgradeReport` (and, when known, the cluster's nodes) into
the order to roll them in: control-plane nodes first, then the pools without a GPU, then each
GPU pool, its first node alone before a smoke test, one node at a time throughout.

tuppr (home-operations/tuppr @ f92ef37893a0931782e73661fa9a8455fd1ac396,
``internal/controller/talosupgrade/upgrade.go`` ``buildTalosUpgradeImage``) builds a node's
image as ``<factory-url annotation>/<schematic annotation>:<version>``: the factory-url
annotation is therefore the installer's repository
(``factory.talos.dev/metal-installer-secureboot``), not the factory's base URL, and SecureBoot
is kept by naming the SecureBoot repository there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from schematic.inputs.nodes import POOL_LABEL, RUNNING_SCHEMATIC, ClusterNode
from schematic.plan.upgrade import PoolChange, UpgradeReport

__all__ = [
    "TUPPR_FACTORY_URL",
    "TUPPR_SCHEMATIC",
    "PoolRollout",
    "Rollout",
    "installer_parts",
    "plan_rollout",
]

# tuppr's node annotations (internal/constants/constants.go at the commit above).
TUPPR_SCHEMATIC = "tuppr.home-operations.com/schematic"
TUPPR_FACTORY_URL = "tuppr.home-operations.com/factory-url"


def installer_parts(installer: str) -> tuple[str, str, str]:
    """``<repository>/<schematic>:<version>`` split into its three parts (a registry port in
    the repository is kept: the tag follows the last colon, the schematic the last slash)."""
    reference, _, version = installer.rpartition(":")
    repository, _, schematic = reference.rpartition("/")
    return repository, schematic, version


@dataclass(frozen=True)
class PoolRollout:
    """One pool's part of the rollout: the installer its nodes upgrade to, and its nodes."""

    pool: str
    installer: str
    gpu: bool
    # A Cozystack tenant pool: Cozystack replaces its VMs from the new values instead.
    tenant_pool: bool
    # The pool's nodes in the order to upgrade them; None when no node list was given.
    nodes: tuple[ClusterNode, ...] | None

    @property
    def repository(self) -> str:
        return installer_parts(self.installer)[0]

    @property
    def schematic_id(self) -> str:
        return installer_parts(self.installer)[1]

    @property
    def secureboot(self) -> bool:
        return self.repository.endswith("-secureboot")


@dataclass(frozen=True)
class Rollout:
    """A cluster's rollout to one Talos release, in the order to run it."""

    cluster: str
    talos: str
    # Control-plane nodes of no pool: first, each with the installer it runs now.
    control_plane: tuple[ClusterNode, ...]
    # Pools without a GPU first, then GPU pools; pools that break or go are left out.
    pools: tuple[PoolRollout, ...]
    # Worker nodes of no pool: nothing tells which installer keeps their extensions.
    unplaced: tuple[ClusterNode, ...] = ()
    # Pools the target release refuses: not rolled.
    refused: tuple[str, ...] = ()


def _pool_of(
    node: ClusterNode, names: Sequence[str], by_schematic: dict[str, str], cluster: str
) -> str | None:
    """The pool a node belongs to: its pool label, else the pool whose current schematic it
    runs (when only one pool runs it), else a Cozystack machine name ``<cluster>-<pool>-…``."""
    label = node.label(POOL_LABEL)
    if label in names:
        return label
    running = node.annotation(RUNNING_SCHEMATIC)
    if running is not None and running in by_schematic:
        return by_schematic[running]
    # The longest pool name first: "gpu-big" before "gpu".
    for name in sorted(names, key=len, reverse=True):
        for prefix in (f"kubernetes-{cluster}-{name}-", f"{cluster}-{name}-"):
            if node.name.startswith(prefix):
                return name
    return None


def _running_pools(pools: Sequence[PoolChange]) -> dict[str, str]:
    """Schematic ID → pool, for IDs that only one pool runs now."""
    owners: dict[str, set[str]] = {}
    for pool in pools:
        if pool.schematic_before is not None:
            owners.setdefault(pool.schematic_before, set()).add(pool.name)
    return {schematic: next(iter(p)) for schematic, p in owners.items() if len(p) == 1}


def plan_rollout(report: UpgradeReport, nodes: Sequence[ClusterNode] | None = None) -> Rollout:
    """The rollout of ``report``'s target release: every pool that follows, GPU pools last,
    each with its nodes (control-plane ones first) when ``nodes`` is given."""
    # An unchanged pool keeps its installer: there is nothing to roll.
    rolled = [
        p
        for p in report.pools
        if p.installer_after is not None and p.refusal is None and p.status != "unchanged"
    ]
    refused = tuple(p.name for p in report.pools if p.refusal is not None)
    names = [pool.name for pool in rolled]
    members: dict[str, list[ClusterNode]] = {name: [] for name in names}
    control_plane: list[ClusterNode] = []
    unplaced: list[ClusterNode] = []
    by_schematic = _running_pools(report.pools)
    for node in nodes or ():
        owner = _pool_of(node, names, by_schematic, report.cluster)
        if owner is not None:
            members[owner].append(node)
        elif node.control_plane:
            control_plane.append(node)
        else:
            unplaced.append(node)
    # Pools holding control-plane nodes first, then the pools without a GPU, GPU pools last.
    ordered = sorted(
        rolled,
        key=lambda pool: (
            not any(node.control_plane for node in members[pool.name]),
            pool.driver_after is not None,
        ),
    )
    pools = []
    for pool in ordered:
        assert pool.installer_after is not None
        mine = members[pool.name]
        # A pool's own control-plane nodes go first within it.
        mine.sort(key=lambda node: (not node.control_plane, node.name))
        pools.append(
            PoolRollout(
                pool=pool.name,
                installer=pool.installer_after,
                gpu=pool.driver_after is not None,
                tenant_pool=pool.tenant_pool,
                nodes=tuple(mine) if nodes is not None else None,
            )
        )
    return Rollout(
        cluster=report.cluster,
        talos=report.talos_after,
        control_plane=tuple(control_plane),
        pools=tuple(pools),
        unplaced=tuple(unplaced),
        refused=refused,
    )
