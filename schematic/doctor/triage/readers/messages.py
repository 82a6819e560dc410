"""The messages Talos, the kernel and NVIDIA's tools print, and what each one means.

Used for log lines and for the messages of Kubernetes events alike (a containerd error about
unresolvable CDI devices reaches the user as an event). Each pattern's source is cited in
schematic/data/SOURCES.md.
"""

from __future__ import annotations

import re

from schematic.doctor.triage.signals import Kind

__all__ = [
    "FAILURE_WORDS",
    "KEYWORDS",
    "LONGEST_MESSAGE",
    "SCHEDULED",
    "failing_operand",
    "message_kinds",
    "unknown_failure",
]

# The scheduler's event (pkg/scheduler/schedule_one.go): "Successfully assigned %v/%v to %v",
# the one event that names a pod's node.
SCHEDULED = re.compile(r"Successfully assigned (?P<pod>\S+) to (?P<node>\S+)")

# Which messages mean what; a message means at most one thing, the first that matches.
_MESSAGES: tuple[tuple[re.Pattern[str], Kind], ...] = (
    (re.compile(r"task startAllServices \(\d+/\d+\): failed"), Kind.BOOT_FAILED),
    (re.compile(r"phase startEverything \(\d+/\d+\): failed"), Kind.BOOT_FAILED),
    (re.compile(r"\bboot sequence: failed"), Kind.BOOT_FAILED),
    # the error machined logs with it (v1alpha1_controller.go: "error running phase %d in %s
    # sequence: %w"), quoted alone in https://github.com/siderolabs/talos/issues/14373
    (re.compile(r"error running phase \d+ in boot sequence"), Kind.BOOT_FAILED),
    # v1alpha1_controller.go: "task %s (%s): done, %s", "%s sequence: done: %s".
    (
        re.compile(r"task startAllServices \(\d+/\d+\): done|\bboot sequence: done"),
        Kind.BOOT_DONE,
    ),
    (re.compile(r"\brebooting in \d+ seconds"), Kind.REBOOTING),
    (re.compile(r"reverting failed upgrade"), Kind.UPGRADE_REVERTED),
    (re.compile(r"failed to sign API server CSR"), Kind.CSR_SIGN_FAILED),
    (
        re.compile(r"service\[apid\]\(Waiting\): Waiting for .{0,300}api certificates"),
        Kind.APID_WAITING_CERTIFICATES,
    ),
    (re.compile(r"requires use of the NVIDIA open kernel modules"), Kind.NVRM_NEEDS_OPEN),
    (
        re.compile(r"does not include the required GPU\W+(?:NVRM: )?System Processor"),
        Kind.NVRM_NO_GSP,
    ),
    (re.compile(r"supported through the NVIDIA \d+\.xx Legacy drivers"), Kind.NVRM_LEGACY),
    # The kernel's module-signature check (kernel/module/signing.c), quoted with Talos's
    # failed load in https://github.com/siderolabs/talos/issues/7043 and #7174.
    (re.compile(r"Loading of module with unavailable key is rejected"), Kind.MODULE_KEY_REJECTED),
    # nv.c's probe refusal and summary, quoted in siderolabs/extensions#227 (talosctl dmesg).
    (
        re.compile(r"installed in this system is not\W+(?:NVRM: )?supported by the"),
        Kind.NVRM_RELEASE_UNSUPPORTED,
    ),
    (
        re.compile(
            r"RmInitAdapter failed|rm_init_adapter failed|RmInitAdapter: Cannot initial"
            r"|NVIDIA probe routine failed"
        ),
        Kind.RM_INIT_FAILED,
    ),
    # The open modules of the 515-55x branches (kernel-open/nvidia/nv.c), quoted in
    # https://github.com/siderolabs/talos/issues/6206 and siderolabs/extensions#114.
    (
        re.compile(r"Open nvidia\.ko is only ready for use on Data Center GPUs"),
        Kind.NVRM_OPEN_UNSUPPORTED,
    ),
    # The driver's Xid report (`NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus`,
    # quoted in NVIDIA/NVSentinel#155) and the same fall without an Xid (the probe's "has
    # fallen off the bus and is not responding to commands", ibid.).
    (
        re.compile(r"NVRM: Xid \(PCI:[0-9a-fA-F:.]+\): \d+|has\W+(?:NVRM: )?fallen off the bus"),
        Kind.GPU_XID,
    ),
    # The device plugin's health check (internal/rm/health.go): a critical Xid takes the GPU out
    # of the node's allocatable count for good (quoted in NVIDIA/k8s-device-plugin#189 and
    # akash-network/support#244).
    (
        re.compile(
            r"device marked unhealthy|XidCriticalError: Xid=\d+ on Device=\S+[;,] "
            r"(?:marking device as unhealthy|the device will go unhealthy)"
        ),
        Kind.PLUGIN_GPU_UNHEALTHY,
    ),
    # KubeVirt's admission of a VM whose GPU the cluster's permittedHostDevices does not list
    # ("GPU %s is not permitted in permittedHostDevices configuration", quoted in
    # kubevirt/hyperconverged-cluster-operator#1227; older releases name their ConfigMap,
    # kubevirt/kubevirt#4950).
    (
        re.compile(
            r"is not permitted in (?:permittedHostDevices configuration"
            r"|kubevirt-host-device-plugin-config)"
        ),
        Kind.HOST_DEVICE_NOT_PERMITTED,
    ),
    # The GPU Operator's toolkit container installs nvidia-container-cli as a wrapper around
    # nvidia-container-cli.real (its /usr/local/nvidia/toolkit, listed in
    # NVIDIA/gpu-operator#487); the hook's errors then name the .real binary (#511). Talos's
    # toolkit extension has no such wrapper. Before the NVML errors: whatever the hook
    # says, the hook is the operator's.
    (re.compile(r"nvidia-container-cli\.real: \w+ error"), Kind.OPERATOR_TOOLKIT_HOOK),
    # NVML's NVML_ERROR_LIB_RM_VERSION_MISMATCH as nvidia-smi and nvidia-container-cli print it
    # (quoted in tinygrad/open-gpu-kernel-modules#47, NVIDIA/nvidia-container-toolkit#394), and
    # the kernel's side of it (NVRM: API mismatch): before "Failed to initialize NVML" below.
    (
        re.compile(r"[Dd]river/library version mismatch|NVRM: API mismatch"),
        Kind.NVML_VERSION_MISMATCH,
    ),
    # The device plugin's own "No devices found. Waiting indefinitely." is not nvidia-smi's.
    (re.compile(r"^No devices found\. Waiting indefinitely"), Kind.PLUGIN_NO_DEVICES),
    (re.compile(r"^No devices (?:were )?found\b"), Kind.NO_DEVICES),
    # nvidia-smi's words for NVML_ERROR_DRIVER_NOT_LOADED, the NVIDIA container runtime's hook's
    # (quoted in NVIDIA/nvidia-container-toolkit#1269 and NVIDIA/nvidia-docker#1629) and
    # nvidia-ctk's, which Talos's ext-nvidia-cdi-gen runs ("failed to initialize NVML: Driver
    # Not Loaded", #1611): the kernel driver does not answer. Before the device plugin's
    # "Failed to initialize NVML", which says less.
    (
        re.compile(
            r"couldn't communicate with the NVIDIA driver|nvml error: driver not loaded"
            r"|NVML: Driver Not Loaded"
        ),
        Kind.NO_DRIVER,
    ),
    # The device plugin cannot see NVML: the container runtime does not hand it the driver
    # (k8s-device-plugin internal/rm and factory.go messages).
    (
        re.compile(
            r"Incompatible strategy detected|could not load NVML library|Failed to initialize NVML"
            # the plugin's resource manager from 0.16 (quoted in NVIDIA/k8s-device-plugin#856)
            r"|nvml init failed: ERROR_LIBRARY_NOT_FOUND"
        ),
        Kind.PLUGIN_NO_NVML,
    ),
    # The plugin's server.go once the kubelet took its resource (quoted in
    # bottlerocket-os/bottlerocket#4250): the plugin works from then on.
    (re.compile(r"Registered device plugin for '?nvidia\.com/"), Kind.PLUGIN_REGISTERED),
    # containerd's CRI ("no runtime for %q is configured", quoted in NVIDIA/gpu-operator#730
    # and #413) and CRI-O ("failed to find runtime handler %s from runtime list", #1298): a pod
    # asked for the `nvidia` RuntimeClass and the node's runtime has no such handler. On Talos
    # the nvidia-container-toolkit extension adds it (/etc/cri/conf.d).
    (
        re.compile(
            r"no runtime for [\"“”]?nvidia[\"“”]? is configured"
            r"|failed to find runtime handler [\"“”]?nvidia\b"
        ),
        Kind.RUNTIME_HANDLER_MISSING,
    ),
    # The GPU Operator's driver container looks for its packages for the running kernel; a
    # Talos kernel ("6.1.51-talos") has none (https://github.com/siderolabs/talos/issues/8402).
    (
        re.compile(r"Unable to locate package linux-[\w.+-]*nvidia[\w.+-]*-talos\b"),
        Kind.OPERATOR_DRIVER_ON_TALOS,
    ),
    # The GPU Operator's validator (cmd/nvidia-validator/main.go): no nvidia-smi on the host's
    # standard paths nor under hostPaths.driverInstallDir, retried forever (quoted on Talos in
    # NVIDIA/gpu-operator#1687); and its wait for the operator's own driver container.
    (re.compile(r"failed to validate the driver, retrying"), Kind.VALIDATOR_NO_DRIVER),
    (
        re.compile(
            r"Driver is not pre-installed on the host(?: and is managed by GPU Operator)?\. "
            r"Checking driver container status"
        ),
        Kind.VALIDATOR_DRIVER_CONTAINER,
    ),
    # Older drivers say "No NVIDIA graphics adapter found!" (quoted in ValveSoftware/SteamOS#209).
    (re.compile(r"No NVIDIA GPU found|No NVIDIA graphics adapter found"), Kind.NO_GPU_FOUND),
    (
        re.compile(r"please load kernel module 'ib_umad'|is ib_umad module loaded"),
        Kind.FABRIC_IB_UMAD,
    ),
    (re.compile(r"NV_WARN_NOTHING_TO_DO"), Kind.FABRIC_NOTHING_TO_DO),
    # The Talos wrapper found an InfiniBand NVSwitch port: ib_umad is loaded and working.
    (re.compile(r"using NVSwitch management port GUID"), Kind.FABRIC_SWITCH_FOUND),
    # The fabric manager's own report that the fabric is up (printf in its startup).
    (
        re.compile(r"Successfully configured all the available (?:GPUs and )?NVSwitches"),
        Kind.FABRIC_CONFIGURED,
    ),
    # The Talos wrapper (nvidia-fabricmanager-wrapper/main.go, runCommand), NVIDIA's start
    # script, and systemd: the fabric manager itself stopped with an error.
    (
        re.compile(
            r"command \S*nv-fabricmanager \[\d+\] (?:exited with code [1-9]|was terminated)"
            r"|nv-fabricmanager[^\"]{0,300}\" failed! Exit code: [1-9]"
            r"|nvidia-fabricmanager\.service: (?:Main|Control) process exited, code=exited"
        ),
        Kind.FABRIC_FAILED,
    ),
    (re.compile(r"^\s*State\s*:\s*In Progress\s*$"), Kind.FABRIC_IN_PROGRESS),
    (
        re.compile(r"CUDA_ERROR_SYSTEM_NOT_READY|cudaErrorSystemNotReady|CUDA error:? 802\b"),
        Kind.CUDA_NOT_READY,
    ),
    (re.compile(r"unresolvable CDI devices"), Kind.CDI_UNRESOLVABLE),
    (
        re.compile(r"Sending SIGKILL to cgroup|\bOOMKilled\b|Out of memory: Killed process"),
        Kind.OOM_KILL,
    ),
)


