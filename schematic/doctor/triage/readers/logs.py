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
import re
from collections import deque
from collections.abc import Iterator
from itertools import islice

from schematic.doctor.triage.readers.messages import (
    FAILURE_WORDS,
    KEYWORDS,
    message_kinds,
    unknown_failure,
)
from schematic.doctor.triage.signals import Evidence, Kind, Signal
from schematic.doctor.triage.values import (
    epoch_time,
    json_decoder,
    number,
    parse_time,
    unreadable,
    utc_stamp,
)
from schematic.redact import redacted

__all__ = ["read_log", "recognise_log"]

_JSON = json_decoder()

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
# nvidia-smi -L ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)") and -q ("Product Name : ...").
_SMI_GPU = re.compile(r"^GPU \d+: (?P<name>.+?) \(UUID: (?P<uuid>GPU-[0-9a-fA-F-]+)\)")
# "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:19:00.0 Off |  ..." (nvidia-smi's table)
_SMI_ROW = re.compile(
    r"^\|\s+\d+\s+(?P<name>\S(?:.*\S)?)\s+(?:On|Off)\s+\|\s+(?P<bus>[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:"
    r"[0-9A-Fa-f]{2}\.[0-7])\s"
)
_SMI_PRODUCT = re.compile(r"^\s*Product Name\s+: (?P<name>\S.*)$")
_SMI_FABRIC = re.compile(r"^\s*Fabric\s*$")
_SMI_STATE = re.compile(r"^\s*State\s*:\s*(?P<state>\S(?:.*\S)?)\s*$")
_SMI_STATUS = re.compile(r"^\s*Status\s*:\s*(?P<status>\S(?:.*\S)?)\s*$")
_CONTINUATION = re.compile(r"^\s{4,}(?P<msg>NVRM: .*)$")

# Talos up to 1.13 quotes the state ("up"); 1.14 writes up/finished.
_SERVICE_WAIT = re.compile(r'service "(?P<service>[^"]+)" to be (?:"[a-z]+"|[a-z/]+)')
# Talos's service runner logs each state change as ``service[<id>](<State>): <message>``
# (internal/app/machined/pkg/system/service_runner.go, UpdateState).
_SERVICE_RUNNER = re.compile(r"\bservice\[(?P<service>[\w.-]+)\]\((?P<state>[A-Z][a-z]+)\): ")
# Talos's KernelModuleSpecController ("error loading module %q: %w", kernel_module_spec.go); the
# quote arrives as \", or as \x5c" from talosctl dmesg.
_MODULE_LOAD = re.compile(
    r'error loading module (?:\\x5c|\\)?"(?P<module>[\w-]+)(?:\\x5c|\\)?": (?P<reason>[^"}]*)'
)
# A service a condition waits for, as the runner's Waiting message, `talosctl service <id>`
# events and `talosctl health` quote it (service_events.go, String).
_WAITING_FOR = re.compile(r'\b[Ww]aiting for service "(?P<service>[^"]+)" to be ')
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
# 16 MiB log of eight million short lines is read in seconds. A message read that holds no
# signal changes nothing: the messages beside it are judged alone as when it is passed over.
# A new signal read from a log line needs its word here (tests/test_triage.py holds the
# readers' own examples to it).
_MARK = re.compile(
    "|".join(
        [
            *map(
                re.escape,
                (
                    *KEYWORDS,
                    *FAILURE_WORDS,
                    " 0x",
                    "PCI ID:",
                    "Running with config:",
                    "deviceListStrategy",
                    "UUID: GPU-",
                    "Product Name",
                    "Fabric",
                    "State",
                    "Status",
                    "service[",
                    "aiting for service",
                    "error loading module",
                ),
            ),
            # a GPU row of nvidia-smi's table; not tied to the line's start, which would keep
            # the search from skipping to the characters a mark can start with
            r"\|[^\S\n]+\d+[^\S\n]",
        ]
    ),
)
# How far after ``Running with config:`` the device plugin's strategy is looked for, and how
# many lines its list may take.
_STRATEGY_SEARCH = 200
_STRATEGY_LINES = _STRATEGY_SEARCH + 20


