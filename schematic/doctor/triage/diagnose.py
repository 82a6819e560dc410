"""Diagnoses: rules over the signals of each node, each naming its look-alikes and why they
are ruled out.

Every rule reads :class:`Facts` (the signals grouped by node) and returns the diagnoses it
makes; texts (title, severity, how to confirm, the fix) come from the rule data
(:mod:`schematic.doctor.triage.texts`), so `explain CODE` and the report say the same.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import TYPE_CHECKING

from schematic.doctor.triage.signals import Evidence, Kind, Nodes, Signal

if TYPE_CHECKING:
    from schematic.facts.nvidia import Gpu
from schematic.doctor.triage.texts import rule_text

__all__ = ["Diagnosis", "Facts", "diagnose"]

NVIDIA_SERVICES = ("ext-nvidia-persistenced", "ext-nvidia-cdi-gen")
# Talos's BootTimeout is 70 minutes (4,200 s); a cycle ends a little after it.
BOOT_TIMEOUT_SECONDS = 70 * 60
_CYCLE = (BOOT_TIMEOUT_SECONDS - 60, BOOT_TIMEOUT_SECONDS + 300)
_HIGH_MEMORY_PERCENT = 90.0
_SEVERITY_ORDER = {"error": 0, "warning": 1, "note": 2}


@dataclass(frozen=True)
class Diagnosis:
    """One failure named, with its nodes, its proof and what it is not."""

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


@dataclass
class Facts:
    """The signals of one run, grouped by the node they are about."""

    by_node: dict[str, dict[Kind, list[Signal]]] = field(default_factory=dict)
    cluster: dict[Kind, list[Signal]] = field(default_factory=dict)  # not about one node

    @classmethod
    def gather(cls, signals: Iterable[Signal]) -> Facts:
        signals = list(signals)
        nodes = Nodes()
        for signal in signals:
            if signal.kind is Kind.NODE:
                nodes.add_machine(signal.node, signal.get("addresses").split(","))
        for signal in signals:
            if signal.node:
                nodes.add_machine(nodes.resolve(signal), [])
        facts = cls()
        for signal in signals:
            if signal.kind in (Kind.CONTROL_PLANE_SERVICE, Kind.PLUGIN_ENV):
                facts.cluster.setdefault(signal.kind, []).append(signal)
                continue
            node = nodes.resolve(signal)
            facts.by_node.setdefault(node, {}).setdefault(signal.kind, []).append(signal)
        return facts

    def of(self, node: str, kind: Kind) -> list[Signal]:
        return self.by_node.get(node, {}).get(kind, [])

    def everywhere(self, kind: Kind) -> list[Signal]:
        return [s for kinds in self.by_node.values() for s in kinds.get(kind, [])]


def _make(
    code: str,
    nodes: Iterable[str],
    evidence: Iterable[Evidence],
    ruled_out: Iterable[str] = (),
    collect: Iterable[str] = (),
    severity: str | None = None,
    summary: Iterable[str] = (),
) -> Diagnosis:
    text = rule_text(code)
    unique = list(dict.fromkeys(evidence))
    nodes = [node for node in nodes if node]
    return Diagnosis(
        code=code,
        severity=severity or text.severity,
        title=text.title,
        nodes=tuple(sorted(set(nodes))),
        evidence=tuple(sorted(unique, key=lambda e: (e.file, e.line))),
        ruled_out=tuple(ruled_out),
        confirm=text.confirm,
        fix=text.fix,
        summary=_sentence("; ".join(summary)),
        collect=tuple(collect),
    )


# --- what a node shows ---------------------------------------------------------------------


def _waiting(facts: Facts, node: str) -> dict[str, list[Signal]]:
    """The services still pending in the last `startAllServices` line of each input (early
    lines list every service, apid and kubelet too, before they come up), and those
    `talosctl services` shows Waiting."""
    last: dict[str, int] = {}
    for signal in facts.of(node, Kind.SERVICE_WAITING):
        if signal.get("source") == "services":
            continue  # `talosctl services` rows: each one is pending now
        last[signal.evidence.file] = max(last.get(signal.evidence.file, 0), signal.evidence.line)
    waiting: dict[str, list[Signal]] = defaultdict(list)
    for signal in facts.of(node, Kind.SERVICE_WAITING):
        waiting[signal.value].append(signal)
    return {
        name: signals
        for name, signals in waiting.items()
        if any(
            s.get("source") == "services" or s.evidence.line == last[s.evidence.file]
            for s in signals
        )
    }


def _nvidia_devices(facts: Facts, node: str) -> list[Signal]:
    from schematic.facts.nvidia import NVIDIA_VENDOR

    # The vendor as the pcidevices readers write it ("0x10de").
    return [s for s in facts.of(node, Kind.PCI_DEVICE) if s.value == f"0x{NVIDIA_VENDOR}"]


def _gpus(facts: Facts, node: str) -> list[Signal]:
    """NVIDIA display functions (class 0x03); the table form has no class code, only names."""
    return [
        s
        for s in _nvidia_devices(facts, node)
        if s.get("class") in ("0x03", "03") or s.get("class_name") == "Display controller"
    ]


def _nvidia_modules(facts: Facts, node: str) -> list[Signal]:
    return [s for s in facts.of(node, Kind.MODULE_LOADED) if s.value.startswith("nvidia")]


def _cycle_evidence(facts: Facts, node: str) -> tuple[list[Evidence], list[str]]:
    """Proof that the node reboots on the boot timer: the failed boot, the uptime it ends at,
    every pod restarting together, boot times 70 minutes apart. Also says what it shows."""
    evidence: list[Evidence] = []
    said: list[str] = []
    failed = facts.of(node, Kind.BOOT_FAILED) + facts.of(node, Kind.REBOOTING)
    evidence += [s.evidence for s in failed[:4]]
    first_failure: dict[str, Signal] = {}
    for signal in facts.of(node, Kind.BOOT_FAILED):
        first_failure.setdefault(signal.evidence.file, signal)
    uptimes = sorted(
        {round(float(s.get("uptime"))) for s in first_failure.values() if s.get("uptime")}
    )
    if uptimes:
        said.append(f"the boot fails at {', '.join(str(u) for u in uptimes)} s of uptime")
    pods = [s for s in facts.of(node, Kind.POD) if int(s.get("restarts") or 0) > 0]
    if len(pods) >= 3:
        counts = Counter(s.get("restarts") for s in pods)
        count, same = counts.most_common(1)[0]
        if same == len(pods):
            unknown = [s for s in pods if s.get("exit") == "255" and s.get("reason") == "Unknown"]
            said.append(
                f"all {len(pods)} restarted pods on it restarted {count} times"
                + (", last exit 255 Unknown" if unknown else "")
            )
            evidence += [s.evidence for s in (unknown or pods)[:2]]
    for signal in facts.of(node, Kind.EVENT):
        if signal.value in ("SandboxChanged", "TaintManagerEviction", "Rebooted"):
            evidence.append(signal.evidence)
    for signal in facts.of(node, Kind.BOOT_TIME):
        boots = [int(b) for b in signal.get("boots").split(",") if b]
        gaps = [b - a for a, b in pairwise(boots)]
        if gaps and all(_CYCLE[0] <= gap <= _CYCLE[1] for gap in gaps):
            apart = f"{min(gaps)}" if min(gaps) == max(gaps) else f"{min(gaps)} to {max(gaps)}"
            said.append(f"{len(boots)} boots {apart} s apart")
            evidence.append(signal.evidence)
    for signal in facts.of(node, Kind.MACHINE_STAGE):
        if signal.value == "booting" and signal.get("ready") == "true":
            # A waiting extension service has no Service resource, so nothing is unmet.
            said.append("machinestatus says booting with ready: true")
            evidence.append(signal.evidence)
    boot_ids = {s.get("boot") for s in facts.everywhere(Kind.NODE) if s.node == node}
    if len(boot_ids) > 1:
        said.append(f"bootID changed ({len(boot_ids)} values)")
    return evidence, said


def _trustd_services(facts: Facts) -> tuple[list[Signal], list[Signal]]:
    services = facts.cluster.get(Kind.CONTROL_PLANE_SERVICE, [])
    return [s for s in services if s.get("trustd")], [s for s in services if not s.get("trustd")]


def _trustd_failure(facts: Facts, node: str) -> list[Signal]:
    # The first of each sign, and the last line where apid is still pending.
    return (
        facts.of(node, Kind.CSR_SIGN_FAILED)[:1]
        + facts.of(node, Kind.APID_WAITING_CERTIFICATES)[:1]
        + _waiting(facts, node).get("apid", [])[-1:]
    )


# --- the rules -----------------------------------------------------------------------------


def _boot_loops(facts: Facts) -> list[Diagnosis]:
    """TS101, TS131, TS201 and TS202 (TS123's loop is told by :func:`_modules_not_loaded`)."""
    found: list[Diagnosis] = []
    with_port, without_port = _trustd_services(facts)
    trustd_nodes: list[str] = []
    for node in sorted(facts.by_node):
        waiting = _waiting(facts, node)
        cycle, said = _cycle_evidence(facts, node)
        nvidia_waiting = [name for name in NVIDIA_SERVICES if name in waiting]
        trustd = _trustd_failure(facts, node)
        pci = facts.of(node, Kind.PCI_DEVICE)
        if trustd:
            trustd_nodes.append(node)
            ruled = [
                "TS101 (NVIDIA image on a node without a GPU): "
                + (
                    "an NVIDIA service is pending too, but apid waiting for its certificates "
                    "holds every worker whatever its image"
                    if nvidia_waiting
                    else "no NVIDIA service is pending; the service that never comes up is apid"
                )
            ]
            evidence = [s.evidence for s in trustd] + cycle
            evidence += [s.evidence for s in without_port]
            summary = [*_pending(waiting, ["apid"]), *said]
            found.append(_make("TS131", [node], evidence, ruled, summary=summary))
            continue
        if nvidia_waiting:
            gpus = _nvidia_devices(facts, node)
            waits = _last(waiting, nvidia_waiting)
            summary = [*_pending(waiting, nvidia_waiting), *said]
            not_trustd = _not_trustd(with_port)
            if pci and not gpus:
                ruled = [
                    not_trustd,
                    f"TS123 (modules not loaded): the node has no NVIDIA PCI device at all "
                    f"({len(pci)} devices listed, none with vendor 0x10de)",
                ]
                evidence = [*waits, *cycle, pci[0].evidence]
                found.append(_make("TS101", [node], evidence, ruled, summary=summary))
            elif not pci:
                collect: tuple[str, ...] = (
                    f"talosctl -n {node or '<node>'} get pcidevices -o yaml: no vendor 0x10de "
                    "device means "
                    "TS101 (NVIDIA image on a node without a GPU); a 0x10de device with an "
                    "empty driver means TS123 (modules not loaded)",
                )
                found.append(
                    _make("TS201", [node], [*waits, *cycle], [not_trustd], collect, summary=summary)
                )
            continue
        other = sorted(name for name in waiting if name not in NVIDIA_SERVICES)
        if other and (cycle or said):
            summary = [*_pending(waiting, other), *said]
            evidence = [*_last(waiting, other), *cycle]
            found.append(
                _make("TS201", [node], evidence, [_not_trustd(with_port)], summary=summary)
            )
        elif said and cycle:
            collect = (
                f"the serial console of {node or 'the node'} across one reboot (virtctl console, "
                "or the "
                "guest-console-log container): the pending service names the cause",
                f"talosctl -n {node or '<node>'} dmesg | grep startAllServices",
            )
            found.append(_make("TS202", [node], cycle, (), collect, summary=said))
    if without_port and not trustd_nodes:
        looping = [d.nodes[0] for d in found if d.code in ("TS201", "TS202")]
        found.append(
            _make(
                "TS131",
                looping,
                [s.evidence for s in without_port],
                ["no node's log among the inputs shows apid waiting for its certificates"],
                ("a worker's serial console or `talosctl dmesg`, to see apid waiting",),
                severity="warning",
            )
        )
    return found


def _sentence(text: str) -> str:
    if not text:
        return ""
    # A service or node name (ext-nvidia-persistenced) keeps its spelling; a word is capitalised.
    first = text.split(" ", 1)[0]
    return (text[:1].upper() + text[1:] if first.isalpha() else text) + "."


def _last(waiting: dict[str, list[Signal]], names: Iterable[str]) -> list[Evidence]:
    """The last line of each input that shows each service pending."""
    last: dict[tuple[str, str], Evidence] = {}
    for name in names:
        for signal in waiting.get(name, []):
            last[name, signal.evidence.file] = signal.evidence
    return list(last.values())


def _pending(waiting: dict[str, list[Signal]], names: Iterable[str]) -> list[str]:
    """How long each service has been pending, from uptime stamps or dmesg times."""
    said = []
    for name in names:
        signals = waiting.get(name, [])
        uptimes = [float(s.get("uptime")) for s in signals if s.get("uptime")]
        times = [t for t in (_time(s.get("time")) for s in signals) if t is not None]
        if len(uptimes) > 1:
            said.append(
                f"{name} pending from {min(uptimes):.0f} s to {max(uptimes):.0f} s of uptime"
            )
        elif len(times) > 1:
            minutes = (max(times) - min(times)).total_seconds() / 60
            said.append(f"{name} pending for {minutes:.0f} minutes")
        elif signals:
            said.append(f"{name} pending")
    return said


_RFC3339 = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,6})?\d*(Z|[+-]\d\d:\d\d)$")


