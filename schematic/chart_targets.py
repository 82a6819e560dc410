"""The generations of Cozystack's ``kubernetes-nodes`` chart and the value keys each reads.

Package data (``data/cozystack-charts.json``). The cluster file's ``cozystack.version`` is checked
against it while the file is read, and :mod:`schematic.charts` holds a plan against a target;
this module imports neither, so reading and planning both depend on it and not on each other.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Literal

__all__ = [
    "LAYOUTS",
    "LAYOUT_KEYS",
    "ChartTarget",
    "Layout",
    "assumed_target",
    "chart_target",
    "chart_targets",
    "check_chart_name",
]

Layout = Literal["osimage", "schematicid", "talos"]
LAYOUTS: tuple[Layout, ...] = ("osimage", "schematicid", "talos")
# The value key each layout carries the schematic in.
LAYOUT_KEYS: dict[Layout, str] = {
    "osimage": "osImage",
    "schematicid": "schematicID",
    "talos": "talos.schematicID",
}
_RELEASE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+|x))?")


@dataclass(frozen=True)
class ChartTarget:
    """One generation of the ``kubernetes-nodes`` chart: the value keys it reads."""

    name: str
    title: str
    source: str
    aliases: tuple[str, ...]
    # A release line (``v1.6``) matches its patch releases (``v1.6.2``).
    releases: str | None
    layout: Layout
    keys: frozenset[str]
    talos_keys: frozenset[str]
    # osImage forms and the keys of each (empty: the chart has no osImage).
    os_image_keys: Mapping[str, frozenset[str]]
    # Whether an NVIDIA GPU pool without kernelModules gets the NVIDIA modules loaded.
    nvidia_modules_by_default: bool
    # Whether the chart refuses module names / parameters at render time (PR #3571).
    module_guards: bool
    # The schema file in the shared reference this target's keys were read from.
    schema: str | None

    def accepts(self, key: str) -> bool:
        """Whether the chart reads the value ``key`` (``talos.x`` for a talos key)."""
        if key.startswith("talos."):
            return key.removeprefix("talos.") in self.talos_keys
        return key in self.keys

    @property
    def kernel_modules(self) -> bool:
        return "kernelModules" in self.keys

    def accepts_layout(self, layout: Layout) -> bool:
        return self.accepts(LAYOUT_KEYS[layout])

    def __str__(self) -> str:
        return self.name


@functools.cache
def _table() -> tuple[tuple[ChartTarget, ...], str]:
    text = resources.files("schematic.data").joinpath("cozystack-charts.json").read_text()
    data = json.loads(text)
    targets = tuple(
        ChartTarget(
            name=entry["name"],
            title=entry["title"],
            source=entry["source"],
            aliases=tuple(entry["aliases"]),
            releases=entry["releases"],
            layout=entry["layout"],
            keys=frozenset(entry["keys"]),
            talos_keys=frozenset(entry["talosKeys"]),
            os_image_keys={form: frozenset(keys) for form, keys in entry["osImageKeys"].items()},
            nvidia_modules_by_default=entry["nvidiaModulesByDefault"],
            module_guards=entry["moduleGuards"],
            schema=entry["schema"],
        )
        for entry in data["targets"]
    )
    return targets, data["assumed"]


def chart_targets() -> tuple[ChartTarget, ...]:
    """Every known chart target, oldest first."""
    return _table()[0]


def assumed_target() -> ChartTarget:
    """The target assumed when a cluster file names none and no layout implies one."""
    return chart_target(_table()[1])


def _choices() -> str:
    return ", ".join(f"{target.name} ({target.title})" for target in chart_targets())


def check_chart_name(value: object) -> str:
    """The canonical target name for ``value`` (a name, an alias or a release such as v1.6.2);
    ValueError naming the choices otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"give the chart as text, one of {_choices()}")
    text = value.strip().lower()
    for target in chart_targets():
        if text == target.name or text in target.aliases:
            return target.name
        match = _RELEASE.fullmatch(text)
        if target.releases and match and f"v{match[1]}.{match[2]}" == target.releases:
            return target.name
    raise ValueError(f"{value!r} is not a chart this tool knows; one of {_choices()}")


def chart_target(name: str) -> ChartTarget:
    """The target called ``name`` (or an alias / release of it)."""
    canonical = check_chart_name(name)
    return next(target for target in chart_targets() if target.name == canonical)
