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

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import TYPE_CHECKING

from schematic.doctor.triage.model import (
    BOOT_TIMEOUT_SECONDS,
    ClusterModel,
    Machine,
    age_minutes,
    build_model,
    is_address,
    parse_time,
)
from schematic.doctor.triage.signals import Evidence, Kind, Signal
from schematic.doctor.triage.texts import fix_places, rule_text

if TYPE_CHECKING:
    from schematic.facts.nvidia import Gpu

__all__ = ["Committed", "CommittedPool", "Diagnosis", "diagnose", "diagnose_model"]

NVIDIA_SERVICES = ("ext-nvidia-persistenced", "ext-nvidia-cdi-gen")
# A cycle ends a little after the boot timer (the failure lines, then 10 s to reboot).
_CYCLE = (BOOT_TIMEOUT_SECONDS - 60, BOOT_TIMEOUT_SECONDS + 300)
# Pods that all restarted together this often (per restart, on average) fit the timer: a
# restart every ~70 minutes plus the time the node takes to boot and the pods to start.
_POD_PERIOD_MINUTES = (55.0, 100.0)
_HIGH_MEMORY_PERCENT = 90.0
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


@dataclass
class _Finding:
    """One cause on one machine, before findings of one cause and pool are joined."""

    code: str
    machine: Machine | None
    evidence: list[Evidence]
    ruled_out: list[tuple[str, str]] = field(default_factory=list)  # (look-alike, the fact)
    summary: list[str] = field(default_factory=list)
    collect: list[str] = field(default_factory=list)
    severity: str | None = None
    schematics: list[tuple[str, str]] = field(default_factory=list)
    nodes: list[str] | None = None  # for cluster-wide findings: the machines they concern


# --- what a machine shows --------------------------------------------------------------------


def _nvidia_devices(machine: Machine) -> list[Signal]:
    from schematic.facts.nvidia import NVIDIA_VENDOR

    # The vendor as the pcidevices readers write it ("0x10de").
    return [s for s in machine.of(Kind.PCI_DEVICE) if s.value == f"0x{NVIDIA_VENDOR}"]


def _gpus(machine: Machine) -> list[Signal]:
    """NVIDIA display functions (class 0x03); the table form has no class code, only names."""
    return [
        s
        for s in _nvidia_devices(machine)
        if s.get("class") in ("0x03", "03") or s.get("class_name") == "Display controller"
    ]


def _nvidia_shown(machine: Machine) -> tuple[str, Evidence] | None:
    """What shows the machine has an NVIDIA GPU: a vendor 0x10de PCI device, nvidia-smi
    listing one, the Node's feature-discovery labels, or allocatable ``nvidia.com/gpu``."""
    nvidia = _nvidia_devices(machine)
    if nvidia:
        return f"the node has NVIDIA device {nvidia[0].evidence.where}", nvidia[0].evidence
    listed = machine.of(Kind.GPU_LISTED)
    if listed:
        return f"nvidia-smi lists {listed[0].value} ({listed[0].evidence.where})", listed[
            0
        ].evidence
    labelled = machine.labelled_hardware()
    if labelled is not None and labelled.has_nvidia:
        return (
            f"the Node's labels show an NVIDIA GPU ({labelled.describe()}; "
            f"{labelled.evidence.where})",
            labelled.evidence,
        )
    for node in machine.of(Kind.NODE):
        if node.get("gpus") not in ("", "0"):
            return (
                f"the node advertises nvidia.com/gpu: {node.get('gpus')} ({node.evidence.where})",
                node.evidence,
            )
    return None


def _no_nvidia(machine: Machine) -> tuple[str, Evidence] | None:
    """What shows the machine has no NVIDIA GPU: its PCI devices without vendor 0x10de, or
    Node Feature Discovery's PCI labels without one (NFD labels display controllers by
    default, the GPU Operator's NFD every NVIDIA device) — unless anything shows a GPU."""
    if _nvidia_shown(machine) is not None:
        return None
    pci = machine.of(Kind.PCI_DEVICE)
    if pci:
        return (
            f"the node has no NVIDIA PCI device at all ({len(pci)} devices listed, none with "
            f"vendor 0x10de; {pci[0].evidence.where})",
            pci[0].evidence,
        )
    gone = machine.of(Kind.NO_GPU_FOUND)
    refused = any(
        machine.of(kind)
        for kind in (
            Kind.NVRM_LEGACY,
            Kind.NVRM_NO_GSP,
            Kind.NVRM_NEEDS_OPEN,
            Kind.NVRM_RELEASE_UNSUPPORTED,
            Kind.NVRM_OPEN_UNSUPPORTED,
            Kind.RM_INIT_FAILED,
        )
    )
    if gone and not refused:
        # The module loaded and probed nothing; a GPU it refused (legacy, unsupported, failed
        # to start) says so on its own NVRM lines first.
        return (
            f"the nvidia module loaded and found no NVIDIA GPU ({gone[0].evidence.where})",
            gone[0].evidence,
        )
    labelled = machine.labelled_hardware()
    if labelled is not None and labelled.other_pci:
        return (
            "Node Feature Discovery labels the node's PCI devices "
            f"({', '.join(labelled.other_pci[:3])}) and none of vendor 0x10de "
            f"({labelled.evidence.where})",
            labelled.evidence,
        )
    return None


def _driver_answered(machine: Machine) -> list[Evidence]:
    """Evidence that the NVIDIA driver ran on the machine: a loaded module, a bound driver,
    nvidia-smi listing a GPU, GPU Feature Discovery's NVML labels, allocatable
    ``nvidia.com/gpu``."""
    found = [s.evidence for s in _nvidia_modules(machine)]
    found += [s.evidence for s in _nvidia_devices(machine) if s.get("driver")]
    found += [s.evidence for s in machine.of(Kind.GPU_LISTED)]
    labelled = machine.labelled_hardware()
    if labelled is not None and labelled.driver_answered:
        found.append(labelled.evidence)
    found += [s.evidence for s in machine.of(Kind.NODE) if s.get("gpus") not in ("", "0")]
    return found


def _nvidia_modules(machine: Machine) -> list[Signal]:
    return [s for s in machine.of(Kind.MODULE_LOADED) if s.value.startswith("nvidia")]


@dataclass
class _Timer:
    """What shows the machine reboots, and whether anything shows *when* (a timer claim needs
    time: a console timeout, boot times, restart times)."""

    timed: bool = False
    reboots: bool = False
    evidence: list[Evidence] = field(default_factory=list)
    said: list[str] = field(default_factory=list)


def _restart_period(pod: Signal, restarts: int) -> float | None:
    """Minutes per restart: from the pod's start to its last restart, over the restarts."""
    start = parse_time(pod.get("started")) or parse_time(pod.get("created"))
    end = parse_time(pod.get("finished"))
    if start and end and end > start:
        return (end - start).total_seconds() / 60 / restarts
    age, ago = age_minutes(pod.get("age")), age_minutes(pod.get("last_restart_ago"))
    if age is not None and ago is not None and age > ago:
        return (age - ago) / restarts
    return None


def _timer(machine: Machine) -> _Timer:
    timer = _Timer()
    timeouts = [boot for boot in machine.boots if boot.timed_out]
    if timeouts:
        timer.timed = timer.reboots = True
        for boot in timeouts[:2]:
            timer.evidence += [s.evidence for s in boot.failures[:4]]
        uptimes = sorted({round(u) for b in timeouts if (u := b.failure_uptime()) is not None})
        if uptimes:
            timer.said.append(f"the boot fails at {', '.join(str(u) for u in uptimes)} s of uptime")
        else:
            times = "once" if len(timeouts) == 1 else f"{len(timeouts)} times"
            timer.said.append(f"the boot sequence failed {times}")
    for signal in machine.of(Kind.BOOT_TIME):
        boots = sorted({int(b) for b in signal.get("boots").split(",") if b.strip().isdigit()})
        gaps = [b - a for a, b in pairwise(boots)]
        cycles = [gap for gap in gaps if _CYCLE[0] <= gap <= _CYCLE[1]]
        trailing = 0
        for gap in reversed(gaps):
            if not _CYCLE[0] <= gap <= _CYCLE[1]:
                break
            trailing += 1
        if gaps:
            timer.reboots = True
        # Every gap on the timer, or the latest two: a node that ran for days and then began
        # looping (after an upgrade, say) is looping now.
        if cycles and (len(cycles) == len(gaps) or trailing >= 2):
            timer.timed = True
            low, high = min(cycles), max(cycles)
            apart = f"{low}" if low == high else f"{low} to {high}"
            if len(cycles) == len(gaps):
                timer.said.append(f"{len(boots)} boots {apart} s apart")
            else:
                up = (boots[-trailing - 1] - boots[0]) / 86400
                timer.said.append(
                    f"the last {trailing + 1} boots {apart} s apart, after {up:.1f} days "
                    "without this"
                )
            timer.evidence.append(signal.evidence)
    _pod_restarts(machine, timer)
    _rebooted_events(machine, timer)
    for signal in machine.of(Kind.EVENT):
        if signal.value in ("Rebooted", "NodeNotReady", "SandboxChanged", "TaintManagerEviction"):
            timer.evidence.append(signal.evidence)
    for signal in machine.of(Kind.MACHINE_STAGE):
        if signal.value == "booting" and signal.get("ready") == "true":
            # A waiting extension service has no Service resource, so nothing is unmet.
            timer.said.append("machinestatus says booting with ready: true")
            timer.evidence.append(signal.evidence)
    boot_ids = {s.get("boot") for s in machine.of(Kind.NODE) if s.get("boot")}
    if len(boot_ids) > 1:
        timer.reboots = True
        timer.said.append(f"bootID changed ({len(boot_ids)} values)")
    return timer


# kubelet's event when it starts on a new boot ID (pkg/kubelet/nodestatus/setters.go).
_REBOOTED = re.compile(r"has been rebooted, boot id: (?P<boot>[0-9A-Za-z-]+)")
# kubectl prints an age to the minute up to 8 hours ("61m", "3h10m"), in hours after that.
_AGE_PRECISION_SECONDS = 120
_AGE_LIMIT_MINUTES = 8 * 60