class _Line:
    """One message with its place: the node its prefix names and the kernel uptime, if any."""

    __slots__ = (
        "follows",
        "message",
        "node",
        "number",
        "parts",
        "quoted",
        "raw",
        "time",
        "uptime",
    )

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
        # The kernel continuation lines joined to it, and the evidence it shows once quoted.
        self.parts: tuple[str, ...] = ()
        self.quoted: Evidence | None = None

    def continued(self, parts: list[str]) -> None:
        """Join a kernel message's continuation lines to it."""
        if parts:
            self.parts = tuple(parts)
            self.message += "\n" + "\n".join(parts)

    def evidence(self, file: str) -> Evidence:
        """The message as evidence, worked out the first time a signal quotes it: most lines
        read show no signal, and quoting costs the redactor's patterns."""
        if self.quoted is None:
            self.quoted = Evidence(file, self.number, _quote([self.raw, *self.parts]))
        return self.quoted


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
    when = parse_time(text)
    return utc_stamp(when) if when else ""


def _json_message(message: str) -> str:
    return _json_line(message)[0] if message.startswith("{") else message


def _json_line(line: str) -> tuple[str, str]:
    """The message and time of a structured log line (zap/slog JSON, as kubelet, machined
    and the NVIDIA operators print it)."""
    try:
        value = _JSON.decode(line)
    except ValueError:
        return line, ""
    if not isinstance(value, dict):
        return line, ""
    parts = [str(value.get(key)) for key in ("msg", "message", "error", "err") if value.get(key)]
    stamp = value.get("ts") or value.get("time") or value.get("timestamp") or ""
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        when = epoch_time(stamp)
        time = utc_stamp(when) if when else ""
    else:
        time = iso_time(str(stamp))
    return (" ".join(parts) or line), time


# A kernel message's continuation lines (indented, without their own stamp), however many,
# with the blank lines between them: matched in one call from the end of the message's first
# line. Possessive, as a blank line is never a continuation: nothing is given back.
_CONTINUED = re.compile(r"(?:\n(?:[^\S\n]*+\n)*+ {4}[^\S\n]*+NVRM: [^\n]*+)*+")
_CONTINUATION = re.compile(r"^ {4}[^\S\n]*(NVRM: [^\n]*)", re.MULTILINE)
_NON_SPACE = re.compile(r"\S")
# Of the messages holding a marker, one log is read in full up to this many from its start
# and this many before its end; the lines between are counted, not read. A Talos boot prints
# some hundreds of marked messages, so a two-day console of 70-minute loops (about 40 boots)
# is read whole; a file of nothing but marked lines, each naming another node, costs some
# 100 us a message: at 25,000 each way, 5.2 s (make bench), over the 4 s the budget allows.
READ_FIRST = 10_000
READ_LAST = 10_000


def _message_at(text: str, start: int) -> tuple[str, list[str], int]:
    """The message whose first line starts at ``start``: that line, the text of the
    continuation lines joined to it, and the offset where the last of them ends."""
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    continued = _CONTINUED.match(text, end)  # it always matches, if only the empty string
    block = continued.end() if continued else end
    return text[start:end], (_CONTINUATION.findall(text, end, block) if block > end else []), block


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _head_of(text: str, start: int, floor: int) -> int:
    """Where the message holding the line at ``start`` begins: that line, or for a
    continuation line the nearest line before it that is neither blank nor one (the first
    line at ``floor`` or after it, at the latest)."""
    head = start
    while _CONTINUATION.match(text, head) and head > floor:
        before = head
        while True:
            before = _line_start(text, before - 1) if before > 0 else -1
            if before < floor:
                return head
            if _NON_SPACE.search(text, before, text.find("\n", before)):
                break
        head = before
    return head


def _lines(text: str, notes: list[str]) -> Iterator[_Line]:
    """Messages in order, each with the kernel continuation lines joined to it.

    Only messages that hold a :data:`_MARK` (or follow ``Running with config:``) are split
    into their parts: the marks are found by one pattern over the whole text, so the lines
    between them cost nothing here (a 16 MiB log of short lines holds eight million). Past
    :data:`READ_FIRST` messages, only those holding the last :data:`READ_LAST` marks are read
    (and, up to as many again, the lines after ``Running with config:`` among them); the lines
    between are counted, and a note in ``notes`` says which."""
    position = 0  # where the next message may start: all before it is read or passed over
    number, counted = 1, 0  # the number of the line at offset ``counted``
    done = 0  # the end of the last message yielded
    read = 0  # messages yielded
    keep = 0  # how many of the next messages are read, marked or not
    while position <= len(text):
        if read == READ_FIRST:
            keep = 0  # the start is read: from here on, the end
        found = (_NON_SPACE if keep else _MARK).search(text, position)
        if found is None:
            return
        start = _head_of(text, _line_start(text, found.start()), position)
        if keep:
            keep -= 1
        elif read == READ_FIRST:
            tail = _tail(text, start, position)
            if tail > start:
                first = number + text.count("\n", counted, position)
                last = number + text.count("\n", counted, tail) - 1
                notes.append(
                    f"lines {first:,}-{last:,} were counted, not read: past {READ_FIRST:,} "
                    "messages that may be evidence, a log is read only at its end"
                )
                start = tail
        first_line, parts, end = _message_at(text, start)
        number += text.count("\n", counted, start)
        counted = start
        line = _split(number, first_line)
        line.continued(parts)
        read += 1
        if "Running with config:" in line.message and read < READ_FIRST + 2 * READ_LAST:
            keep = _STRATEGY_LINES
        line.follows = _NON_SPACE.search(text, done, start) is None
        done = end
        position = end + 1
        yield line


