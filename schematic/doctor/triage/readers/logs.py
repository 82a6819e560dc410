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

import functools
import json
import re
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import chain, islice

from schematic.doctor.triage.readers.messages import KEYWORDS, message_kinds
from schematic.doctor.triage.signals import Evidence, Kind, Signal

__all__ = ["read_log", "recognise_log"]

# A node as talosctl prefixes it: an IPv4 address, or a host name with a digit, dot or dash
# (so words such as "State" or "Fabric" in nvidia-smi output are not taken for nodes).
_NODE = (
    r"(?:\d{1,3}(?:\.\d{1,3}){3}|\[?[0-9a-fA-F:]*:[0-9a-fA-F:]+\]?"
    # a host name with a digit or a dot: program prefixes ("nv-fabricmanager:",
    # "nvidia-persistenced-wrapper:") have neither and stay part of the message
    r"|[A-Za-z0-9](?=[A-Za-z0-9._-]*[0-9.])[A-Za-z0-9._-]*)"
)
_DMESG = re.compile(
    rf"^(?:(?P<node>{_NODE}): )?\s*(?:kern|user|daemon|auth|syslog|local\d):\s*"
    r"(?:emerg|alert|crit|err|warning|warn|notice|info|debug):\s*\[(?P<time>[^\]]*)\]: (?P<msg>.*)$"
)
_UPTIME = re.compile(r"^\[\s*(?P<uptime>\d+\.\d+)\]\s?(?P<msg>.*)$")
_NODE_PREFIX = re.compile(rf"^(?P<node>{_NODE}): (?P<msg>.*)$")
_KLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w./-]+:\d+\] (?P<msg>.*)$")
_JOURNAL = re.compile(
    r"^(?P<month>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<day>\d{1,2}) "
    r"(?P<clock>\d\d:\d\d:\d\d)(?:\.\d+)? (?P<host>[\w.-]+) [\w.@/-]+(?:\[\d+\])?: (?P<msg>.*)$"
)
_GO_LOG = re.compile(
    r"^(?P<date>\d{4}/\d\d/\d\d) (?P<clock>\d\d:\d\d:\d\d(?:\.\d+)?)(?P<zone>) (?P<msg>.*)$"
)
_ISO_LINE = re.compile(
    r"^(?P<date>\d{4}-\d\d-\d\d)[T ](?P<clock>\d\d:\d\d:\d\d(?:\.\d+)?)"
    r"(?P<zone>Z|[+-]\d\d:?\d\d)?\s+(?P<msg>.*)$"
)
_RFC3339 = re.compile(
    r"^(?P<date>\d{4}-\d\d-\d\d)[T ](?P<clock>\d\d:\d\d:\d\d)(?:\.\d+)?"
    r"(?P<zone>Z|[+-]\d\d:\d\d)?$"
)
# nvidia-smi -L ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)") and -q ("Product Name : ...").
_SMI_GPU = re.compile(r"^GPU \d+: (?P<name>.+?) \(UUID: (?P<uuid>GPU-[0-9a-fA-F-]+)\)")
# "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:19:00.0 Off |  ..." (nvidia-smi's table)
_SMI_ROW = re.compile(
    r"^\|\s+\d+\s+(?P<name>\S.*?)\s+(?:On|Off)\s+\|\s+(?P<bus>[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:"
    r"[0-9A-Fa-f]{2}\.[0-7])\s"
)
_SMI_PRODUCT = re.compile(r"^\s*Product Name\s+: (?P<name>\S.*)$")
_SMI_FABRIC = re.compile(r"^\s*Fabric\s*$")
_SMI_STATE = re.compile(r"^\s*State\s*:\s*(?P<state>\S.*?)\s*$")
_SMI_STATUS = re.compile(r"^\s*Status\s*:\s*(?P<status>\S.*?)\s*$")
_CONTINUATION = re.compile(r"^\s{4,}(?P<msg>NVRM: .*)$")

