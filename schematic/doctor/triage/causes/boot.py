"""Causes of a boot that is held or a node that reboots: NVIDIA services waiting for a GPU that is
not there (TS101), apid without its certificates (TS131), another service (TS201), the timer with
no cause in sight (TS202), a rolled-back upgrade (TS211), memory (TS220/TS221)."""

from __future__ import annotations

import re
from collections import defaultdict

from schematic.doctor.triage.causes.shown import (
    NVIDIA_SERVICES,
    Finding,
    Timer,
    boot_timer,
    driver_answered,
    float_of,
    held_and_waited,
    held_service_lines,
    no_nvidia,
    nvidia_shown,
    pending,
    unloaded,
)
from schematic.doctor.triage.model import LONG_PENDING_SECONDS, ClusterModel, Machine
from schematic.doctor.triage.signals import Kind, Signal
from schematic.doctor.triage.values import number

__all__ = [
    "extension_waits_not_held",
    "memory_causes",
    "nvidia_service_restart_loops",
    "nvidia_waits_not_held",
    "other_service_restart_loops",
    "reboots",
    "upgrade_reverted",
]

_HIGH_MEMORY_PERCENT = 90.0


def _csr_failures(machine: Machine) -> list[Signal]:
    return machine.of(Kind.CSR_SIGN_FAILED)