def _rebooted_events(machine: Machine, timer: _Timer) -> None:
    """kubelet's ``Rebooted`` events, one per boot ID: their times (or ages, all read at one
    moment) about 70 minutes apart put the node on the boot timer."""
    events: dict[str, Signal] = {}
    for signal in machine.of(Kind.EVENT):
        if signal.value == "Rebooted":
            found = _REBOOTED.search(signal.evidence.text)
            events.setdefault(found["boot"] if found else signal.evidence.where, signal)
    if len(events) < 2:
        return
    timer.reboots = True
    times = [parse_time(s.get("time")) for s in events.values()]
    ages = [age_minutes(s.get("age").split(" ")[0]) for s in events.values()]
    slack = 0
    if all(t is not None for t in times):
        stamps = sorted(t.timestamp() for t in times if t is not None)
    elif all(a is not None and a < _AGE_LIMIT_MINUTES for a in ages):
        stamps = sorted(-a * 60 for a in ages if a is not None)
        slack = _AGE_PRECISION_SECONDS
    else:
        timer.said.append(f"kubelet reported {len(events)} reboots (Rebooted events)")
        timer.evidence += [s.evidence for s in list(events.values())[:2]]
        return
    gaps = [b - a for a, b in pairwise(stamps)]
    on_cycle = all(_CYCLE[0] - slack <= gap <= _CYCLE[1] + slack for gap in gaps)
    minutes = sorted({round(gap / 60) for gap in gaps})
    apart = f"{minutes[0]}" if len(minutes) == 1 else f"{minutes[0]} to {minutes[-1]}"
    timer.said.append(
        f"kubelet reported {len(events)} reboots (Rebooted events) {apart} minutes apart"
    )
    timer.evidence += [s.evidence for s in list(events.values())[:2]]
    if on_cycle:
        timer.timed = True


