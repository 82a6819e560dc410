"""The lock file: the image ref and digest of every extension (and board overlay) the generated
output uses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from schematic.factory.names import check_extension_names
from schematic.inputs.factory_url import split_factory_url
from schematic.output.render import yamltext

if TYPE_CHECKING:
    from schematic.factory.client import ExtensionInfo, OverlayInfo

__all__ = ["build_lock"]


def build_lock(
    extensions_info: Sequence[ExtensionInfo],
    used_names: Iterable[str],
    *,
    factory: str | None = None,
    talos: str | None = None,
    overlays: Iterable[OverlayInfo] = (),
) -> str:
    """Lock-file YAML pinning the ref and digest of every extension the output uses.

    Deterministic (names sorted, no timestamps), so a GitOps diff shows exactly a driver or
    extension image change. Raises CatalogError for a name the catalogue lacks. ``overlays``
    are the factory's entries for the board overlays the output uses (already checked); they
    are pinned under ``overlays`` (left out when there are none), so a board firmware change
    shows too.
    """
    by_name = {info.name: info for info in extensions_info}
    names = sorted(set(used_names))
    check_extension_names(
        extensions_info, names, talos=talos or "(unknown version)", factory=factory or "catalogue"
    )
    document: dict[str, object] = {}
    if factory:
        document["imageFactoryURL"] = split_factory_url(factory)[0]
    if talos:
        document["talosVersion"] = talos
    document["extensions"] = [
        {"name": name, "ref": by_name[name].ref, "digest": by_name[name].digest} for name in names
    ]
    boards = sorted({(o.name, o.image): o for o in overlays}.items())
    if boards:
        document["overlays"] = [
            {"name": name, "image": image, "ref": info.ref, "digest": info.digest}
            for (name, image), info in boards
        ]
    images = "Extension and overlay images" if boards else "Extension images"
    header = f"# {images} the generated schematics resolve to; written by talos-schematic.\n"
    return header + yamltext.dump(document)
