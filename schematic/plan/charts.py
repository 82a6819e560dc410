"""The Cozystack chart a cluster's pools land in, and what that chart reads.

Cozystack's ``kubernetes-nodes`` chart has changed shape three times (DOMAIN §4): released
v1.6.x reads only ``talos.schematicID``; PR #3571 adds a root ``schematicID`` and
``kernelModules``; PR #4171 adds the per-pool ``osImage`` union. None of the charts refuses a key
it does not know, so values written for another generation validate and are silently ignored —
a pool boots the chart's default schematic and its GPUs come up without a driver. A *chart
target* (``cozystack.version`` in the cluster file, ``--chart`` on the command line) says which
chart the values are for; the keys each target reads are package data
(``data/cozystack-charts.json``). :func:`fit_plan` holds a plan against its target: a key the
chart would ignore is an error (or, when the user insists, a warning saying what will not
happen), and the chart's own render-time guards are applied here, at generate time.

This module reads no file but its data and imports nothing heavy, so `generate` stays fast.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from schematic.errors import ClusterFileError
from schematic.facts.chart_targets import (
    LAYOUT_KEYS,
    LAYOUTS,
    ChartTarget,
    Layout,
    assumed_target,
    chart_choices,
    chart_target,
    chart_targets,
    check_chart_name,
    release_note,
)
from schematic.facts.nvidia import NVIDIA_MODULES
from schematic.messages import Message

if TYPE_CHECKING:
    from schematic.plan.cluster import ClusterPlan, PoolPlan

__all__ = [
    "INSIST_HINT",
    "LAYOUTS",
    "LAYOUT_KEYS",
    "VALUES_FILES",
    "ChartFit",
    "ChartTarget",
    "Layout",
    "assumed_target",
    "chart_target",
    "chart_targets",
    "charts_with",
    "check_chart_name",
    "check_module_guards",
    "fit_plan",
    "ignored_consequence",
    "no_namespace_message",
    "no_release_message",
    "resolve_target",
    "unreachable_changes",
]

# The target a layout implies when no chart is named.
_LAYOUT_TARGETS: dict[Layout, str] = {
    "osimage": "osimage",
    "schematicid": "pr3571",
    "talos": "v1.6",
}
# PR #3571's render-time guards on kernelModules (its chart refuses anything else).
MODULE_NAME = re.compile(r"[a-z0-9_-]+")
_PARAMETER_FORBIDDEN = re.compile(r"""[$`\\'"\s]""")
_DEFAULT_SCHEMATIC = "ce4c9805…7515"
# How a refusal of a key or pool the chart cannot use ends: the way to write it anyway.
INSIST_HINT = " (or --allow-ignored-keys to write it anyway)"
# Pools a message names before "and N more".
_POOLS_IN_A_MESSAGE = 3


@dataclass(frozen=True)
class ChartFit:
    """A plan held against its chart: the target, the layout, and what to tell the user."""

    target: ChartTarget
    layout: Layout
    # Said on stderr before anything else: which target was assumed and why.
    assumption: str | None = None
    # Loud warnings: things that will not happen on this chart (the user insisted, or the
    # chart offers no way). Printed with a "warning:" prefix.
    warnings: tuple[Message, ...] = ()
    # Notes: facts worth knowing that are not problems of this run.
    notes: tuple[Message, ...] = ()
    # Keys the chart ignores that the user insisted on: written anyway.
    insisted: frozenset[str] = frozenset()

    def writes(self, key: str) -> bool:
        """Whether the values carry ``key``: the chart reads it, or the user insisted."""
        return self.target.accepts(key) or key in self.insisted


def resolve_target(
    chart: str | None, layout: Layout | None, *, source: str = "cluster.yaml"
) -> tuple[ChartTarget, Layout, str | None]:
    """The target, the layout and the sentence saying what was assumed (None if nothing).

    A named chart decides the layout unless one is given; a layout alone implies the chart it
    was made for; with neither, :func:`assumed_target`.
    """
    if chart is not None:
        try:
            target = chart_target(chart)
        except ValueError as err:
            raise ClusterFileError(f"{source}: cozystack.version: {err}") from None
        return target, layout or target.layout, None
    if layout is not None:
        target = chart_target(_LAYOUT_TARGETS[layout])
        said = (
            f"{source}: no chart target given (cozystack.version, or --chart); assuming "
            f"{target.name} ({target.title}) from --layout {layout}"
        )
        return target, layout, said
    target = assumed_target()
    said = (
        f"{source}: no chart target given (cozystack.version, or --chart); assuming "
        f"{target.name} ({target.title}: the schematic in {LAYOUT_KEYS[target.layout]}, "
        "kernelModules). Released Cozystack v1.6.x ignores both: set cozystack.version: v1.6 "
        "for it"
    )
    return target, target.layout, said


def _tenant_pools_named(pools: Iterable[str]) -> str:
    """`` (tenant pools "a", "b", "c", ...)``, the first three named; empty for none."""
    names = list(pools)
    shown = ", ".join(f'"{name}"' for name in names[:3]) + (", ..." if len(names) > 3 else "")
    return f" (tenant pools {shown})" if names else ""


def no_release_message(source: str, pools: Iterable[str] = ()) -> str:
    """The error for Cozystack output from a cluster file that names no Cozystack release;
    ``source`` names the file and the line where the release goes (``FILE:LINE``)."""
    which = _tenant_pools_named(pools)
    return (
        f"{source}: cozystack.version: no Cozystack release named{which}; each release's "
        "kubernetes-nodes chart reads other keys and silently ignores the rest, so the tool "
        "does not guess. Add to the cluster file\n  cozystack:\n    version: TARGET\n"
        f"(or pass --chart TARGET), TARGET one of: {chart_choices()}"
    )


def no_namespace_message(plan: ClusterPlan, pools: Iterable[str] = ()) -> str:
    """The error for Cozystack objects from a cluster file that names no tenant namespace."""
    which = _tenant_pools_named(pools)
    return (
        f"{plan.at('namespace')}: namespace: not set{which}; each pool's KubernetesNodes "
        "object (or HelmRelease) belongs in the management-cluster namespace of the tenant's "
        f'Kubernetes app "{plan.cluster}", and an object without one lands wherever the '
        "current kubectl context points, beside no tenant. The namespace is not derived from "
        "the cluster name (the tenant's name is not in the file). Add to the cluster file\n"
        f"  namespace: tenant-NAME\n(`init --namespace tenant-NAME` writes it), or write only "
        "the values (-f values)"
    )


# --- why a key matters when the chart ignores it ---------------------------------------------


def _layout_consequence(layout: Layout) -> str:
    return (
        f"{LAYOUT_KEYS[layout]} would be silently ignored: every pool would boot the chart's "
        f"default schematic ({_DEFAULT_SCHEMATIC}, qemu-guest-agent only) at the chart's default "
        "Talos version, and GPU pools would come up without a driver"
    )


_CONSEQUENCES = {
    "kernelModules": "the chart would load none of these modules: the extensions install "
    "them but never load them",
    "talos.registryMirrors": "the workers would pull every image from the upstream "
    "registries, not from these mirrors",
    "talos.imageFactoryCA": "CDI would not trust the factory's certificate: the worker disk "
    "import fails with 'x509: certificate signed by unknown authority' and no worker boots",
}


def _consequence(key: str) -> str:
    return _CONSEQUENCES.get(key, "the setting would have no effect")


def ignored_consequence(key: str) -> str:
    """What does not happen when a chart ignores the value ``key`` (``talos.x`` for talos)."""
    for layout, layout_key in LAYOUT_KEYS.items():
        if key == layout_key:
            return _layout_consequence(layout).replace(" every pool ", " the pool ")
    return _consequence(key)


def charts_with(key: str) -> str:
    """The targets whose chart reads ``key``, for a message ("pr3571 or osimage")."""
    return _charts_with(key)


def _layouts_for(target: ChartTarget) -> str:
    return ", ".join(
        f"--layout {layout} ({LAYOUT_KEYS[layout]})"
        for layout in LAYOUTS
        if target.accepts_layout(layout)
    )


def _charts_with(key: str) -> str:
    names = [
        target.name
        for target in chart_targets()
        if target.accepts(key) and key not in target.unverified_keys
    ]
    return " or ".join(names) if names else "none of the known charts"


def _unverified_modules(source: str, pool: str, target: ChartTarget, names: str) -> Message:
    """Why a GPU pool's kernelModules may not load on a chart whose reading of them the
    sources do not settle, how to check, and the durable way to load them."""
    return Message(
        level="warning",
        source=source,
        pools=(pool,),
        cause=f"kernelModules ({names}) is written, but whether {target.title}'s "
        "kubernetes-nodes chart reads kernelModules is not settled by the sources this tool was "
        "checked against; if it does not, the GPUs come up without a driver",
        fix="check before rolling out: `kubectl get applicationdefinitions kubernetes-nodes -o "
        "jsonpath='{.spec.application.openAPISchema}' | grep -c kernelModules` prints 0 where "
        "the chart does not read it; then move to a chart that has it "
        f"(--chart {_charts_with('kernelModules')})",
        details="pull request #3571 adds kernelModules; its release is not known. Without it "
        "the extensions install the modules but never load them. The durable way to load them "
        "is the chart's kernelModules value (the chart renders it into the TalosConfigTemplate "
        "on every reconcile; a machine-config patch applied by hand is undone)",
    )


