"""Tables as talosctl and kubectl print them (columns aligned by Go's tabwriter):
``talosctl get <resource>``, ``talosctl services``, ``talosctl service <id>``,
``kubectl top nodes``, ``kubectl get pods [-o wide]``, ``kubectl get svc``.

A column starts where its header starts; headers are set apart by at least two spaces (the
writers pad with three), while cells may hold single spaces ("Display controller").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from schematic.doctor.triage.readers.messages import SCHEDULED, failing_operand, message_kinds
from schematic.doctor.triage.readers.paste import first_line
from schematic.doctor.triage.signals import Evidence, Kind, Signal, host_os
from schematic.doctor.triage.values import count, unreadable
from schematic.redact import redacted

__all__ = ["read_table", "recognise_table"]

_TALOS_RESOURCES = re.compile(r"^(?:\*\s+)?NODE\s{2,}NAMESPACE\s{2,}TYPE\s{2,}ID\s{2,}VERSION\b")
_TALOS_SERVICES = re.compile(r"^NODE\s{2,}SERVICE\s{2,}STATE\s{2,}HEALTH\b")
_KUBECTL_TOP = re.compile(r"^NAME\s{2,}CPU\(cores\)\s{2,}CPU\(?%\)?\s{2,}MEMORY\(bytes\)")
# kubectl get pods [-A] [-o wide]: without -o wide the table names no node (nor IP).
_KUBECTL_PODS = re.compile(
    r"^(?:NAMESPACE\s{2,})?NAME\s{2,}READY\s{2,}STATUS\s{2,}RESTARTS\s{2,}AGE"
    r"(?:\s{2,}IP\s{2,}NODE\b|\s*$)"
)
# kubectl get svc [-A] [-o wide] (kubectl's service printer, k8s.io/kubernetes
# pkg/printers/internalversion: PORT(S) as "6443/TCP" or, with a node port, "6443:31443/TCP").
_KUBECTL_SERVICES = re.compile(
    r"^(?:NAMESPACE\s{2,})?NAME\s{2,}TYPE\s{2,}CLUSTER-IP\s{2,}EXTERNAL-IP\s{2,}PORT\(S\)"
)
# kubectl get events [-A] [-o wide]: "LAST SEEN" leads, NAMESPACE first with -A.
_KUBECTL_EVENTS = re.compile(r"^(?:NAMESPACE\s{2,})?LAST SEEN\s{2,}TYPE\s{2,}REASON\s{2,}OBJECT\b")
# kubectl get nodes [-o wide]: the names; with -o wide also the addresses.
_KUBECTL_NODES = re.compile(r"^NAME\s{2,}STATUS\s{2,}ROLES\s{2,}AGE\s{2,}VERSION\b")
# kubectl get vmi [-o wide] (KubeVirt): the VM's name, its address and the host node.
_KUBECTL_VMIS = re.compile(r"^(?:NAMESPACE\s{2,})?NAME\s{2,}AGE\s{2,}PHASE\s{2,}IP\s{2,}NODENAME\b")
# kubectl get ds [-A] [-o wide]: how many nodes each DaemonSet should and does run on.
_KUBECTL_DAEMONSETS = re.compile(
    r"^(?:NAMESPACE\s{2,})?NAME\s{2,}DESIRED\s{2,}CURRENT\s{2,}READY\b"
)
_HEADERS = (
    _KUBECTL_DAEMONSETS,
    _TALOS_RESOURCES,
    _TALOS_SERVICES,
    _KUBECTL_TOP,
    _KUBECTL_PODS,
    _KUBECTL_SERVICES,
    _KUBECTL_EVENTS,
    _KUBECTL_NODES,
    _KUBECTL_VMIS,
)
_NVIDIA = "NVIDIA Corporation"
_MAX_TEXT = 240


def recognise_table(text: str) -> bool:
    """Whether ``text`` starts with a table header this reader knows, is the key-value
    listing of ``talosctl service <id>``, or holds talosctl rows without their header
    (``talosctl get ... | grep ...``)."""
    line = first_line(text)[1]
    if not line:
        return False
    if any(header.match(line) for header in _HEADERS) or _SERVICE_INFO.match(line):
        return True
    return bool(_headerless(line))


# Rows of `talosctl get` and `talosctl services` whose header a grep left behind: the columns
# after VERSION are the resource type's print columns (pkg/machinery/resources/*, PrintColumns).
_TALOS_ROW = re.compile(
    r"^(?P<node>\S*)\s{2,}(?P<namespace>[a-z][a-z-]*)\s{2,}(?P<type>[A-Z][A-Za-z]+)"
    r"\s{2,}(?P<id>\S+)\s{2,}(?P<version>\d+)(?:\s{2,}(?P<rest>\S.*))?$"
)
_PRINT_COLUMNS = {
    "PCIDevice": ("CLASS", "SUBCLASS", "VENDOR", "PRODUCT"),
    "ExtensionStatus": ("NAME", "VERSION"),
    "LoadedKernelModule": ("STATE",),
    "MachineStatus": ("STAGE", "READY"),
    "Service": ("RUNNING", "HEALTHY", "HEALTH UNKNOWN"),
    "HostnameStatus": ("HOSTNAME", "DOMAINNAME"),
    "Nodename": ("NODENAME",),
    "Member": ("HOSTNAME", "MACHINE TYPE", "OS", "ADDRESSES"),
    "NodeAddress": ("ADDRESSES", "SORTALGORITHM"),
}
_SERVICE_ROW = re.compile(
    r"^(?P<node>\S+)\s{2,}(?P<service>[a-z][\w-]*)\s{2,}"
    r"(?P<state>Running|Waiting|Preparing|Finished|Failed|Skipped|Stopping|Starting|Initialized"
    r"|Pre|Post)\s{2,}(?P<health>OK|\?|Fail\S*)(?:\s{2,}(?P<rest>.*))?$"
)


# `kubectl get events` rows whose header was left out (a paste from the middle of the listing):
# [NAMESPACE] LAST SEEN, TYPE, REASON, OBJECT, MESSAGE (kubectl's event printer).
_EVENT_ROW = re.compile(
    r"^(?:(?P<namespace>[a-z0-9][a-z0-9-]*)\s{2,})?(?P<seen>\d+[smhdy](?:\d+[smhd])?)\s{2,}"
    r"(?P<type>Normal|Warning)\s{2,}(?P<reason>[A-Za-z]+)\s{2,}(?P<object>[a-z.]+/\S+)"
    r"\s{2,}(?P<message>\S.*)$"
)


def _headerless(line: str) -> dict[str, str] | None:
    event = _EVENT_ROW.match(line)
    if event:
        return {
            "NAMESPACE": event["namespace"] or "",
            "LAST SEEN": event["seen"],
            "TYPE": event["type"],
            "REASON": event["reason"],
            "OBJECT": event["object"],
            "MESSAGE": event["message"],
        }
    row = _TALOS_ROW.match(line)
    if row:
        cells = {
            "NODE": row["node"],
            "NAMESPACE": row["namespace"],
            "TYPE": row["type"],
            "ID": row["id"],
            "VERSION": row["version"],
        }
        rest = re.split(r"\s{2,}", row["rest"].strip()) if row["rest"] else []
        names = _PRINT_COLUMNS.get(row["type"], ())
        # Duplicate names (ExtensionStatus's second VERSION) are kept apart as the header does.
        for name, value in zip(names, rest, strict=False):
            cells[name if name not in cells else f"{name} "] = value
        if row["type"] == "ExtensionStatus" and len(rest) >= 2:
            cells["VERSION"] = rest[1]
        return cells
    service = _SERVICE_ROW.match(line)
    if service:
        return {
            "NODE": service["node"],
            "SERVICE": service["service"],
            "STATE": service["state"],
            "HEALTH": service["health"],
        }
    return None


# `talosctl service <id>`: NODE, ID, STATE, HEALTH ... as "KEY<padding>value" lines, one block
# per node (cmd/talosctl/cmd/talos/service.go, renderServiceInfo).
_SERVICE_INFO = re.compile(r"^NODE\s{2,}(?P<node>\S+)\s*$")
_INFO_LINE = re.compile(r"^(?P<key>ID|STATE|EVENTS)\s{2,}(?P<value>.*)$")


def _service_info(text: str, file: str) -> Iterator[Signal]:
    node = service = ""
    for number, line in enumerate(text.splitlines(), 1):
        block = _SERVICE_INFO.match(line)
        if block:
            node, service = block["node"], ""
            continue
        found = _INFO_LINE.match(line)
        if not found:
            continue
        if found["key"] == "ID":
            service = found["value"].strip()
        elif found["key"] == "STATE" and service:
            state = found["value"].strip()
            evidence = Evidence(file, number, redacted(f"{service}: {line.strip()}")[:_MAX_TEXT])
            if state == "Waiting":
                yield Signal(
                    Kind.SERVICE_WAITING,
                    node,
                    evidence,
                    service,
                    (("state", "Waiting"), ("source", "services")),
                )
            else:
                yield Signal(
                    Kind.SERVICE_STATE,
                    node,
                    evidence,
                    service,
                    (("running", "true" if state == "Running" else "false"), ("state", state)),
                )


def _columns(header: str) -> list[tuple[str, int]]:
    return [(found.group(), found.start()) for found in re.finditer(r"\S+(?: \S+)*", header)]


def _rows(text: str) -> Iterator[tuple[int, str, dict[str, str]]]:
    columns: list[tuple[str, int]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if any(header.match(line) for header in _HEADERS):
            columns = _columns(line)
            continue
        if line.startswith("WARNING:"):
            continue
        if not columns:
            found = _headerless(line)
            if found is not None:
                yield number, line, found
            continue
        cells: dict[str, str] = {}
        split = re.split(r"\s{2,}", line.strip())
        if len(split) == len(columns) and not line[:1].isspace():
            # Every cell present: splitting survives a paste that moved the columns
            # (tabs, a proportional font, a trimmed line).
            for (name, _), value in zip(columns, split, strict=True):
                cells[name] = value
        else:
            for index, (name, start) in enumerate(columns):
                end = columns[index + 1][1] if index + 1 < len(columns) else len(line)
                cells[name] = line[start:end].strip()
        yield number, line, cells


def _namespaced(cells: dict[str, str]) -> str:
    """A row's object as ``[namespace/]name`` (the namespace when the table has one: -A)."""
    name = cells.get("NAME", "")
    return f"{cells['NAMESPACE']}/{name}" if cells.get("NAMESPACE") else name


