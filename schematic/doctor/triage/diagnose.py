"""Diagnoses: rules over the cluster model, each a differential — what supports a cause, and the
fact that rules out each look-alike.

A machine that reboots, or whose boot is held, gets every candidate cause weighed: NVIDIA
services waiting for a GPU that is not there (TS101), modules not loaded (TS123/TS110), apid
without its certificates because trustd is unreachable (TS131), another service (TS201), memory
(TS221), or the timer with no cause in sight (TS202). Only what was still pending when a boot
gave up (or pending for minutes) counts; the list every boot prints in its first seconds does
not. A claim that a node reboots on the 70-minute timer needs time: a console timeout, boot
times about 70 minutes apart, or pods that restarted together about every 70 minutes.

Findings of one cause in one pool are one diagnosis listing its machines. Texts (title,
severity, how to confirm, the fix) come from the rule data
(:mod:`schematic.doctor.triage.texts`), so `explain CODE` and the report say the same.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property

from schematic.doctor.triage.causes.boot import (
    extension_waits_not_held,
    memory_causes,
    nvidia_service_restart_loops,
    nvidia_waits_not_held,
    other_service_restart_loops,
    reboots,
    upgrade_reverted,
)
from schematic.doctor.triage.causes.driver import (
    driver_unreachable,
    fabric_causes,
    gpus_out_of_service,
    module_not_loaded,
    modules_not_loaded,
    version_mismatch,
    wrong_flavour,
)
from schematic.doctor.triage.causes.host import only_on_talos
from schematic.doctor.triage.causes.runtime import (
    device_plugin,
    host_device_not_permitted,
    operator_driver_on_talos,
    operator_validator,
    plugin_scheduled_nowhere,
    plugin_without_driver,
    runtime_handler_missing,
)
from schematic.doctor.triage.causes.shown import GPU_PATH_EXPLAINED, Finding
from schematic.doctor.triage.causes.unknown import unknown_failures
from schematic.doctor.triage.model import ClusterModel, Machine, build_model
from schematic.doctor.triage.signals import Evidence, Signal
from schematic.doctor.triage.texts import fix_places, rule_text
from schematic.doctor.triage.values import is_address

__all__ = [
    "CAUSES",
    "Cause",
    "Committed",
    "CommittedPool",
    "Diagnosis",
    "diagnose",
    "diagnose_model",
    "weigh",
]
_SEVERITY_ORDER = {"error": 0, "warning": 1, "note": 2}
# How many machines' own lines a grouped finding quotes; the rest are counted.
_QUOTED_MACHINES = 3


@dataclass(frozen=True)
class Diagnosis:
    """One failure named, with its machines, its proof and what it is not."""

    code: str
    severity: str
    title: str
    nodes: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    ruled_out: tuple[str, ...]
    confirm: str
    fix: str
    summary: str = ""  # what the evidence shows, in one or two sentences
    collect: tuple[str, ...] = ()  # what to collect next when the evidence is not enough
    pools: tuple[str, ...] = ()  # the pools of ``nodes`` ("" for machines of no known pool)
    # Schematic IDs the finding is about, in full (the one a node runs, the one to set).
    schematics: tuple[tuple[str, str], ...] = ()
    # Per target (Cozystack, talhelper, Talos): the key and object the fix changes.
    places: tuple[str, ...] = ()
    # A failure shown whose cause is Talos's, on nodes not shown to run Talos: a warning, and a
    # failure still (the cause is what is uncertain, not the failure).
    if_talos: bool = False


def _sentence(text: str) -> str:
    if not text:
        return ""
    # A service or node name (ext-nvidia-persistenced, apid) keeps its spelling; a word is
    # capitalised.
    first, _, rest = text.partition(" ")
    name = not first.isalpha() or rest.startswith("pending")
    return (text if name else text[:1].upper() + text[1:]) + "."


# --- the causes and which explains which ------------------------------------------------------

# Sentinels of ``Cause.explained_by``: any finding on the machine, or any error.
ANY_FINDING = "any finding"
ANY_ERROR = "any error"


@dataclass(frozen=True)
class Cause:
    """One rule over the model, and the causes that explain its findings away.

    A finding of ``rule`` on a machine is not reported when a cause earlier in :data:`CAUSES`
    has a finding on the same machine (or naming it among its nodes) whose code is in
    ``explained_by`` (or, with :data:`ANY_FINDING` / :data:`ANY_ERROR`, any finding / error).
    A ``talos_only`` cause names a failure only Talos has: its findings are held to what the
    inputs show of each host's OS (causes/host.py).
    """

    rule: Callable[[ClusterModel], list[Finding]]
    explained_by: frozenset[str] = frozenset()
    talos_only: bool = False


# Every cause triage weighs, in precedence order: a cause can only be explained by one above it.
# The rules at the top stand on their own; each below names what explains it.
CAUSES: tuple[Cause, ...] = (
    Cause(operator_driver_on_talos, talos_only=True),
    Cause(module_not_loaded, talos_only=True),
    Cause(reboots, talos_only=True),
    Cause(modules_not_loaded, talos_only=True),
    Cause(wrong_flavour),
    Cause(device_plugin),
    Cause(runtime_handler_missing, talos_only=True),
    Cause(host_device_not_permitted),
    Cause(operator_validator, talos_only=True),
    Cause(plugin_scheduled_nowhere),
    Cause(version_mismatch, talos_only=True),
    Cause(fabric_causes),
    Cause(upgrade_reverted, talos_only=True),
    Cause(memory_causes),
    # An NVIDIA service shown waiting without time: any finding on the machine says more.
    Cause(nvidia_waits_not_held, frozenset({ANY_FINDING}), talos_only=True),
    # Another extension's service shown waiting without time: likewise.
    Cause(extension_waits_not_held, frozenset({ANY_FINDING}), talos_only=True),
    # The plugin and the runtime see no driver: a cause on the GPU path already says why.
    Cause(plugin_without_driver, GPU_PATH_EXPLAINED),
    Cause(driver_unreachable, GPU_PATH_EXPLAINED, talos_only=True),
    Cause(gpus_out_of_service),
    # An NVIDIA service that keeps restarting: the GPU-path cause (or NVLink 5's) is why.
    Cause(nvidia_service_restart_loops, GPU_PATH_EXPLAINED | {"TS155"}, talos_only=True),
    Cause(other_service_restart_loops, talos_only=True),
    # An error line no rule knows: a known error on the machine comes first.
    Cause(unknown_failures, frozenset({ANY_ERROR})),
)


def _explains(finding: Finding, codes: frozenset[str]) -> bool:
    if ANY_FINDING in codes:
        return True
    if ANY_ERROR in codes:
        return (finding.severity or rule_text(finding.code).severity) == "error"
    return finding.code in codes


def weigh(model: ClusterModel, causes: tuple[Cause, ...]) -> list[Finding]:
    """The findings of ``causes`` over ``model``, each cause's findings without those an
    earlier cause explains (:class:`Cause`)."""
    kept: list[Finding] = []
    for cause in causes:
        explained: set[str] = set()
        if cause.explained_by:
            for earlier in kept:
                if _explains(earlier, cause.explained_by):
                    if earlier.machine is not None:
                        explained.add(earlier.machine.name)
                    explained.update(earlier.nodes or ())
        found = cause.rule(model)
        if cause.talos_only:
            found = only_on_talos(model, found)
        kept += [f for f in found if f.machine is None or f.machine.name not in explained]
    return kept


# --- running vs committed (`triage --against DIR`) --------------------------------------------


@dataclass(frozen=True)
class CommittedPool:
    """A pool as a `generate --out` directory commits it."""

    name: str
    schematic_ids: tuple[str, ...]  # the ID, and the offline one a factory stamp replaced
    extensions: tuple[str, ...]
    where: Evidence  # the pool's schematicID line in index.yaml


@dataclass(frozen=True)
class Committed:
    """The committed output a run compares the running nodes with."""

    cluster: str
    pools: tuple[CommittedPool, ...]

    def pool_of(self, machine: Machine) -> CommittedPool | None:
        """The committed pool a machine belongs to: its pool is the pool's name as Cozystack
        (``kubernetes-<cluster>-<pool>``), Cluster API (``<cluster>-<pool>``) or a label spells
        it; else a name holding ``-<pool>-`` as a whole token, the longest pool name winning
        (``gpu-big`` before ``gpu``)."""
        spelled = self._spelled.get(machine.pool)
        if spelled is not None:
            return spelled
        found = [
            self._named[piece]
            for spelling in (machine.pool, *machine.names)
            for piece in _dash_pieces(spelling, self._longest)
            if piece in self._named
        ]
        return max(found, key=lambda p: (len(p.name), p.name)) if found else None

    @cached_property
    def _named(self) -> dict[str, CommittedPool]:
        return {pool.name: pool for pool in self.pools}

    @cached_property
    def _longest(self) -> int:
        return max(map(len, self._named), default=0)

    @cached_property
    def _spelled(self) -> dict[str, CommittedPool]:
        """Each pool by every spelling of its name a machine's pool may have (the first pool
        wins a spelling two share, as the pools are listed)."""
        found: dict[str, CommittedPool] = {}
        for pool in self.pools:
            for spelling in (
                pool.name,
                f"{self.cluster}-{pool.name}",
                f"kubernetes-{self.cluster}-{pool.name}",
            ):
                found.setdefault(spelling, pool)
        return found


def _dash_pieces(name: str, longest: int) -> Iterator[str]:
    """Every run of whole dash-separated segments of ``name`` up to ``longest`` characters
    (``a-b-c``: ``a``, ``a-b``, ``a-b-c``, ``b``, ...): where a pool's name may stand as a
    token. The cost is the name's, not the count of pools."""
    segments = name.split("-") if name else []
    for start in range(len(segments)):
        piece = ""
        for end in range(start, len(segments)):
            piece = segments[end] if end == start else f"{piece}-{segments[end]}"
            if len(piece) > longest:
                break
            yield piece