def _time(text: str) -> datetime | None:
    """An RFC 3339 time as talosctl prints it (nanoseconds cut to what Python reads)."""
    found = _RFC3339.match(text)
    if not found:
        return None
    zone = "+00:00" if found[3] == "Z" else found[3]
    return datetime.fromisoformat(found[1] + (found[2] or "") + zone)


def _not_trustd(with_port: list[Signal]) -> str:
    text = (
        "TS131 (trustd port 50001 missing): apid is not among the pending services and "
        "nothing logs `failed to sign API server CSR`"
    )
    if with_port:
        text += f"; {with_port[0].evidence.where} lists port 50001"
    return text


def _modules_not_loaded(facts: Facts) -> list[Diagnosis]:
    found = []
    for node in sorted(facts.by_node):
        gpus = _gpus(facts, node) or _nvidia_devices(facts, node)
        unbound = [s for s in gpus if s.get("has_driver_field") and not s.get("driver")]
        listed = facts.of(node, Kind.MODULES_LISTED)
        no_module = bool(listed) and not _nvidia_modules(facts, node)
        no_driver = facts.of(node, Kind.NO_DRIVER)
        if not gpus or not (unbound or no_module or no_driver):
            continue
        if facts.of(node, Kind.NVRM_NEEDS_OPEN) or _nvidia_modules(facts, node):
            continue
        waiting = _waiting(facts, node)
        waits = _last(waiting, NVIDIA_SERVICES)
        cycle, said = _cycle_evidence(facts, node)
        evidence = [s.evidence for s in unbound[:2]] + [s.evidence for s in no_driver[:1]]
        if no_module:
            evidence.append(listed[0].evidence)
        ruled = [
            f"TS101 (NVIDIA image without a GPU): the node has NVIDIA device "
            f"{gpus[0].get('address') or gpus[0].evidence.text}",
            "TS103 (wrong module flavour): no nvidia module is loaded, so neither flavour was "
            "tried",
        ]
        summary = [*_pending(waiting, NVIDIA_SERVICES), *said]
        # The image's extensions tell the two causes apart: no kernel-module extension at all
        # (TS110), or modules installed that the machine config never loads (TS123).
        extensions = facts.of(node, Kind.EXTENSION)
        kmods = [s for s in extensions if _is_kernel_module_extension(s.value)]
        code = "TS110" if extensions and not kmods else "TS123"
        evidence += [s.evidence for s in kmods[:1]]
        found.append(_make(code, [node], [*evidence, *waits, *cycle], ruled, summary=summary))
    return found