# --- the chart's own guards, at generate time --------------------------------------------------


def check_module_guards(where: str, modules: Iterable[Any]) -> None:
    """Refuse kernel modules the chart refuses at render time (PR #3571): names outside
    ``^[a-z0-9_-]+$``, parameters with ``$``, backticks, backslashes, quotes or whitespace.

    ``modules`` are items with ``name`` and ``parameters``; ``where`` names file and pool.
    """
    for index, module in enumerate(modules):
        if not MODULE_NAME.fullmatch(module.name):
            raise ClusterFileError(
                f"{where}: kernelModules[{index}].name: {module.name!r} is not a kernel "
                "module name: the chart accepts only lowercase letters, digits, '_' and '-' "
                "(^[a-z0-9_-]+$) and refuses to render anything else"
            )
        for number, parameter in enumerate(module.parameters):
            bad = _PARAMETER_FORBIDDEN.search(parameter)
            if bad:
                raise ClusterFileError(
                    f"{where}: kernelModules[{index}].parameters[{number}]: {parameter!r} "
                    f"holds {bad[0]!r}: the chart refuses module parameters with '$', "
                    "backticks, backslashes, quotes or whitespace; write key=value"
                )


def _check_nvidia_modules_without_gpu(where: str, pool: PoolPlan) -> None:
    """What lint calls TS122, refused before anything is written."""
    if pool.kernel_modules_state != "override" or pool.nvidia is not None:
        return
    listed = [m.name for m in pool.kernel_modules if m.name in NVIDIA_MODULES]
    if listed:
        raise ClusterFileError(
            f"{where}: kernelModules: loads {', '.join(listed)}, but this pool has no NVIDIA "
            "GPU, so its schematic carries no NVIDIA kernel modules and Talos fails to load "
            "them. Remove them, or give the pool its GPUs (talos-schematic explain TS122)"
        )


