"""Causes between the driver and the pods: the device plugin and CDI (TS140, TS205, TS207, TS208,
TS210), the container runtime's nvidia handler (TS111), the GPU Operator on Talos (TS141, TS206)."""

from __future__ import annotations

import re
from datetime import datetime

from schematic.doctor.triage.causes.shown import (
    Finding,
    driver_answered,
    is_toolkit_extension,
    no_nvidia,
    nvidia_shown,
)
from schematic.doctor.triage.model import ClusterModel, Machine
from schematic.doctor.triage.signals import Kind, Signal
from schematic.doctor.triage.values import parse_time

__all__ = [
    "device_plugin",
    "host_device_not_permitted",
    "operator_driver_on_talos",
    "operator_validator",
    "plugin_scheduled_nowhere",
    "plugin_without_driver",
    "runtime_handler_missing",
]


def device_plugin(model: ClusterModel) -> list[Finding]:
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
            Finding("TS140", None, evidence, ruled, summary, collect, severity, nodes=nodes)
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
        found.append(Finding("TS210", None, evidence, ruled, summary, nodes=nodes))
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


def _foreign_cdi_devices(unresolvable: list[Signal]) -> list[Finding]:
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
    return [Finding("TS207", None, evidence, ruled, summary, collect, nodes=nodes)]


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


def operator_driver_on_talos(model: ClusterModel) -> list[Finding]:
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
            found.append(Finding("TS141", machine, evidence, [], summary, collect))
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
                Finding("TS141", machine, evidence, [], summary, toolkit_collect, severity)
            )
    return found


def runtime_handler_missing(model: ClusterModel) -> list[Finding]:
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
        toolkit = [n for n in extensions if is_toolkit_extension(n)]
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
            found.append(Finding("TS111", machine, evidence, [], summary))
            continue
        collect = [
            f"talosctl -n {node} get extensions: no nvidia-container-toolkit confirms it; with "
            "the toolkit listed, the node runs another image than the pool's",
        ]
        found.append(Finding("TS111", machine, evidence, [], summary, collect, "warning"))
    return found


def _registered_after(machine: Machine, failure: Signal) -> bool:
    """Whether the device plugin registered with the kubelet after ``failure``: later in the
    same log, or in another file (which says nothing of order, but shows it can work)."""
    return any(
        s.evidence.file != failure.evidence.file or s.evidence.line > failure.evidence.line
        for s in machine.of(Kind.PLUGIN_REGISTERED)
    )


def plugin_without_driver(model: ClusterModel) -> list[Finding]:
    """TS205: the device plugin cannot load NVML or finds no device. On a node shown with an
    NVIDIA GPU the GPU is lost to Kubernetes (an error); on a node shown without one the lines
    are normal (nothing); with nothing about the hardware it is said with what to collect."""
    found = []
    for machine in model.sorted_machines():
        lines = machine.of(Kind.PLUGIN_NO_NVML) + machine.of(Kind.PLUGIN_NO_DEVICES)
        if not lines or no_nvidia(machine) is not None:
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
        answered = driver_answered(machine)
        if answered:
            ruled.append(("TS123", f"the driver is loaded ({answered[0].where})"))
        collect = [
            "`kubectl describe pod` of the device plugin pod: `Runtime Class Name: nvidia` "
            "(Talos's nvidia handler, from the toolkit extension) must be set",
            f"talosctl -n {node} get extensions: nvidia-container-toolkit missing means TS111",
        ]
        if not answered:
            collect.append(f"talosctl -n {node} get modules: no nvidia module loaded means TS123")
        shown = nvidia_shown(machine)
        if shown is not None:
            summary = [f"{said}; {shown[0]}, so the node advertises none of its GPUs"]
            evidence.append(shown[1])
            found.append(Finding("TS205", machine, evidence, ruled, summary, collect))
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
        found.append(Finding("TS205", machine, evidence, ruled, summary, collect, "warning"))
    return found


def operator_validator(model: ClusterModel) -> list[Finding]:
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
            found.append(Finding("TS141", machine, evidence, [], summary, collect, "warning"))
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
        found.append(Finding("TS206", machine, evidence, ruled, summary, collect, severity))
    return found


def plugin_scheduled_nowhere(model: ClusterModel) -> list[Finding]:
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
    gpu_nodes = [m for m in model.sorted_machines() if nvidia_shown(m) is not None]
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
        shown = nvidia_shown(gpu_nodes[0])
        assert shown is not None
        summary.append(shown[0])
        evidence.append(shown[1])
        nodes = [m.name for m in gpu_nodes]
        return [Finding("TS208", None, evidence, [], summary, collect, nodes=nodes)]
    summary.append("nothing among the inputs shows whether the cluster has a GPU node")
    return [Finding("TS208", None, evidence, [], summary, collect, "warning")]


_NOT_PERMITTED = re.compile(r"GPU (?P<resource>\S+) is not permitted")


def host_device_not_permitted(model: ClusterModel) -> list[Finding]:
    """TS143 at run time: KubeVirt refuses a VM because its GPU is not among the cluster's
    permittedHostDevices, so the pool's VMs (the tenant's GPU nodes) never start."""
    found = []
    for machine in model.sorted_machines():
        lines = machine.of(Kind.HOST_DEVICE_NOT_PERMITTED)
        if not lines:
            continue
        named = _NOT_PERMITTED.search(lines[0].evidence.text)
        resource = named["resource"] if named else "the VM's GPU"
        summary = [
            f"KubeVirt refuses the VM: {resource} is not in the management cluster's "
            "permittedHostDevices, so the pool's GPU nodes are never created"
        ]
        collect = [
            "`kubectl get kubevirt -A -o yaml` on the management cluster: "
            "spec.configuration.permittedHostDevices.pciHostDevices must list "
            f"{resource} with the GPU's pciVendorSelector",
        ]
        evidence = [s.evidence for s in lines[:2]]
        found.append(Finding("TS143", machine, evidence, [], summary, collect))
    return found