# Talos up to 1.13 quotes the state ("up"); 1.14 writes up/finished.
_SERVICE_WAIT = re.compile(r'service "(?P<service>[^"]+)" to be (?:"[a-z]+"|[a-z/]+)')
_PCI_ID = re.compile(r"PCI ID: (?P<id>10de:[0-9a-fA-F]{4})")
_PROC_MODULE = re.compile(
    r"^(?P<name>\w+) \d+ (?:\d+|-) \S+ (?:Live|Loading|Unloading) 0x[0-9a-f]+"
    r"(?: \((?P<taint>[A-Z]+)\))?$"
)
_STRATEGY = re.compile(r'"deviceListStrategy"\s*:\s*(?P<rest>.*)$')
_MAX_TEXT = 400
# What a message must hold for any signal to come of it (or of the message beside it): the
# messages' keywords, a /proc/modules address, the device plugin's config, nvidia-smi's GPU
# lines, table rows and Fabric section. Messages without one are passed over unsplit, so a
# 16 MiB log of eight million short lines is read in seconds. A new signal read from a log
# line needs its word here (tests/test_triage.py holds the readers' own examples to it).
_MARK = re.compile(
    "|".join(
        [
            *map(
                re.escape,
                (
                    *KEYWORDS,
                    " 0x",
                    "PCI ID:",
                    "Running with config:",
                    "deviceListStrategy",
                    "UUID: GPU-",
                    "Product Name",
                    "Fabric",
                    "State",
                    "Status",
                ),
            ),
            r"^\|\s+\d+\s",  # a GPU row of nvidia-smi's table
        ]
    ),
    re.MULTILINE,
)
# How far after ``Running with config:`` the device plugin's strategy is looked for, and how
# many lines its list may take.
_STRATEGY_SEARCH = 200
_STRATEGY_LINES = _STRATEGY_SEARCH + 20


class _Line:
    """One message with its place: the node its prefix names and the kernel uptime, if any."""

    __slots__ = ("follows", "message", "node", "number", "raw", "time", "uptime")

    def __init__(
        self, number: int, raw: str, node: str, uptime: str, message: str, time: str = ""
    ) -> None:
        self.number = number
        self.raw = raw
        self.node = node
        self.uptime = uptime
        self.message = message
        self.time = time
        # Whether it comes right after the message before it (none between was passed over).
        self.follows = True


def _split(number: int, raw: str) -> _Line:
    line = raw.rstrip("\r\n")
    found = _DMESG.match(line)
    if found:
        # Multi-line kernel messages arrive joined by a literal "\x0a".
        message = found["msg"].replace("\\x0a", "\n")
        return _Line(number, line, found["node"] or "", "", message, iso_time(found["time"]))
    node = ""
    journal = _JOURNAL.match(line)
    if journal:
        # journalctl / syslog: the host names the node; the year is not printed.
        clock = f"{journal['month']} {int(journal['day'])} {journal['clock']}"
        return _Line(number, raw.rstrip("\r\n"), journal["host"], "", journal["msg"], clock)
    prefixed = _NODE_PREFIX.match(line)
    if prefixed and not line.startswith(("NVRM", "nvidia")):
        node, line = prefixed["node"], prefixed["msg"]
    stamped = _UPTIME.match(line)
    if stamped:
        return _Line(number, raw.rstrip("\r\n"), node, stamped["uptime"], stamped["msg"])
    klog = _KLOG.match(line)
    if klog:
        return _Line(number, raw.rstrip("\r\n"), node, "", klog["msg"])
    dated = _GO_LOG.match(line) or _ISO_LINE.match(line)
    if dated:
        # `talosctl logs <service>`: Go's log stamp; `kubectl logs --timestamps`: RFC 3339.
        time = iso_time(f"{dated['date'].replace('/', '-')}T{dated['clock']}{dated['zone'] or ''}")
        return _Line(number, raw.rstrip("\r\n"), node, "", _json_message(dated["msg"]), time)
    if line.startswith("{"):
        message, time = _json_line(line)
        return _Line(number, raw.rstrip("\r\n"), node, "", message, time)
    return _Line(number, raw.rstrip("\r\n"), node, "", line)


@functools.lru_cache(maxsize=4096)
def iso_time(text: str) -> str:
    """An RFC 3339 time as UTC with whole seconds ("2025-10-30T18:20:10Z"); "" if it is not
    one. Times without a zone are taken as UTC, as talosctl and Go's log print them."""
    found = _RFC3339.match(text.strip())
    if not found:
        return ""
    if found["zone"] in (None, "Z", "+00:00") and found["clock"] < "24":
        # UTC already: no arithmetic (a log repeats this for every line).
        return f"{found['date']}T{found['clock']}Z"
    try:
        when = datetime.fromisoformat(
            f"{found['date']}T{found['clock']}{found['zone'] or ''}".replace("Z", "+00:00")
        )
    except ValueError:
        return ""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json_message(message: str) -> str:
    return _json_line(message)[0] if message.startswith("{") else message


