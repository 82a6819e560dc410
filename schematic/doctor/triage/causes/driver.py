"""Causes in the NVIDIA driver: modules not loaded or not found (TS110, TS123, TS204), the wrong
flavour or branch (TS103-TS105), a GPU the driver could not bring up (TS203) or took out of
service (TS212), a driver and library of different versions (TS112), the fabric (TS155)."""

from __future__ import annotations

import re

from schematic.doctor.triage.causes.shown import (
    NVIDIA_SERVICES,
    Finding,
    boot_timer,
    gpus_shown,
    held_service_lines,
    is_kernel_module_extension,
    is_toolkit_extension,
    kernel_module_flavour,
    known_gpus,
    no_nvidia,
    nvidia_devices,
    nvidia_modules,
    pending,
    unloaded,
)
from schematic.doctor.triage.model import ClusterModel, Machine
from schematic.doctor.triage.signals import Kind, Signal
from schematic.doctor.triage.values import count

__all__ = [
    "driver_unreachable",
    "fabric_causes",
    "gpus_out_of_service",
    "module_not_loaded",
    "modules_not_loaded",
    "version_mismatch",
    "wrong_flavour",
]


def modules_not_loaded(model: ClusterModel) -> list[Finding]:
    found = []
    for machine in model.sorted_machines():
        if not unloaded(machine):
            continue
        if any(s.value.startswith("nvidia") for s in machine.of(Kind.MODULE_LOAD_FAILED)):
            continue  # Talos tried to load it: module_not_loaded says why it could not
        gpus = gpus_shown(machine) or nvidia_devices(machine)
        unbound = [s for s in gpus if s.get("has_driver_field") and not s.get("driver")]
        listed = machine.of(Kind.MODULES_LISTED)
        no_module = bool(listed) and not nvidia_modules(machine)
        no_driver = machine.of(Kind.NO_DRIVER)
        timer = boot_timer(machine)
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
        summary = [*pending(machine, held), *timer.said]
        # The image's extensions tell the two causes apart: no kernel-module extension at all
        # (TS110), or modules installed that the machine config never loads (TS123).
        extensions = machine.of(Kind.EXTENSION)
        kmods = [s for s in extensions if is_kernel_module_extension(s.value)]
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
            found.append(Finding(code, machine, evidence, ruled, summary, collect))
            continue
        evidence += [*held_service_lines(machine, held), *timer.evidence]
        found.append(Finding(code, machine, evidence, ruled, summary))
    return found


def wrong_flavour(model: ClusterModel) -> list[Finding]:
    """TS103 (open-only GPU on the proprietary modules), TS104 and TS105 (pre-Turing)."""
    found: list[Finding] = []
    for machine in model.sorted_machines():
        before = len(found)
        needs_open = machine.of(Kind.NVRM_NEEDS_OPEN)
        no_gsp = machine.of(Kind.NVRM_NO_GSP)
        legacy = machine.of(Kind.NVRM_LEGACY)
        no_devices = machine.of(Kind.NO_DEVICES) + machine.of(Kind.RM_INIT_FAILED)
        # The extension names the flavour; `(PO)` in /proc/modules says it again.
        proprietary = [
            s for s in machine.of(Kind.EXTENSION) if kernel_module_flavour(s.value) == "proprietary"
        ] + [s for s in nvidia_modules(machine) if "P" in s.get("taint")]
        known = known_gpus(machine)
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
            found.append(Finding("TS103", machine, evidence, ruled, summary))
        if no_gsp:
            evidence = [s.evidence for s in no_gsp[:2] + no_devices[:2]]
            ruled = [("TS103", "the GPU lacks a GSP, so it is older than Turing, not open-only")]
            found.append(Finding("TS104", machine, evidence, ruled))
        if legacy:
            gone = machine.of(Kind.NO_GPU_FOUND)
            evidence = [s.evidence for s in legacy[:2] + gone[:2] + no_devices[:1]]
            ruled = [("TS104", "the module loads and ignores the GPU; no GSP complaint")]
            found.append(Finding("TS105", machine, evidence, ruled))
        if len(found) == before:
            found += _gpu_not_initialised(machine)
    return found


def _gpu_not_initialised(machine: Machine) -> list[Finding]:
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
    return [Finding("TS203", machine, evidence, ruled, summary, collect)]


# B100/B200/B300 SXM modules sit on NVLink-5 HGX baseboards; H100/H200/H800/H20 (NVLink 4) and
# A100/A800 (NVLink 3) keep their NVSwitches as PCI functions and need no NVLSM.
_NVLINK5_NAME = re.compile(r"\bB[123]00\b")
_OLDER_FABRIC_NAME = re.compile(r"\b(?:H100|H200|H800|H20|A100|A800|A30)\b")


