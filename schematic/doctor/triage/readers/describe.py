"""``kubectl describe node[s]``: each node's names and addresses, its Ready condition, boot ID
and GPUs, and the events printed under it; ``kubectl describe pod[s]``: each pod's node, its
containers' states and messages, and its events; ``kubectl describe daemonset``: its counts.

The layout is kubectl's describe printer (k8s.io/kubectl ``pkg/describe/describe.go``,
describeNode, describePod, describeDaemonSet): ``Key:  value`` at the left margin, blocks
indented by two spaces, the Conditions and Events tables with a dashed rule under their header.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from schematic.doctor.triage.readers.messages import SCHEDULED, message_kinds
from schematic.doctor.triage.signals import Evidence, Kind, Signal, host_os, pod_text
from schematic.doctor.triage.values import count, unreadable
from schematic.redact import redacted

__all__ = [
    "read_describe",
    "read_describe_daemonset",
    "read_describe_pod",
    "recognise_describe",
    "recognise_describe_daemonset",
    "recognise_describe_pod",
]

_NAME = re.compile(r"^Name:\s+(?P<name>\S+)\s*$")
_ROLES = re.compile(r"^Roles:\s")
_SECTION = re.compile(r"^(?P<key>[A-Z][A-Za-z ]*):\s*(?P<value>(?:\S(?:.*\S)?)?)\s*$")
_ITEM = re.compile(r"^\s++(?P<key>[\w./ -]+?):\s+(?P<value>\S(?:.*\S)?)\s*$")
_LABEL = re.compile(r"^\s*(?P<key>[\w./-]+)=(?P<value>\S*)\s*$")
_RULE = re.compile(r"^\s+-{2,}")
_MAX_TEXT = 240


def recognise_describe(text: str) -> bool:
    """Whether ``text`` starts like ``kubectl describe node``: Name:, then Roles:; or is its
    Capacity and Allocatable sections alone (a paste cut to them)."""
    head = text[:4096]
    lines = [line for line in head.splitlines() if line.strip()][:3]
    if len(lines) >= 2 and _NAME.match(lines[0]) and _ROLES.match(lines[1]):
        return True
    return bool(lines) and lines[0].strip() == "Capacity:" and "\nAllocatable:" in head


# kubectl's describe printer for a DaemonSet (describeDaemonSet): Name:, Selector:, ..., then
# "Desired Number of Nodes Scheduled: N" and "Current Number of Nodes Scheduled: N".
_DESIRED = re.compile(r"^Desired Number of Nodes Scheduled:\s*(?P<n>\d+)\s*$", re.MULTILINE)
_CURRENT = re.compile(r"^Current Number of Nodes Scheduled:\s*(?P<n>\d+)\s*$", re.MULTILINE)
_NAMESPACE = re.compile(r"^Namespace:\s+(?P<namespace>\S+)\s*$")


def recognise_describe_daemonset(text: str) -> bool:
    """Whether ``text`` starts like ``kubectl describe daemonset``: Name:, then its counts."""
    lines = [line for line in text[:4096].splitlines() if line.strip()][:1]
    return bool(lines) and bool(_NAME.match(lines[0])) and bool(_DESIRED.search(text[:16384]))


def read_describe_daemonset(text: str, file: str) -> Iterator[Signal]:
    """One DAEMONSET signal per DaemonSet described: its name and node counts."""
    name = namespace = ""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if found := _NAME.match(line):
            name, namespace = found["name"], ""
        elif found := _NAMESPACE.match(line):
            namespace = found["namespace"]
        elif (desired := _DESIRED.match(line)) and name:
            # The printer writes the current count on the next line.
            current = _CURRENT.match(lines[index + 1]) if index + 1 < len(lines) else None
            yield Signal(
                Kind.DAEMONSET,
                "",
                _evidence(file, index + 1, line),
                f"{namespace}/{name}" if namespace else name,
                (("desired", desired["n"]), ("current", current["n"] if current else "")),
            )
            name = namespace = ""


# describePod: Name:, then Namespace: (Priority:, ... between), a Node: line and its containers.
_POD_NODE = re.compile(r"^Node:\s+(?P<node>[^\s/]+)(?:/(?P<ip>\S+))?\s*$")
_POD_KEYS = re.compile(r"^(?:Containers|Init Containers):\s*$", re.MULTILINE)
_CONTAINER_KEY = re.compile(r"^\s+(?P<key>[A-Z][\w ]*?):\s*(?P<value>(?:\S(?:.*\S)?)?)\s*$")
_CONTAINER_NAME = re.compile(r"^  (?P<name>[\w.-]+):\s*$")
_GPU_LIMIT = re.compile(r"^\s+nvidia\.com/gpu:\s*[1-9]")


def recognise_describe_pod(text: str) -> bool:
    """Whether ``text`` starts like ``kubectl describe pod``: Name:, Namespace:, a Node: line
    and a Containers section; or is its Events section alone (a paste cut to it)."""
    head = text[:16384]
    lines = [line for line in head.splitlines() if line.strip()][:4]
    if len(lines) >= 2 and _NAME.match(lines[0]) and _NAMESPACE.match(lines[1]):
        return bool(_POD_KEYS.search(head)) and any(
            _POD_NODE.match(line) for line in head.splitlines()
        )
    # "Events:" then its header, after at most an elision ("....") or two.
    for index, line in enumerate(lines[:-1]):
        if line.strip() == "Events:":
            header = lines[index + 1].split()
            return header[:2] == ["Type", "Reason"] and "Message" in header
    return False


def read_describe_pod(text: str, file: str) -> Iterator[Signal]:
    """The signals of every pod ``text`` describes: the pod on its node, the messages of its
    containers' states, and its events."""
    for block in _blocks(text):
        yield from _pod(block, file)