def _kernel_module_flavour(name: str) -> str | None:
    """``open`` or ``proprietary`` for an NVIDIA kernel-module extension, else None."""
    from schematic.facts.nvidia import describe_nvidia_extension

    described = describe_nvidia_extension(name if "/" in name else f"siderolabs/{name}")
    return described.flavour if described and described.family == "kernel-modules" else None


def _is_kernel_module_extension(name: str) -> bool:
    return _kernel_module_flavour(name) is not None


def _wrong_flavour(facts: Facts) -> list[Diagnosis]:
    """TS103 (open-only GPU on the proprietary modules), TS104 and TS105 (pre-Turing)."""
    found = []
    for node in sorted(facts.by_node):
        needs_open = facts.of(node, Kind.NVRM_NEEDS_OPEN)
        no_gsp = facts.of(node, Kind.NVRM_NO_GSP)
        legacy = facts.of(node, Kind.NVRM_LEGACY)
        no_devices = facts.of(node, Kind.NO_DEVICES) + facts.of(node, Kind.RM_INIT_FAILED)
        # The extension names the flavour; `(PO)` in /proc/modules says it again.
        proprietary = [
            s
            for s in facts.of(node, Kind.EXTENSION)
            if _kernel_module_flavour(s.value) == "proprietary"
        ] + [s for s in _nvidia_modules(facts, node) if "P" in s.get("taint")]
        open_only = [g for g in _known_gpus(facts, node) if g.open_only and not g.gb10]
        if needs_open or (no_devices and proprietary and open_only and not (no_gsp or legacy)):
            evidence = [s.evidence for s in needs_open[:2] + no_devices[:3] + proprietary[:2]]
            pci = sorted({s.get("pci") for s in needs_open if s.get("pci")})
            pci += [g.id for g in open_only if g.id not in pci]
            ruled = [
                "TS123 (modules not loaded): the nvidia module is loaded and bound; a bound "
                "driver proves nothing here",
                "TS104/TS105 (pre-Turing GPU): the kernel names the open modules as the need, "
                "not a missing GSP or a legacy branch",
            ]
            if pci:
                names = {g.id: g.label for g in _known_gpus(facts, node)}
                shown = ", ".join(names.get(p, p) for p in pci)
                ruled.append(f"GPU {shown} is driven only by the open kernel modules")
            found.append(_make("TS103", [node], evidence, ruled))
        if no_gsp:
            evidence = [s.evidence for s in no_gsp[:2] + no_devices[:2]]
            ruled = ["TS103: the GPU lacks a GSP, so it is older than Turing, not open-only"]
            found.append(_make("TS104", [node], evidence, ruled))
        if legacy:
            gone = facts.of(node, Kind.NO_GPU_FOUND)
            evidence = [s.evidence for s in legacy[:2] + gone[:2] + no_devices[:1]]
            ruled = ["TS104: the module loads and ignores the GPU; no GSP complaint"]
            found.append(_make("TS105", [node], evidence, ruled))
    return found