def _dropped_parameters(source: str, pool: PoolPlan) -> list[Message]:
    """A note per NVIDIA module whose computed parameters a custom list leaves out."""
    if pool.kernel_modules_state != "override" or pool.nvidia is None:
        return []
    listed = {module.name: module for module in pool.kernel_modules}
    notes = []
    for needed in pool.nvidia.kernel_modules:
        given = listed.get(needed.name)
        if given is None:
            continue  # an unloaded module has its own note
        missing = [p for p in needed.parameters if p not in given.parameters]
        if missing:
            notes.append(
                Message(
                    level="note",
                    source=source,
                    pools=(pool.name,),
                    cause=f"kernelModules lists {needed.name} without {', '.join(missing)}",
                    fix=f"add {', '.join(missing)} to {needed.name}'s parameters",
                    details="the GPUs are passed through to a VM, whose NVLink is not usable, "
                    "and the driver may fail to bring them up while it waits for NVLink",
                )
            )
    return notes


# --- fitting a plan to its chart -----------------------------------------------------------------


def unloadable_message(source: str, target: ChartTarget, pools: Sequence[PoolPlan]) -> str:
    """Three lines for pools whose modules ``target``'s chart cannot load: why they are
    refused, what works on that release, and the ways forward (the charts with kernelModules,
    a release expected to bring it, the --allow-ignored-keys override)."""
    named = ", ".join(
        f'pool "{pool.name}" ({", ".join(m.name for m in pool.kernel_modules)})'
        for pool in pools[:_POOLS_IN_A_MESSAGE]
    )
    if len(pools) > _POOLS_IN_A_MESSAGE:
        named += f" and {len(pools) - _POOLS_IN_A_MESSAGE} more"
    coming = [
        f"{other.title} (--chart {other.name}; unverified)"
        for other in chart_targets()
        if other.releases and other.kernel_modules_support == "unverified"
    ]
    later = f", or {' / '.join(coming)}" if coming else ""
    return (
        f"{source}: {named}: kernelModules: {target.title}'s kubernetes-nodes chart has no "
        "kernelModules value and its talos-reconcile Job rewrites the TalosConfigTemplate from "
        "a fixed template, so these modules are installed but never loaded (a GPU without a "
        "driver, its node rebooting about every 70 minutes)\n"
        f"  works on {target.title}: pools that need no module (CPU pools); GPU nodes as plain "
        "Talos outside Cozystack (a metal-* profile, its patch applied with talosctl)\n"
        "  options: a chart with kernelModules (--chart "
        f"{_charts_with('kernelModules')}: pull requests){later}{INSIST_HINT}"
    )


