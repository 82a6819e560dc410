"""The generations of Cozystack's ``kubernetes-nodes`` chart and the value keys each reads.

Package data (``data/cozystack-charts.json``). The cluster file's ``cozystack.version`` is checked
against it while the file is read, and :mod:`schematic.plan.charts` holds a plan against a target;
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
    "ChartRef",
    "ChartTarget",
    "ConfigChanges",
    "Layout",
    "Support",
    "assumed_target",
    "chart_choices",
    "chart_target",
    "chart_targets",
    "check_chart_name",
    "release_note",
]

# cozystack/cozystack pull request #3523 (fixing issue #3515) names the TalosConfigTemplate by a
# hash of its spec; the template's spec is immutable, so a fixed name keeps the old one.
HASHED_TEMPLATE_PR = "cozystack/cozystack#3523"
IMMUTABLE_TEMPLATE_ISSUE = "cozystack/cozystack#3515"

Layout = Literal["osimage", "schematicid", "talos"]
LAYOUTS: tuple[Layout, ...] = ("osimage", "schematicid", "talos")
# The value key each layout carries the schematic in.
LAYOUT_KEYS: dict[Layout, str] = {
    "osimage": "osImage",
    "schematicid": "schematicID",
    "talos": "talos.schematicID",
}
# A release (v1.6.4), a line (v1.6, v1.6.x) or a pre-release (v1.7.0-alpha.3).
_RELEASE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+|x)(?:-[0-9a-z.]+)?)?")
# yes, no, or unverified: the sources this data was checked against do not settle it.
Support = Literal["yes", "no", "unverified"]
# How a machine-config change reaches a pool's workers: the chart names the
# TalosConfigTemplate by a hash of its spec (the pool rolls), by a fixed name (only workers
# created afterwards get it), or the sources do not say which.
ConfigChanges = Literal["rolls", "new-workers", "unverified"]


@dataclass(frozen=True)
class ChartRef:
    """Where Flux finds the chart: a HelmRelease's ``spec.chartRef``."""

    kind: str
    name: str
    namespace: str
    # Read from this target's own sources (False: taken from the newest line that has one).
    verified: bool

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace}