def _pod_restarts(machine: Machine, timer: _Timer) -> None:
    """Every pod of a rebooting machine dies at once: identical restart counts. Once is any
    reboot (an upgrade, a drain); the timer needs restarts about every 70 minutes."""
    pods = [s for s in machine.of(Kind.POD) if int(s.get("restarts") or 0) > 0]
    if len(pods) < 3:
        return
    counts = Counter(s.get("restarts") for s in pods)
    count, same = counts.most_common(1)[0]
    restarts = int(count)
    if same != len(pods) or restarts < 2:
        return
    timer.reboots = True
    unknown = [s for s in pods if s.get("exit") == "255" and s.get("reason") == "Unknown"]
    text = f"all {len(pods)} restarted pods on it restarted {restarts} times" + (
        ", last exit 255 Unknown" if unknown else ""
    )
    periods = sorted(p for s in pods if (p := _restart_period(s, restarts)) is not None)
    if periods:
        period = periods[len(periods) // 2]
        text += f", about every {period:.0f} minutes"
        if _POD_PERIOD_MINUTES[0] <= period <= _POD_PERIOD_MINUTES[1]:
            timer.timed = True
    timer.said.append(text)
    timer.evidence += [s.evidence for s in (unknown or pods)[:2]]


def _sentence(text: str) -> str:
    if not text:
        return ""
    # A service or node name (ext-nvidia-persistenced, apid) keeps its spelling; a word is
    # capitalised.
    first, _, rest = text.partition(" ")
    name = not first.isalpha() or rest.startswith("pending")
    return (text if name else text[:1].upper() + text[1:]) + "."


def _pending(machine: Machine, names: Iterable[str]) -> list[str]:
    """How long each service has been pending when the boot gave up."""
    held = machine.held_services()
    said = []
    for name in names:
        waits = machine.waits_of(name)
        uptimes = [float(s.get("uptime")) for s in waits if s.get("uptime")]
        times = [t for t in (parse_time(s.get("time")) for s in waits) if t is not None]
        timed_out = any(b.timed_out and name in b.held() for b in machine.boots)
        at = " when the boot timer gave up" if timed_out else ""
        if len(uptimes) > 1:
            said.append(
                f"{name} pending from {min(uptimes):.0f} s to {max(uptimes):.0f} s of uptime{at}"
            )
        elif len(times) > 1:
            minutes = (max(times) - min(times)).total_seconds() / 60
            said.append(f"{name} pending for {minutes:.0f} minutes{at}")
        elif name in held:
            said.append(f"{name} pending{at}")
    return said


def _held_lines(machine: Machine, names: Iterable[str]) -> list[Evidence]:
    """The last line of each boot (or `talosctl services` row) that shows each service held."""
    found: dict[tuple[str, str], Evidence] = {}
    wanted = set(names)
    for boot in machine.boots:
        for name, signal in boot.held().items():
            if name in wanted:
                found[name, boot.file] = signal.evidence
    for signal in machine.of(Kind.SERVICE_WAITING):
        if signal.get("source") == "services" and signal.value in wanted:
            found.setdefault((signal.value, signal.evidence.file), signal.evidence)
    return list(found.values())


# --- trustd (TS131) --------------------------------------------------------------------------


def _services(model: ClusterModel) -> tuple[list[Signal], list[Signal]]:
    services = model.cluster.get(Kind.CONTROL_PLANE_SERVICE, [])
    return [s for s in services if s.get("trustd")], [s for s in services if not s.get("trustd")]


def _csr_failures(machine: Machine) -> list[Signal]:
    return machine.of(Kind.CSR_SIGN_FAILED)


def _apid_long_wait(machine: Machine) -> list[Signal]:
    """apid still waiting for its certificates minutes into a boot (every boot waits seconds)."""
    return [
        s
        for s in machine.of(Kind.APID_WAITING_CERTIFICATES)
        if s.get("uptime") and float(s.get("uptime")) >= 600
    ]


def _ts131_ruled_out(machine: Machine, with_port: list[Signal]) -> list[tuple[str, str]]:
    """Each fact that says the trustd port is not the cause, with its place."""
    facts = []
    if with_port:
        facts.append(f"{with_port[0].evidence.where} lists port 50001 (talos-trustd)")
    running = machine.service_running("apid")
    if running:
        facts.append(f"apid is Running ({running.evidence.where})")
    timeouts = [b for b in machine.boots if b.timed_out and b.held()]
    if timeouts and "apid" not in timeouts[-1].held():
        line = next(iter(timeouts[-1].held().values())).evidence.where
        facts.append(f"apid is not among the services pending at the timeout ({line})")
    if not _csr_failures(machine) and (timeouts or running):
        facts.append("nothing logs `failed to sign API server CSR`")
    if not facts:
        return [
            (
                "TS131",
                "no input shows apid pending or a failed CSR (not certain without the console "
                "or the control-plane Service)",
            )
        ]
    return [("TS131", "; ".join(facts))]


# --- the rules -------------------------------------------------------------------------------


def _reboots(model: ClusterModel) -> list[_Finding]:
    """TS101, TS131, TS201 and TS202 for every machine whose boot is held or that reboots on
    the timer (TS123/TS110 on a GPU machine are told by :func:`_modules_not_loaded`)."""
    found: list[_Finding] = []
    with_port, without_port = _services(model)
    apid_failing: list[str] = []
    for machine in model.sorted_machines():
        held = machine.held_services()
        timer = _timer(machine)
        csr = _csr_failures(machine)
        apid_held = "apid" in held or bool(_apid_long_wait(machine))
        apid_case = apid_held or (bool(csr) and not machine.service_running("apid"))
        nvidia_held = [name for name in NVIDIA_SERVICES if name in held]
        other_held = sorted(n for n in held if n not in NVIDIA_SERVICES and n != "apid")
        if not (held or timer.timed or apid_case):
            continue
        memory = _memory_ruled_out(machine)
        if apid_case:
            apid_failing.append(machine.name)
            found.append(_apid_cause(machine, timer, csr, with_port, without_port, memory))
        if nvidia_held:
            finding = _nvidia_cause(machine, timer, nvidia_held, with_port, memory)
            if finding is not None:
                found.append(finding)
        if other_held:
            summary = [*_pending(machine, other_held), *timer.said]
            evidence = [*_held_lines(machine, other_held), *timer.evidence]
            ruled = [*_ts131_ruled_out(machine, with_port), *memory]
            found.append(_Finding("TS201", machine, evidence, ruled, summary))
        if not held and not apid_case and timer.timed:
            # No console: the image's NVIDIA extensions on a machine without an NVIDIA device
            # name the services that must be waiting.
            without_gpu = _nvidia_image_without_gpu(machine, timer, with_port, memory)
            if without_gpu is not None:
                found.append(without_gpu)
                continue
            name = machine.name or "the node"
            collect = [
                f"the serial console of {name} across one reboot (virtctl console, or the "
                "guest-console-log container): the pending service names the cause",
                f"talosctl -n {machine.name or '<node>'} dmesg | grep startAllServices",
            ]
            found.append(_Finding("TS202", machine, timer.evidence, memory, timer.said, collect))
    if without_port and not apid_failing:
        looping = [f.machine.name for f in found if f.machine and f.code in ("TS201", "TS202")]
        found.append(
            _Finding(
                "TS131",
                None,
                [s.evidence for s in without_port],
                [("", "no machine's log among the inputs shows apid waiting for its certificates")],
                collect=["a worker's serial console or `talosctl dmesg`, to see apid waiting"],
                severity="warning",
                nodes=looping,
            )
        )
    return found


def _apid_cause(
    machine: Machine,
    timer: _Timer,
    csr: list[Signal],
    with_port: list[Signal],
    without_port: list[Signal],
    memory: list[tuple[str, str]],
) -> _Finding:
    """apid never gets its certificates: trustd's port missing (TS131), or — when the Service
    lists port 50001 — another reason, which the CSR error names (often an x509 complaint)."""
    evidence = [s.evidence for s in csr[:1] + csr[-1:]]
    evidence += [s.evidence for s in _apid_long_wait(machine)[:1]]
    evidence += _held_lines(machine, ["apid"])
    ruled: list[tuple[str, str]] = []
    shown = _nvidia_shown(machine)
    if not any(name in machine.held_services() for name in NVIDIA_SERVICES):
        ruled.append(
            ("TS101", "no NVIDIA service is pending; the service that never comes up is apid")
        )
    elif shown is not None:
        ruled.append(("TS101", shown[0]))
    summary = [*_pending(machine, ["apid"]), *timer.said]
    if with_port and not without_port:
        reason = _csr_reason(csr)
        ruled.insert(0, ("TS131", f"{with_port[0].evidence.where} lists port 50001 (talos-trustd)"))
        summary.insert(0, "apid never gets its certificates" + (f": {reason}" if reason else ""))
        collect = [
            "the CSR error names why trustd refuses or cannot be reached: compare the worker's "
            "machine CA and trustd token (`talosctl -n <cp> get machineconfig`) with the control "
            "plane's, and the Service's endpoints (`kubectl get endpoints`)",
        ]
        return _Finding(
            "TS201", machine, [*evidence, *timer.evidence], [*ruled, *memory], summary, collect
        )
    evidence += [s.evidence for s in without_port]
    collect = []
    if not without_port:
        collect.append(
            "the control-plane Service (`kubectl get svc -n <tenant namespace> -o yaml`): a "
            "Service without port 50001 confirms it; one with it rules it out"
        )
    return _Finding(
        "TS131",
        machine,
        [*evidence, *timer.evidence],
        [*ruled, *memory],
        summary,
        collect,
        severity=None if (without_port or csr) else "warning",
    )


def _csr_reason(csr: list[Signal]) -> str:
    """What the CSR error says went wrong: its x509 or TLS clause, else its last clause."""
    for signal in reversed(csr):
        text = signal.evidence.text
        found = re.search(r"(x509: [^\"\\]*|tls: [^\"\\]*)", text)
        if found:
            return found.group(1).strip().rstrip(".")
    return ""


def _nvidia_cause(
    machine: Machine,
    timer: _Timer,
    nvidia_held: list[str],
    with_port: list[Signal],
    memory: list[tuple[str, str]],
) -> _Finding | None:
    held_lines = _held_lines(machine, nvidia_held)
    summary = [*_pending(machine, nvidia_held), *timer.said]
    apid_held = "apid" in machine.held_services()
    not_trustd = [] if apid_held else _ts131_ruled_out(machine, with_port)
    absent = _no_nvidia(machine)
    shown = _nvidia_shown(machine)
    if absent is not None:
        ruled = [*not_trustd, ("TS123", absent[0]), *memory]
        extensions = machine.extensions()
        nvidia_extensions = sorted(e for e in extensions if "nvidia" in e)
        evidence = [*held_lines, *timer.evidence, absent[1]]
        evidence += [extensions[e] for e in nvidia_extensions[:1]]
        if nvidia_extensions:
            summary.append(f"its image carries {', '.join(nvidia_extensions)}")
        running = machine.running_schematic()
        schematics = [("running", running[0])] if running else []
        return _Finding("TS101", machine, evidence, ruled, summary, schematics=schematics)
    if shown is not None:
        # A GPU machine: modules not loaded (TS123/TS110) and the wrong flavour (TS103-TS105)
        # are decided elsewhere; with the module loaded and none of those, say what is known.
        loaded = _driver_answered(machine)
        told = any(
            machine.of(kind)
            for kind in (Kind.NVRM_NEEDS_OPEN, Kind.NVRM_NO_GSP, Kind.NVRM_LEGACY, Kind.NO_DRIVER)
        )
        if told or (not loaded and _unloaded(machine)):
            return None
        if not loaded:
            # The services wait and the node has a GPU, but nothing among the inputs says
            # whether its module is loaded: the loop is certain, its cause is to be collected.
            node = machine.name or "<node>"
            summary.append(
                "the node has an NVIDIA GPU; the inputs do not show whether its nvidia module "
                "is loaded"
            )
            collect = [
                f"talosctl -n {node} get modules: no nvidia module loaded means TS123 (the "
                "machine config does not load the modules the extensions install)",
                f"talosctl -n {node} get pcidevices -o yaml: the GPU's driver field (empty: "
                f"no module bound it)",
                f"talosctl -n {node} logs {nvidia_held[0]}: why it does not start",
            ]
            ruled = [("TS101", shown[0]), *not_trustd]
            evidence = [*held_lines, *timer.evidence, shown[1]]
            return _Finding("TS201", machine, evidence, [*ruled, *memory], summary, collect)
        summary.append("the node has an NVIDIA GPU and its module is loaded, yet the service waits")
        collect = [
            f"talosctl -n {machine.name or '<node>'} logs {nvidia_held[0]}: why it does not start",
        ]
        evidence = [*held_lines, *timer.evidence, loaded[0]]
        return _Finding(
            "TS201", machine, evidence, [*not_trustd, *memory], summary, collect, "warning"
        )
    node = machine.name or "<node>"
    collect = [
        f"talosctl -n {node} get pcidevices -o yaml: no vendor 0x10de device means TS101 "
        "(NVIDIA image on a node without a GPU); a 0x10de device with an empty driver means "
        "TS123 (modules not loaded)",
    ]
    return _Finding(
        "TS201",
        machine,
        [*held_lines, *timer.evidence],
        [*not_trustd, *memory],
        summary,
        collect,
    )


def _nvidia_image_without_gpu(
    machine: Machine, timer: _Timer, with_port: list[Signal], memory: list[tuple[str, str]]
) -> _Finding | None:
    """TS101 without the console: it reboots on the timer, its image carries NVIDIA
    extensions, and its PCI devices hold no NVIDIA one (so their services wait forever)."""
    extensions = machine.extensions()
    nvidia_extensions = sorted(e for e in extensions if "nvidia" in e)
    absent = _no_nvidia(machine)
    if absent is None or not nvidia_extensions:
        return None
    summary = [
        *timer.said,
        f"its image carries {', '.join(nvidia_extensions)}",
        "it has no NVIDIA device, so ext-nvidia-persistenced waits for a driver that never binds",
    ]
    evidence = [*timer.evidence, absent[1], extensions[nvidia_extensions[0]]]
    ruled = [*_ts131_ruled_out(machine, with_port), ("TS123", absent[0]), *memory]
    collect = [
        f"talosctl -n {machine.name or '<node>'} dmesg | grep startAllServices: the NVIDIA "
        "services pending at the timeout confirm it",
    ]
    running = machine.running_schematic()
    schematics = [("running", running[0])] if running else []
    return _Finding("TS101", machine, evidence, ruled, summary, collect, schematics=schematics)


def _nvidia_waits_not_held(model: ClusterModel, findings: list[_Finding]) -> list[_Finding]:
    """An NVIDIA service shown waiting, with nothing to say how long (one pasted line, a
    `talosctl services` row of minutes ago): on a node without an NVIDIA GPU it never starts
    (TS101, certain); otherwise it is a candidate, said with what to collect — never silence.
    Machines another finding already explains, and those whose driver answered (the wait was
    the boot's first seconds), are left alone."""
    explained = {f.machine.name for f in findings if f.machine is not None}
    explained |= {n for f in findings for n in f.nodes or []}
    with_port, _ = _services(model)
    found = []
    for machine in model.sorted_machines():
        waited = {n: s for n, s in machine.waited_services().items() if n.startswith("ext-nvidia")}
        if not waited or machine.name in explained or _driver_answered(machine):
            continue
        names = sorted(waited)
        lines = [waited[n].evidence for n in names]
        shown_waiting = (
            f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} shown waiting "
            f"({lines[0].where})"
        )
        node = machine.name or "<node>"
        ruled = _ts131_ruled_out(machine, with_port)
        absent = _no_nvidia(machine)
        if absent is not None:
            summary = [
                f"{shown_waiting}; the node has no NVIDIA GPU, so the driver "
                "ext-nvidia-persistenced waits for never binds: the boot never finishes and the "
                "70-minute boot timer reboots the node, again and again",
            ]
            collect = [
                f"talosctl -n {node} dmesg | grep -E 'startAllServices|boot sequence': the "
                "NVIDIA services still pending when the boot fails confirm it",
            ]
            running = machine.running_schematic()
            found.append(
                _Finding(
                    "TS101",
                    machine,
                    [*lines, absent[1]],
                    [*ruled, ("TS123", absent[0])],
                    summary,
                    collect,
                    schematics=[("running", running[0])] if running else [],
                )
            )
            continue
        shown = _nvidia_shown(machine)
        collect = [
            f"talosctl -n {node} services: {names[0]} still Waiting after ten minutes and more "
            "holds the boot; Running rules this out",
            f"talosctl -n {node} dmesg | grep -E 'startAllServices|boot sequence' (or the serial "
            "console across one reboot): the services pending when the boot fails",
        ]
        if shown is not None:
            summary = [
                f"{shown_waiting} and nothing among the inputs says for how long; {shown[0]}, "
                "and nothing shows its driver loaded: with the modules not loaded (TS123) the "
                "service waits until the 70-minute boot timer reboots the node",
            ]
            collect.insert(
                1, f"talosctl -n {node} get modules: no nvidia module loaded means TS123"
            )
            found.append(
                _Finding(
                    "TS201",
                    machine,
                    [*lines, shown[1]],
                    [("TS101", shown[0]), *ruled],
                    summary,
                    collect,
                    "warning",
                )
            )
            continue
        summary = [
            f"{shown_waiting} and nothing among the inputs says for how long, nor whether the "
            "node has an NVIDIA GPU. A GPU node waits for it a few seconds at every boot; on a "
            "node without an NVIDIA GPU it waits until the 70-minute boot timer reboots the "
            "node, again and again (TS101)",
        ]
        collect.insert(
            0,
            f"talosctl -n {node} get pcidevices: no vendor 0x10de device confirms TS101; with "
            "one, `talosctl -n {node} get modules` tells whether the nvidia module is loaded "
            "(TS123 when not)".replace("{node}", node),
        )
        found.append(_Finding("TS101", machine, lines, [], summary, collect, "warning"))
    return found


def _memory_ruled_out(machine: Machine) -> list[tuple[str, str]]:
    """Memory as the cause of a reboot, ruled out by what memory shows (if anything does)."""
    if machine.of(Kind.OOM_KILL):
        return []
    available = [
        s for s in machine.of(Kind.MEMORY_AVAILABLE) if s.value == "node_memory_MemAvailable_bytes"
    ]
    if available:
        low = min(_float(s.get("min")) for s in available)
        return [
            (
                "TS221",
                f"MemAvailable never fell below {low / (1 << 30):.1f} GiB "
                f"({available[0].evidence.where}) and nothing was OOM-killed",
            )
        ]
    return []