# The words each pattern above needs, in the same order: most lines of a log hold none, and a
# substring test rules a pattern out faster than the pattern would (a test holds every pattern
# to its words).
_WORDS: tuple[tuple[str, ...], ...] = (
    ("startAllServices",),
    ("startEverything",),
    ("boot sequence",),
    ("boot sequence",),
    ("startAllServices", "boot sequence"),
    ("rebooting in",),
    ("reverting failed upgrade",),
    ("API server CSR",),
    ("api certificates",),
    ("NVIDIA open",),
    ("System Processor",),
    ("Legacy drivers",),
    ("unavailable key",),
    ("installed in this system",),
    ("RmInitAdapter", "rm_init_adapter", "probe routine failed"),
    ("Data Center GPUs",),
    ("NVRM: Xid", "fallen off the bus"),
    ("marked unhealthy", "XidCriticalError"),
    ("is not permitted in",),
    ("nvidia-container-cli.real",),
    ("version mismatch", "API mismatch"),
    ("No devices",),
    ("No devices",),
    ("NVIDIA driver", "driver not loaded", "Driver Not Loaded"),
    ("Incompatible strategy", "NVML", "ERROR_LIBRARY_NOT_FOUND"),
    ("Registered device plugin",),
    ("no runtime for", "runtime handler"),
    ("Unable to locate package",),
    ("validate the driver",),
    ("not pre-installed on the host",),
    ("No NVIDIA GPU", "No NVIDIA graphics adapter"),
    ("ib_umad",),
    ("NV_WARN",),
    ("NVSwitch management port",),
    ("Successfully configured",),
    ("fabricmanager",),
    ("In Progress",),
    ("CUDA", "cudaError"),
    ("unresolvable CDI",),
    ("SIGKILL to cgroup", "OOMKilled", "Out of memory"),
)
KEYWORDS = tuple(dict.fromkeys(word for words in _WORDS for word in words))
_ANY_WORD = re.compile("|".join(re.escape(word) for word in KEYWORDS))
# For each word, the patterns that need it (their places in _MESSAGES).
_NEEDING: dict[str, tuple[int, ...]] = {
    word: tuple(
        index
        for index, (words, _) in enumerate(zip(_WORDS, _MESSAGES, strict=True))
        if word in words
    )
    for word in KEYWORDS
}


