"""Extension names checked against the list a factory offers for one Talos release."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from schematic.errors import CatalogError

if TYPE_CHECKING:
    from schematic.factory import ExtensionInfo

__all__ = ["check_extension_names"]


def check_extension_names(
    extensions_info: Sequence[ExtensionInfo],
    names: Iterable[str],
    *,
    talos: str,
    factory: str,
) -> None:
    """Raise CatalogError naming every extension the factory does not offer for ``talos``."""
    offered = {info.name for info in extensions_info}
    unknown = sorted({name for name in names if name not in offered})
    if not unknown:
        return
    lines = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(offered), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        lines.append(f"{factory}: Talos {talos} offers no extension {name}{hint}")
    raise CatalogError("\n".join(lines))