def _unloaded(machine: Machine) -> bool:
    """Whether the inputs show the machine's NVIDIA GPU with no module loaded (TS123/TS110)."""
    gpus = _gpus(machine) or _nvidia_devices(machine)
    unbound = [s for s in gpus if s.get("has_driver_field") and not s.get("driver")]
    no_module = bool(machine.of(Kind.MODULES_LISTED)) and not _nvidia_modules(machine)
    if not gpus or not (unbound or no_module or machine.of(Kind.NO_DRIVER)):
        return False
    return not (machine.of(Kind.NVRM_NEEDS_OPEN) or _nvidia_modules(machine))


def _modules_not_loaded(model: ClusterModel) -> list[_Finding]:
    found = []
    for machine in model.sorted_machines():
        if not _unloaded(machine):
            continue
        if any(s.value.startswith("nvidia") for s in machine.of(Kind.MODULE_LOAD_FAILED)):
            continue  # Talos tried to load it: _module_not_loaded says why it could not
        gpus = _gpus(machine) or _nvidia_devices(machine)
        unbound = [s for s in gpus if s.get("has_driver_field") and not s.get("driver")]
        listed = machine.of(Kind.MODULES_LISTED)
        no_module = bool(listed) and not _nvidia_modules(machine)
        no_driver = machine.of(Kind.NO_DRIVER)
        timer = _timer(machine)
        evidence = [s.evidence for s in unbound[:2]] + [s.evidence for s in no_driver[:1]]
        if no_module:
            evidence.append(listed[0].evidence)
        ruled = [
            (
                "TS101",
                f"the node has NVIDIA device {gpus[0].get('address') or gpus[0].evidence.text} "
                f"({gpus[0].evidence.where})",
            ),
            ("TS103", "no nvidia module is loaded, so neither flavour was tried"),
        ]
        held = [n for n in NVIDIA_SERVICES if n in machine.held_services()]
        summary = [*_pending(machine, held), *timer.said]
        # The image's extensions tell the two causes apart: no kernel-module extension at all
        # (TS110), or modules installed that the machine config never loads (TS123).
        extensions = machine.of(Kind.EXTENSION)
        kmods = [s for s in extensions if _is_kernel_module_extension(s.value)]
        code = "TS110" if extensions and not kmods else "TS123"
        evidence += [s.evidence for s in kmods[:1]]
        configured = [
            s for s in machine.of(Kind.MACHINE_CONFIG) if "nvidia" in s.get("modules").split(",")
        ]
        if configured and code == "TS123":
            # The machine config does load nvidia, yet none is loaded: the module is not in
            # the running kernel's tree, or the kernel refused it (its log says which).
            code = "TS204"
            ruled = [
                *ruled,
                ("TS123", f"the machine config loads nvidia ({configured[0].evidence.where})"),
            ]
            summary.insert(
                0,
                "the machine config loads nvidia, yet no nvidia module is loaded: the image's "
                "NVIDIA kernel-module extension is missing or built for another kernel, or the "
                "kernel refused the module",
            )
            evidence.append(configured[0].evidence)
            collect = [
                f"talosctl -n {machine.name or '<node>'} dmesg: `error loading module` says "
                "whether the module was not found or refused",
                f"talosctl -n {machine.name or '<node>'} get extensions: no NVIDIA kernel-module "
                "extension means TS110",
            ]
            found.append(_Finding(code, machine, evidence, ruled, summary, collect))
            continue
        evidence += [*_held_lines(machine, held), *timer.evidence]
        found.append(_Finding(code, machine, evidence, ruled, summary))
    return found


def _kernel_module_flavour(name: str) -> str | None:
    """``open`` or ``proprietary`` for an NVIDIA kernel-module extension, else None."""
    from schematic.facts.nvidia import describe_nvidia_extension

    described = describe_nvidia_extension(name if "/" in name else f"siderolabs/{name}")
    return described.flavour if described and described.family == "kernel-modules" else None


def _is_kernel_module_extension(name: str) -> bool:
    return _kernel_module_flavour(name) is not None


def _wrong_flavour(model: ClusterModel) -> list[_Finding]:
    """TS103 (open-only GPU on the proprietary modules), TS104 and TS105 (pre-Turing)."""
    found: list[_Finding] = []
    for machine in model.sorted_machines():
        before = len(found)
        needs_open = machine.of(Kind.NVRM_NEEDS_OPEN)
        no_gsp = machine.of(Kind.NVRM_NO_GSP)
        legacy = machine.of(Kind.NVRM_LEGACY)
        no_devices = machine.of(Kind.NO_DEVICES) + machine.of(Kind.RM_INIT_FAILED)
        # The extension names the flavour; `(PO)` in /proc/modules says it again.
        proprietary = [
            s
            for s in machine.of(Kind.EXTENSION)
            if _kernel_module_flavour(s.value) == "proprietary"
        ] + [s for s in _nvidia_modules(machine) if "P" in s.get("taint")]
        known = _known_gpus(machine)
        open_only = [g for g in known if g.open_only and not g.gb10]
        if needs_open or (no_devices and proprietary and open_only and not (no_gsp or legacy)):
            evidence = [s.evidence for s in needs_open[:2] + no_devices[:3] + proprietary[:2]]
            pci = sorted({s.get("pci") for s in needs_open if s.get("pci")})
            pci += [g.id for g in open_only if g.id not in pci]
            ruled = [
                (
                    "TS123",
                    "the nvidia module is loaded and bound; a bound driver proves nothing here",
                ),
                (
                    "TS104",
                    "the kernel names the open modules as the need, not a missing GSP or a "
                    "legacy branch",
                ),
            ]
            summary = []
            if pci:
                names = {g.id: g.label for g in known}
                shown = ", ".join(names.get(p, p) for p in pci)
                ruled.append(("", f"GPU {shown} is driven only by the open kernel modules"))
                summary.append(f"GPU {shown} is driven only by the open kernel modules")
            found.append(_Finding("TS103", machine, evidence, ruled, summary))
        if no_gsp:
            evidence = [s.evidence for s in no_gsp[:2] + no_devices[:2]]
            ruled = [("TS103", "the GPU lacks a GSP, so it is older than Turing, not open-only")]
            found.append(_Finding("TS104", machine, evidence, ruled))
        if legacy:
            gone = machine.of(Kind.NO_GPU_FOUND)
            evidence = [s.evidence for s in legacy[:2] + gone[:2] + no_devices[:1]]
            ruled = [("TS104", "the module loads and ignores the GPU; no GSP complaint")]
            found.append(_Finding("TS105", machine, evidence, ruled))
        if len(found) == before:
            found += _gpu_not_initialised(machine)
    return found


def _gpu_not_initialised(machine: Machine) -> list[_Finding]:
    """TS203: the driver loaded and could not bring a GPU up, for a reason none of TS103-TS105
    names: the data-centre-only open modules, or a cause only the NVRM lines tell."""
    failed = machine.of(Kind.RM_INIT_FAILED)
    unsupported = machine.of(Kind.NVRM_OPEN_UNSUPPORTED)
    release = machine.of(Kind.NVRM_RELEASE_UNSUPPORTED)
    if not (failed or unsupported or release):
        return []
    evidence = [s.evidence for s in unsupported[:1] + release[:1] + failed[:2]]
    evidence += [s.evidence for s in machine.of(Kind.NO_DEVICES)[:1]]
    ruled = [
        ("TS123", "the nvidia module is loaded: it is the driver that reports the failure"),
        (
            "TS103",
            "the kernel does not say the GPU requires the open kernel modules",
        ),
    ]
    collect: list[str] = []
    if release:
        pci = release[0].get("pci")
        summary = [
            f"the driver release refuses GPU {pci or 'of this node'} as not supported (the NVRM "
            "lines name the release): the GPU needs another driver than this one — a newer "
            "branch for a GPU newer than it, the legacy branch for an old one, or NVIDIA's vGPU "
            "guest driver for a vGPU"
        ]
    elif unsupported:
        summary = [
            "the open kernel modules of this driver serve data-centre GPUs only and refuse this "
            "one: load the proprietary modules (nonfree-kmod-nvidia-<tier>), or set "
            "NVreg_OpenRmEnableUnsupportedGpus=1 in the parameters of the nvidia entry of "
            "machine.kernel.modules"
        ]
    elif fell := [s for s in machine.of(Kind.GPU_XID) if "fallen off the bus" in s.evidence.text]:
        evidence.insert(0, fell[0].evidence)
        summary = [
            "the GPU fell off the bus as the driver probed it: a fault of the GPU, its PCIe "
            "link, its power or, in a VM, the host's passthrough, not of the driver or the image"
        ]
    else:
        summary = ["the driver did not bring the GPU up; the NVRM lines before it say why"]
        collect.append(
            f"talosctl -n {machine.name or '<node>'} dmesg | grep NVRM: the lines before "
            "`RmInitAdapter failed` name the cause"
        )
    return [_Finding("TS203", machine, evidence, ruled, summary, collect)]


def _known_gpus(machine: Machine) -> list[Gpu]:
    """The machine's NVIDIA GPUs the device table knows (PCI IDs, nvidia-smi's names)."""
    from schematic.errors import TalosSchematicError
    from schematic.facts.nvidia import lookup_gpu

    ids = {f"10de:{s.get('product').removeprefix('0x')}" for s in _gpus(machine)}
    ids |= {s.get("pci") for s in machine.of(Kind.NVRM_NEEDS_OPEN) if s.get("pci")}
    ids |= {s.get("pci") for s in machine.of(Kind.GPU_LISTED) if s.get("pci")}
    known: dict[str, Gpu] = {}
    for query in sorted(i for i in ids if len(i) == 9):
        try:
            gpu = lookup_gpu(query)
        except TalosSchematicError:
            continue
        known[gpu.id] = gpu
    if not known:
        names = {s.value for s in machine.of(Kind.GPU_LISTED) if s.value}
        labelled = machine.labelled_hardware()
        if labelled is not None and labelled.product:
            # GPU Feature Discovery writes NVML's name with dashes for spaces; a shared GPU
            # carries a -SHARED suffix.
            names.add(labelled.product.removesuffix("-SHARED"))
        for name in sorted(names):
            try:
                gpu = lookup_gpu(name)
            except TalosSchematicError:
                continue
            known[gpu.id] = gpu
    return [known[k] for k in sorted(known)]


