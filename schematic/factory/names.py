"""Extension and overlay names checked against the lists a factory offers for one Talos release."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from schematic.errors import CatalogError, closest_names

if TYPE_CHECKING:
    from schematic.factory.client import ExtensionInfo, OverlayInfo

__all__ = ["check_extension_names", "check_overlay"]

# A self-hosted factory may serve a handful of boards: name them all when they fit on a line.
_OVERLAYS_SHOWN = 8


def check_extension_names(
    extensions_info: Sequence[ExtensionInfo],
    names: Iterable[str],
    *,
    talos: str,
    factory: str,
) -> None:
    """Raise CatalogError naming every extension the factory does not offer for ``talos``."""
    from schematic.facts.catalog import unoffered_extensions

    unknown = unoffered_extensions(sorted(set(names)), [info.name for info in extensions_info])
    if not unknown:
        return
    lines = []
    for name in unknown:
        # The factory's own list may differ from the packaged catalogue: no releases from it.
        hint = name.hint(releases=False)
        shown = f" ({hint})" if hint else ""
        lines.append(f"{factory}: Talos {talos} offers no extension {name.name}{shown}")
    raise CatalogError("\n".join(lines))


def check_overlay(
    overlays_info: Sequence[OverlayInfo], name: str, image: str, *, talos: str, factory: str
) -> None:
    """Raise CatalogError when the factory offers no overlay ``name`` in ``image`` for ``talos``.

    The message starts with the schematic key at fault (``overlay.name`` or ``overlay.image``).
    """
    images = sorted({info.image for info in overlays_info if info.name == name})
    if not images:
        offered = sorted({info.name for info in overlays_info})
        close = closest_names(name, offered, most=1)
        if close:
            hint = f" (did you mean {close[0]}?)"
        elif not offered:
            hint = " (it lists no overlays)"
        elif len(offered) <= _OVERLAYS_SHOWN:
            hint = f" (it offers {', '.join(offered)})"
        else:
            hint = ""
        raise CatalogError(
            f"overlay.name: {factory}: Talos {talos} offers no overlay {name!r}{hint}"
        )
    if image not in images:
        raise CatalogError(
            f"overlay.image: {factory}: Talos {talos} offers overlay {name!r} in "
            f"{', '.join(images)}, not {image}"
        )
