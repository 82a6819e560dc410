"""Line-oriented evidence: serial consoles, `talosctl dmesg`, `talosctl logs`, kernel logs,
`nvidia-smi`, `/proc/modules`, device-plugin and fabric-manager logs.

Each line loses the prefix its source puts in front of the message — talosctl's
``<node>: <facility>: <level>: [<time>]: `` (dmesg), ``<node>: `` (logs), a kernel uptime stamp
``[ 4218.512345] `` (serial console, ``dmesg``), a klog header (``I0114 10:00:00.000 1 x.go:1] ``)
— and the message is matched against what Talos, the kernel and NVIDIA's tools print (each
pattern is cited in schematic/data/SOURCES.md). ``talosctl dmesg`` joins the lines of one
multi-line kernel message with a literal ``\\x0a``; those are matched as one message, as is a
plain kernel log's continuation line (indented, without its own stamp).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from schematic.triage.readers.messages import message_kinds
from schematic.triage.signals import Evidence, Kind, Signal

__all__ = ["read_log", "recognise_log"]

# A node as talosctl prefixes it: an IPv4 address, or a host name with a digit, dot or dash
# (so words such as "State" or "Fabric" in nvidia-smi output are not taken for nodes).
_NODE = r"(?:\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z0-9](?=[A-Za-z0-9._-]*[0-9.-])[A-Za-z0-9._-]*)"
_DMESG = re.compile(
    rf"^(?:(?P<node>{_NODE}): )?\s*(?:kern|user|daemon|auth|syslog|local\d):\s*"
    r"(?:emerg|alert|crit|err|warning|warn|notice|info|debug):\s*\[(?P<time>[^\]]*)\]: (?P<msg>.*)$"
)
_UPTIME = re.compile(r"^\[\s*(?P<uptime>\d+\.\d+)\]\s?(?P<msg>.*)$")
_NODE_PREFIX = re.compile(rf"^(?P<node>{_NODE}): (?P<msg>.*)$")
_KLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w./-]+:\d+\] (?P<msg>.*)$")
_CONTINUATION = re.compile(r"^\s{4,}(?P<msg>NVRM: .*)$")

_SERVICE_WAIT = re.compile(r'service "(?P<service>[^"]+)" to be (?P<state>"[a-z]+"|[a-z/]+)')
_PCI_ID = re.compile(r"PCI ID: (?P<id>10de:[0-9a-fA-F]{4})")
_PROC_MODULE = re.compile(
    r"^(?P<name>\w+) \d+ (?:\d+|-) \S+ (?:Live|Loading|Unloading) 0x[0-9a-f]+"
    r"(?: \((?P<taint>[A-Z]+)\))?$"
)
_STRATEGY = re.compile(r'"deviceListStrategy"\s*:\s*(?P<rest>.*)$')
_MAX_TEXT = 400


class _Line:
    """One message with its place: the node its prefix names and the kernel uptime, if any."""

    __slots__ = ("message", "node", "number", "raw", "time", "uptime")

    def __init__(
        self, number: int, raw: str, node: str, uptime: str, message: str, time: str = ""
    ) -> None:
        self.number = number
        self.raw = raw
        self.node = node
        self.uptime = uptime
        self.message = message
        self.time = time


def _split(number: int, raw: str) -> _Line:
    line = raw.rstrip("\r\n")
    found = _DMESG.match(line)
    if found:
        # Multi-line kernel messages arrive joined by a literal "\x0a".
        message = found["msg"].replace("\\x0a", "\n")
        return _Line(number, line, found["node"] or "", "", message, found["time"])
    node = ""
    prefixed = _NODE_PREFIX.match(line)
    if prefixed and not line.startswith(("NVRM", "nvidia")):
        node, line = prefixed["node"], prefixed["msg"]
    stamped = _UPTIME.match(line)
    if stamped:
        return _Line(number, raw.rstrip("\r\n"), node, stamped["uptime"], stamped["msg"])
    klog = _KLOG.match(line)
    if klog:
        return _Line(number, raw.rstrip("\r\n"), node, "", klog["msg"])
    return _Line(number, raw.rstrip("\r\n"), node, "", line)


def _lines(text: str) -> Iterator[_Line]:
    """Messages in order; a kernel continuation line is joined to the message before it."""
    pending: _Line | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        continued = _CONTINUATION.match(raw)
        if continued and pending is not None:
            pending.message += "\n" + continued["msg"]
            pending.raw += "\\x0a" + continued["msg"]
            continue
        if pending is not None:
            yield pending
        pending = _split(number, raw)
    if pending is not None:
        yield pending


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def recognise_log(text: str) -> bool:
    """Whether ``text`` holds at least one line this reader knows what to make of."""
    return any(True for _ in read_log(text, "-"))


def read_log(text: str, file: str) -> Iterator[Signal]:
    """The signals of a line-oriented log."""
    lines = list(_lines(text))
    listed_modules: dict[str, int] = {}
    for index, line in enumerate(lines):
        evidence = Evidence(file, line.number, _cut(line.raw))
        data: tuple[tuple[str, str], ...] = ()
        if line.uptime:
            data = (("uptime", line.uptime),)
        elif line.time:
            data = (("time", line.time),)
        message = line.message
        if "startAllServices" in message and " to be " in message:
            for found in _SERVICE_WAIT.finditer(message):
                state = found["state"]
                wording = "quoted" if state.startswith('"') else "plain"
                yield Signal(
                    Kind.SERVICE_WAITING,
                    line.node,
                    evidence,
                    found["service"],
                    (*data, ("state", state.strip('"')), ("wording", wording)),
                )
            continue
        module = _PROC_MODULE.match(message)
        if module:
            listed_modules.setdefault(line.node, line.number)
            yield Signal(
                Kind.MODULE_LOADED,
                line.node,
                evidence,
                module["name"],
                (("taint", module["taint"] or ""),),
            )
            continue
        if "Running with config:" in message:
            strategy = _device_list_strategy(lines, index)
            if strategy is not None:
                number, values = strategy
                yield Signal(
                    Kind.PLUGIN_STRATEGY,
                    line.node,
                    Evidence(file, number, _cut(_lines_text(lines, number))),
                    ",".join(values),
                )
            continue
        for kind in message_kinds(message):
            extra = data
            pci = _PCI_ID.search(message) or (
                _PCI_ID.search(lines[index - 1].message) if index else None
            )
            if pci:
                extra = (*extra, ("pci", pci["id"].lower()))
            if kind is Kind.CSR_SIGN_FAILED and ":50001" in message:
                extra = (*extra, ("port", "50001"))
            yield Signal(kind, line.node, evidence, "", extra)
    for node, number in listed_modules.items():
        yield Signal(Kind.MODULES_LISTED, node, Evidence(file, number, "/proc/modules"))


def _lines_text(lines: list[_Line], number: int) -> str:
    for line in lines:
        if line.number == number:
            return line.raw
    return ""


def _device_list_strategy(lines: list[_Line], start: int) -> tuple[int, list[str]] | None:
    """The ``flags.plugin.deviceListStrategy`` of the JSON printed after ``Running with config:``
    (the device plugin pretty-prints it over many lines)."""
    for line in lines[start + 1 : start + 200]:
        found = _STRATEGY.search(line.message)
        if not found:
            continue
        rest = found["rest"].strip().rstrip(",")
        collected = rest
        if rest.startswith("[") and "]" not in rest:
            for more in lines[lines.index(line) + 1 : lines.index(line) + 20]:
                collected += more.message.strip()
                if "]" in more.message:
                    break
        try:
            value = json.loads(collected.rstrip(","))
        except ValueError:
            return None
        values = [value] if isinstance(value, str) else value
        if isinstance(values, list) and all(isinstance(item, str) for item in values):
            return line.number, values
        return None
    return None