def fit_plan(
    plan: ClusterPlan,
    *,
    chart: str | None = None,
    layout: Layout | None = None,
    insist: bool = False,
    values: bool = True,
    objects: bool = False,
) -> ChartFit:
    """Hold ``plan`` against its chart target; ClusterFileError naming file, pool and key when
    the values would carry a key the chart ignores (with ``insist``, a warning instead).

    ``chart`` overrides the cluster file's ``cozystack.version``; ``layout`` the target's
    layout. ``values``: whether the output carries the chart's values (a KubernetesNodes object,
    values or a HelmRelease); only then is a pool whose modules the chart cannot load refused
    (the verdict; with ``insist``, a warning). The chart's guards (module names, parameters)
    and the NVIDIA-modules-without-a-GPU refusal apply on every target. ``objects``: whether
    the output carries the management cluster's objects (a KubernetesNodes object or a
    HelmRelease); then the tenant's namespace is required (:func:`no_namespace_message`).
    """
    source = plan.source
    named = chart if chart is not None else plan.cozystack_version
    tenants = [pool.name for pool in plan.pools if pool.tenant_pool]
    if named is None and values and tenants:
        # Each release's chart reads other keys and ignores the rest without a word: values
        # written for an assumed release can boot every GPU pool without its driver.
        raise ClusterFileError(no_release_message(plan.at("cozystack"), tenants))
    target, chosen, assumption = resolve_target(named, layout, source=source)
    if not tenants:
        # No pool is a Cozystack pool: no chart reads anything this run writes.
        assumption = None
    warnings: list[Message] = []
    notes: list[Message] = []
    said = release_note(named) if named is not None else None
    if said:
        notes.append(Message(level="note", source=source, cause=f"cozystack.version: {said}"))
    if objects and tenants and plan.namespace is None:
        raise ClusterFileError(no_namespace_message(plan, tenants))
    # Only values the chart reads can be unverified: talhelper or machine-config output is not.
    if not target.verified and values and tenants:
        warnings.append(
            Message(
                level="warning",
                source=source,
                cause=f"chart {target.name} ({target.title}) is unverified: no chart in the "
                "sources this tool was checked against reads these keys",
                fix="render the values through your chart (helm template) and check the boot "
                "disk URL and kernel modules before rolling out",
                details="the values follow the pull request's description",
            )
        )
    insisted: set[str] = set()

    def ignored(where: str, key: str, consequence: str, fix: str, pool: str = "") -> None:
        said = (
            f"{key}: {target.title}'s kubernetes-nodes chart has no {key} value and ignores "
            f"unknown keys, so {consequence}"
        )
        if not insist:
            raise ClusterFileError(f"{where}: {said}. {fix}{INSIST_HINT}")
        insisted.add(key)
        # The file's own sections ("talos") stay in the cause; a pool is named as the pools.
        section = where.removeprefix(source).removeprefix(": ")
        said = f"{section}: {said}" if section and not pool else said
        warnings.append(
            Message(
                level="warning",
                source=source,
                pools=(pool,) if pool else (),
                cause=f"{said}; written anyway (--allow-ignored-keys)",
            )
        )

    if not target.accepts_layout(chosen):
        ignored(
            source,
            LAYOUT_KEYS[chosen],
            _layout_consequence(chosen),
            f"Use {_layouts_for(target)}, or a chart with {LAYOUT_KEYS[chosen]} "
            f"(--chart {_charts_with(LAYOUT_KEYS[chosen])})",
        )
    talos = plan.talos
    cluster_wide = {
        "talos.registryMirrors": talos.registry_mirrors is not None,
        "talos.imageFactoryCA": getattr(talos, "image_factory_ca", None) is not None,
    }
    for key, given in cluster_wide.items():
        if given and not target.accepts(key):
            fix = f"Remove it, or target a chart with it (--chart {_charts_with(key)})"
            ignored(f"{source}: talos", key, _consequence(key), fix)
        elif given and key in target.unverified_keys:
            warnings.append(
                Message(
                    level="warning",
                    source=source,
                    cause=f"talos: {key} is written, but whether {target.title}'s chart reads "
                    "it is not settled by the sources this tool was checked against",
                    details=f"if it does not, {_consequence(key)}",
                )
            )
    seen: set[tuple[str, ...]] = set()
    unloadable: list[PoolPlan] = []
    for pool in plan.pools:
        where = f'{source}: pool "{pool.name}"'
        check_module_guards(where, pool.kernel_modules)
        _check_nvidia_modules_without_gpu(where, pool)
        notes += _dropped_parameters(source, pool)
        unverified = target.kernel_modules_support == "unverified"
        if unverified and pool.nvidia is not None and pool.kernel_modules:
            names = ", ".join(module.name for module in pool.kernel_modules)
            warnings.append(_unverified_modules(source, pool.name, target, names))
        for key in pool.passthrough:
            keys = [key]
            if key == "talos" and isinstance(pool.passthrough[key], Mapping):
                keys = [f"talos.{sub}" for sub in pool.passthrough[key]]
            for name in keys:
                if not target.accepts(name) and (pool.name, name) not in seen:
                    seen.add((pool.name, name))
                    fix = f"Remove it, or target a chart with it (--chart {_charts_with(name)})"
                    ignored(where, name, _consequence(name), fix, pool.name)
        if target.kernel_modules or not pool.kernel_modules:
            continue
        if pool.kernel_modules_state == "override":
            ignored(
                where,
                "kernelModules",
                _consequence("kernelModules"),
                f"There is no durable way to load them on {target.title} (its talos-reconcile "
                "Job rewrites the TalosConfigTemplate from a fixed template); remove the list, "
                f"or target a chart with kernelModules (--chart {_charts_with('kernelModules')})",
                pool.name,
            )
        elif pool.kernel_modules_state == "computed" and pool.tenant_pool and values:
            # A bare-metal pool's machine config is not the chart's: only tenant pools.
            unloadable.append(pool)
    if unloadable:
        # The verdict: these pools cannot work on this chart (rendering its templates shows the
        # TalosConfigTemplate loading no module, tests/test_real_consumers.py), and nothing the
        # output could carry changes that. Refused, unless the user insists.
        message = unloadable_message(source, target, unloadable)
        if not insist:
            raise ClusterFileError(message)
        said = f"{message}; written anyway (--allow-ignored-keys)"
        warnings.append(Message(level="warning", cause=said))
    return ChartFit(
        target=target,
        layout=chosen,
        assumption=assumption,
        warnings=tuple(warnings),
        notes=tuple(notes),
        insisted=frozenset(insisted),
    )