# No message a tool prints is longer; past it, patterns that search a long run for what follows
# it could take quadratic time on hostile text. (Runs inside the patterns are bounded too.)
LONGEST_MESSAGE = 8192


def message_kinds(message: str) -> list[Kind]:
    """What ``message`` means (its first :data:`LONGEST_MESSAGE` characters): one kind, or
    none."""
    message = message[:LONGEST_MESSAGE]
    present = _ANY_WORD.findall(message)
    if not present:
        return []
    # Only the patterns whose words the message holds are tried, first to last.
    for index in sorted({index for word in present for index in _NEEDING[word]}):
        pattern, kind = _MESSAGES[index]
        if pattern.search(message):
            return [kind]
    return []


# --- errors no message above knows -----------------------------------------------------------

# Where an error line comes from, and the words that make it one. A line of one of these
# sources that means nothing above is still a failure on the GPU path or the boot: it is
# reported as such (TS213), never dropped.
_ERROR_WORDS = (
    r"error|errors|failed|failure|fails|unable|cannot|can't|timed out|timeout|invalid"
    r"|not supported|mismatch|refused"
)
# Each from the message's start, or after a prefix a reader did not take off ("<node>: "): a
# note or a table quoting such a line in its prose is no log.
_UNKNOWN_FAILURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # The kernel driver's messages (kernel-open/common/inc/nv-linux.h: nv_printf "NVRM: ").
    ("nvidia-driver", re.compile(rf"(?:^|: )NVRM: [^\n]{{0,300}}?\b(?i:{_ERROR_WORDS})\b")),
    # libnvidia-container's CLI, run by the runtime hook ("nvidia-container-cli: %s error: %s",
    # as quoted in NVIDIA/libnvidia-container#231).
    ("container-toolkit", re.compile(r"(?:^|: )nvidia-container-cli: (?:\w+ )?error: ")),
    # The fabric manager's configuration check ("fabric manager config file item: %s has an
    # invalid value", quoted on an 8x H200 in siderolabs/extensions#511) and its own errors.
    (
        "fabric-manager",
        re.compile(
            rf"(?:^|: )(?:fabric manager|nv-fabricmanager)\b[^\n]{{0,300}}?\b(?i:{_ERROR_WORDS})\b"
        ),
    ),
    # A Talos sequencer task or phase that failed ("task %s (%s): failed, %s", machined's
    # v1alpha1_controller.go); startAllServices and the boot sequence are known above.
    ("talos", re.compile(r"(?:^|\[talos\] )(?:task|phase) \w+ \(\d+/\d+\): failed\b")),
)
# Error words in lines that are no failure: the Talos fabric manager wrapper's note on every
# board without an InfiniBand NVSwitch (NVLink 4 and older, where the fabric manager alone
# runs): "NVSwitch management disabled: failed to initialize libibumad".
_NOT_FAILURES = re.compile(r"NVSwitch management disabled")
# The words one of those needs, for a log reader's scan.
FAILURE_WORDS = (
    "NVRM: ",
    "nvidia-container-cli",
    "fabric manager",
    "nv-fabricmanager",
    "): failed",
)