# B100/B200/B300 SXM modules sit on NVLink-5 HGX baseboards; H100/H200/H800/H20 (NVLink 4) and
# A100/A800 (NVLink 3) keep their NVSwitches as PCI functions and need no NVLSM.
_NVLINK5_NAME = re.compile(r"\bB[123]00\b")
_OLDER_FABRIC_NAME = re.compile(r"\b(?:H100|H200|H800|H20|A100|A800|A30)\b")


def _fabric_generation(machine: Machine) -> tuple[bool | None, str]:
    """Whether the machine's GPUs are NVLink-5 HGX modules (None: not known), and why."""
    for gpu in _known_gpus(machine):
        if gpu.nvlink5_hgx:
            return True, gpu.label
    listed = {s.value for s in machine.of(Kind.GPU_LISTED) if s.value}
    labelled = machine.labelled_hardware()
    if labelled is not None and labelled.product:
        listed.add(labelled.product.replace("-", " "))
    names = sorted(listed)
    for name in names:
        if _NVLINK5_NAME.search(name):
            return True, name
    known = _known_gpus(machine)
    if known:
        return False, known[0].label
    for name in names:
        if _OLDER_FABRIC_NAME.search(name):
            return False, name
    return None, ""


def _fabric(model: ClusterModel) -> list[_Finding]:
    """TS155: an NVLink-5 system whose fabric manager failed for want of ib_umad. The wrapper's
    ib_umad hint prints on every machine without an InfiniBand NVSwitch, healthy HGX H100 and
    A100 boards included: only a failed fabric on NVLink-5 GPUs is evidence."""
    found = []
    for machine in model.sorted_machines():
        hint = machine.of(Kind.FABRIC_IB_UMAD)
        nothing = machine.of(Kind.FABRIC_NOTHING_TO_DO)
        in_progress = list(
            {
                s.evidence: s
                for s in machine.of(Kind.FABRIC_IN_PROGRESS)
                + [s for s in machine.of(Kind.FABRIC_STATE) if s.value.lower() == "in progress"]
            }.values()
        )
        not_ready = machine.of(Kind.CUDA_NOT_READY)
        exited = machine.of(Kind.FABRIC_FAILED)
        failed = nothing + exited + in_progress + not_ready
        if not failed:
            continue
        if "ib_umad" in {s.value for s in machine.of(Kind.MODULE_LOADED)}:
            continue
        if machine.of(Kind.FABRIC_SWITCH_FOUND):
            continue  # NVLSM found its management port: ib_umad is there and works
        nvlink5, gpu = _fabric_generation(machine)
        if nvlink5 is False:
            continue  # NVSwitches of older boards are PCI functions: NVLSM is not involved
        if nvlink5 is None and not hint:
            continue
        evidence = [s.evidence for s in hint[:2] + nothing[:2] + in_progress[:1] + not_ready[:2]]
        evidence += [s.evidence for s in exited[:1]]
        ruled = [("TS123", "the GPUs are visible; the fabric is not trained")]
        if machine.of(Kind.MODULES_LISTED):
            ruled.append(("", "ib_umad is not among the node's loaded modules"))
        summary = []
        collect = []
        severity = None
        if nvlink5:
            summary.append(f"{gpu} is an NVLink-5 HGX module")
        elif nothing and (in_progress or not_ready):
            # The GPUs wait for a fabric whose switches the fabric manager cannot see as PCI
            # functions: only NVLink-5 boards manage them over InfiniBand.
            summary.append(
                "the fabric manager finds no NVSwitch while the GPUs wait for their fabric, "
                "which happens on NVLink-5 boards"
            )
        else:
            severity = "warning"
            summary.append("the GPU model is not among the inputs, so NVLink 5 is not certain")
            collect.append(
                f"talosctl -n {machine.name or '<node>'} ... nvidia-smi -L (or `nvidia-smi -q`): "
                "B100/B200/B300 SXM GPUs need ib_umad; H100/A100 boards do not"
            )
        found.append(_Finding("TS155", machine, evidence, ruled, summary, collect, severity))
    return found


def _device_plugin(model: ClusterModel) -> list[_Finding]:
    """TS140 (env override dropped CDI) and TS210 (GPU pods created before CDI worked)."""
    found = []
    envs = model.cluster.get(Kind.PLUGIN_ENV, [])
    overridden_env = [
        s for s in envs if s.get("cdi_enabled") == "true" and not s.value.startswith("cdi")
    ]
    strategies = model.everywhere(Kind.PLUGIN_STRATEGY)
    no_cdi = [s for s in strategies if not any(v.startswith("cdi") for v in s.value.split(","))]
    if overridden_env or no_cdi:
        nodes = [
            m.name
            for m in model.sorted_machines()
            if any(s in no_cdi for s in m.of(Kind.PLUGIN_STRATEGY))
        ]
        evidence = [s.evidence for s in overridden_env + no_cdi[:3]]
        ruled = [("TS210", "the plugin itself runs without a CDI strategy")]
        summary: list[str] = []
        collect: list[str] = []
        severity = None
        if not overridden_env:
            # envvar is the plugin's own default off Cozystack: a log alone does not prove an
            # override dropped the CDI settings.
            severity = "warning"
            summary.append(
                f"the device plugin runs with {no_cdi[0].value}; no DaemonSet among the inputs "
                "shows whether an override set it"
            )
            collect.append(
                "the device plugin DaemonSet (`kubectl get ds -A -o yaml | grep -A30 "
                "nvidia-device-plugin`): CDI_ENABLED=true with a non-CDI DEVICE_LIST_STRATEGY "
                "confirms the override"
            )
        found.append(
            _Finding("TS140", None, evidence, ruled, summary, collect, severity, nodes=nodes)
        )
    every_unresolvable = model.everywhere(Kind.CDI_UNRESOLVABLE)
    unresolvable = [s for s in every_unresolvable if _plugin_cdi_device(s)]
    found += _foreign_cdi_devices([s for s in every_unresolvable if s not in unresolvable])
    early = [
        pair for machine in model.sorted_machines() for pair in _created_before_plugin(machine)
    ]
    if (unresolvable or early) and not any(f.code == "TS140" for f in found):
        nodes = [
            m.name
            for m in model.sorted_machines()
            if any(s in unresolvable for s in m.of(Kind.CDI_UNRESOLVABLE))
        ]
        nodes += [name for name, _, _ in early]
        ruled = [
            (
                "TS140",
                "the device plugin runs with " + strategies[0].value
                if strategies
                else "no device-plugin log among the inputs says otherwise",
            )
        ]
        evidence = [s.evidence for s in unresolvable[:3]] + [s.evidence for s in strategies[:1]]
        evidence += [e for _, pod, plugin in early[:3] for e in (pod.evidence, plugin.evidence)]
        summary = [
            f"pod {pod.value} was created at {pod.get('created')}, before {plugin.value} started "
            f"at {plugin.get('started')}"
            for _, pod, plugin in early[:3]
        ]
        found.append(_Finding("TS210", None, evidence, ruled, summary, nodes=nodes))
    return found


# The device names CDI reports unresolvable: "<vendor>/<class>=<name>".
_CDI_DEVICE = re.compile(r"unresolvable CDI devices? (?P<device>[\w.-]+/[\w.-]+=\S+)")
# The device plugin's CDI kinds (its cdi-annotations and cdi-cri strategies, the GPU Operator's
# management kind); a DRA driver's kinds (k8s.gpu.nvidia.com/...) are other generators'.
_PLUGIN_CDI_KINDS = ("nvidia.com/gpu", "management.nvidia.com/gpu")


def _cdi_device(signal: Signal) -> str:
    found = _CDI_DEVICE.search(signal.evidence.text)
    return found["device"].rstrip(":,;\"'") if found else ""


def _plugin_cdi_device(signal: Signal) -> bool:
    """Whether the unresolvable device is one the device plugin hands out (or not named)."""
    device = _cdi_device(signal)
    return not device or device.split("=", 1)[0] in _PLUGIN_CDI_KINDS


def _foreign_cdi_devices(unresolvable: list[Signal]) -> list[_Finding]:
    """TS207: a CDI device of another generator than the device plugin (NVIDIA's DRA driver)
    that containerd cannot resolve. Recreating the pod (TS210) does not help: the generator's
    spec is missing or not where containerd reads specs."""
    if not unresolvable:
        return []
    devices = sorted({_cdi_device(s) for s in unresolvable})
    summary = [
        f"the CDI device {', '.join(devices[:3])} is in no CDI spec containerd read; its kind is "
        "not the device plugin's (nvidia.com/gpu), so the generator of that kind (NVIDIA's DRA "
        "driver for k8s.gpu.nvidia.com) did not write it where containerd looks (/var/run/cdi, "
        "/etc/cdi), or not for this node"
    ]
    collect = [
        "the DRA driver's kubelet-plugin log on the node (`kubectl -n <namespace> logs "
        "<kubelet-plugin pod> --all-containers`): the CDI spec it writes and its driver root "
        "(on Talos the driver is under /usr/local)",
        "talosctl -n <node> ls /var/run/cdi: the specs containerd can resolve",
    ]
    ruled = [("TS210", "the device is not the device plugin's: recreating the pod changes nothing")]
    nodes = sorted({s.node for s in unresolvable if s.node})
    evidence = [s.evidence for s in unresolvable[:3]]
    return [_Finding("TS207", None, evidence, ruled, summary, collect, nodes=nodes)]


_NOT_CREATED = ("CreateContainerError", "CreateContainerConfigError", "RunContainerError")


def _created_before_plugin(machine: Machine) -> list[tuple[str, Signal, Signal]]:
    """GPU pods of the machine that cannot start their containers and were created before the
    machine's device plugin pod started: their devices were decided without CDI."""
    pods = machine.of(Kind.POD)
    plugins = [
        p for p in pods if "nvidia-device-plugin" in p.value and parse_time(p.get("started"))
    ]
    if not plugins:
        return []
    plugin = max(plugins, key=lambda p: parse_time(p.get("started")) or datetime.min)
    started = parse_time(plugin.get("started"))
    early = []
    for pod in pods:
        created = parse_time(pod.get("created"))
        stuck = pod.get("waiting") in _NOT_CREATED
        if pod.get("gpu") and stuck and created and started and created < started:
            early.append((machine.name, pod, plugin))
    return early