# --- changes the nodes will not see ------------------------------------------------------------


# The files that carry a pool's values, in the order they are looked for.
VALUES_FILES = ("values.yaml", "kubernetes-nodes.yaml")


def _pool_values(files: Mapping[str, bytes], pool: str) -> dict[str, Any] | None:
    import yaml

    from schematic.safe_yaml import load

    for name, inner in zip(VALUES_FILES, (False, True), strict=True):
        text = files.get(f"{pool}/{name}")
        if text is None:
            continue
        try:
            document = load(text)
        except yaml.YAMLError:
            return None
        if inner and isinstance(document, dict):
            document = document.get("spec")
        return document if isinstance(document, dict) else None
    return None


def unreachable_changes(
    source: str,
    old_ids: Mapping[str, str],
    before: Mapping[str, bytes],
    new_ids: Mapping[str, str],
    after: Mapping[str, bytes],
    target: ChartTarget | None = None,
) -> list[Message]:
    """A note per pool whose kernelModules change while its schematic does not.

    ``before`` and ``after`` are output trees (relative path → bytes): what the directory held
    and what is written now; ``old_ids`` and ``new_ids`` their pools' offline schematic IDs
    (:meth:`schematic.output.outdir.OutputIndex.schematic_ids`). A new schematic (a new disk image
    URL) rolls the pool anyway; without one, how the change reaches the workers depends on how
    ``target``'s chart names the TalosConfigTemplate (:meth:`ChartTarget.config_change_reach`).
    """
    chart = target or assumed_target()
    notes = []
    for pool, schematic in new_ids.items():
        if old_ids.get(pool) != schematic:
            continue
        if all(before.get(f"{pool}/{n}") == after.get(f"{pool}/{n}") for n in VALUES_FILES):
            continue  # unchanged text: nothing to parse (the usual re-run)
        old, new = _pool_values(before, pool), _pool_values(after, pool)
        if old is None or new is None:
            continue
        if old.get("kernelModules") != new.get("kernelModules"):
            notes.append(
                Message(
                    level="note",
                    source=source,
                    pools=(pool,),
                    cause="kernelModules change and the schematic does not: "
                    + chart.config_change_reach(),
                )
            )
    return notes
