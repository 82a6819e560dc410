"""What a machine shows, as the causes read it: its NVIDIA devices and modules, the boot timer,
the services a boot waits for; and a finding, one cause on one machine."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

from schematic.doctor.triage.model import (
    BOOT_TIMEOUT_SECONDS,
    ClusterModel,
    Machine,
)
from schematic.doctor.triage.signals import Evidence, Kind, Signal
from schematic.doctor.triage.values import age_minutes, count, number, parse_time

if TYPE_CHECKING:
    from schematic.facts.nvidia import Gpu

__all__ = [
    "GPU_PATH_EXPLAINED",
    "NVIDIA_SERVICES",
    "Finding",
    "Timer",
    "boot_timer",
    "driver_answered",
    "float_of",
    "gpus_shown",
    "held_and_waited",
    "held_service_lines",
    "is_kernel_module_extension",
    "is_toolkit_extension",
    "kernel_module_flavour",
    "known_gpus",
    "no_nvidia",
    "nvidia_devices",
    "nvidia_modules",
    "nvidia_shown",
    "pending",
    "unloaded",
]

NVIDIA_SERVICES = ("ext-nvidia-persistenced", "ext-nvidia-cdi-gen")
# A cycle ends a little after the boot timer (the failure lines, then 10 s to reboot).
_CYCLE = (BOOT_TIMEOUT_SECONDS - 60, BOOT_TIMEOUT_SECONDS + 300)
# Pods that all restarted together this often (per restart, on average) fit the timer: a
# restart every ~70 minutes plus the time the node takes to boot and the pods to start.
_POD_PERIOD_MINUTES = (55.0, 100.0)


@dataclass
class Finding:
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
    # A failure shown whose cause is Talos's, on a host not shown to run Talos (causes/host.py).
    if_talos: bool = False


# --- what a machine shows --------------------------------------------------------------------


def nvidia_devices(machine: Machine) -> list[Signal]:
    from schematic.facts.nvidia import NVIDIA_VENDOR

    # The vendor as the pcidevices readers write it ("0x10de").
    return [s for s in machine.of(Kind.PCI_DEVICE) if s.value == f"0x{NVIDIA_VENDOR}"]


def gpus_shown(machine: Machine) -> list[Signal]:
    """NVIDIA display functions (class 0x03); the table form has no class code, only names."""
    return [
        s
        for s in nvidia_devices(machine)
        if s.get("class") in ("0x03", "03") or s.get("class_name") == "Display controller"
    ]


def nvidia_shown(machine: Machine) -> tuple[str, Evidence] | None:
    """What shows the machine has an NVIDIA GPU: a vendor 0x10de PCI device, nvidia-smi
    listing one, the Node's feature-discovery labels, or allocatable ``nvidia.com/gpu``."""
    nvidia = nvidia_devices(machine)
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


def no_nvidia(machine: Machine) -> tuple[str, Evidence] | None:
    """What shows the machine has no NVIDIA GPU: its PCI devices without vendor 0x10de, or
    Node Feature Discovery's PCI labels without one (NFD labels display controllers by
    default, the GPU Operator's NFD every NVIDIA device) — unless anything shows a GPU."""
    if nvidia_shown(machine) is not None:
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


def driver_answered(machine: Machine) -> list[Evidence]:
    """Evidence that the NVIDIA driver ran on the machine: a loaded module, a bound driver,
    nvidia-smi listing a GPU, GPU Feature Discovery's NVML labels, allocatable
    ``nvidia.com/gpu``."""
    found = [s.evidence for s in nvidia_modules(machine)]
    found += [s.evidence for s in nvidia_devices(machine) if s.get("driver")]
    found += [s.evidence for s in machine.of(Kind.GPU_LISTED)]
    labelled = machine.labelled_hardware()
    if labelled is not None and labelled.driver_answered:
        found.append(labelled.evidence)
    found += [s.evidence for s in machine.of(Kind.NODE) if s.get("gpus") not in ("", "0")]
    return found


def nvidia_modules(machine: Machine) -> list[Signal]:
    return [s for s in machine.of(Kind.MODULE_LOADED) if s.value.startswith("nvidia")]


