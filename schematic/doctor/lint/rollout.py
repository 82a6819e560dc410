"""TS136: a rollout script that would upgrade a pool's nodes without the pool's extensions.

A node keeps its extensions across an upgrade only when the image it is upgraded to carries its
schematic. A rollout script (``upgrade -f talosctl`` or ``-f tuppr``, or one written by hand) is
read line by line: each ``talosctl upgrade`` and its ``--image`` (none: the release's plain
``metal-installer``, siderolabs/talos ``cmd/talosctl/cmd/talos/upgrade.go``), and each
``kubectl annotate`` of tuppr's ``tuppr.home-operations.com/schematic`` (tuppr upgrades to
``<factory-url>/<schematic>:<version>``, home-operations/tuppr
``internal/controller/talosupgrade/upgrade.go``). A line belongs to the pool its ``# pool NAME``
heading or its ``node.kubernetes.io/pool=NAME`` selector names. The pools, their schematics and
extensions are those of this tool's ``index.yaml`` among the inputs. Found: an image with no
schematic or the empty one for a pool that has extensions, and another pool's schematic.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from schematic.facts.talos import EMPTY_SCHEMATIC_ID
from schematic.inputs.nodes import POOL_LABEL
from schematic.output.outdir import is_index_document

if TYPE_CHECKING:
    from schematic.doctor.lint.findings import Collector
    from schematic.doctor.lint.loader import Document

__all__ = ["IndexedPool", "check_rollout_scripts", "indexed_pools"]

_HEADING = re.compile(r"^#\s*pool\s+(?P<pool>[a-z0-9]([-a-z0-9]*[a-z0-9])?)\b")
_ID = re.compile(r"^[0-9a-f]{64}$")
_TUPPR_SCHEMATIC = "tuppr.home-operations.com/schematic="


@dataclass(frozen=True)
class IndexedPool:
    """A pool as this tool's index records it."""

    name: str
    schematic_id: str
    extensions: tuple[str, ...]


def indexed_pools(documents: Iterable[Document]) -> dict[str, IndexedPool]:
    """The pools of every ``index.yaml`` this tool wrote among ``documents``, by name."""
    pools: dict[str, IndexedPool] = {}
    for doc in documents:
        data: Any = doc.data
        if not is_index_document(data):
            continue
        for entry in data.get("pools") or ():
            if not isinstance(entry, dict):
                continue
            name, schematic = entry.get("name"), entry.get("schematicID")
            extensions = entry.get("extensions") or ()
            if isinstance(name, str) and isinstance(schematic, str):
                pools[name] = IndexedPool(name, schematic, tuple(str(e) for e in extensions))
    return pools


def _image_schematic(image: str | None) -> str | None:
    """The schematic an installer reference carries; None for a plain one (no ID in it)."""
    if image is None:
        return None
    reference = image.rpartition(":")[0] if ":" in image.rpartition("/")[2] else image
    last = reference.rpartition("/")[2]
    return last if _ID.match(last) else None


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:
        return line.split()


def _option(words: Sequence[str], *names: str) -> str | None:
    for index, word in enumerate(words):
        for name in names:
            if word == name and index + 1 < len(words):
                return words[index + 1]
            if word.startswith(f"{name}="):
                return word.partition("=")[2]
    return None


def _selected_pool(words: Sequence[str]) -> str | None:
    selector = _option(words, "-l", "--selector")
    if selector is not None and selector.startswith(f"{POOL_LABEL}="):
        return selector.partition("=")[2]
    return None


def _problem(pool: IndexedPool, schematic: str | None, pools: dict[str, IndexedPool]) -> str:
    """What is wrong with upgrading ``pool`` to ``schematic`` ("" when nothing is)."""
    if schematic == pool.schematic_id:
        return ""
    if (schematic is None or schematic == EMPTY_SCHEMATIC_ID) and pool.extensions:
        return f"drops its extensions ({', '.join(pool.extensions)})"
    for other in pools.values():
        if other.name != pool.name and other.schematic_id == schematic:
            return f"installs pool {other.name!r}'s schematic {schematic} instead"
    return ""


def _check_line(
    words: Sequence[str], pool: IndexedPool, pools: dict[str, IndexedPool]
) -> tuple[str, str] | None:
    """(what the line does, what is wrong) for a line that would lose the pool's schematic."""
    if words[:2] == ["talosctl", "upgrade"]:
        image = _option(words, "--image", "-i")
        problem = _problem(pool, _image_schematic(image), pools)
        shown = f"--image {image}" if image else "no --image (the release's plain installer)"
        return ("talosctl upgrade with " + shown, problem) if problem else None
    if words[:2] == ["kubectl", "annotate"]:
        for word in words:
            if not word.startswith(_TUPPR_SCHEMATIC):
                continue
            schematic = word.removeprefix(_TUPPR_SCHEMATIC)
            problem = _problem(pool, schematic if _ID.match(schematic) else None, pools)
            if problem:
                return (f"tuppr's schematic annotation {schematic or '(empty)'}", problem)
    return None


def check_rollout_scripts(
    scripts: Iterable[Document], pools: dict[str, IndexedPool], out: Collector
) -> None:
    """TS136 for every upgrade line of ``scripts`` that a pool of ``pools`` would lose its
    schematic by; without ``pools`` nothing says what each pool runs (TS001)."""
    for script in scripts:
        if not pools:
            if any(
                _words(line)[:2] == ["talosctl", "upgrade"] for line in script.text.splitlines()
            ):
                out.add(
                    "TS001",
                    message="rollout script: no index.yaml of this tool among the inputs, so its "
                    "upgrade images are not held against the pools' schematics",
                    file=script.file,
                    line=None,
                    fix="lint the script with the output directory it was made for: "
                    "talos-schematic lint OUT rollout.sh",
                )
            continue
        heading: str | None = None
        for number, raw in enumerate(script.text.splitlines(), start=1):
            line = raw.strip()
            found = _HEADING.match(line)
            if found:
                heading = found["pool"]
                continue
            words = _words(line)
            if not words:
                continue
            name = _selected_pool(words) or heading
            pool = pools.get(name) if name is not None else None
            if pool is None:
                continue
            checked = _check_line(words, pool, pools)
            if checked is not None:
                what, problem = checked
                out.add(
                    "TS136",
                    message=f"pool {pool.name!r}: {what} {problem}; the pool runs schematic "
                    f"{pool.schematic_id}",
                    file=script.file,
                    line=number,
                )
