"""Tables as talosctl and kubectl print them (columns aligned by Go's tabwriter):
``talosctl get <resource>``, ``talosctl services``, ``talosctl service <id>``,
``kubectl top nodes``, ``kubectl get pods -o wide``.

A column starts where its header starts; headers are set apart by at least two spaces (the
writers pad with three), while cells may hold single spaces ("Display controller").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from schematic.triage.signals import Evidence, Kind, Signal

__all__ = ["read_table", "recognise_table"]

_TALOS_RESOURCES = re.compile(r"^NODE\s{2,}NAMESPACE\s{2,}TYPE\s{2,}ID\s{2,}VERSION\b")
_TALOS_SERVICES = re.compile(r"^NODE\s{2,}SERVICE\s{2,}STATE\s{2,}HEALTH\b")
_KUBECTL_TOP = re.compile(r"^NAME\s{2,}CPU\(cores\)\s{2,}CPU\(?%\)?\s{2,}MEMORY\(bytes\)")
_KUBECTL_PODS_WIDE = re.compile(
    r"^(?:NAMESPACE\s{2,})?NAME\s{2,}READY\s{2,}STATUS\s{2,}RESTARTS\s{2,}AGE\s{2,}IP\s{2,}NODE\b"
)
_HEADERS = (_TALOS_RESOURCES, _TALOS_SERVICES, _KUBECTL_TOP, _KUBECTL_PODS_WIDE)
_NVIDIA = "NVIDIA Corporation"
_MAX_TEXT = 240


_FIRST_LINE = re.compile(r"^[ \t]*\S.*$", re.MULTILINE)


def recognise_table(text: str) -> bool:
    """Whether ``text`` starts with a table header this reader knows, or is the key-value
    listing of ``talosctl service <id>``."""
    first = _FIRST_LINE.search(text)
    if first is None:
        return False
    line = first.group()
    return any(header.match(line) for header in _HEADERS) or bool(_SERVICE_INFO.match(line))


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
        elif found["key"] == "STATE" and found["value"].strip() == "Waiting" and service:
            evidence = Evidence(file, number, f"{service}: {line.strip()}"[:_MAX_TEXT])
            yield Signal(
                Kind.SERVICE_WAITING,
                node,
                evidence,
                service,
                (("state", "Waiting"), ("source", "services")),
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
        if not columns or line.startswith("WARNING:"):
            continue
        cells: dict[str, str] = {}
        for index, (name, start) in enumerate(columns):
            end = columns[index + 1][1] if index + 1 < len(columns) else len(line)
            cells[name] = line[start:end].strip()
        yield number, line, cells


def read_table(text: str, file: str) -> Iterator[Signal]:
    """The signals of a talosctl or kubectl table."""
    first = _FIRST_LINE.search(text)
    if first is not None and _SERVICE_INFO.match(first.group()):
        yield from _service_info(text, file)
        return
    for number, line, cells in _rows(text):
        evidence = Evidence(file, number, line.strip()[:_MAX_TEXT])
        node = cells.get("NODE", "")
        kind = cells.get("TYPE", "")
        if "SERVICE" in cells and cells.get("STATE") == "Waiting":
            # A service Talos is still waiting for: what `startAllServices` lists, seen live.
            yield Signal(
                Kind.SERVICE_WAITING,
                node,
                evidence,
                cells["SERVICE"],
                (("state", "Waiting"), ("source", "services")),
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
            # The table names the vendor but carries no IDs and no driver.
            vendor = "0x10de" if cells.get("VENDOR") == _NVIDIA else cells.get("VENDOR", "")
            yield Signal(
                Kind.PCI_DEVICE,
                node,
                evidence,
                vendor,
                (("address", cells.get("ID", "")), ("class_name", cells.get("CLASS", ""))),
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
        elif "RESTARTS" in cells and "NODE" in cells:
            # "14 (61m ago)": the count, then when the last restart was.
            restarts = cells["RESTARTS"].split(" ", 1)[0]
            name = cells.get("NAME", "")
            if cells.get("NAMESPACE"):
                name = f"{cells['NAMESPACE']}/{name}"
            yield Signal(
                Kind.POD,
                cells["NODE"] if cells["NODE"] != "<none>" else "",
                evidence,
                name,
                (("restarts", restarts if restarts.isdigit() else "0"),),
            )
        elif "MEMORY(bytes)" in cells:
            percent = cells.get("MEMORY%") or cells.get("MEMORY(%)") or ""
            yield Signal(
                Kind.MEMORY_USED_PERCENT, cells.get("NAME", ""), evidence, percent.rstrip("%")
            )