def _upgrade_reverted(model: ClusterModel) -> list[_Finding]:
    found = []
    for machine in model.sorted_machines():
        reverted = machine.of(Kind.UPGRADE_REVERTED)
        if reverted:
            held = machine.held_services()
            waits = [s.evidence for s in held.values()]
            summary = _pending(machine, sorted(held))
            found.append(_Finding("TS211", machine, [reverted[0].evidence, *waits], [], summary))
    return found


def _memory(model: ClusterModel) -> list[_Finding]:
    found = []
    for machine in model.sorted_machines():
        used = [
            s
            for s in machine.of(Kind.MEMORY_USED_PERCENT)
            if _float(s.value) >= _HIGH_MEMORY_PERCENT
        ]
        available = [
            s
            for s in machine.of(Kind.MEMORY_AVAILABLE)
            if s.value == "node_memory_MemAvailable_bytes"
        ]
        total = [
            s for s in machine.of(Kind.MEMORY_AVAILABLE) if s.value == "node_memory_MemTotal_bytes"
        ]
        ooms = machine.of(Kind.OOM_KILL)
        if ooms:
            found.append(_Finding("TS221", machine, [s.evidence for s in ooms[:3] + used[:1]]))
            continue
        if not used and not available:
            continue
        low = min((_float(s.get("min")) for s in available), default=None)
        size = max((_float(s.get("max")) for s in total), default=0.0)
        if low is None:
            if used:
                collect = [
                    "node_memory_MemAvailable_bytes over the same window (`triage --commands` "
                    "prints the query URL): high use is page cache while it stays well above zero"
                ]
                found.append(
                    _Finding("TS220", machine, [s.evidence for s in used[:1]], collect=collect)
                )
            continue
        # Available memory that never fell below 5 % of the machine (or 1 GiB, size unknown).
        floor = size * 0.05 if size else float(1 << 30)
        if low < floor:
            found.append(_Finding("TS221", machine, [s.evidence for s in available[:1] + used[:1]]))
        elif used:
            ruled = [
                (
                    "",
                    f"OOM: MemAvailable never fell below {low / (1 << 30):.1f} GiB over the window"
                    + (f" ({low / size:.0%} of {size / (1 << 30):.1f} GiB)" if size else "")
                    + "; no OOM kill among the inputs",
                )
            ]
            evidence = [s.evidence for s in used[:1] + available[:1] + total[:1]]
            found.append(_Finding("TS220", machine, evidence, ruled))
    return found


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _module_not_loaded(model: ClusterModel) -> list[_Finding]:
    """TS204: Talos tried to load an nvidia module and the kernel refused it. A refused key is a
    module built for another kernel; "no such device" is the module's own init finding nothing
    to drive, left to the rules that weigh the hardware (TS101)."""
    found = []
    for machine in model.sorted_machines():
        failed = [
            s
            for s in machine.of(Kind.MODULE_LOAD_FAILED)
            if s.value.startswith("nvidia") and "no such device" not in s.get("reason").lower()
        ]
        if not failed:
            continue
        rejected = machine.of(Kind.MODULE_KEY_REJECTED)
        reason = failed[-1].get("reason")
        summary = [f"Talos cannot load module {failed[-1].value}: {reason}"]
        if "not found" in reason.lower() and not rejected:
            found.append(_module_not_found(machine, failed))
            continue
        if rejected or "key was rejected" in reason:
            summary.append(
                "the kernel refuses the module's signing key: the module was built for another "
                "kernel than the one running (an extension of another Talos release, or a module "
                "built by hand)"
            )
        held = [n for n in NVIDIA_SERVICES if n in machine.waited_services()]
        if held:
            summary.append(f"so {', '.join(held)} waits for a driver that never loads")
        ruled = [
            (
                "TS123",
                "the machine config does load the module: Talos tries and the kernel refuses it "
                f"({failed[0].evidence.where})",
            ),
        ]
        if rejected or "key was rejected" in reason:
            ruled.append(
                (
                    "TS101",
                    "the kernel rejects the module's key before the module looks for a GPU: "
                    "whether the node has one plays no part here",
                )
            )
        collect = [
            f"talosctl -n {machine.name or '<node>'} get extensions and talosctl version: the "
            "NVIDIA extension versions against the running Talos",
        ]
        evidence = [s.evidence for s in rejected[:1] + failed[:2]]
        found.append(_Finding("TS204", machine, evidence, ruled, summary, collect))
    return found


def _module_not_found(machine: Machine, failed: list[Signal]) -> _Finding:
    """Talos asked for an nvidia module the running kernel's module tree does not hold: the
    image carries no NVIDIA kernel-module extension (TS110, when its extensions are shown), or
    one built for another kernel (TS204)."""
    module = failed[-1].value
    extensions = machine.of(Kind.EXTENSION)
    kmods = [s for s in extensions if _is_kernel_module_extension(s.value)]
    evidence = [s.evidence for s in failed[:2]]
    ruled = [
        (
            "TS123",
            f"the machine config does load the module: Talos asks for {module} and finds none "
            f"({failed[0].evidence.where})",
        )
    ]
    held = [n for n in NVIDIA_SERVICES if n in machine.waited_services()]
    waits = [f"so {', '.join(held)} waits for a driver that never loads"] if held else []
    if extensions and not kmods:
        summary = [
            f"Talos cannot load module {module}: module not found; the image's extensions "
            "include no NVIDIA kernel-module extension, so the running kernel has no nvidia "
            "module to load",
            *waits,
        ]
        evidence.append(extensions[0].evidence)
        return _Finding("TS110", machine, evidence, ruled, summary)
    summary = [
        f"Talos cannot load module {module}: module not found, so the running kernel's module "
        "tree has no nvidia module: "
        + (
            f"the image carries {kmods[0].value}, built for another kernel than the one running"
            if kmods
            else "the image carries no NVIDIA kernel-module extension (TS110), or one built for "
            "another kernel than the one running"
        ),
        *waits,
    ]
    evidence += [s.evidence for s in kmods[:1]]
    collect = [
        f"talosctl -n {machine.name or '<node>'} get extensions and talosctl version: no "
        "NVIDIA kernel-module extension means TS110; one whose version names another Talos "
        "than the running one is this",
    ]
    return _Finding("TS204", machine, evidence, ruled, summary, collect)


def _operator_driver_on_talos(model: ClusterModel) -> list[_Finding]:
    """TS141 at runtime: the GPU Operator's driver container tries to install NVIDIA's packages
    for a Talos kernel, or the NVIDIA hook that fails is the one the operator's toolkit
    container installed, where the driver and the toolkit come from the system extensions."""
    found = []
    collect = [
        "the operator's values (`kubectl get clusterpolicy -o yaml`): driver.enabled and "
        "toolkit.enabled must be false",
    ]
    for machine in model.sorted_machines():
        lines = machine.of(Kind.OPERATOR_DRIVER_ON_TALOS)
        hooks = machine.of(Kind.OPERATOR_TOOLKIT_HOOK)
        if lines:
            kernel = re.search(r"-(\d+\.\d+\.\d+-talos)\b", lines[0].evidence.text)
            summary = [
                "the GPU Operator's driver container looks for NVIDIA's driver packages for "
                f"the Talos kernel{' ' + kernel[1] if kernel else ''}, which has none: on Talos "
                "the driver and the toolkit come from the system extensions, so the operator "
                "pods that wait for its driver never start"
            ]
            evidence = [s.evidence for s in lines[:2]]
            found.append(_Finding("TS141", machine, evidence, [], summary, collect))
        elif hooks:
            summary = [
                "the NVIDIA hook that fails is the GPU Operator's (`nvidia-container-cli.real`, "
                "which its toolkit container installs): on Talos the nvidia-container-toolkit "
                "extension provides the `nvidia` runtime and the driver's libraries, and the "
                "operator's toolkit replaces that runtime with its own"
            ]
            evidence = [s.evidence for s in hooks[:2]]
            toolkit_collect = [
                *collect,
                f"talosctl -n {machine.name or '<node>'} get extensions: the nodes' "
                "nvidia-container-toolkit extension is the toolkit to keep",
            ]
            # An error where the node's Talos extensions are shown; else said with what to collect.
            shown = machine.of(Kind.EXTENSION)
            evidence += [s.evidence for s in shown[:1]]
            severity = None if shown else "warning"
            found.append(
                _Finding("TS141", machine, evidence, [], summary, toolkit_collect, severity)
            )
    return found


def _is_toolkit_extension(name: str) -> bool:
    from schematic.facts.nvidia import describe_nvidia_extension

    described = describe_nvidia_extension(name if "/" in name else f"siderolabs/{name}")
    return described is not None and described.family == "container-toolkit"


def _runtime_handler_missing(model: ClusterModel) -> list[_Finding]:
    """TS111 at runtime: a pod asked for the `nvidia` RuntimeClass and the node's containerd
    has no such handler. On Talos the toolkit extension adds it; the node's extension list
    tells whether the toolkit is missing (an error) — without it, the toolkit is the candidate
    (a warning, with what to collect)."""
    found = []
    for machine in model.sorted_machines():
        missing = machine.of(Kind.RUNTIME_HANDLER_MISSING)
        if not missing:
            continue
        node = machine.name or "<node>"
        extensions = machine.extensions()
        toolkit = [n for n in extensions if _is_toolkit_extension(n)]
        evidence = [s.evidence for s in missing[:2]]
        if toolkit:
            # The handler's file comes with the extension: this is not TS111. What else
            # drops it is not among the inputs; say so rather than name a cause.
            continue
        on = f" on {machine.name}" if machine.name else ""
        summary = [
            f"a pod that asked for the nvidia RuntimeClass could not start{on}: the node's "
            "container runtime has no `nvidia` handler, which on Talos the "
            "nvidia-container-toolkit extension adds"
        ]
        if extensions:
            listed = next(iter(extensions.values()))
            summary.append(
                f"the node's extensions ({listed.where}) include no nvidia-container-toolkit"
            )
            evidence.append(listed)
            found.append(_Finding("TS111", machine, evidence, [], summary))
            continue
        collect = [
            f"talosctl -n {node} get extensions: no nvidia-container-toolkit confirms it; with "
            "the toolkit listed, the node runs another image than the pool's",
        ]
        found.append(_Finding("TS111", machine, evidence, [], summary, collect, "warning"))
    return found