class _Events:
    """The rows of an Events table, each with its cells by the header's columns."""

    def __init__(self) -> None:
        self.columns: list[tuple[str, int]] = []
        self.rows: list[tuple[int, str, dict[str, str]]] = []

    def read(self, number: int, line: str) -> None:
        if line.strip().startswith("Type") and "Reason" in line:
            self.columns = [(m.group(), m.start()) for m in re.finditer(r"\S+", line)]
        elif self.columns and not _RULE.match(line):
            self.rows.append((number, line, _cells(line, self.columns)))


def _blocks(text: str) -> Iterator[list[tuple[int, str]]]:
    """The numbered lines of each object described: each starts at a ``Name:`` line."""
    block: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if _NAME.match(line) and block:
            yield block
            block = []
        block.append((number, line))
    if block:
        yield block


def _pod(block: list[tuple[int, str]], file: str) -> Iterator[Signal]:
    name = namespace = node = address = runtime_class = waiting = exit_code = reason = ""
    node_line = block[0][0]
    restarts = 0
    gpu = False
    section = container_key = state = ""
    messages: list[tuple[int, str]] = []
    events = _Events()
    for number, line in block:
        if not line.strip():
            continue
        top = _SECTION.match(line) if not line[0].isspace() else None
        if top and not (container_key == "Message" and top["key"] not in _POD_SECTIONS):
            section, container_key = top["key"], ""
            if section == "Name":
                name = top["value"]
            elif section == "Namespace":
                namespace = top["value"]
            elif section == "Runtime Class Name":
                runtime_class = top["value"]
            elif (found := _POD_NODE.match(line)) is not None:
                node, address, node_line = found["node"], found["ip"] or "", number
            continue
        if section in ("Containers", "Init Containers"):
            item = _CONTAINER_KEY.match(line)
            if _CONTAINER_NAME.match(line):
                container_key = state = ""
            elif _GPU_LIMIT.match(line):
                gpu, container_key = True, ""
            elif item:
                container_key = item["key"]
                value = item["value"]
                if container_key in ("State", "Last State"):
                    state = f"{container_key}:{value}"
                elif container_key == "Reason" and state == "State:Waiting" and not waiting:
                    waiting = value
                elif container_key == "Reason" and state == "Last State:Terminated":
                    reason = reason or value
                elif container_key == "Exit Code" and state == "Last State:Terminated":
                    exit_code = exit_code or value
                elif container_key == "Restart Count" and value.strip():
                    held = count(value)
                    if held is None:
                        yield unreadable(file, number, "Restart Count", value)
                    else:
                        restarts = max(restarts, held)
                elif container_key == "Message":
                    messages.append((number, line))
            elif container_key == "Message":
                # A message of several lines goes on at the left margin.
                messages.append((number, line))
        elif section == "Events":
            events.read(number, line)
    # The Scheduled event names the node (and, in an Events section pasted alone, the pod).
    for _, _, cells in events.rows:
        assigned = SCHEDULED.search(cells.get("Message", ""))
        if assigned and cells.get("Reason") == "Scheduled":
            node = node or assigned["node"]
            if not name:
                namespace, _, name = assigned["pod"].rpartition("/")
    if not name:
        return
    pod = f"{namespace}/{name}" if namespace else name
    evidence = _evidence(file, node_line, pod_text(pod, node, restarts, exit_code, reason))
    yield Signal(
        Kind.POD,
        node,
        evidence,
        pod,
        (
            ("restarts", str(restarts)),
            ("exit", exit_code),
            ("reason", reason),
            ("gpu", "1" if gpu else ""),
            ("waiting", waiting),
            ("runtime_class", runtime_class),
        ),
    )
    if node and address and address != node:
        # The node's name and its address, side by side (as a pod's status.hostIP).
        yield Signal(
            Kind.IDENTITY,
            node,
            _evidence(file, node_line, f"Node: {node}/{address}"),
            node,
            (("aliases", address), ("source", "pod-host-ip")),
        )
    for number, line in messages:
        for kind in message_kinds(line):
            yield Signal(kind, node, _evidence(file, number, line), f"Pod/{pod}")
    for number, line, cells in events.rows:
        evidence = _evidence(file, number, line)
        yield Signal(
            Kind.EVENT,
            node,
            evidence,
            cells.get("Reason", ""),
            (
                ("object", f"Pod/{pod}"),
                ("namespace", namespace),
                ("age", cells.get("Age", "")),
                ("from", cells.get("From", "")),
            ),
        )
        for kind in message_kinds(cells.get("Message", "")):
            yield Signal(kind, node, evidence, f"Pod/{pod}")