def _known_gpus(facts: Facts, node: str) -> list[Gpu]:
    """The node's NVIDIA GPUs the device table knows (from PCI IDs in the inputs)."""
    from schematic.errors import UnknownDeviceError
    from schematic.facts.nvidia import lookup_gpu

    ids = {f"10de:{s.get('product').removeprefix('0x')}" for s in _gpus(facts, node)}
    ids |= {s.get("pci") for s in facts.of(node, Kind.NVRM_NEEDS_OPEN) if s.get("pci")}
    known = []
    for pci_id in sorted(i for i in ids if len(i) == 9):
        try:
            known.append(lookup_gpu(pci_id))
        except UnknownDeviceError:
            continue
    return known


def _device_plugin(facts: Facts) -> list[Diagnosis]:
    """TS140 (env override dropped CDI) and TS210 (GPU pods created before CDI worked)."""
    found = []
    envs = facts.cluster.get(Kind.PLUGIN_ENV, [])
    overridden_env = [
        s for s in envs if s.get("cdi_enabled") == "true" and not s.value.startswith("cdi")
    ]
    strategies = facts.everywhere(Kind.PLUGIN_STRATEGY)
    no_cdi = [s for s in strategies if not any(v.startswith("cdi") for v in s.value.split(","))]
    if overridden_env or no_cdi:
        nodes = {
            n for n in facts.by_node if any(s in no_cdi for s in facts.of(n, Kind.PLUGIN_STRATEGY))
        }
        evidence = [s.evidence for s in overridden_env + no_cdi[:3]]
        ruled = ["TS210 (pods created before CDI): the plugin itself runs without a CDI strategy"]
        found.append(_make("TS140", sorted(nodes), evidence, ruled))
    unresolvable = facts.everywhere(Kind.CDI_UNRESOLVABLE)
    early = [pair for node in sorted(facts.by_node) for pair in _created_before_plugin(facts, node)]
    if (unresolvable or early) and not found:
        nodes = {n for n in facts.by_node if facts.of(n, Kind.CDI_UNRESOLVABLE)}
        nodes |= {pod.node for pod, _ in early}
        ruled = [
            "TS140 (env override): "
            + (
                "the device plugin runs with " + strategies[0].value
                if strategies
                else "no device-plugin log among the inputs says otherwise"
            )
        ]
        evidence = [s.evidence for s in unresolvable[:3]] + [s.evidence for s in strategies[:1]]
        evidence += [e for pod, plugin in early[:3] for e in (pod.evidence, plugin.evidence)]
        summary = [
            f"pod {pod.value} was created at {pod.get('created')}, before {plugin.value} started "
            f"at {plugin.get('started')}"
            for pod, plugin in early[:3]
        ]
        found.append(
            _make("TS210", sorted(n for n in nodes if n), evidence, ruled, summary=summary)
        )
    return found