def _tail(text: str, start: int, floor: int) -> int:
    """Where the last :data:`READ_LAST` marked messages from ``start`` on begin: ``start``
    itself when there are no more than that."""
    marks = deque(map(re.Match.start, _MARK.finditer(text, start)), maxlen=READ_LAST)
    if len(marks) < READ_LAST:
        return start
    return _head_of(text, _line_start(text, marks[0]), floor)


def _quote(lines: list[str]) -> str:
    """A message's lines as evidence: joined by a literal ``\\x0a``, as ``talosctl dmesg``
    joins them, credentials hidden, then cut to :data:`_MAX_TEXT` in the middle (:func:`_cut`).

    Credentials are hidden before the cut, so no cut halves one, and line by line (no
    credential runs on past a line's end), so only the lines at the message's two ends that can
    show are redacted: a message of a million continuation lines costs what its ends cost."""
    lines[0] = lines[0].lstrip()
    lines[-1] = lines[-1].rstrip()
    head = _redacted_until_shown(lines)
    if len(head) < len(lines):
        # What lies between two ends this long is never shown: the cut drops it.
        tail = _redacted_until_shown(lines[: len(head) - 1 : -1])
        head += tail[::-1]
    return _cut(_LINE_BREAK.join(head))


_LINE_BREAK = "\\x0a"


def _redacted_until_shown(lines: list[str]) -> list[str]:
    """``lines`` redacted one by one, from the first, until they are long enough to fill
    either side of a cut."""
    shown: list[str] = []
    length = 0
    for line in lines:
        shown.append(redacted(line))
        length += len(shown[-1]) + len(_LINE_BREAK)
        if length > _MAX_TEXT:
            break
    return shown


def _cut(text: str) -> str:
    """The text, shortened in its middle: an error's reason is at its end (a CSR error's x509
    clause), its kind at its start."""
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
        records = [_split(line.number, part) for part in _JOINED.split(line.raw) if part.strip()]
        # The continuation lines go on from the last record of the line.
        records[-1].continued(list(line.parts))
        yield from records


# Signals of one kind for one node kept from one log: the first ones and the last. A real log
# holds a few hundred (a boot loop of two days: forty reboots); a log of nothing but one
# message repeated would otherwise hold millions, each kept in memory.
MAX_SIGNALS_OF_A_KIND = 1000


def read_log(text: str, file: str, notes: list[str] | None = None) -> Iterator[Signal]:
    """The signals of a line-oriented log, read in one pass: a message is looked at with the
    one before it and the one after it and, after ``Running with config:``, the few hundred
    after it. Of one kind for one node, the first :data:`MAX_SIGNALS_OF_A_KIND` - 1 and the
    last are kept. What of the log was not read is said in ``notes``."""
    counts: dict[tuple[Kind, str], int] = {}
    latest: dict[tuple[Kind, str], Signal] = {}
    for signal in _read_log(text, file, [] if notes is None else notes):
        key = (signal.kind, signal.node)
        seen = counts.get(key, 0) + 1
        counts[key] = seen
        if seen < MAX_SIGNALS_OF_A_KIND:
            yield signal
        else:
            latest[key] = signal
    yield from latest.values()


