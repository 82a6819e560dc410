"""Asking an Image Factory about a plan: its live catalogue, and registering its schematics.

The only steps of ``generate``, ``check`` and ``upgrade`` that touch the network, between
planning and rendering: the catalogue check first (so no misspelt schematic is registered),
then one POST per distinct schematic. Either failing raises before anything is written.
:mod:`schematic.factory` (and with it httpx) is imported only here and only then, so offline
runs start fast.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from schematic.factory.live import (
    LiveCatalogue,
    catalogue_error,
    check_live_catalogue,
    lock_text,
)
from schematic.plan.cluster import (
    ClusterPlan,
    PoolPlan,
    boot_media_schematics,
    pools_by_schematic,
    pools_label,
    with_factory_schematics,
)

if TYPE_CHECKING:
    from schematic.factory.client import FactoryClient
    from schematic.plan.upgrade import TargetPlan

__all__ = [
    "Consulted",
    "consult_factory",
    "fetch_live_catalogue",
    "live_catalogue_of",
    "register_plan",
]

Progress = Callable[[int, int], None] | None


@dataclass(frozen=True)
class Consulted:
    """The plan after the factory was asked: with the IDs it answered, the lock text, and what
    to tell the user."""

    plan: ClusterPlan
    lock: str | None = None
    notes: tuple[str, ...] = ()


def fetch_live_catalogue(
    client: FactoryClient, talos: str, *, overlays: bool = False
) -> LiveCatalogue:
    """What ``client``'s factory offers for ``talos`` (extensions cached on disk for a day;
    overlays asked for only when ``overlays``)."""
    from schematic.factory.cache import live_extensions

    return LiveCatalogue(
        factory=client.url,
        talos=talos,
        extensions=tuple(live_extensions(client, talos)),
        overlays=tuple(client.official_overlays(talos)) if overlays else (),
    )


def register_plan(client: FactoryClient, plan: ClusterPlan, progress: Progress = None) -> Consulted:
    """POST each distinct schematic (and boot-media schematic) once; the plan carrying the
    IDs the factory answered (an Enterprise factory stamps its owner into them)."""
    from schematic.factory.client import register_schematics

    items = [
        (pools_label(plan.source, [pool.name for pool in pools]), pools[0].schematic)
        for pools in pools_by_schematic(plan).values()
    ]
    # The boot media's own schematics: a factory builds no ISO or PXE script for an ID it has
    # not received.
    booting = boot_media_schematics(plan)
    if booting:
        from schematic.core.model import Schematic

        items += [(label, Schematic.from_yaml(body)) for label, _key, body in booting]
    registrations = register_schematics(client, items, progress=progress)
    stamped = {
        registration.offline_id: (registration.id, registration.canonical)
        for registration in registrations.values()
        if registration.factory_changed_body
    }
    notes = [reg.notice for reg in registrations.values() if reg.notice]
    if client.url != plan.talos.image_factory_url:
        notes.append(
            f"note: registered with {client.url}; the generated image URLs point at "
            f"talos.imageFactoryURL {plan.talos.image_factory_url}"
        )
    plan = with_factory_schematics(plan, stamped) if stamped else plan
    return Consulted(plan=plan, notes=tuple(notes))


def consult_factory(
    plan: ClusterPlan,
    factory: str | None,
    register: bool,
    live_catalogue: bool,
    progress: Progress = None,
) -> Consulted:
    """The plan after registration (if asked), and the lock text (with ``live_catalogue``);
    CatalogError naming each pool whose images the factory would not build."""
    if not (register or live_catalogue):
        return Consulted(plan=plan)
    from schematic.factory.client import FactoryClient
    from schematic.inputs.factory_url import resolve_factory_url

    lock = None
    notes: tuple[str, ...] = ()
    with FactoryClient(resolve_factory_url(factory, plan.talos.image_factory_url)) as client:
        if live_catalogue:
            boards = any(pool.media.overlay is not None for pool in plan.pools)
            live = fetch_live_catalogue(client, plan.talos.version, overlays=boards)
            error = catalogue_error(plan, live)
            if error is not None:
                raise error
            lock = lock_text(plan.pools, live)
        if register:
            registered = register_plan(client, plan, progress)
            plan, notes = registered.plan, registered.notes
    return Consulted(plan=plan, lock=lock, notes=notes)


def live_catalogue_of(factory: str | None) -> Callable[[TargetPlan, str], TargetPlan]:
    """How ``upgrade`` holds its target against the live catalogue of the target release:
    from ``factory``, else ``$TALOS_SCHEMATIC_FACTORY``, else the cluster file's
    ``talos.imageFactoryURL``; a pool it would build no image for is refused."""

    def fetch(target: TargetPlan, image_factory_url: str) -> TargetPlan:
        from schematic.factory.client import FactoryClient
        from schematic.inputs.factory_url import resolve_factory_url

        boards = any(
            isinstance(pool, PoolPlan) and pool.media.overlay is not None for pool in target.pools
        )
        with FactoryClient(resolve_factory_url(factory, image_factory_url)) as client:
            live = fetch_live_catalogue(client, target.talos, overlays=boards)
        return check_live_catalogue(target, live)

    return fetch