def _service_row(cells: dict[str, str], evidence: Evidence) -> Iterator[Signal]:
    """A Service row serving the Kubernetes API (6443) is a control plane's: whether it also
    serves trustd (50001)."""
    ports = {item.split("/", 1)[0].split(":", 1)[0] for item in cells["PORT(S)"].split(",")}
    if "6443" not in ports:
        return
    yield Signal(
        Kind.CONTROL_PLANE_SERVICE,
        "",
        evidence,
        _namespaced(cells),
        (("trustd", "1" if "50001" in ports else ""),),
    )


def read_table(text: str, file: str) -> Iterator[Signal]:
    """The signals of a talosctl or kubectl table."""
    if _SERVICE_INFO.match(first_line(text)[1]):
        yield from _service_info(text, file)
        return
    assigned = _assigned_nodes(text)
    for number, line, cells in _rows(text):
        evidence = Evidence(file, number, redacted(line.strip())[:_MAX_TEXT])
        node = cells.get("NODE", "")
        kind = cells.get("TYPE", "")
        if "SERVICE" in cells and cells.get("STATE") == "Waiting":
            # A service Talos is still waiting for: what `startAllServices` lists, seen live;
            # LAST CHANGE says for how long ("69m52s ago").
            yield Signal(
                Kind.SERVICE_WAITING,
                node,
                evidence,
                cells["SERVICE"],
                (
                    ("state", "Waiting"),
                    ("source", "services"),
                    ("since", cells.get("LAST CHANGE", "").removesuffix(" ago")),
                ),
            )
        elif "SERVICE" in cells:
            running = "true" if cells.get("STATE") == "Running" else "false"
            yield Signal(
                Kind.SERVICE_STATE,
                node,
                evidence,
                cells["SERVICE"],
                (
                    ("running", running),
                    ("state", cells.get("STATE", "")),
                    ("healthy", "true" if cells.get("HEALTH") == "OK" else ""),
                ),
            )
        elif kind == "PCIDevice":
            from schematic.facts.nvidia import NVIDIA_VENDOR

            # The table names the vendor but carries no IDs and no driver: written as the
            # pcidevices reader writes a vendor ID.
            nvidia = f"0x{NVIDIA_VENDOR}"
            vendor = nvidia if cells.get("VENDOR") == _NVIDIA else cells.get("VENDOR", "")
            yield Signal(
                Kind.PCI_DEVICE,
                node,
                evidence,
                vendor,
                (
                    ("address", cells.get("ID", "")),
                    ("class_name", cells.get("CLASS", "")),
                    # pci.ids' name ("GA100 [A100 SXM4 80GB]"): the GPU, looked up by name.
                    ("product_name", cells.get("PRODUCT", "")),
                ),
            )
        elif kind == "LoadedKernelModule":
            yield Signal(Kind.MODULES_LISTED, node, evidence)
            yield Signal(Kind.MODULE_LOADED, node, evidence, cells.get("ID", ""))
        elif kind == "ExtensionStatus":
            name = cells.get("NAME", "")
            yield Signal(
                Kind.EXTENSION, node, evidence, name, (("version", cells.get("VERSION", "")),)
            )
        elif kind == "MachineStatus":
            yield Signal(
                Kind.MACHINE_STAGE,
                node,
                evidence,
                cells.get("STAGE", ""),
                (("ready", cells.get("READY", "")),),
            )
        elif "PORT(S)" in cells:
            yield from _service_row(cells, evidence)
        elif "RESTARTS" in cells:
            if failing_operand(cells.get("NAME", ""), cells.get("STATUS", "")):
                # An NVIDIA operand crash-looping is a failure shown, whatever its cause: said
                # (TS213) with what to collect, never a silent all-clear.
                node = cells.get("NODE", "") if cells.get("NODE") != "<none>" else ""
                yield Signal(Kind.UNKNOWN_FAILURE, node, evidence, "gpu-operator")
            # "14 (61m ago)": the count, then when the last restart was.
            restarts = cells["RESTARTS"].split(" ", 1)[0]
            ago = re.search(r"\(([^\s()]+) ago\)", cells["RESTARTS"])
            name = _namespaced(cells)
            if restarts.isdigit() and count(restarts) is None:
                yield unreadable(file, evidence.line, "RESTARTS", restarts)
            yield Signal(
                Kind.POD,
                cells.get("NODE", "") if cells.get("NODE") != "<none>" else "",
                evidence,
                name,
                (
                    ("restarts", str(count(restarts) or 0)),
                    ("age", cells.get("AGE", "")),
                    ("last_restart_ago", ago[1] if ago else ""),
                    ("ip", cells.get("IP", "") if cells.get("IP") != "<none>" else ""),
                ),
            )
        elif "DESIRED" in cells and "CURRENT" in cells:
            name = _namespaced(cells)
            yield Signal(
                Kind.DAEMONSET,
                "",
                evidence,
                name,
                (
                    ("desired", cells["DESIRED"]),
                    ("current", cells["CURRENT"]),
                    ("ready", cells.get("READY", "")),
                ),
            )
        elif "MEMORY(bytes)" in cells:
            percent = cells.get("MEMORY%") or cells.get("MEMORY(%)") or ""
            yield Signal(
                Kind.MEMORY_USED_PERCENT, cells.get("NAME", ""), evidence, percent.rstrip("%")
            )
        else:
            yield from _other_row(cells, node, kind, evidence, assigned)