_NOT_CREATED = ("CreateContainerError", "CreateContainerConfigError", "RunContainerError")


def _created_before_plugin(facts: Facts, node: str) -> list[tuple[Signal, Signal]]:
    """GPU pods of the node that cannot start their containers and were created before the
    node's device plugin pod started: their devices were decided without CDI."""
    pods = facts.of(node, Kind.POD)
    plugins = [p for p in pods if "nvidia-device-plugin" in p.value and _time(p.get("started"))]
    if not plugins:
        return []
    plugin = max(plugins, key=lambda p: _time(p.get("started")) or datetime.min)
    started = _time(plugin.get("started"))
    early = []
    for pod in pods:
        created = _time(pod.get("created"))
        stuck = pod.get("waiting") in _NOT_CREATED
        if pod.get("gpu") and stuck and created and started and created < started:
            early.append((pod, plugin))
    return early


def _fabric(facts: Facts) -> list[Diagnosis]:
    found = []
    for node in sorted(facts.by_node):
        hint = facts.of(node, Kind.FABRIC_IB_UMAD)
        nothing = facts.of(node, Kind.FABRIC_NOTHING_TO_DO)
        if not hint and not nothing:
            continue
        modules = {s.value for s in facts.of(node, Kind.MODULE_LOADED)}
        if "ib_umad" in modules:
            continue
        extra = facts.of(node, Kind.FABRIC_IN_PROGRESS) + facts.of(node, Kind.CUDA_NOT_READY)
        evidence = [s.evidence for s in hint[:2] + nothing[:2] + extra[:3]]
        ruled = ["TS123 (modules not loaded): the GPUs are visible; the fabric is not trained"]
        if facts.of(node, Kind.MODULES_LISTED):
            ruled.append("ib_umad is not among the node's loaded modules")
        found.append(_make("TS155", [node], evidence, ruled))
    return found