def _read_log(text: str, file: str, notes: list[str]) -> Iterator[Signal]:
    source = _unjoined(_lines(text, notes))
    ahead: deque[_Line] = deque()
    previous: _Line | None = None
    listed_modules: dict[str, int] = {}
    fabric_until = -1  # the State of nvidia-smi -q's Fabric section is on one of these lines
    while True:
        line = ahead.popleft() if ahead else next(source, None)
        if line is None:
            break
        before, previous = (previous if line.follows else None), line
        data: tuple[tuple[str, str], ...] = ()
        if line.uptime and number(line.uptime) is None:
            yield unreadable(file, line.number, "kernel uptime", line.uptime)
        elif line.uptime:
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
                line.evidence(file),
                row["name"].strip(),
                (*data, ("uuid", ""), ("address", bus[4:] if len(bus) == 16 else bus)),
            )
            continue
        smi = _SMI_GPU.match(message) or _SMI_PRODUCT.match(message)
        if smi:
            # `nvidia-smi -L` / `-q`: the driver is up and sees this GPU.
            uuid = smi.groupdict().get("uuid") or ""
            yield Signal(
                Kind.GPU_LISTED,
                line.node,
                line.evidence(file),
                smi["name"].strip(),
                (*data, ("uuid", uuid)),
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
                line.evidence(file),
                fabric["state"],
                (*data, ("status", status["status"] if status else "")),
            )
            fabric_until = -1
            if fabric["state"] != "In Progress":
                continue
        if "startAllServices" in message and " to be " in message:
            for found in _SERVICE_WAIT.finditer(message):
                yield Signal(
                    Kind.SERVICE_WAITING, line.node, line.evidence(file), found["service"], data
                )
            continue
        runner = _SERVICE_RUNNER.search(message) if "service[" in message else None
        if runner:
            state = runner["state"]
            yield Signal(
                Kind.SERVICE_STATE,
                line.node,
                line.evidence(file),
                runner["service"],
                (
                    *data,
                    ("running", "true" if state == "Running" else "false"),
                    ("state", state),
                    ("source", "runner"),
                    # The restart runner's "... exited without error, going to restart it" /
                    # "Error running ..., going to restart forever" (runner/restart/restart.go).
                    ("restart", "true" if ", going to restart" in message else ""),
                ),
            )
        if "aiting for service" in message:
            # The service waited for is not up at that moment: a dependency's own wait.
            for found in _WAITING_FOR.finditer(message):
                yield Signal(
                    Kind.SERVICE_WAITING,
                    line.node,
                    line.evidence(file),
                    found["service"],
                    (*data, ("source", "dependency")),
                )
        if "error loading module" in message:
            for found in _MODULE_LOAD.finditer(message):
                reason = found["reason"].strip().rstrip("\\").strip()
                yield Signal(
                    Kind.MODULE_LOAD_FAILED,
                    line.node,
                    line.evidence(file),
                    found["module"],
                    (*data, ("reason", reason)),
                )
        module = _PROC_MODULE.match(message) if " 0x" in message else None
        if module:
            listed_modules.setdefault(line.node, line.number)
            yield Signal(
                Kind.MODULE_LOADED,
                line.node,
                line.evidence(file),
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
                    found_line.evidence(file),
                    ",".join(values),
                )
            continue
        kinds = message_kinds(message)
        for kind in kinds:
            extra = data
            pci = _PCI_ID.search(message) or (_PCI_ID.search(before.message) if before else None)
            if pci:
                extra = (*extra, ("pci", pci["id"].lower()))
            yield Signal(kind, line.node, line.evidence(file), "", extra)
        if not kinds and (origin := unknown_failure(message)):
            yield Signal(Kind.UNKNOWN_FAILURE, line.node, line.evidence(file), origin, data)
    for node, listed_at in listed_modules.items():
        yield Signal(Kind.MODULES_LISTED, node, Evidence(file, listed_at, "/proc/modules"))


def _device_list_strategy(following: list[_Line]) -> tuple[_Line, list[str]] | None:
    """The ``flags.plugin.deviceListStrategy`` of the JSON printed after ``Running with config:``
    (the device plugin pretty-prints it over many lines), from the lines that follow it."""
    for index, line in enumerate(following[:_STRATEGY_SEARCH]):
        found = _STRATEGY.search(line.message)
        if not found:
            if "Running with config:" in line.message:
                return None  # the next start's config: each line is searched for one start
            continue
        rest = found["rest"].strip().rstrip(",")
        collected = rest
        if rest.startswith("[") and "]" not in rest:
            for more in following[index + 1 : index + 20]:
                collected += more.message.strip()
                if "]" in more.message:
                    break
        try:
            value = _JSON.decode(collected.rstrip(","))
        except ValueError:
            return None
        values = [value] if isinstance(value, str) else value
        if isinstance(values, list) and all(isinstance(item, str) for item in values):
            return line, values
        return None
    return None