def _identity(node: str, evidence: Evidence, aliases: Iterable[str], source: str) -> Signal:
    names = [a for a in dict.fromkeys(aliases) if a and a != node and a != "<none>"]
    return Signal(
        Kind.IDENTITY, node, evidence, node, (("aliases", ",".join(names)), ("source", source))
    )


def _other_row(
    cells: dict[str, str], node: str, kind: str, evidence: Evidence, assigned: dict[str, str]
) -> Iterator[Signal]:
    """Rows that name nodes (identities), events, and talosctl's Service resources."""
    if kind == "Service":
        running = cells.get("RUNNING", "")
        yield Signal(
            Kind.SERVICE_STATE,
            node,
            evidence,
            cells.get("ID", ""),
            (("running", running), ("healthy", cells.get("HEALTHY", ""))),
        )
    elif kind == "HostnameStatus" and cells.get("HOSTNAME"):
        yield _identity(node, evidence, [cells["HOSTNAME"]], "talosctl-hostname")
    elif kind == "Nodename" and cells.get("NODENAME"):
        yield _identity(node, evidence, [cells["NODENAME"]], "talosctl-nodename")
    elif kind == "Member" and cells.get("HOSTNAME"):
        addresses = re.findall(r"[0-9a-fA-F.:]{7,}", cells.get("ADDRESSES", ""))
        yield _identity(cells["HOSTNAME"], evidence, addresses, "talosctl-member")
    elif kind == "NodeAddress" and cells.get("ADDRESSES"):
        # `talosctl get nodeaddresses`: every address of the machine ("10.5.0.2/24").
        found = re.findall(r"([0-9a-fA-F.:]{7,})(?:/\d+)?", cells["ADDRESSES"])
        yield _identity(node, evidence, found, "talosctl-nodeaddress")
    elif "LAST SEEN" in cells and "REASON" in cells:
        yield from _event_row(cells, evidence, assigned)
    elif "ROLES" in cells and "NAME" in cells:
        # kubectl get nodes [-o wide]
        aliases = [cells.get("INTERNAL-IP", ""), cells.get("EXTERNAL-IP", "")]
        name = cells["NAME"]
        ready = cells.get("STATUS", "").split(",", 1)[0]
        yield _identity(name, evidence, aliases, "kubectl-nodes")
        yield Signal(
            Kind.NODE,
            name,
            evidence,
            name,
            (
                ("addresses", ",".join(a for a in aliases if a and a != "<none>")),
                ("ready", {"Ready": "True", "NotReady": "False"}.get(ready, "Unknown")),
                # `--show-labels`: "k=v" pairs joined by commas, as the model reads them.
                ("labels", "" if cells.get("LABELS") == "<none>" else cells.get("LABELS", "")),
            ),
        )
        if cells.get("OS-IMAGE"):  # -o wide
            yield host_os(name, evidence, cells["OS-IMAGE"], cells.get("KERNEL-VERSION", ""))
    elif "PHASE" in cells and "NODENAME" in cells and cells.get("NAME"):
        # A KubeVirt VMI: the tenant node is named after it and answers on its address.
        yield _identity(cells["NAME"], evidence, [cells.get("IP", "")], "kubevirt-vmi")