def _fabric_generation(machine: Machine) -> tuple[bool | None, str]:
    """Whether the machine's GPUs are NVLink-5 HGX modules (None: not known), and why."""
    for gpu in known_gpus(machine):
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
    known = known_gpus(machine)
    if known:
        return False, known[0].label
    for name in names:
        if _OLDER_FABRIC_NAME.search(name):
            return False, name
    return None, ""


def fabric_causes(model: ClusterModel) -> list[Finding]:
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
        found.append(Finding("TS155", machine, evidence, ruled, summary, collect, severity))
    return found


def module_not_loaded(model: ClusterModel) -> list[Finding]:
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
        found.append(Finding("TS204", machine, evidence, ruled, summary, collect))
    return found


def _module_not_found(machine: Machine, failed: list[Signal]) -> Finding:
    """Talos asked for an nvidia module the running kernel's module tree does not hold: the
    image carries no NVIDIA kernel-module extension (TS110, when its extensions are shown), or
    one built for another kernel (TS204)."""
    module = failed[-1].value
    extensions = machine.of(Kind.EXTENSION)
    kmods = [s for s in extensions if is_kernel_module_extension(s.value)]
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
        return Finding("TS110", machine, evidence, ruled, summary)
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
    return Finding("TS204", machine, evidence, ruled, summary, collect)


def driver_unreachable(model: ClusterModel) -> list[Finding]:
    """TS123 as a warning: nvidia-smi or the NVIDIA container runtime says the driver does not
    answer, and nothing else among the inputs says why. On Talos the usual cause is a machine
    config that loads no NVIDIA modules; what to collect tells it from its look-alikes."""
    found = []
    for machine in model.sorted_machines():
        lines = machine.of(Kind.NO_DRIVER)
        if not lines or no_nvidia(machine) is not None:
            continue
        loaded = nvidia_modules(machine)
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
            Finding("TS123", machine, [lines[0].evidence], [], summary, collect, "warning")
        )
    return found


# Xids the device plugin counts as the application's, not the GPU's: it keeps the GPU in
# service (NVIDIA/k8s-device-plugin internal/rm/health.go, listed in its issue #1340).
_APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})
_XID_NUMBER = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9a-fA-F:.]+)\): (?P<xid>\d+)")
_PLUGIN_XID = re.compile(r"Xid=(?P<xid>\d+)")


def _xid(text: str) -> int | None:
    """The Xid a kernel line (``NVRM: Xid (PCI:...): 79``) or the device plugin's
    (``Xid=94``) names; None for a line without one."""
    found = _XID_NUMBER.search(text) or _PLUGIN_XID.search(text)
    return count(found["xid"]) if found else None


def gpus_out_of_service(model: ClusterModel) -> list[Finding]:
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
            if (xid := _xid(s.evidence.text)) not in _APPLICATION_XIDS
            and (xid is not None or not probed)
        ]
        unhealthy = machine.of(Kind.PLUGIN_GPU_UNHEALTHY)
        short = [
            s
            for s in machine.of(Kind.NODE)
            if (gpus := count(s.get("gpus"))) is not None
            and (capacity := count(s.get("capacity"))) is not None
            and gpus < capacity
        ]
        if not (xids or unhealthy or short):
            continue
        summary: list[str] = []
        # None left: the plugin may have stopped too (the kubelet counts every device of a
        # plugin that went away unhealthy until it drops the resource); some left: it runs.
        none_left = bool(short) and all(s.get("gpus") == "0" for s in short)
        if short:
            node = short[0]
            lost = (count(node.get("capacity")) or 0) - (count(node.get("gpus")) or 0)
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
            {xid for s in [*xids, *unhealthy] if (xid := _xid(s.evidence.text)) is not None}
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
        registered = short or machine.of(Kind.PLUGIN_REGISTERED)
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
        found.append(Finding("TS212", machine, evidence, ruled, summary, collect, severity))
    return found


def _driver_version(extension_version: str) -> str:
    """The driver version of an NVIDIA extension's version ("580.105.08-v1.18.0")."""
    return extension_version.split("-", 1)[0]


def version_mismatch(model: ClusterModel) -> list[Finding]:
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
            if is_kernel_module_extension(s.value) or is_toolkit_extension(s.value)
        }
        versions = {_driver_version(s.get("version")) for s in nvidia.values() if s.get("version")}
        if len(versions) > 1:
            listed = ", ".join(f"{n} {s.get('version')}" for n, s in sorted(nvidia.items()))
            summary.append(f"the node's NVIDIA extensions carry different drivers: {listed}")
            evidence += [s.evidence for _, s in sorted(nvidia.items())][:3]
            found.append(Finding("TS112", machine, evidence, [], summary))
            continue
        if versions:
            # One driver version in the image: the mismatch is not the extensions'.
            continue
        collect = [
            f"talosctl -n {node} get extensions: the kernel-module and toolkit extensions of "
            "different versions (or tiers) confirm it",
        ]
        found.append(Finding("TS112", machine, evidence, [], summary, collect, "warning"))
    return found