# Causes that already explain a device plugin which finds no GPU on the machine.
_PLUGIN_EXPLAINED = frozenset(
    {"TS101", "TS103", "TS104", "TS105", "TS110", "TS111", "TS123", "TS140", "TS141", "TS203"}
    | {"TS112", "TS204", "TS206"}
)


def _registered_after(machine: Machine, failure: Signal) -> bool:
    """Whether the device plugin registered with the kubelet after ``failure``: later in the
    same log, or in another file (which says nothing of order, but shows it can work)."""
    return any(
        s.evidence.file != failure.evidence.file or s.evidence.line > failure.evidence.line
        for s in machine.of(Kind.PLUGIN_REGISTERED)
    )


def _plugin_without_driver(model: ClusterModel, findings: list[_Finding]) -> list[_Finding]:
    """TS205: the device plugin cannot load NVML or finds no device. On a node shown with an
    NVIDIA GPU the GPU is lost to Kubernetes (an error); on a node shown without one the lines
    are normal (nothing); with nothing about the hardware it is said with what to collect."""
    explained = {
        f.machine.name for f in findings if f.machine is not None and f.code in _PLUGIN_EXPLAINED
    }
    explained |= {n for f in findings if f.code in _PLUGIN_EXPLAINED for n in f.nodes or []}
    found = []
    for machine in model.sorted_machines():
        lines = machine.of(Kind.PLUGIN_NO_NVML) + machine.of(Kind.PLUGIN_NO_DEVICES)
        if not lines or machine.name in explained or _no_nvidia(machine) is not None:
            continue
        lines.sort(key=lambda s: (s.evidence.file, s.evidence.line))
        if _registered_after(machine, lines[-1]):
            # The plugin failed, then registered its GPUs (a restart that came right).
            continue
        node = machine.name or "<node>"
        no_nvml = machine.of(Kind.PLUGIN_NO_NVML)
        said = (
            "the device plugin cannot load NVML, the driver's library that the NVIDIA container "
            "runtime puts into its container"
            if no_nvml
            else "the device plugin finds no GPU"
        )
        evidence = [s.evidence for s in lines[:2]]
        ruled: list[tuple[str, str]] = []
        answered = _driver_answered(machine)
        if answered:
            ruled.append(("TS123", f"the driver is loaded ({answered[0].where})"))
        collect = [
            "`kubectl describe pod` of the device plugin pod: `Runtime Class Name: nvidia` "
            "(Talos's nvidia handler, from the toolkit extension) must be set",
            f"talosctl -n {node} get extensions: nvidia-container-toolkit missing means TS111",
        ]
        if not answered:
            collect.append(f"talosctl -n {node} get modules: no nvidia module loaded means TS123")
        shown = _nvidia_shown(machine)
        if shown is not None:
            summary = [f"{said}; {shown[0]}, so the node advertises none of its GPUs"]
            evidence.append(shown[1])
            found.append(_Finding("TS205", machine, evidence, ruled, summary, collect))
            continue
        summary = [
            f"{said}, and nothing among the inputs shows whether the node has an NVIDIA GPU: on a "
            "node without one these lines are normal; on a GPU node no GPU is advertised"
        ]
        collect.insert(
            0,
            f"talosctl -n {node} get pcidevices (or the Node's labels): a vendor 0x10de device "
            "makes this an error",
        )
        found.append(_Finding("TS205", machine, evidence, ruled, summary, collect, "warning"))
    return found


def _driver_unreachable(model: ClusterModel, findings: list[_Finding]) -> list[_Finding]:
    """TS123 as a warning: nvidia-smi or the NVIDIA container runtime says the driver does not
    answer, and nothing else among the inputs says why. On Talos the usual cause is a machine
    config that loads no NVIDIA modules; what to collect tells it from its look-alikes."""
    explained = {
        f.machine.name for f in findings if f.machine is not None and f.code in _PLUGIN_EXPLAINED
    }
    found = []
    for machine in model.sorted_machines():
        lines = machine.of(Kind.NO_DRIVER)
        if not lines or machine.name in explained or _no_nvidia(machine) is not None:
            continue
        loaded = _nvidia_modules(machine)
        if loaded:
            continue  # a loaded module that does not answer: the kernel's lines say why
        node = machine.name or "<node>"
        lines.sort(key=lambda s: (s.evidence.file, s.evidence.line))
        summary = [
            "the NVIDIA driver does not answer (nvidia-smi or the container runtime's hook "
            "asked it), and nothing among the inputs shows the node's modules: on Talos the "
            "usual cause is a machine config that loads no NVIDIA modules, which the extensions "
            "install but never load"
        ]
        collect = [
            f"talosctl -n {node} get modules: no nvidia module loaded makes this an error (TS123)",
            f"talosctl -n {node} get extensions: no NVIDIA kernel-module extension means TS110",
            f"talosctl -n {node} dmesg: NVRM lines say when the module refused the GPU (TS103, "
            "TS104, TS105)",
        ]
        found.append(
            _Finding("TS123", machine, [lines[0].evidence], [], summary, collect, "warning")
        )
    return found


# Xids the device plugin counts as the application's, not the GPU's: it keeps the GPU in
# service (NVIDIA/k8s-device-plugin internal/rm/health.go, listed in its issue #1340).
_APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})
_XID_NUMBER = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9a-fA-F:.]+)\): (?P<xid>\d+)")
_PLUGIN_XID = re.compile(r"Xid=(?P<xid>\d+)")


def _gpus_out_of_service(model: ClusterModel) -> list[_Finding]:
    """TS212: a GPU failed at runtime (a critical Xid, or it fell off the bus) and the device
    plugin took it out of the node's allocatable count, where it stays until the plugin
    restarts. Its look-alike TS205 is a plugin that never registered the GPUs."""
    found = []
    for machine in model.sorted_machines():
        # A GPU that fell off the bus while the driver probed it never came up: TS203 says so.
        probed = bool(machine.of(Kind.RM_INIT_FAILED))
        xids = [
            s
            for s in machine.of(Kind.GPU_XID)
            if (
                (number := _XID_NUMBER.search(s.evidence.text)) is not None
                and int(number["xid"]) not in _APPLICATION_XIDS
            )
            or (number is None and not probed)
        ]
        unhealthy = machine.of(Kind.PLUGIN_GPU_UNHEALTHY)
        short = [
            s
            for s in machine.of(Kind.NODE)
            if s.get("capacity").isdigit()
            and s.get("gpus").isdigit()
            and int(s.get("gpus")) < int(s.get("capacity"))
        ]
        if not (xids or unhealthy or short):
            continue
        summary: list[str] = []
        # None left: the plugin may have stopped too (the kubelet counts every device of a
        # plugin that went away unhealthy until it drops the resource); some left: it runs.
        none_left = bool(short) and all(s.get("gpus") == "0" for s in short)
        if short:
            node = short[0]
            lost = int(node.get("capacity")) - int(node.get("gpus"))
            summary.append(
                f"{lost} of the node's {node.get('capacity')} GPUs "
                f"{'is' if lost == 1 else 'are'} out of service: capacity "
                f"{node.get('capacity')}, allocatable {node.get('gpus')}"
                + (
                    "; with none left, a device plugin that stopped looks the same"
                    if none_left and not (xids or unhealthy)
                    else ""
                )
            )
        numbers = sorted(
            {
                int(found_xid["xid"])
                for s in [*xids, *unhealthy]
                for found_xid in [
                    _XID_NUMBER.search(s.evidence.text) or _PLUGIN_XID.search(s.evidence.text)
                ]
                if found_xid is not None
            }
        )
        fell = any("fallen off the bus" in s.evidence.text for s in xids) or 79 in numbers
        if numbers or fell:
            summary.append(
                "the driver reported "
                + (f"Xid {', '.join(map(str, numbers))}" if numbers else "a GPU")
                + (" (the GPU fell off the bus)" if fell else "")
                + ": a fault of the GPU, its link or its host, not of the application"
            )
        if unhealthy:
            summary.append(
                "the device plugin marked the GPU unhealthy and keeps it so until the plugin "
                "restarts, even once the fault is gone"
            )
        ruled = []
        registered = short or [s for s in machine.of(Kind.PLUGIN_REGISTERED)]
        if registered or unhealthy:
            ruled.append(
                (
                    "TS205",
                    "the device plugin reaches the driver and registered the GPUs "
                    f"({(registered or unhealthy)[0].evidence.where})",
                )
            )
        node_name = machine.name or "<node>"
        collect = [
            f"talosctl -n {node_name} dmesg: the `NVRM: Xid` lines name the GPU and the fault",
        ]
        if not (short or unhealthy):
            collect.append(
                f"kubectl describe node {node_name}: allocatable nvidia.com/gpu below capacity "
                "says the device plugin took the GPU out of service"
            )
        if none_left and not (xids or unhealthy):
            collect.append(
                "the device plugin pod on the node (`kubectl get pods -A -o wide`): not running "
                "makes this its absence, not a failed GPU"
            )
        evidence = [s.evidence for s in [*xids[:2], *unhealthy[:2], *short[:1]]]
        # Fell off the bus, or out of service: the GPU cannot be used. A lone other Xid is
        # said with what to collect.
        failed = fell or unhealthy or (short and not none_left)
        severity = None if failed else "warning"
        found.append(_Finding("TS212", machine, evidence, ruled, summary, collect, severity))
    return found


def _driver_version(extension_version: str) -> str:
    """The driver version of an NVIDIA extension's version ("580.105.08-v1.18.0")."""
    return extension_version.split("-", 1)[0]