def unknown_failure(message: str) -> str:
    """The source of an error line ("nvidia-driver", "container-toolkit", "fabric-manager",
    "talos"), or "" for any other line; asked only of a line :func:`message_kinds` knows
    nothing of."""
    message = message[:LONGEST_MESSAGE]
    if _NOT_FAILURES.search(message):
        return ""
    for source, pattern in _UNKNOWN_FAILURES:
        if pattern.search(message):
            return source
    return ""


# The GPU Operator's and the device plugin's own pods (nvidia-operator-validator,
# nvidia-device-plugin-daemonset, nvidia-driver-daemonset, gpu-feature-discovery, ...), and the
# statuses of a pod whose container fails (kubectl's pod printer, k8s.io/kubernetes
# pkg/printers/internalversion printPod: the waiting or terminated reason, "Init:" before an
# init container's).
_NVIDIA_OPERAND = re.compile(r"^(?:nvidia-|gpu-feature-discovery-)")
_FAILING = re.compile(
    r"^(?:Init:)?(?:CrashLoopBackOff|Error|RunContainerError|CreateContainerError"
    r"|CreateContainerConfigError|StartError|ContainerCannotRun)$"
)


def failing_operand(pod: str, status: str) -> bool:
    """Whether ``pod`` (its name, without the namespace) is an NVIDIA operand whose container
    fails: a failure shown whatever its cause, said rather than passed over."""
    return bool(_NVIDIA_OPERAND.match(pod) and _FAILING.match(status))