def _apid_long_wait(machine: Machine) -> list[Signal]:
    """apid still waiting for its certificates minutes into a boot (every boot waits seconds)."""
    return [
        s
        for s in machine.of(Kind.APID_WAITING_CERTIFICATES)
        if (number(s.get("uptime")) or 0) >= 600
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


def reboots(model: ClusterModel) -> list[Finding]:
    """TS101, TS131, TS201 and TS202 for every machine whose boot is held or that reboots on
    the timer (TS123/TS110 on a GPU machine are told by :func:`modules_not_loaded`)."""
    found: list[Finding] = []
    with_port, without_port = held_and_waited(model)
    apid_failing: list[str] = []
    for machine in model.sorted_machines():
        held = machine.held_services()
        timer = boot_timer(machine)
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
            summary = [*pending(machine, other_held), *timer.said]
            evidence = [*held_service_lines(machine, other_held), *timer.evidence]
            ruled = [*_ts131_ruled_out(machine, with_port), *memory]
            found.append(Finding("TS201", machine, evidence, ruled, summary))
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
            found.append(Finding("TS202", machine, timer.evidence, memory, timer.said, collect))
    if without_port and not apid_failing:
        looping = [f.machine.name for f in found if f.machine and f.code in ("TS201", "TS202")]
        found.append(
            Finding(
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
    timer: Timer,
    csr: list[Signal],
    with_port: list[Signal],
    without_port: list[Signal],
    memory: list[tuple[str, str]],
) -> Finding:
    """apid never gets its certificates: trustd's port missing (TS131), or — when the Service
    lists port 50001 — another reason, which the CSR error names (often an x509 complaint)."""
    evidence = [s.evidence for s in csr[:1] + csr[-1:]]
    evidence += [s.evidence for s in _apid_long_wait(machine)[:1]]
    evidence += held_service_lines(machine, ["apid"])
    ruled: list[tuple[str, str]] = []
    shown = nvidia_shown(machine)
    if not any(name in machine.held_services() for name in NVIDIA_SERVICES):
        ruled.append(
            ("TS101", "no NVIDIA service is pending; the service that never comes up is apid")
        )
    elif shown is not None:
        ruled.append(("TS101", shown[0]))
    summary = [*pending(machine, ["apid"]), *timer.said]
    if with_port and not without_port:
        reason = _csr_reason(csr)
        ruled.insert(0, ("TS131", f"{with_port[0].evidence.where} lists port 50001 (talos-trustd)"))
        summary.insert(0, "apid never gets its certificates" + (f": {reason}" if reason else ""))
        collect = [
            "the CSR error names why trustd refuses or cannot be reached: compare the worker's "
            "machine CA and trustd token (`talosctl -n <cp> get machineconfig`) with the control "
            "plane's, and the Service's endpoints (`kubectl get endpoints`)",
        ]
        return Finding(
            "TS201", machine, [*evidence, *timer.evidence], [*ruled, *memory], summary, collect
        )
    evidence += [s.evidence for s in without_port]
    collect = []
    if not without_port:
        collect.append(
            "the control-plane Service (`kubectl get svc -n <tenant namespace> -o yaml`): a "
            "Service without port 50001 confirms it; one with it rules it out"
        )
    return Finding(
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
    timer: Timer,
    nvidia_held: list[str],
    with_port: list[Signal],
    memory: list[tuple[str, str]],
) -> Finding | None:
    held_lines = held_service_lines(machine, nvidia_held)
    summary = [*pending(machine, nvidia_held), *timer.said]
    apid_held = "apid" in machine.held_services()
    not_trustd = [] if apid_held else _ts131_ruled_out(machine, with_port)
    absent = no_nvidia(machine)
    shown = nvidia_shown(machine)
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
        return Finding("TS101", machine, evidence, ruled, summary, schematics=schematics)
    if shown is not None:
        # A GPU machine: modules not loaded (TS123/TS110) and the wrong flavour (TS103-TS105)
        # are decided elsewhere; with the module loaded and none of those, say what is known.
        loaded = driver_answered(machine)
        told = any(
            machine.of(kind)
            for kind in (Kind.NVRM_NEEDS_OPEN, Kind.NVRM_NO_GSP, Kind.NVRM_LEGACY, Kind.NO_DRIVER)
        )
        if told or (not loaded and unloaded(machine)):
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
            return Finding("TS201", machine, evidence, [*ruled, *memory], summary, collect)
        summary.append("the node has an NVIDIA GPU and its module is loaded, yet the service waits")
        collect = [
            f"talosctl -n {machine.name or '<node>'} logs {nvidia_held[0]}: why it does not start",
        ]
        evidence = [*held_lines, *timer.evidence, loaded[0]]
        return Finding(
            "TS201", machine, evidence, [*not_trustd, *memory], summary, collect, "warning"
        )
    node = machine.name or "<node>"
    collect = [
        f"talosctl -n {node} get pcidevices -o yaml: no vendor 0x10de device means TS101 "
        "(NVIDIA image on a node without a GPU); a 0x10de device with an empty driver means "
        "TS123 (modules not loaded)",
    ]
    return Finding(
        "TS201",
        machine,
        [*held_lines, *timer.evidence],
        [*not_trustd, *memory],
        summary,
        collect,
    )


def _nvidia_image_without_gpu(
    machine: Machine, timer: Timer, with_port: list[Signal], memory: list[tuple[str, str]]
) -> Finding | None:
    """TS101 without the console: it reboots on the timer, its image carries NVIDIA
    extensions, and its PCI devices hold no NVIDIA one (so their services wait forever)."""
    extensions = machine.extensions()
    nvidia_extensions = sorted(e for e in extensions if "nvidia" in e)
    absent = no_nvidia(machine)
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
    return Finding("TS101", machine, evidence, ruled, summary, collect, schematics=schematics)


def _early(wait: Signal) -> bool:
    """A wait the kernel's uptime places in a boot's first minutes: the ordinary one."""
    uptime = wait.get("uptime")
    return bool(uptime) and float_of(uptime) < LONG_PENDING_SECONDS


def extension_waits_not_held(model: ClusterModel) -> list[Finding]:
    """Another extension's service (``ext-iscsid``, ``ext-lldpd``) shown waiting with nothing to
    say how long: every boot waits for it a few seconds, and one that never comes up holds the
    boot until the timer reboots the node (TS201) — a warning with what to collect, never
    silence."""
    found = []
    for machine in model.sorted_machines():
        waited = {
            name: signal
            for name, signal in machine.waited_services().items()
            if name.startswith("ext-") and not name.startswith("ext-nvidia") and not _early(signal)
        }
        if not waited:
            continue
        names = sorted(waited)
        lines = [waited[n].evidence for n in names]
        node = machine.name or "<node>"
        summary = [
            f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} shown waiting "
            f"({lines[0].where}) and nothing among the inputs says for how long: every boot "
            "waits a few seconds for its extensions' services, and one that never comes up "
            "holds the boot until the 70-minute boot timer reboots the node"
        ]
        collect = [
            f"talosctl -n {node} service {names[0]}: its STATE and events say why it is not up",
            f"talosctl -n {node} logs {names[0]}",
            f"talosctl -n {node} dmesg | grep -E 'startAllServices|boot sequence': still "
            "pending when the boot fails confirms it",
        ]
        found.append(Finding("TS201", machine, lines, [], summary, collect, "warning"))
    return found


def nvidia_waits_not_held(model: ClusterModel) -> list[Finding]:
    """An NVIDIA service shown waiting, with nothing to say how long (one pasted line, a
    `talosctl services` row of minutes ago): on a node without an NVIDIA GPU it never starts
    (TS101, certain); otherwise it is a candidate, said with what to collect — never silence.
    Machines whose driver answered (the wait was the boot's first seconds) are left alone."""
    with_port, _ = held_and_waited(model)
    found = []
    for machine in model.sorted_machines():
        waited = {n: s for n, s in machine.waited_services().items() if n.startswith("ext-nvidia")}
        if not waited or driver_answered(machine):
            continue
        names = sorted(waited)
        lines = [waited[n].evidence for n in names]
        shown_waiting = (
            f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} shown waiting "
            f"({lines[0].where})"
        )
        node = machine.name or "<node>"
        ruled = _ts131_ruled_out(machine, with_port)
        absent = no_nvidia(machine)
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
                Finding(
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
        shown = nvidia_shown(machine)
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
                Finding(
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
        found.append(Finding("TS101", machine, lines, [], summary, collect, "warning"))
    return found


def _memory_ruled_out(machine: Machine) -> list[tuple[str, str]]:
    """Memory as the cause of a reboot, ruled out by what memory shows (if anything does)."""
    if machine.of(Kind.OOM_KILL):
        return []
    available = [
        s for s in machine.of(Kind.MEMORY_AVAILABLE) if s.value == "node_memory_MemAvailable_bytes"
    ]
    if available:
        low = min(float_of(s.get("min")) for s in available)
        return [
            (
                "TS221",
                f"MemAvailable never fell below {low / (1 << 30):.1f} GiB "
                f"({available[0].evidence.where}) and nothing was OOM-killed",
            )
        ]
    return []


def upgrade_reverted(model: ClusterModel) -> list[Finding]:
    found = []
    for machine in model.sorted_machines():
        reverted = machine.of(Kind.UPGRADE_REVERTED)
        if reverted:
            held = machine.held_services()
            waits = [s.evidence for s in held.values()]
            summary = pending(machine, sorted(held))
            found.append(Finding("TS211", machine, [reverted[0].evidence, *waits], [], summary))
    return found


def memory_causes(model: ClusterModel) -> list[Finding]:
    found = []
    for machine in model.sorted_machines():
        used = [
            s
            for s in machine.of(Kind.MEMORY_USED_PERCENT)
            if float_of(s.value) >= _HIGH_MEMORY_PERCENT
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
            found.append(Finding("TS221", machine, [s.evidence for s in ooms[:3] + used[:1]]))
            continue
        if not used and not available:
            continue
        low = min((float_of(s.get("min")) for s in available), default=None)
        size = max((float_of(s.get("max")) for s in total), default=0.0)
        if low is None:
            if used:
                collect = [
                    "node_memory_MemAvailable_bytes over the same window (`triage --commands` "
                    "prints the query URL): high use is page cache while it stays well above zero"
                ]
                found.append(
                    Finding("TS220", machine, [s.evidence for s in used[:1]], collect=collect)
                )
            continue
        # Available memory that never fell below 5 % of the machine (or 1 GiB, size unknown).
        floor = size * 0.05 if size else float(1 << 30)
        if low < floor:
            found.append(Finding("TS221", machine, [s.evidence for s in available[:1] + used[:1]]))
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
            found.append(Finding("TS220", machine, evidence, ruled))
    return found


# How many restarts by Talos's restart runner make a loop rather than a hiccup.
_RESTART_LOOP = 3


def nvidia_service_restart_loops(model: ClusterModel) -> list[Finding]:
    """TS209 as an error: an NVIDIA service in a restart loop leaves the GPUs unusable."""
    return _service_restart_loops(model, nvidia=True)


def other_service_restart_loops(model: ClusterModel) -> list[Finding]:
    """TS209 as a warning: another Talos service in a restart loop."""
    return _service_restart_loops(model, nvidia=False)


def _service_restart_loops(model: ClusterModel, *, nvidia: bool) -> list[Finding]:
    """TS209: a Talos service (NVIDIA's, or the others) that exits and is restarted again and
    again; its own log names why."""
    found = []
    for machine in model.sorted_machines():
        restarts: dict[str, list[Signal]] = defaultdict(list)
        for signal in machine.of(Kind.SERVICE_STATE):
            if signal.get("restart"):
                restarts[signal.value].append(signal)
        for service, lines in sorted(restarts.items()):
            if service.startswith("ext-nvidia") is not nvidia or len(lines) < _RESTART_LOOP:
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
            found.append(Finding("TS209", machine, evidence, [], summary, collect, severity))
    return found