def _version_mismatch(model: ClusterModel) -> list[_Finding]:
    """TS112 at runtime: NVML says the kernel module and the user-space library differ. On
    Talos they come from two extensions (modules, toolkit) and differ only when those are of
    different tiers or versions: an error where the extension list shows it, a warning with
    what to collect where there is no list, nothing where the list shows one version."""
    found = []
    for machine in model.sorted_machines():
        mismatch = machine.of(Kind.NVML_VERSION_MISMATCH)
        if not mismatch:
            continue
        node = machine.name or "<node>"
        evidence = [s.evidence for s in mismatch[:2]]
        summary = [
            "NVML finds the loaded nvidia kernel module and the driver's user-space library at "
            "different versions, so nvidia-smi, the device plugin and every GPU container fail"
        ]
        nvidia = {
            s.value: s
            for s in machine.of(Kind.EXTENSION)
            if _is_kernel_module_extension(s.value) or _is_toolkit_extension(s.value)
        }
        versions = {_driver_version(s.get("version")) for s in nvidia.values() if s.get("version")}
        if len(versions) > 1:
            listed = ", ".join(f"{n} {s.get('version')}" for n, s in sorted(nvidia.items()))
            summary.append(f"the node's NVIDIA extensions carry different drivers: {listed}")
            evidence += [s.evidence for _, s in sorted(nvidia.items())][:3]
            found.append(_Finding("TS112", machine, evidence, [], summary))
            continue
        if versions:
            # One driver version in the image: the mismatch is not the extensions'.
            continue
        collect = [
            f"talosctl -n {node} get extensions: the kernel-module and toolkit extensions of "
            "different versions (or tiers) confirm it",
        ]
        found.append(_Finding("TS112", machine, evidence, [], summary, collect, "warning"))
    return found


# How many restarts by Talos's restart runner make a loop rather than a hiccup.
_RESTART_LOOP = 3


def _service_restart_loops(model: ClusterModel, findings: list[_Finding]) -> list[_Finding]:
    """TS209: a Talos service that exits and is restarted again and again. An NVIDIA service
    in that loop leaves the GPUs unusable (an error); another service a warning. Its own log
    names why; machines another NVIDIA finding explains are left to it."""
    explained = {
        f.machine.name
        for f in findings
        if f.machine is not None and f.code in _PLUGIN_EXPLAINED | {"TS155"}
    }
    found = []
    for machine in model.sorted_machines():
        restarts: dict[str, list[Signal]] = defaultdict(list)
        for signal in machine.of(Kind.SERVICE_STATE):
            if signal.get("restart"):
                restarts[signal.value].append(signal)
        for service, lines in sorted(restarts.items()):
            nvidia = service.startswith("ext-nvidia")
            if len(lines) < _RESTART_LOOP or (nvidia and machine.name in explained):
                continue
            node = machine.name or "<node>"
            summary = [
                f"Talos restarted {service} {len(lines)} times: it keeps exiting"
                + (", so the GPUs it serves are not usable" if nvidia else "")
            ]
            collect = [
                f"talosctl -n {node} logs {service}: the service's own lines say why it exits "
                "(a missing library, an invalid configuration)",
            ]
            evidence = [s.evidence for s in lines[:2]]
            severity = None if nvidia else "warning"
            found.append(_Finding("TS209", machine, evidence, [], summary, collect, severity))
    return found


def _operator_validator(model: ClusterModel) -> list[_Finding]:
    """The GPU Operator's validator, retrying its driver check forever: waiting for the
    operator's own driver container is TS141 (on Talos the driver comes from the extensions);
    finding no driver at all, with the operator's driver off, is TS206 — the operator looks
    under hostPaths.driverInstallDir, and Talos puts nvidia-smi under /usr/local."""
    found = []
    for machine in model.sorted_machines():
        retries = machine.of(Kind.VALIDATOR_NO_DRIVER)
        container = machine.of(Kind.VALIDATOR_DRIVER_CONTAINER)
        if not retries:
            # A validator that found the driver (or goes on to the next check) says nothing
            # more; waiting for the operator's own driver is normal off Talos until it retries.
            continue
        node = machine.name or "<node>"
        if container:
            summary = [
                "the GPU Operator's validator waits for the operator's own driver container "
                "and retries: the operator runs its driver, which on Talos cannot be installed "
                "(the driver and toolkit come from the system extensions)"
            ]
            collect = [
                "the operator's values (`kubectl get clusterpolicy -o yaml`): driver.enabled "
                "and toolkit.enabled must be false on Talos",
            ]
            evidence = [s.evidence for s in (container[:1] + retries[:1])]
            found.append(_Finding("TS141", machine, evidence, [], summary, collect, "warning"))
            continue
        summary = [
            f"the GPU Operator's validator found no driver {len(retries)} time"
            f"{'' if len(retries) == 1 else 's'} in a row and retries forever: nvidia-smi is "
            "neither on the host's standard paths nor under hostPaths.driverInstallDir; on "
            "Talos it is /usr/local/bin/nvidia-smi, so the operator needs "
            "hostPaths.driverInstallDir: /usr/local, and every operator pod waits behind the "
            "validator until then"
        ]
        collect = [
            "the operator's values (`kubectl get clusterpolicy -o yaml`): "
            "hostPaths.driverInstallDir must be /usr/local",
            f"talosctl -n {node} get extensions: without nvidia-container-toolkit there is no "
            "nvidia-smi at all (TS111)",
        ]
        ruled = [("TS141", "the validator does not wait for the operator's driver container")]
        # One retry may be a validator that has just started; a loop is certain.
        severity = None if len(retries) > 1 else "warning"
        evidence = [s.evidence for s in retries[:2]]
        found.append(_Finding("TS206", machine, evidence, ruled, summary, collect, severity))
    return found


def _plugin_scheduled_nowhere(model: ClusterModel) -> list[_Finding]:
    """TS208: the device plugin's DaemonSet should run on no node. Its chart (from 0.15.0) and
    the GPU Operator schedule it only on nodes labelled by Node Feature Discovery
    (feature.node.kubernetes.io/pci-10de.present) or nvidia.com/gpu.present=true: without
    those labels no GPU is ever advertised. An error where the inputs show a GPU node; with
    none shown a cluster without GPUs looks the same, so a warning."""
    plugins = [
        s
        for s in model.cluster.get(Kind.DAEMONSET, [])
        if "device-plugin" in s.value and "nvidia" in s.value and s.get("desired") == "0"
    ]
    if not plugins:
        return []
    gpu_nodes = [m for m in model.sorted_machines() if _nvidia_shown(m) is not None]
    names = ", ".join(sorted({s.value for s in plugins})[:3])
    summary = [
        f"the device plugin DaemonSet {names} should run on no node: its node affinity takes "
        "only nodes labelled feature.node.kubernetes.io/pci-10de.present=true (Node Feature "
        "Discovery) or nvidia.com/gpu.present=true, and no node carries them, so no node "
        "advertises nvidia.com/gpu"
    ]
    collect = [
        "`kubectl get nodes -L feature.node.kubernetes.io/pci-10de.present -L "
        "nvidia.com/gpu.present`: the GPU nodes must carry one of them",
    ]
    evidence = [s.evidence for s in plugins[:2]]
    if gpu_nodes:
        shown = _nvidia_shown(gpu_nodes[0])
        assert shown is not None
        summary.append(shown[0])
        evidence.append(shown[1])
        nodes = [m.name for m in gpu_nodes]
        return [_Finding("TS208", None, evidence, [], summary, collect, nodes=nodes)]
    summary.append("nothing among the inputs shows whether the cluster has a GPU node")
    return [_Finding("TS208", None, evidence, [], summary, collect, "warning")]


_RULES: tuple[Callable[[ClusterModel], list[_Finding]], ...] = (
    _operator_driver_on_talos,
    _module_not_loaded,
    _reboots,
    _modules_not_loaded,
    _wrong_flavour,
    _device_plugin,
    _runtime_handler_missing,
    _operator_validator,
    _plugin_scheduled_nowhere,
    _version_mismatch,
    _fabric,
    _upgrade_reverted,
    _memory,
)


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
        """The committed pool a machine belongs to: its pool (or name) is the pool's name, or
        ends in ``-<pool>`` (Cozystack's ``kubernetes-<cluster>-<pool>``); the longest wins."""
        spellings = [machine.pool, *sorted(machine.names)]
        found = []
        for pool in self.pools:
            token = re.compile(rf"(?:^|-){re.escape(pool.name)}(?:-|$)")
            if any(s == pool.name or (s and token.search(s)) for s in spellings):
                found.append(pool)
        return max(found, key=lambda p: len(p.name)) if found else None


def _short_extension(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _against(model: ClusterModel, committed: Committed) -> list[_Finding]:
    """TS130 on runtime evidence: a node that runs another schematic than its pool commits
    boots one extension set and upgrades into another."""
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
            f"{pool.schematic_ids[0]}: booted from one, it upgrades into the other"
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
            _Finding(
                "TS130",
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


def _join(code: str, severity: str, pool: str, findings: list[_Finding]) -> Diagnosis:
    """Findings of one cause in one pool as one diagnosis: every machine named, the first few
    machines' lines quoted, each look-alike with the fact that rules it out."""
    text = rule_text(code)
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
    if len(machines) > 1 and findings[0].machine is not None:
        summary.insert(0, f"{len(machines)} nodes{f' of pool {pool}' if pool else ''} show it")
        if len(findings) > _QUOTED_MACHINES:
            summary.append(f"lines quoted for {_QUOTED_MACHINES} of them")
    collect = list(dict.fromkeys(c for f in findings for c in f.collect))
    addresses = [m for m in machines if is_address(m)]
    if findings[0].machine is not None and not pool and addresses:
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
        pools=(pool,) if findings[0].machine is not None else (),
        schematics=tuple(schematics),
        places=fix_places(code, pool),
    )


def diagnose_model(model: ClusterModel, committed: Committed | None = None) -> list[Diagnosis]:
    """Every diagnosis the model supports, one per cause and pool, errors first; with
    ``committed``, also the nodes that run another schematic than their pool commits."""
    groups: dict[tuple[str, str, str], list[_Finding]] = defaultdict(list)
    findings = [f for rule in _RULES for f in rule(model)]
    findings += _nvidia_waits_not_held(model, findings)
    findings += _plugin_without_driver(model, findings)
    findings += _driver_unreachable(model, findings)
    findings += _gpus_out_of_service(model)
    findings += _service_restart_loops(model, findings)
    if committed is not None:
        findings += _against(model, committed)
    for finding in findings:
        severity = finding.severity or rule_text(finding.code).severity
        pool = finding.machine.pool if finding.machine is not None else ""
        groups[finding.code, severity, pool].append(finding)
    found = [_join(code, sev, pool, items) for (code, sev, pool), items in groups.items()]
    return sorted(found, key=lambda d: (_SEVERITY_ORDER[d.severity], d.code, d.pools, d.nodes))


def diagnose(signals: Iterable[Signal], committed: Committed | None = None) -> list[Diagnosis]:
    """Every diagnosis the signals support (see :func:`diagnose_model`)."""
    return diagnose_model(build_model(signals), committed)