# "Node/worker-1", "node/worker-1", "pod/x": the kind and name of an event's object.
_OBJECT = re.compile(r"^(?P<kind>[A-Za-z.]+)/(?P<name>\S+)$")


def _assigned_nodes(text: str) -> dict[str, str]:
    """Each pod's node, as the scheduler's Scheduled events in ``text`` name them (by the pod's
    name, without its namespace, as an event row's OBJECT names it)."""
    return {found["pod"].rpartition("/")[2]: found["node"] for found in SCHEDULED.finditer(text)}


def _event_row(
    cells: dict[str, str], evidence: Evidence, assigned: dict[str, str]
) -> Iterator[Signal]:
    reason, message = cells.get("REASON", ""), cells.get("MESSAGE", "")
    found = _OBJECT.match(cells.get("OBJECT", ""))
    subject = f"{found['kind'].capitalize()}/{found['name']}" if found else cells.get("OBJECT", "")
    # `-o wide` names the source ("kubelet, worker-1"); a Node's events are about the node.
    source = cells.get("SOURCE", "")
    host = source.split(",", 1)[1].strip() if "," in source else ""
    if not host and found and found["kind"].lower() == "node":
        host = found["name"]
    elif not host and found and found["kind"].lower() == "pod":
        host = assigned.get(found["name"], "")
    data = (
        ("object", subject),
        ("namespace", cells.get("NAMESPACE", "")),
        ("age", cells.get("LAST SEEN", "")),
        ("count", cells.get("COUNT", "")),
    )
    yield Signal(Kind.EVENT, host, evidence, reason, data)
    for kind in message_kinds(message):
        yield Signal(kind, host, evidence, subject)
