"""What ``APPLY.md`` is made of: a directory's files held against its plan, and the numbered
sections each place the nodes live in contributes (:mod:`schematic.output.render.applyplan`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from schematic.plan.cluster import ClusterPlan, PoolPlan

__all__ = ["Directory", "Entry", "Section", "code"]


@dataclass(frozen=True)
class Entry:
    """One file: where it goes, and the commands that put it there (none for a record)."""

    path: str
    goes_to: str
    commands: tuple[str, ...] = ()
    # A block to paste into the tool's own file: its language and text.
    example: tuple[str, str] | None = None


@dataclass(frozen=True)
class Section:
    title: str
    intro: str
    entries: tuple[Entry, ...]


def code(commands: Iterable[str]) -> str:
    """A ``sh`` block of ``commands``; nothing for none."""
    body = "".join(f"{command}\n" for command in commands)
    return f"```sh\n{body}```\n" if body else ""


class Directory:
    """The plan and the directory's final list of files (this run's and an earlier run's)."""

    def __init__(self, plan: ClusterPlan, paths: Collection[str]) -> None:
        self.plan = plan
        self.paths = frozenset(paths)
        self.pools = {pool.name: pool for pool in plan.pools}
        # File name → the pools holding it: one pass over the paths, not one per pool and file.
        self.holders: dict[str, set[str]] = {}
        for path in self.paths:
            folder, _, base = path.partition("/")
            if base and "/" not in base and folder in self.pools:
                self.holders.setdefault(base, set()).add(folder)
        self.cache: dict[str, list[tuple[PoolPlan, str]]] = {}

    def pool_files(self, base: str) -> list[tuple[PoolPlan, str]]:
        """(pool, path) of each pool holding ``<pool>/<base>``, in the cluster file's order."""
        if base not in self.cache:
            holders = self.holders.get(base, set())
            self.cache[base] = [
                (pool, f"{name}/{base}") for name, pool in self.pools.items() if name in holders
            ]
        return self.cache[base]

    def tenant_files(self, base: str) -> list[tuple[PoolPlan, str]]:
        """:meth:`pool_files` of the Cozystack (KubeVirt) pools."""
        return [(pool, path) for pool, path in self.pool_files(base) if pool.tenant_pool]

    def node_files(self, base: str) -> list[tuple[PoolPlan, str]]:
        """:meth:`pool_files` of the pools whose nodes are Talos machines of the user's own
        (bare metal, boards, clouds): configured by their machine config, not by a chart."""
        return [(pool, path) for pool, path in self.pool_files(base) if not pool.tenant_pool]