def _short_extension(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _against(model: ClusterModel, *, committed: Committed) -> list[Finding]:
    """TS214: a node that runs another schematic than its pool commits (the factory's stamped
    ID of the pool's schematic is the pool's own: index.yaml lists both)."""
    found = []
    for machine in model.sorted_machines():
        running = machine.running_schematic()
        if running is None:
            continue
        pool = committed.pool_of(machine)
        if pool is None or running[0] in pool.schematic_ids:
            continue
        runs = sorted(machine.extensions())
        commits = sorted(_short_extension(e) for e in pool.extensions)
        summary = [
            f"{machine.name} runs schematic {running[0]}, pool {pool.name} commits "
            f"{pool.schematic_ids[0]}"
        ]
        if runs:
            only_running = sorted(set(runs) - set(commits))
            only_committed = sorted(set(commits) - set(runs))
            if only_running:
                summary.append(f"only the running image has {', '.join(only_running)}")
            if only_committed:
                summary.append(f"only the committed one has {', '.join(only_committed)}")
        ruled = [
            (
                "",
                "the pool is matched by name: "
                f"{machine.pool or machine.name} ↔ {pool.name} ({pool.where.where})",
            )
        ]
        collect = [
            f"talosctl -n {machine.name} get extensions: the `schematic` row is the running ID",
        ]
        found.append(
            Finding(
                "TS214",
                machine,
                [running[1], pool.where],
                ruled,
                summary,
                collect,
                schematics=[("running", running[0]), ("committed", pool.schematic_ids[0])],
            )
        )
    return found


# --- one diagnosis per cause and pool --------------------------------------------------------


def _ruled_text(code: str, fact: str) -> str:
    if not code:
        return fact
    return f"{code} ({rule_text(code).title}): {fact}"


# Causes that are the cluster's, not a pool's: the control plane's Service serves every pool.
CLUSTER_WIDE = frozenset({"TS131"})
_ALL_POOLS = "*"


def _join(code: str, severity: str, pool: str, findings: list[Finding]) -> Diagnosis:
    """Findings of one cause in one pool (every pool for a cluster-wide cause) as one
    diagnosis: every machine named, the first few machines' lines quoted, each look-alike with
    the fact that rules it out."""
    text = rule_text(code)
    pools: tuple[str, ...] = (pool,)
    if pool == _ALL_POOLS:
        pools = tuple(sorted({f.machine.pool for f in findings if f.machine is not None}))
        pool = pools[0] if len(pools) == 1 else ""
    nodes: list[str] = []
    for finding in findings:
        if finding.machine is not None:
            nodes.append(finding.machine.name)
        nodes += finding.nodes or []
    evidence: list[Evidence] = []
    for finding in findings[:_QUOTED_MACHINES]:
        evidence += finding.evidence
    ruled: dict[str, str] = {}
    alike: Counter[str] = Counter()
    for finding in findings:
        for look_alike, fact in finding.ruled_out:
            key = look_alike or fact
            alike[key] += 1
            ruled.setdefault(key, _ruled_text(look_alike, fact))
    ruled_out = [
        ruled[key] + (f" (and on {alike[key] - 1} more nodes alike)" if alike[key] > 1 else "")
        for key in ruled
    ]
    summary = list(dict.fromkeys(findings[0].summary))
    machines = sorted({n for n in nodes if n})
    with_machine = any(f.machine is not None for f in findings)
    if len(machines) > 1 and with_machine:
        where = f" of pool {pool}" if pool else ""
        if len([p for p in pools if p]) > 1:
            where = f" of pools {', '.join(p for p in pools if p)}"
        summary.insert(0, f"{len(machines)} nodes{where} show it")
        if len(findings) > _QUOTED_MACHINES:
            summary.append(f"lines quoted for {_QUOTED_MACHINES} of them")
    collect = list(dict.fromkeys(c for f in findings for c in f.collect))
    addresses = [m for m in machines if is_address(m)]
    if with_machine and not pool and addresses:
        # A node known only by its address has no pool to fix: its Kubernetes name gives one.
        collect.insert(
            0,
            "`kubectl get nodes -o wide` (or `-o json`): the NAME beside INTERNAL-IP "
            f"{', '.join(addresses[:3])} names the node and its pool; add it to the inputs",
        )
    schematics = list(dict.fromkeys(s for f in findings for s in f.schematics))
    unique = list(dict.fromkeys(evidence))
    return Diagnosis(
        code=code,
        severity=severity,
        title=text.title,
        nodes=tuple(machines),
        evidence=tuple(sorted(unique, key=lambda e: (e.file, e.line))),
        ruled_out=tuple(ruled_out),
        confirm=text.confirm,
        fix=text.fix,
        summary=_sentence("; ".join(summary)),
        collect=tuple(collect[:4]),
        pools=pools if with_machine else (),
        schematics=tuple(schematics),
        places=fix_places(code, pool),
        if_talos=any(f.if_talos for f in findings),
    )


def diagnose_model(model: ClusterModel, committed: Committed | None = None) -> list[Diagnosis]:
    """Every diagnosis the model supports, one per cause and pool, errors first; with
    ``committed``, also the nodes that run another schematic than their pool commits."""
    groups: dict[tuple[str, str, str], list[Finding]] = defaultdict(list)
    causes = CAUSES
    if committed is not None:
        # Running vs committed stands on its own: nothing explains it, it explains nothing.
        causes = (*CAUSES, Cause(functools.partial(_against, committed=committed)))
    findings = weigh(model, causes)
    for finding in findings:
        severity = finding.severity or rule_text(finding.code).severity
        pool = finding.machine.pool if finding.machine is not None else ""
        # A cluster-wide cause is one diagnosis, whichever pools (or none) its machines are in.
        key = _ALL_POOLS if finding.code in CLUSTER_WIDE else pool
        groups[finding.code, severity, key].append(finding)
    found = [_join(code, sev, pool, items) for (code, sev, pool), items in groups.items()]
    return sorted(found, key=lambda d: (_SEVERITY_ORDER[d.severity], d.code, d.pools, d.nodes))


def diagnose(signals: Iterable[Signal], committed: Committed | None = None) -> list[Diagnosis]:
    """Every diagnosis the signals support (see :func:`diagnose_model`)."""
    return diagnose_model(build_model(signals), committed)
