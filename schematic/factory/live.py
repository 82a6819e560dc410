"""Pool plans held against an Image Factory's live catalogue: one check for every command.

``generate --live-catalogue`` and ``check --live-catalogue`` refuse the run when a pool names an
extension or board overlay the factory does not offer for the release; ``upgrade
--live-catalogue`` marks such a pool as breaking. Both read the same problems from
:func:`pool_problems`; the lists themselves are fetched by the caller (the factory client is
the only network I/O), so this module stays pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from schematic.errors import CatalogError
from schematic.factory.lock import build_lock
from schematic.factory.names import check_extension_names, check_overlay
from schematic.plan.cluster import ClusterPlan, PoolPlan, pools_by_schematic, pools_label
from schematic.plan.upgrade import PoolRefusal, TargetPlan

if TYPE_CHECKING:
    from schematic.factory.client import ExtensionInfo, OverlayInfo

__all__ = [
    "LiveCatalogue",
    "catalogue_error",
    "check_live_catalogue",
    "lock_text",
    "pool_problems",
]

# Problems named in one error before the rest are counted: pools may number thousands.
_PROBLEMS_SHOWN = 10


@dataclass(frozen=True)
class LiveCatalogue:
    """What one factory offers for one Talos release."""

    factory: str
    talos: str
    extensions: tuple[ExtensionInfo, ...]
    # Asked for only when a pool has a board overlay (most clusters have none).
    overlays: tuple[OverlayInfo, ...] = ()


def pool_problems(pool: PoolPlan, live: LiveCatalogue) -> tuple[str, ...]:
    """Each extension and the board overlay of ``pool`` that ``live`` does not offer, one line
    each (empty: the factory builds the pool's images)."""
    problems: list[str] = []
    try:
        check_extension_names(
            live.extensions, pool.extensions, talos=live.talos, factory=live.factory
        )
    except CatalogError as err:
        problems += str(err).splitlines()
    overlay = pool.media.overlay
    if overlay is not None:
        try:
            check_overlay(
                live.overlays, overlay.name, overlay.image, talos=live.talos, factory=live.factory
            )
        except CatalogError as err:
            problems.append(str(err))
    return tuple(problems)


def catalogue_error(plan: ClusterPlan, live: LiveCatalogue) -> CatalogError | None:
    """The error naming each pool whose images the factory would not build (pools sharing a
    schematic named together); None when it builds them all."""
    problems: list[str] = []
    for pools in pools_by_schematic(plan).values():
        where = pools_label(plan.source, [pool.name for pool in pools])
        problems += [f"{where}: {line}" for line in pool_problems(pools[0], live)]
    if not problems:
        return None
    shown = problems[:_PROBLEMS_SHOWN]
    if len(problems) > _PROBLEMS_SHOWN:
        shown.append(f"… and {len(problems) - _PROBLEMS_SHOWN} more")
    return CatalogError("\n".join(shown))


def lock_text(pools: Iterable[PoolPlan], live: LiveCatalogue) -> str:
    """``extensions.lock.yaml``: the image ref and digest of every extension and overlay the
    pools use, as the factory lists them."""
    chosen: Sequence[PoolPlan] = tuple(pools)
    used = {name for pool in chosen for name in pool.extensions}
    boards = {
        (pool.media.overlay.name, pool.media.overlay.image)
        for pool in chosen
        if pool.media.overlay is not None
    }
    pinned = [info for info in live.overlays if (info.name, info.image) in boards]
    return build_lock(
        list(live.extensions), used, factory=live.factory, talos=live.talos, overlays=pinned
    )


def check_live_catalogue(target: TargetPlan, live: LiveCatalogue) -> TargetPlan:
    """The target plan with every pool whose extensions or board overlay the factory does not
    offer for the target release refused (it would build no image for that schematic)."""
    pools: list[PoolPlan | PoolRefusal] = []
    for pool in target.pools:
        problems = pool_problems(pool, live) if isinstance(pool, PoolPlan) else ()
        if not problems:
            pools.append(pool)
            continue
        fixes = (
            "remove it from the pool or its profile, or use the name the factory lists for "
            f"that release (talos-schematic extensions --talos {target.talos} --live)",
        )
        pools.append(PoolRefusal(name=pool.name, reason="; ".join(problems), fixes=fixes))
    return replace(target, pools=tuple(pools))