@dataclass(frozen=True)
class ChartTarget:
    """One generation of the ``kubernetes-nodes`` chart: the value keys it reads."""

    name: str
    title: str
    source: str
    aliases: tuple[str, ...]
    # A release line (``v1.6``) matches its patch releases (``v1.6.2``).
    releases: str | None
    # The releases of the line whose chart the data was read from.
    verified_releases: tuple[str, ...]
    # The commit the data describes (a branch such as main, or a pull request's head).
    commit: str | None
    layout: Layout
    keys: frozenset[str]
    talos_keys: frozenset[str]
    # osImage forms and the keys of each (empty: the chart has no osImage).
    os_image_keys: Mapping[str, frozenset[str]]
    # Keys written for this target although its sources do not show the chart reading them.
    unverified_keys: frozenset[str]
    kernel_modules_support: Support
    machine_config_changes: ConfigChanges
    chart_ref: ChartRef
    # Whether an NVIDIA GPU pool without kernelModules gets the NVIDIA modules loaded.
    nvidia_modules_by_default: bool
    # Whether the chart refuses module names / parameters at render time (PR #3571).
    module_guards: bool
    # The schema file in the shared reference this target's keys were read from.
    schema: str | None
    # Whether the release's Kubernetes app still reads spec.nodeGroups (v1.7 removed them,
    # cozystack/cozystack#3315: worker pools are KubernetesNodes objects only).
    app_node_groups: bool = True

    @property
    def verified(self) -> bool:
        """Whether a chart in the sources this data was checked against reads these keys (a
        commit was read); otherwise the keys are taken on the word of a pull request."""
        return self.commit is not None

    def accepts(self, key: str) -> bool:
        """Whether the chart reads the value ``key`` (``talos.x`` for a talos key)."""
        if key.startswith("talos."):
            return key.removeprefix("talos.") in self.talos_keys
        return key in self.keys

    @property
    def kernel_modules(self) -> bool:
        return "kernelModules" in self.keys

    def config_change_reach(self) -> str:
        """How a machine-config change (kernel modules included) reaches the pool's workers."""
        hashed = (
            f"names the TalosConfigTemplate by a hash of its spec ({HASHED_TEMPLATE_PR}, fixing "
            f"{IMMUTABLE_TEMPLATE_ISSUE}), so a machine-config change, kernel modules included, "
            "creates a new template and replaces every worker of the pool"
        )
        fixed = (
            "names the TalosConfigTemplate <cluster>-<pool>, a fixed name, and a template's "
            f"spec cannot change ({IMMUTABLE_TEMPLATE_ISSUE}), so a machine-config change, "
            "kernel modules included, reaches only workers created from then on; replace the "
            "pool's machines for it to reach the others"
        )
        if self.machine_config_changes == "rolls":
            return f"{self.title}'s chart {hashed}"
        if self.machine_config_changes == "new-workers":
            return f"{self.title}'s chart {fixed}"
        return (
            f"the sources here do not settle how {self.title}'s chart names the "
            f"TalosConfigTemplate: if it {hashed}; if it {fixed}. `kubectl get "
            "talosconfigtemplates -n <namespace>` tells: a 6-character hash after the pool's "
            "name is the first case"
        )

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
            verified_releases=tuple(entry["verifiedReleases"]),
            commit=entry["commit"],
            layout=entry["layout"],
            keys=frozenset(entry["keys"]),
            talos_keys=frozenset(entry["talosKeys"]),
            os_image_keys={form: frozenset(keys) for form, keys in entry["osImageKeys"].items()},
            unverified_keys=frozenset(entry["unverifiedKeys"]),
            kernel_modules_support=entry["kernelModules"],
            machine_config_changes=entry["machineConfigChanges"],
            chart_ref=ChartRef(**entry["chartRef"], verified=entry["chartRefVerified"]),
            nvidia_modules_by_default=entry["nvidiaModulesByDefault"],
            module_guards=entry["moduleGuards"],
            schema=entry["schema"],
            app_node_groups=entry.get("appNodeGroups", True),
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


def chart_choices() -> str:
    """The targets as ``--chart`` help names them: ``v1.6; main; pr3571; osimage (PR #4171),
    unverified; v1.7, unverified``: each target's name, with the pull request it stands for when
    the name does not say it (any alias and any release of a target's line are taken too), and
    ``unverified`` where no chart in the sources reads its keys."""
    named = []
    for target in chart_targets():
        pull = target.title.removeprefix("Cozystack ")
        number = pull.removeprefix("PR #")
        shown = pull.startswith("PR #") and number not in target.name
        name = f"{target.name} ({pull})" if shown else target.name
        # No chart in the sources reads an unverified target's keys: said wherever it is named.
        named.append(name if target.verified else f"{name}, unverified")
    return "; ".join(named)


def release_note(value: str) -> str | None:
    """What to know when ``value`` names a release of a target's line that its data was not
    read from (v1.6.4 when v1.6.0 to v1.6.2 were), or a line none of whose releases was; None when
    ``value`` is a verified release or not a release at all."""
    match = _RELEASE.fullmatch(value.strip().lower())
    if not match:
        return None
    target = chart_target(value)
    line = f"v{match[1]}.{match[2]}"
    named = value.strip() if match[3] and match[3] != "x" else None
    if target.releases != line or (named is not None and named in target.verified_releases):
        return None
    if target.verified_releases:
        first, last = target.verified_releases[0], target.verified_releases[-1]
        seen = f"its data was read from {first} … {last}"
        if named is None:
            return None
        return (
            f"Cozystack {named} is not among the releases this tool's {target.name} data was "
            f"checked against ({seen}); its kubernetes-nodes chart is taken to read the same "
            f"keys as {last}"
        )
    return (
        f"no Cozystack {line} release is in the sources this tool's {target.name} data was "
        f"checked against: {target.source}"
    )


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