def _upgrade_reverted(facts: Facts) -> list[Diagnosis]:
    found = []
    for node in sorted(facts.by_node):
        reverted = facts.of(node, Kind.UPGRADE_REVERTED)
        if reverted:
            waits = [s.evidence for signals in _waiting(facts, node).values() for s in signals[-1:]]
            found.append(_make("TS211", [node], [reverted[0].evidence, *waits]))
    return found


def _memory(facts: Facts) -> list[Diagnosis]:
    found = []
    for node in sorted(facts.by_node):
        used = [
            s
            for s in facts.of(node, Kind.MEMORY_USED_PERCENT)
            if _float(s.value) >= _HIGH_MEMORY_PERCENT
        ]
        available = [
            s
            for s in facts.of(node, Kind.MEMORY_AVAILABLE)
            if s.value == "node_memory_MemAvailable_bytes"
        ]
        total = [
            s
            for s in facts.of(node, Kind.MEMORY_AVAILABLE)
            if s.value == "node_memory_MemTotal_bytes"
        ]
        ooms = facts.of(node, Kind.OOM_KILL)
        if ooms:
            found.append(_make("TS221", [node], [s.evidence for s in ooms[:3] + used[:1]]))
            continue
        if not used and not available:
            continue
        low = min((_float(s.get("min")) for s in available), default=None)
        size = max((_float(s.get("max")) for s in total), default=0.0)
        if low is None:
            if used:
                found.append(
                    _make(
                        "TS220",
                        [node],
                        [s.evidence for s in used[:1]],
                        collect=(
                            "node_memory_MemAvailable_bytes over the same window "
                            "(`triage --commands` prints the query URL): high use is page "
                            "cache while it stays well above zero",
                        ),
                    )
                )
            continue
        # Available memory that never fell below 5 % of the machine (or 1 GiB, size unknown).
        floor = size * 0.05 if size else float(1 << 30)
        if low < floor:
            found.append(_make("TS221", [node], [s.evidence for s in available[:1] + used[:1]]))
        elif used:
            ruled = [
                f"OOM: MemAvailable never fell below {low / (1 << 30):.1f} GiB over the window"
                + (f" ({low / size:.0%} of {size / (1 << 30):.1f} GiB)" if size else "")
                + "; no OOM kill among the inputs"
            ]
            evidence = [s.evidence for s in used[:1] + available[:1] + total[:1]]
            found.append(_make("TS220", [node], evidence, ruled))
    return found


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


_RULES: tuple[Callable[[Facts], list[Diagnosis]], ...] = (
    _boot_loops,
    _modules_not_loaded,
    _wrong_flavour,
    _device_plugin,
    _fabric,
    _upgrade_reverted,
    _memory,
)


def diagnose(signals: Iterable[Signal]) -> list[Diagnosis]:
    """Every diagnosis the signals support, errors first."""
    facts = Facts.gather(signals)
    found = [d for rule in _RULES for d in rule(facts)]
    return sorted(found, key=lambda d: (_SEVERITY_ORDER[d.severity], d.code, d.nodes))
