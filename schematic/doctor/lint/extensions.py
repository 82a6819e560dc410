"""Extension-name rules: names the Talos release does not offer, or no release offers together
(TS150), unsorted lists (TS151)."""

from __future__ import annotations

from collections.abc import Sequence

from schematic.core.model import Schematic, SystemExtensions
from schematic.doctor.lint.findings import Collector
from schematic.doctor.lint.inventory import Place
from schematic.errors import CatalogError

__all__ = [
    "check_extension_names",
    "check_extension_order",
    "check_extensions_together",
]


def check_extension_names(
    extensions: Sequence[str],
    talos: str,
    where: str,
    place: Place,
    out: Collector,
    obj: str = "",
) -> bool:
    """Report every name ``talos`` does not offer (by the facts file in effect, else the
    packaged catalogue); False when the release is not catalogued."""
    from schematic.facts.catalog import unoffered_extensions
    from schematic.plan.release import release_of

    try:
        planned = release_of(talos)
        offered, release = planned.extensions, planned.planned_with
    except CatalogError as err:
        out.add(
            "TS003",
            message=f"{where}: extension names not checked: {err}",
            file=place.file,
            line=place.line,
            obj=obj,
        )
        return False
    for unknown in unoffered_extensions(extensions, offered, factory_aliases=True):
        out.add(
            "TS150",
            message=f"{where}: extension {unknown.name!r} is not offered by Talos {release} "
            f"({unknown.hint()})",
            file=place.file,
            line=place.line,
            obj=obj,
        )
    return True


def check_extensions_together(
    extensions: Sequence[str], where: str, place: Place, out: Collector, obj: str = ""
) -> None:
    """With the Talos release unknown: names no known release offers all at once, which the
    factory refuses to build for any version (a pre-1.8 untiered NVIDIA name beside a tiered
    one)."""
    from schematic.facts.catalog import extensions_never_together

    apart = extensions_never_together(extensions)
    if apart:
        listed = "; ".join(f"{name} (Talos {releases})" for name, releases in apart)
        out.add(
            "TS150",
            message=f"{where}: no Talos release offers these extensions together: {listed}",
            file=place.file,
            line=place.line,
            obj=obj,
        )


def check_extension_order(
    schematic: Schematic, where: str, place: Place, out: Collector, obj: str = ""
) -> None:
    extensions = schematic.extensions
    ordered = tuple(sorted(extensions))
    if extensions != ordered and out.first(f"TS151 {schematic.id}"):
        custom = schematic.customization
        resorted = schematic.model_copy(
            update={
                "customization": custom.model_copy(
                    update={"system_extensions": SystemExtensions(official_extensions=ordered)}
                )
            }
        )
        out.add(
            "TS151",
            message=f"{where}: extensions are not in the factory UI's sorted order; sorted, "
            "the same "
            f"schematic has ID {resorted.id}",
            file=place.file,
            line=place.line,
            obj=obj,
        )
