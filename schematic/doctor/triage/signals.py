"""What the readers hand to the diagnoses: normalised signals, each with the line that shows it.

A reader turns one file into :class:`Signal` values; the diagnoses never look at a file again.
A signal names the node as its source wrote it (a name, an address, or nothing for a serial
console); the cluster model (:mod:`schematic.doctor.triage.model`) settles which of those spellings
are one machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Evidence", "Kind", "Signal", "host_os", "pod_text"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """One line of one input: where it is and what it says (cut to a readable length)."""

    file: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


class Kind(Enum):
    """What a signal says. The value is the sentence a person would write for it."""

    # Hashed by identity, each member being one object: Enum's own hash is a Python function,
    # and the diagnoses look a machine's signals up by kind a hundred times a machine.
    __hash__ = object.__hash__

    # Talos boot sequence (console, dmesg, machined logs)
    SERVICE_WAITING = "boot waits for a service"
    BOOT_FAILED = "boot sequence failed"
    BOOT_DONE = "boot sequence finished"
    REBOOTING = "machine reboots"
    UPGRADE_REVERTED = "failed upgrade reverted"
    CSR_SIGN_FAILED = "API certificate signing failed"
    APID_WAITING_CERTIFICATES = "apid waits for its certificates"
    # talosctl resources
    PCI_DEVICE = "PCI device"
    SERVICE_STATE = "Talos service state"
    EXTENSION = "system extension"
    MODULE_LOADED = "kernel module loaded"
    MODULES_LISTED = "kernel modules listed"
    MODULE_LOAD_FAILED = "kernel module failed to load"  # value: module; data reason
    MODULE_KEY_REJECTED = "kernel refused a module's signing key"
    MACHINE_STAGE = "machine stage"
    MACHINE_CONFIG = "machine config"  # data modules (csv), image
    # kernel and NVIDIA tools
    NVRM_NEEDS_OPEN = "driver wants the open kernel modules"
    NVRM_NO_GSP = "GPU has no GSP for the open modules"
    NVRM_LEGACY = "GPU dropped by this driver branch"
    RM_INIT_FAILED = "RmInitAdapter failed"
    NVRM_OPEN_UNSUPPORTED = "open modules refuse a GPU that is not a data-centre one"
    NVRM_RELEASE_UNSUPPORTED = "this driver release does not support the GPU"
    NO_DEVICES = "nvidia-smi found no devices"
    NO_DRIVER = "nvidia-smi cannot reach the driver"
    NO_GPU_FOUND = "no NVIDIA GPU found"
    FABRIC_IB_UMAD = "fabric manager asks for ib_umad"
    FABRIC_NOTHING_TO_DO = "fabric manager: NV_WARN_NOTHING_TO_DO"
    FABRIC_IN_PROGRESS = "fabric state In Progress"
    FABRIC_STATE = "GPU fabric state"  # value: Completed, In Progress, N/A, ...; data status
    FABRIC_FAILED = "fabric manager failed"
    FABRIC_SWITCH_FOUND = "fabric manager found the NVSwitch management port"
    FABRIC_CONFIGURED = "fabric manager configured the NVSwitches"
    GPU_LISTED = "GPU listed by nvidia-smi"
    CUDA_NOT_READY = "CUDA error 802 (system not ready)"
    CDI_UNRESOLVABLE = "unresolvable CDI devices"
    PLUGIN_STRATEGY = "device plugin list strategy"
    PLUGIN_ENV = "device plugin environment"
    PLUGIN_NO_DEVICES = "device plugin found no devices"
    PLUGIN_NO_NVML = "device plugin cannot load NVML (runtime not configured)"
    NVML_VERSION_MISMATCH = "driver and user-space library of different versions"
    PLUGIN_REGISTERED = "device plugin registered its GPUs with the kubelet"
    RUNTIME_HANDLER_MISSING = "the container runtime has no nvidia handler"
    OPERATOR_DRIVER_ON_TALOS = "the GPU Operator's driver container installs a driver on Talos"
    OPERATOR_TOOLKIT_HOOK = "the NVIDIA hook that failed is the GPU Operator toolkit's"
    GPU_XID = "the driver reported an Xid error"  # the kernel's NVRM line
    HOST_DEVICE_NOT_PERMITTED = "KubeVirt refuses a VM's GPU as not permitted"
    PLUGIN_GPU_UNHEALTHY = "the device plugin marked a GPU unhealthy"
    VALIDATOR_NO_DRIVER = "the GPU Operator's validator finds no driver (retrying)"
    VALIDATOR_DRIVER_CONTAINER = "the GPU Operator's validator waits for its driver container"
    OOM_KILL = "OOM kill"
    HEALTH_CHECK = "a talosctl health check and how it ended"  # data result, passed
    # value: where it comes from (nvidia-driver, container-toolkit, fabric-manager, talos)
    UNKNOWN_FAILURE = "an NVIDIA or Talos error line no known message matches"
    # Kubernetes objects
    NODE = "Kubernetes node"
    HOST_OS = "the host's operating system"  # value: the Node's osImage; data kernel
    IDENTITY = "names of one node"  # value: the node; data aliases: its other names
    POD = "pod"
    DAEMONSET = "DaemonSet"  # value: [namespace/]name; data desired, current, ready
    EVENT = "event"
    CONTROL_PLANE_SERVICE = "control-plane Service"
    # metrics
    MEMORY_AVAILABLE = "available memory over the window"
    MEMORY_USED_PERCENT = "memory use as kubectl top shows it"
    BOOT_TIME = "node boot times"
    # a value no reader could hold (value: what it was; evidence: where); reported, not judged
    UNREADABLE_VALUE = "unreadable value"
    # A Kubernetes list with no items (`kubectl get events -o json` of a quiet cluster): read,
    # and showing that nothing of its kind is there; no cause reads it.
    EMPTY_LIST = "a Kubernetes list with no items"


@dataclass(frozen=True, slots=True)
class Signal:
    """One normalised fact about one node, with its proof.

    ``node`` is the node as the source names it ("" when the source does not, e.g. a serial
    console); ``value`` is the fact's subject (a service name, a vendor ID, a strategy) and
    ``data`` any numbers or further fields the rule needs.
    """

    kind: Kind
    node: str
    evidence: Evidence
    value: str = ""
    data: tuple[tuple[str, str], ...] = ()

    def get(self, key: str, default: str = "") -> str:
        for name, item in self.data:
            if name == key:
                return item
        return default


def pod_text(pod: str, node: str, restarts: int, exit_code: str, reason: str) -> str:
    """How a pod's evidence line reads, whichever output showed the pod."""
    text = f"pod {pod} on {node or '?'}: restartCount {restarts}"
    if exit_code:
        text += f", last terminated exitCode {exit_code} {reason}".rstrip()
    return text


def host_os(node: str, evidence: Evidence, os_image: str, kernel: str) -> Signal:
    """What a Node says its host runs (``status.nodeInfo.osImage``, ``kernelVersion``: "Talos
    (v1.11.5)", "6.12.57-talos"), whichever output showed the Node."""
    return Signal(Kind.HOST_OS, node, evidence, os_image.strip(), (("kernel", kernel.strip()),))