@dataclass
class Timer:
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


def boot_timer(machine: Machine) -> Timer:
    timer = Timer()
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
        boots = sorted({n for b in signal.get("boots").split(",") if (n := count(b)) is not None})
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


def _rebooted_events(machine: Machine, timer: Timer) -> None:
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


def _pod_restarts(machine: Machine, timer: Timer) -> None:
    """Every pod of a rebooting machine dies at once: identical restart counts. Once is any
    reboot (an upgrade, a drain); the timer needs restarts about every 70 minutes."""
    pods = [s for s in machine.of(Kind.POD) if (count(s.get("restarts")) or 0) > 0]
    if len(pods) < 3:
        return
    counts = Counter(count(s.get("restarts")) or 0 for s in pods)
    restarts, same = counts.most_common(1)[0]
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


def pending(machine: Machine, names: Iterable[str]) -> list[str]:
    """How long each service has been pending when the boot gave up."""
    held = machine.held_services()
    said = []
    for name in names:
        waits = machine.waits_of(name)
        uptimes = [u for s in waits if (u := number(s.get("uptime"))) is not None]
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


def held_service_lines(machine: Machine, names: Iterable[str]) -> list[Evidence]:
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


def held_and_waited(model: ClusterModel) -> tuple[list[Signal], list[Signal]]:
    services = model.cluster.get(Kind.CONTROL_PLANE_SERVICE, [])
    return [s for s in services if s.get("trustd")], [s for s in services if not s.get("trustd")]


def unloaded(machine: Machine) -> bool:
    """Whether the inputs show the machine's NVIDIA GPU with no module loaded (TS123/TS110)."""
    gpus = gpus_shown(machine) or nvidia_devices(machine)
    unbound = [s for s in gpus if s.get("has_driver_field") and not s.get("driver")]
    no_module = bool(machine.of(Kind.MODULES_LISTED)) and not nvidia_modules(machine)
    if not gpus or not (unbound or no_module or machine.of(Kind.NO_DRIVER)):
        return False
    return not (machine.of(Kind.NVRM_NEEDS_OPEN) or nvidia_modules(machine))


def kernel_module_flavour(name: str) -> str | None:
    """``open`` or ``proprietary`` for an NVIDIA kernel-module extension, else None."""
    from schematic.facts.nvidia import describe_nvidia_extension

    described = describe_nvidia_extension(name if "/" in name else f"siderolabs/{name}")
    return described.flavour if described and described.family == "kernel-modules" else None


def is_kernel_module_extension(name: str) -> bool:
    return kernel_module_flavour(name) is not None


def known_gpus(machine: Machine) -> list[Gpu]:
    """The machine's NVIDIA GPUs the device table knows (PCI IDs, nvidia-smi's names)."""
    from schematic.errors import TalosSchematicError
    from schematic.facts.nvidia import lookup_gpu

    ids = {f"10de:{s.get('product').removeprefix('0x')}" for s in gpus_shown(machine)}
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
        # A pcidevices table names the GPU as pci.ids does ("GA100 [A100 SXM4 80GB]"), the
        # way `gpu` takes a copied lspci line.
        names |= {s.get("product_name") for s in gpus_shown(machine) if s.get("product_name")}
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


def float_of(text: str) -> float:
    """A number a reader took, 0 when there is none."""
    return number(text) or 0.0


def is_toolkit_extension(name: str) -> bool:
    from schematic.facts.nvidia import describe_nvidia_extension

    described = describe_nvidia_extension(name if "/" in name else f"siderolabs/{name}")
    return described is not None and described.family == "container-toolkit"


# Causes that already explain why nothing above the driver reaches the machine's GPU: a device
# plugin that finds none, a driver that does not answer, a GPU service that keeps restarting.
GPU_PATH_EXPLAINED = frozenset(
    {"TS101", "TS103", "TS104", "TS105", "TS110", "TS111", "TS123", "TS140", "TS141", "TS203"}
    | {"TS112", "TS204", "TS206"}
)