def _json_line(line: str) -> tuple[str, str]:
    """The message and time of a structured log line (zap/slog JSON, as kubelet, machined
    and the NVIDIA operators print it)."""
    try:
        value = json.loads(line)
    except ValueError:
        return line, ""
    if not isinstance(value, dict):
        return line, ""
    parts = [str(value.get(key)) for key in ("msg", "message", "error", "err") if value.get(key)]
    stamp = value.get("ts") or value.get("time") or value.get("timestamp") or ""
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        time = datetime.fromtimestamp(float(stamp), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    else:
        time = iso_time(str(stamp))
    return (" ".join(parts) or line), time


def _non_blank(text: str) -> Iterator[tuple[int, str]]:
    """Each line holding more than white space, with its number. The scan for the next
    non-space character runs in C, so 16 MiB of blank lines costs no list of 16 million."""
    number, counted, position = 1, 0, 0
    while True:
        found = _NON_SPACE.search(text, position)
        if found is None:
            return
        start = text.rfind("\n", 0, found.start()) + 1
        end = text.find("\n", found.start())
        end = len(text) if end < 0 else end
        number += text.count("\n", counted, start)
        counted = start
        yield number, text[start:end]
        position = end + 1


_NON_SPACE = re.compile(r"\S")


def _lines(text: str) -> Iterator[_Line]:
    """Messages in order; a kernel continuation line is joined to the message before it.

    Only messages that hold a :data:`_MARK` are split into their parts, with the lines that
    follow ``Running with config:``; the rest are passed over whole (a 16 MiB log of short
    lines holds eight million of them). Continuation lines are gathered in a list and joined
    once: joining them one at a time copied the message for every line (200,000 took 24 s)."""
    if not _MARK.search(text):
        return
    first_number = 0
    first_raw: str | None = None
    parts: list[str] = []
    keep_all = 0
    passed_over = False
    for number, raw in chain(_non_blank(text), ((0, ""),)):
        if first_raw is not None:
            if raw.startswith("    "):
                continued = _CONTINUATION.match(raw)
                if continued:
                    parts.append(continued["msg"])
                    continue
            if keep_all or _MARK.search(first_raw) or (parts and _MARK.search("".join(parts))):
                keep_all = max(keep_all - 1, 0)
                line = _split(first_number, first_raw)
                if parts:
                    line.message += "\n" + "\n".join(parts)
                    # Evidence shows at most _MAX_TEXT characters of it.
                    line.raw = _cut("\\x0a".join([line.raw, *parts]))
                    parts.clear()
                if "Running with config:" in line.message:
                    keep_all = _STRATEGY_LINES
                line.follows = not passed_over
                passed_over = False
                yield line
            else:
                parts.clear()
                passed_over = True
        if not raw:
            break
        first_number, first_raw = number, raw


def _cut(text: str) -> str:
    """The line, shortened in its middle: an error's reason is at its end (a CSR error's x509
    clause), its kind at its start."""
    text = text.strip()
    if len(text) <= _MAX_TEXT:
        return text
    half = (_MAX_TEXT - 1) // 2
    return text[:half] + "…" + text[-(_MAX_TEXT - 1 - half) :]


def recognise_log(text: str) -> bool:
    """Whether ``text`` holds at least one line this reader knows what to make of."""
    return any(True for _ in read_log(text, "-"))


# A console or dmesg pasted where line breaks were lost (a web form, a chat): the next record
# starts at the next uptime stamp or dmesg prefix inside the line.
_JOINED = re.compile(
    r" (?=\[\s*\d+\.\d{6}\] |(?:[\w.:-]+: )?(?:kern|user|daemon):\s+[a-z]+: \[\d{4}-)"
)


def _unjoined(lines: Iterator[_Line]) -> Iterator[_Line]:
    for line in lines:
        if line.raw.count("] ") < 2 or not _JOINED.search(line.raw):
            yield line
            continue
        for part in _JOINED.split(line.raw):
            if part.strip():
                yield _split(line.number, part)


# Signals of one kind for one node kept from one log: the first ones and the last. A real log
# holds a few hundred (a boot loop of two days: forty reboots); a log of nothing but one
# message repeated would otherwise hold millions, each kept in memory.
MAX_SIGNALS_OF_A_KIND = 1000


def read_log(text: str, file: str) -> Iterator[Signal]:
    """The signals of a line-oriented log, read in one pass: a message is looked at with the
    one before it and the one after it and, after ``Running with config:``, the few hundred
    after it. Of one kind for one node, the first :data:`MAX_SIGNALS_OF_A_KIND` - 1 and the
    last are kept."""
    counts: dict[tuple[Kind, str], int] = {}
    latest: dict[tuple[Kind, str], Signal] = {}
    for signal in _read_log(text, file):
        key = (signal.kind, signal.node)
        seen = counts.get(key, 0) + 1
        counts[key] = seen
        if seen < MAX_SIGNALS_OF_A_KIND:
            yield signal
        else:
            latest[key] = signal
    yield from latest.values()


def _read_log(text: str, file: str) -> Iterator[Signal]:
    source = _unjoined(_lines(text))
    ahead: deque[_Line] = deque()
    previous: _Line | None = None
    listed_modules: dict[str, int] = {}
    fabric_until = -1  # the State of nvidia-smi -q's Fabric section is on one of these lines
    while True:
        line = ahead.popleft() if ahead else next(source, None)
        if line is None:
            break
        before, previous = (previous if line.follows else None), line
        evidence = Evidence(file, line.number, _cut(line.raw))
        data: tuple[tuple[str, str], ...] = ()
        if line.uptime:
            data = (("uptime", line.uptime),)
        elif line.time:
            # A year-less journal stamp is a clock reading, not a time.
            data = (("time" if line.time[:1].isdigit() else "clock", line.time),)
        message = line.message
        row = _SMI_ROW.match(message)
        if row:
            # A GPU row of nvidia-smi's table: the driver is up and sees this GPU.
            bus = row["bus"].lower()
            yield Signal(
                Kind.GPU_LISTED,
                line.node,
                evidence,
                row["name"].strip(),
                (*data, ("uuid", ""), ("address", bus[4:] if len(bus) == 16 else bus)),
            )
            continue
        smi = _SMI_GPU.match(message) or _SMI_PRODUCT.match(message)
        if smi:
            # `nvidia-smi -L` / `-q`: the driver is up and sees this GPU.
            uuid = smi.groupdict().get("uuid") or ""
            yield Signal(
                Kind.GPU_LISTED, line.node, evidence, smi["name"].strip(), (*data, ("uuid", uuid))
            )
            continue
        if _SMI_FABRIC.match(message):
            fabric_until = line.number + 3
            continue
        if line.number <= fabric_until and (fabric := _SMI_STATE.match(message)):
            if not ahead:
                ahead.extend(islice(source, 1))
            after = ahead[0] if ahead and ahead[0].follows else None
            status = _SMI_STATUS.match(after.message) if after else None
            yield Signal(
                Kind.FABRIC_STATE,
                line.node,
                evidence,
                fabric["state"],
                (*data, ("status", status["status"] if status else "")),
            )
            fabric_until = -1
            if fabric["state"] != "In Progress":
                continue
        if "startAllServices" in message and " to be " in message:
            for found in _SERVICE_WAIT.finditer(message):
                yield Signal(Kind.SERVICE_WAITING, line.node, evidence, found["service"], data)
            continue
        module = _PROC_MODULE.match(message) if " 0x" in message else None
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
            ahead.extend(islice(source, _STRATEGY_LINES - len(ahead)))
            strategy = _device_list_strategy(list(ahead))
            if strategy is not None:
                found_line, values = strategy
                yield Signal(
                    Kind.PLUGIN_STRATEGY,
                    line.node,
                    Evidence(file, found_line.number, _cut(found_line.raw)),
                    ",".join(values),
                )
            continue
        for kind in message_kinds(message):
            extra = data
            pci = _PCI_ID.search(message) or (_PCI_ID.search(before.message) if before else None)
            if pci:
                extra = (*extra, ("pci", pci["id"].lower()))
            yield Signal(kind, line.node, evidence, "", extra)
    for node, number in listed_modules.items():
        yield Signal(Kind.MODULES_LISTED, node, Evidence(file, number, "/proc/modules"))


def _device_list_strategy(following: list[_Line]) -> tuple[_Line, list[str]] | None:
    """The ``flags.plugin.deviceListStrategy`` of the JSON printed after ``Running with config:``
    (the device plugin pretty-prints it over many lines), from the lines that follow it."""
    for index, line in enumerate(following[:_STRATEGY_SEARCH]):
        found = _STRATEGY.search(line.message)
        if not found:
            continue
        rest = found["rest"].strip().rstrip(",")
        collected = rest
        if rest.startswith("[") and "]" not in rest:
            for more in following[index + 1 : index + 20]:
                collected += more.message.strip()
                if "]" in more.message:
                    break
        try:
            value = json.loads(collected.rstrip(","))
        except ValueError:
            return None
        values = [value] if isinstance(value, str) else value
        if isinstance(values, list) and all(isinstance(item, str) for item in values):
            return line, values
        return None
    return None