# The sections describePod prints at the left margin; a message's own lines there are not one.
_POD_SECTIONS = frozenset(
    {
        "Conditions",
        "Volumes",
        "QoS Class",
        "Node-Selectors",
        "Tolerations",
        "Events",
        "Containers",
        "Init Containers",
    }
)


def read_describe(text: str, file: str) -> Iterator[Signal]:
    """The signals of every node ``text`` describes."""
    for block in _blocks(text):
        yield from _node(block, file)


def _evidence(file: str, number: int, line: str) -> Evidence:
    text = redacted(line.strip())
    return Evidence(file, number, text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…")


def _node(block: list[tuple[int, str]], file: str) -> Iterator[Signal]:
    name = ""
    section = ""
    first = block[0][0]
    addresses: list[str] = []
    hostname = ready = boot = gpus = capacity = schematic = provider = ""
    labels: list[str] = []
    ready_line = boot_line = gpu_line = first
    system: dict[str, tuple[str, int]] = {}  # "OS Image", "Kernel Version": value, line
    events = _Events()
    for number, line in block:
        if not line.strip():
            continue
        top = _SECTION.match(line) if not line[0].isspace() else None
        if top:
            section = top["key"]
            if section == "Name":
                name = top["value"]
            elif section == "ProviderID":
                provider = top["value"]
            elif section == "Labels" and _LABEL.match(top["value"]):
                # The first label (and annotation) sits on the section's line itself.
                labels.append(top["value"].strip())
                hostname = _hostname(top["value"]) or hostname
            elif section == "Annotations":
                schematic = _schematic(top["value"]) or schematic
            continue
        if section == "Labels" and _LABEL.match(line):
            labels.append(line.strip())
            hostname = _hostname(line) or hostname
        elif section == "Annotations":
            schematic = _schematic(line) or schematic
        elif section == "Addresses" and (item := _ITEM.match(line)):
            addresses.append(item["value"])
        elif section == "Conditions" and line.split()[0] == "Ready":
            ready, ready_line = line.split()[1], number
        elif section == "System Info" and (item := _ITEM.match(line)):
            if item["key"] == "Boot ID":
                boot, boot_line = item["value"], number
            elif item["key"] in ("OS Image", "Kernel Version"):
                system[item["key"]] = (item["value"].strip(), number)
        elif section in ("Allocatable", "Capacity") and (item := _ITEM.match(line)):
            # The count only: a paste may mark the line ("7    <=== here").
            if item["key"] == "nvidia.com/gpu" and section == "Allocatable":
                gpus, gpu_line = item["value"].split()[0], number
            elif item["key"] == "nvidia.com/gpu":
                capacity = item["value"].split()[0]
        elif section == "Events":
            events.read(number, line)
    if not name and not (gpus or capacity):
        return
    aliases = [a for a in dict.fromkeys([*addresses, hostname]) if a and a != name]
    if name:
        yield Signal(
            Kind.IDENTITY,
            name,
            _evidence(file, first, f"Name: {name}"),
            name,
            (("aliases", ",".join(aliases)), ("source", "kubectl-describe-node")),
        )
    yield Signal(
        Kind.NODE,
        name,
        _evidence(
            file, boot_line if boot else ready_line, f"node {name} Ready={ready} bootID={boot}"
        )
        if name
        else _evidence(
            file, gpu_line, f"nvidia.com/gpu: capacity {capacity or '?'}, allocatable {gpus or '?'}"
        ),
        name,
        (
            ("addresses", ",".join(aliases)),
            ("ready", ready),
            ("boot", boot),
            ("gpus", gpus),
            ("capacity", capacity),
            ("labels", ",".join(labels)),
            ("schematic", schematic),
            ("provider", provider),
        ),
    )
    if "OS Image" in system:
        os_image, line_number = system["OS Image"]
        kernel = system.get("Kernel Version", ("", 0))[0]
        evidence = _evidence(file, line_number, f"OS Image: {os_image}")
        yield host_os(name, evidence, os_image, kernel)
    for number, line, cells in events.rows:
        reason, message = cells.get("Reason", ""), cells.get("Message", "")
        evidence = _evidence(file, number, line)
        yield Signal(
            Kind.EVENT,
            name,
            evidence,
            reason,
            (
                ("object", f"Node/{name}"),
                ("age", cells.get("Age", "")),
                ("from", cells.get("From", "")),
            ),
        )
        for kind in message_kinds(message):
            yield Signal(kind, name, evidence, f"Node/{name}")


# Talos publishes the running schematic as a Node annotation
# (internal/app/machined/pkg/controllers/k8s/node_annotation_spec.go).
_SCHEMATIC = re.compile(r"^\s*extensions\.talos\.dev/schematic:\s*(?P<id>[0-9a-f]{64})\s*$")


def _schematic(text: str) -> str:
    found = _SCHEMATIC.match(text)
    return found["id"] if found else ""


def _hostname(text: str) -> str:
    label = _LABEL.match(text)
    return label["value"] if label and label["key"] == "kubernetes.io/hostname" else ""


def _cells(line: str, columns: list[tuple[str, int]]) -> dict[str, str]:
    cells: dict[str, str] = {}
    for index, (name, start) in enumerate(columns):
        end = columns[index + 1][1] if index + 1 < len(columns) else len(line)
        cells[name] = line[start:end].strip()
    return cells
