"""The cluster model: what all the inputs say, joined per machine.

Readers turn each file into :class:`~schematic.doctor.triage.signals.Signal` values, each naming its
node the way its source does: a Kubernetes name in ``nodes.json``, an address in ``talosctl``
tables, ``instance="10.244.3.17:9100"`` in a metric, nothing at all on a serial console. The
model settles which spellings are one machine (the Node object's addresses, a metric's several
node labels, a KubeVirt VM's name, a file named after the node), puts each machine in its pool
(a pool label, else its name without the random suffixes Cluster API and KubeVirt add), and
orders what its logs show into boots: which services were still pending when a boot gave up.
The rules (:mod:`schematic.doctor.triage.diagnose`) read this model, never a file.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePath

from schematic.doctor.triage.signals import Evidence, Kind, Signal
from schematic.doctor.triage.values import age_minutes, is_address, number, parse_time
from schematic.facts.nvidia import NVIDIA_VENDOR

__all__ = [
    "Boot",
    "ClusterModel",
    "LabelledHardware",
    "Machine",
    "build_model",
    "pool_of_name",
]

# Talos's BootTimeout (pkg/machinery/constants): 70 minutes.
BOOT_TIMEOUT_SECONDS = 70 * 60
# A service pending this long while the boot goes on is held, not starting up (every boot waits
# a few seconds for containerd, the network, apid's certificates).
LONG_PENDING_SECONDS = 10 * 60
# Node labels that name a pool, most specific first (the managed offerings' pool labels, then
# generic ones people set in their machine config's nodeLabels).
POOL_LABELS = (
    "cluster.x-k8s.io/deployment-name",
    "node.cluster.x-k8s.io/pool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "karpenter.sh/nodepool",
    "node.kubernetes.io/pool",
    "nodepool",
    "node-pool",
    "pool",
)
_ROLE_LABEL = "node-role.kubernetes.io/"
# Node Feature Discovery labels the node's PCI devices of the classes it watches (display
# controllers among them) as feature.node.kubernetes.io/pci-<class>_<vendor>.present, or
# pci-<vendor>.present as the GPU Operator configures it; GPU Feature Discovery labels what
# NVML sees: nvidia.com/gpu.product, gpu.count, gpu.family, cuda.driver.major.
_NFD_PCI = re.compile(r"^feature\.node\.kubernetes\.io/pci-(?P<fields>[0-9a-f_]+)\.present$")
# Talos publishes every extension as a Node label extensions.talos.dev/<name>=<version>, and the
# ones whose version is no valid label value (the 64-hex schematic ID) as an annotation.
EXTENSION_LABEL = "extensions.talos.dev/"
SCHEMATIC = "schematic"
# Kubernetes' random-suffix alphabet (apimachinery util/rand): no vowels, no 0, 1, 3. Cluster API
# machine names and KubeVirt VM names end in one or two such segments.
_RANDOM_ALPHABET = frozenset("bcdfghjklmnpqrstvwxz2456789")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")


def _random_segment(segment: str) -> bool:
    return 4 <= len(segment) <= 10 and all(c in _RANDOM_ALPHABET for c in segment)


def pool_of_name(name: str) -> str:
    """The pool a node name suggests: the name without its random or numbered suffixes
    (``tenant-a-cpu-7c9xv`` → ``tenant-a-cpu``, ``worker-10`` → ``worker``); "" for an address
    or a name with nothing left."""
    if not name or is_address(name):
        return ""
    parts = name.split("-")
    while len(parts) > 1 and (_random_segment(parts[-1]) or parts[-1].isdigit()):
        parts.pop()
    if len(parts) == len(name.split("-")):
        return ""  # nothing generated about the name: it is its own pool of one
    return "-".join(parts)


@dataclass
class Boot:
    """One boot of one machine as one log shows it: the services it waited for, and how it
    ended (the boot timer's failure, a reboot, or the end of the log)."""

    file: str
    waits: list[Signal] = field(default_factory=list)
    failures: list[Signal] = field(default_factory=list)  # BOOT_FAILED, REBOOTING
    first_uptime: float | None = None
    last_uptime: float | None = None
    first_time: datetime | None = None
    last_time: datetime | None = None

    @property
    def timed_out(self) -> bool:
        return any(s.kind is Kind.BOOT_FAILED for s in self.failures)

    def last_wait_line(self) -> list[Signal]:
        """The services of the last ``startAllServices`` line before the boot gave up."""
        end = min((s.evidence.line for s in self.failures), default=None)
        waits = [s for s in self.waits if end is None or s.evidence.line < end]
        if not waits:
            return []
        last = max(s.evidence.line for s in waits)
        return [s for s in waits if s.evidence.line == last]

    def pending_seconds(self) -> float | None:
        """How long the boot had been waiting at its last pending line (uptime, or the time
        from its first waiting line)."""
        last = self.last_wait_line()
        if not last:
            return None
        uptime = number(last[0].get("uptime"))
        if uptime is not None:
            return uptime
        first = parse_time(self.waits[0].get("time")) if self.waits else None
        end = parse_time(last[0].get("time"))
        if first and end:
            return (end - first).total_seconds()
        return None

    def held(self) -> dict[str, Signal]:
        """Services that held this boot: those still pending when the boot timer gave up, or
        pending for ten minutes and more when the log ends. Empty for an ordinary boot's first
        seconds, however many services they list."""
        last = self.last_wait_line()
        if not last:
            return {}
        seconds = self.pending_seconds()
        if self.timed_out or (seconds is not None and seconds >= LONG_PENDING_SECONDS):
            return {s.value: s for s in last}
        return {}

    def failure_uptime(self) -> float | None:
        for signal in self.failures:
            uptime = number(signal.get("uptime"))
            if signal.kind is Kind.BOOT_FAILED and uptime is not None:
                return uptime
        return None


@dataclass(frozen=True)
class LabelledHardware:
    """What a Node's labels say about its GPUs (Node Feature Discovery, GPU Feature
    Discovery, the GPU Operator), with the Node object that carries them."""

    evidence: Evidence
    nvidia_pci: tuple[str, ...]  # NFD labels naming a vendor 0x10de device (true)
    other_pci: tuple[str, ...]  # NFD labels naming other vendors' devices: NFD's pci source ran
    product: str  # nvidia.com/gpu.product (NVML's name, spaces as dashes)
    family: str  # nvidia.com/gpu.family (blackwell, hopper, ...)
    count: str  # nvidia.com/gpu.count
    driver_major: str  # nvidia.com/cuda.driver.major: a driver answered NVML
    gpu_present: str  # nvidia.com/gpu.present (the GPU Operator's, from the NFD labels)

    @property
    def has_nvidia(self) -> bool:
        return bool(
            self.nvidia_pci
            or self.product
            or self.gpu_present == "true"
            or (self.count not in ("", "0"))
        )

    @property
    def driver_answered(self) -> bool:
        """GPU Feature Discovery's NVML labels: a loaded driver saw the GPU when they were set."""
        return bool(self.product or self.driver_major)

    def describe(self) -> str:
        shown = [*self.nvidia_pci]
        for key, value in (
            ("nvidia.com/gpu.present", self.gpu_present),
            ("nvidia.com/gpu.product", self.product),
            ("nvidia.com/gpu.family", self.family),
            ("nvidia.com/gpu.count", self.count),
        ):
            if value:
                shown.append(f"{key}={value}")
        return ", ".join(shown)


@dataclass
class Machine:
    """One machine with every name it goes by, its pool, and everything said about it."""

    name: str
    names: set[str] = field(default_factory=set)
    pool: str = ""
    pool_basis: str = ""  # "label <key>", "name", or "" when not known
    signals: dict[Kind, list[Signal]] = field(default_factory=lambda: defaultdict(list))
    boots: list[Boot] = field(default_factory=list)
    files: set[str] = field(default_factory=set)

    def of(self, kind: Kind) -> list[Signal]:
        return self.signals.get(kind, [])

    @property
    def is_kubernetes_node(self) -> bool:
        return bool(self.of(Kind.NODE))

    def labels(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for node in self.of(Kind.NODE):
            for item in node.get("labels").split(","):
                key, _, value = item.partition("=")
                if key:
                    found[key.strip()] = value.strip()
        return found

    def labelled_hardware(self) -> LabelledHardware | None:
        """What the Node's feature-discovery labels say about its GPUs; None without a Node
        object or without any such label."""
        nodes = [n for n in self.of(Kind.NODE) if n.get("labels")]
        if not nodes:
            return None
        labels = self.labels()
        nvidia: list[str] = []
        other: list[str] = []
        for key, value in sorted(labels.items()):
            found = _NFD_PCI.match(key)
            if found and value == "true":
                fields = found["fields"].split("_")
                (nvidia if NVIDIA_VENDOR in fields else other).append(f"{key}={value}")
        hardware = LabelledHardware(
            evidence=nodes[0].evidence,
            nvidia_pci=tuple(nvidia),
            other_pci=tuple(other),
            product=labels.get("nvidia.com/gpu.product", ""),
            family=labels.get("nvidia.com/gpu.family", ""),
            count=labels.get("nvidia.com/gpu.count", ""),
            driver_major=labels.get("nvidia.com/cuda.driver.major", ""),
            gpu_present=labels.get("nvidia.com/gpu.present", ""),
        )
        if not (hardware.has_nvidia or hardware.other_pci or hardware.gpu_present):
            return None
        return hardware

    def running_schematic(self) -> tuple[str, Evidence] | None:
        """The schematic ID the machine runs: the factory's virtual ``schematic`` extension
        (``talosctl get extensions``) or the Node annotation Talos copies it to."""
        for signal in self.of(Kind.EXTENSION):
            if signal.value == SCHEMATIC and signal.get("version"):
                return signal.get("version"), signal.evidence
        for node in self.of(Kind.NODE):
            if node.get("schematic"):
                return node.get("schematic"), node.evidence
        return None

    def extensions(self) -> dict[str, Evidence]:
        """Extension name → where it is shown (``talosctl get extensions`` or Node labels)."""
        found = {s.value: s.evidence for s in self.of(Kind.EXTENSION) if s.value != SCHEMATIC}
        for node in self.of(Kind.NODE):
            for key in self.labels():
                if key.startswith(EXTENSION_LABEL) and key != EXTENSION_LABEL + SCHEMATIC:
                    found.setdefault(key.removeprefix(EXTENSION_LABEL), node.evidence)
        return found

    def held_services(self) -> dict[str, Signal]:
        """Every service that held a boot of this machine (last boot's line wins), and every
        service ``talosctl services`` shows Waiting."""
        held: dict[str, Signal] = {}
        for boot in self.boots:
            held.update(boot.held())
        for signal in self.of(Kind.SERVICE_WAITING):
            if signal.get("source") != "services":
                continue
            # Waiting for minutes is a boot's ordinary wait; ten and more, or for how long not
            # said, holds the boot.
            waited = age_minutes(signal.get("since"))
            if waited is None or waited * 60 >= LONG_PENDING_SECONDS:
                held.setdefault(signal.value, signal)
        return held

    def waited_services(self) -> dict[str, Signal]:
        """Every service an input shows waiting, held or not (a `startAllServices` line, a
        `talosctl services` Waiting row, a ``service[X](Waiting)`` line, a dependency's
        ``Waiting for service "X"``), unless an input shows it Running."""
        found: dict[str, Signal] = {}
        # A boot that finished (`startAllServices ... done`, `boot sequence: done`) after a
        # wait in the same log had every service it waited for.
        done = {s.evidence.file: s.evidence.line for s in self.of(Kind.BOOT_DONE)}
        for signal in self.of(Kind.SERVICE_WAITING):
            finished = done.get(signal.evidence.file, -1) > signal.evidence.line
            if signal.get("source") == "services" or not finished:
                found.setdefault(signal.value, signal)
        for signal in self.of(Kind.SERVICE_STATE):
            if signal.get("state") == "Waiting":
                found.setdefault(signal.value, signal)
        return {name: s for name, s in sorted(found.items()) if not self.service_running(name)}

    def waits_of(self, service: str) -> list[Signal]:
        """Every pending line naming ``service`` in boots it held, for the record."""
        return [s for boot in self.boots if service in boot.held() for s in boot.waits]

    def service_running(self, service: str) -> Signal | None:
        for signal in self.of(Kind.SERVICE_STATE):
            if signal.value == service and signal.get("running") == "true":
                return signal
        return None


@dataclass
class ClusterModel:
    """Every machine the inputs speak of, and what is said about the cluster as a whole."""

    machines: dict[str, Machine]
    cluster: dict[Kind, list[Signal]]
    # Sorted once: the diagnoses ask for every machine once a machine (a file of 10,000 node
    # names sorted them 10,000 times: 14 s).
    _sorted: tuple[Machine, ...] | None = field(default=None, repr=False, compare=False)

    def sorted_machines(self) -> tuple[Machine, ...]:
        if self._sorted is None:
            self._sorted = tuple(self.machines[name] for name in sorted(self.machines))
        return self._sorted

    def everywhere(self, kind: Kind) -> list[Signal]:
        return [s for m in self.sorted_machines() for s in m.of(kind)]


# Facts about the cluster, not about one machine.
_CLUSTER_KINDS = frozenset({Kind.CONTROL_PLANE_SERVICE, Kind.PLUGIN_ENV, Kind.DAEMONSET})
_BOOT_KINDS = frozenset({Kind.SERVICE_WAITING, Kind.BOOT_FAILED, Kind.REBOOTING})


class _Names:
    """Union-find over spellings: every name, address and label value one machine goes by."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def add(self, name: str) -> None:
        self._parent.setdefault(name, name)

    def find(self, name: str) -> str:
        self.add(name)
        root = name
        while self._parent[root] != root:
            root = self._parent[root]
        while self._parent[name] != root:
            self._parent[name], name = root, self._parent[name]
        return root

    def join(self, first: str, second: str) -> None:
        a, b = self.find(first), self.find(second)
        if a != b:
            # The smaller spelling is the root, so the result does not depend on input order.
            low, high = sorted((a, b))
            self._parent[high] = low

    def groups(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = defaultdict(set)
        for name in self._parent:
            found[self.find(name)].add(name)
        return found


def _vm_name(provider: str) -> str:
    # KubeVirt's cloud provider sets spec.providerID to kubevirt://<vm name>.
    return provider.removeprefix("kubevirt://") if provider.startswith("kubevirt://") else ""


def _canonical(names: set[str], kubernetes: set[str]) -> str:
    """The spelling to show: the Kubernetes node name, else a host name, else an address."""
    for pick in (kubernetes & names, {n for n in names if not is_address(n)}, names):
        if pick:
            return sorted(pick)[0]
    return ""


def _pool(machine: Machine) -> tuple[str, str]:
    labels = machine.labels()
    for key in POOL_LABELS:
        if labels.get(key):
            return labels[key], f"label {key}"
    for signal in machine.of(Kind.IDENTITY):
        if signal.get("pool"):
            return signal.get("pool"), "VM label"
    for name in sorted(machine.names, key=lambda n: (is_address(n), n)):
        pool = pool_of_name(name)
        if pool:
            return pool, "name"
    return "", ""


def _file_hint(file: str, names: set[str], longest: int) -> str:
    """The known name the file's name (or its folder's) is about: whole tokens only, so
    ``worker-1`` is not found in ``worker-10.log``; longest first.

    Node names and addresses start and end with a letter or digit (RFC 1123), so a part is
    cut only at the edges of its runs of letters and digits and the pieces looked up: the cost
    is the file name's, not the count of names known."""
    path = PurePath(file)
    for part in (path.name, path.parent.name):
        runs = [(m.start(), m.end()) for m in _ALNUM_RUN.finditer(part)]
        found: list[str] = []
        for index, (start, _) in enumerate(runs):
            for _, end in runs[index:]:
                if end - start > longest:
                    break
                if part[start:end] in names:
                    found.append(part[start:end])
        if found:
            return min(found, key=lambda name: (-len(name), name))
    return ""


def build_model(signals: Iterable[Signal]) -> ClusterModel:
    """Join the signals of one run into machines, pools and boots."""
    signals = list(signals)
    names = _Names()
    kubernetes: set[str] = set()
    shared = _shared_host_addresses(signals)
    for node, address in _host_network_addresses(signals):
        names.join(node, address)
    for signal in signals:
        if signal.kind is Kind.NODE and signal.node:
            kubernetes.add(signal.node)
            names.add(signal.node)
            aliases = [*signal.get("addresses").split(","), _vm_name(signal.get("provider"))]
            for alias in aliases:
                if alias.strip():
                    names.join(signal.node, alias.strip())
        elif signal.kind is Kind.IDENTITY and signal.node:
            names.add(signal.node)
            for alias in signal.get("aliases").split(","):
                if alias.strip() and alias.strip() not in shared:
                    names.join(signal.node, alias.strip())
        elif signal.node and signal.kind not in _CLUSTER_KINDS:
            names.add(signal.node)
    groups = names.groups()
    canonical = {root: _canonical(group, kubernetes) for root, group in groups.items()}
    machines: dict[str, Machine] = {}
    for root, group in groups.items():
        name = canonical[root]
        machines[name] = Machine(name=name, names=set(group))
    spellings = {n for g in groups.values() for n in g}
    longest = max(map(len, spellings), default=0)
    cluster: dict[Kind, list[Signal]] = defaultdict(list)
    unattributed: list[Signal] = []
    hints: dict[str, str] = {}
    for signal in signals:
        if signal.kind in _CLUSTER_KINDS:
            cluster[signal.kind].append(signal)
            continue
        if signal.node:
            machine = machines[canonical[names.find(signal.node)]]
        else:
            file = signal.evidence.file
            if file not in hints:
                hints[file] = _file_hint(file, spellings, longest)
            hint = hints[file]
            if not hint:
                unattributed.append(signal)
                continue
            machine = machines[canonical[names.find(hint)]]
        machine.signals[signal.kind].append(signal)
        machine.files.add(signal.evidence.file)
    if unattributed:
        # The only machine the inputs speak of, else a machine of unknown name ("").
        only = next(iter(machines.values())) if len(machines) == 1 else None
        target = only or machines.setdefault("", Machine(name=""))
        for signal in unattributed:
            target.signals[signal.kind].append(signal)
            target.files.add(signal.evidence.file)
    for machine in machines.values():
        machine.pool, machine.pool_basis = _pool(machine)
        machine.boots = _boots(machine)
    return ClusterModel(machines, dict(cluster))


def _shared_host_addresses(signals: list[Signal]) -> set[str]:
    """Pod host addresses given for more than one node (inputs of two clusters, a NAT): they
    name no one machine, so they join nothing."""
    nodes: dict[str, set[str]] = defaultdict(set)
    for signal in signals:
        if signal.kind is Kind.IDENTITY and signal.get("source") == "pod-host-ip":
            nodes[signal.get("aliases")].add(signal.node)
    return {address for address, named in nodes.items() if len(named) > 1}


def _host_network_addresses(signals: list[Signal]) -> list[tuple[str, str]]:
    """Node addresses a `kubectl get pods -o wide` table shows: pods on the host network carry
    their node's address as their IP, so an IP that two pods of one node share (and no pod of
    another node has) is that node's. Every other pod's IP is its own."""
    pods: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for signal in signals:
        if signal.kind is Kind.POD and signal.node and signal.get("ip"):
            pods[signal.get("ip")][signal.node] += 1
    return sorted(
        (next(iter(nodes)), address)
        for address, nodes in pods.items()
        if len(nodes) == 1 and next(iter(nodes.values())) >= 2
    )


def _boots(machine: Machine) -> list[Boot]:
    """The machine's boots, per log file: a new boot starts after a reboot line, or where the
    kernel's uptime starts again from zero."""
    by_file: dict[str, list[Signal]] = defaultdict(list)
    for kind in _BOOT_KINDS:
        for signal in machine.of(kind):
            # Only the boot's own lines: not `talosctl services` rows, runner or dependency
            # waits (a console's first seconds name every service).
            if not signal.get("source"):
                by_file[signal.evidence.file].append(signal)
    boots: list[Boot] = []
    for file in sorted(by_file):
        ordered = sorted(by_file[file], key=lambda s: s.evidence.line)
        boot = Boot(file)
        for signal in ordered:
            uptime = number(signal.get("uptime"))
            when = parse_time(signal.get("time"))
            restarted = (
                uptime is not None
                and boot.last_uptime is not None
                and uptime + 1 < boot.last_uptime
            )
            rebooted = any(s.kind is Kind.REBOOTING for s in boot.failures)
            after_failure = signal.kind is Kind.SERVICE_WAITING and boot.timed_out
            if restarted or (rebooted and signal.kind is not Kind.REBOOTING) or after_failure:
                boots.append(boot)
                boot = Boot(file)
            if signal.kind is Kind.SERVICE_WAITING:
                boot.waits.append(signal)
            else:
                boot.failures.append(signal)
            if uptime is not None:
                boot.first_uptime = uptime if boot.first_uptime is None else boot.first_uptime
                boot.last_uptime = uptime
            if when is not None:
                boot.first_time = when if boot.first_time is None else boot.first_time
                boot.last_time = when
        boots.append(boot)
    return boots
