"""Reading input files and composing their YAML with bounded time and memory.

Every YAML file the tool reads (schematics, cluster files, profiles, lint inputs, hardware dumps)
goes through here, so one hostile file ends in one clear error instead of a hang, a memory blow-up
or a traceback:

- **Size**: a file is read at most its kind's limit far (:data:`BUDGETS`, the table
  ``docs/security.md`` shows: from 256 KiB for a profile to 64 MiB for JSON evidence), unless
  ``--max-input-size`` gives one limit for every kind; so ``/dev/zero`` stops at the cap. Each
  limit is what its kind costs at most 5 s and 500 MB to read in its worst shape (a million
  one-character items in a flow list, a million keys, a million documents), and far above any
  real input of the kind (``benchmarks/hostile_shapes.py``). Too large is an
  :class:`InputTooLargeError`, which is an ``OSError``: readers report it as "cannot read".
- **Text**: UTF-8 (a BOM is dropped); anything else is one :class:`NotTextError` (also an
  ``OSError``) naming the byte. (Schematic bodies may also be UTF-16, as the factory's are:
  :mod:`schematic.core.decode` decodes those itself.)
- **Aliases**: the Image Factory decodes with go-yaml, whose ``DefaultAliasCheck`` refuses a
  document "containing excessive aliasing". The same rule is applied here while composing, from
  counts alone: aliases are never expanded, so a billion-laughs document costs what its text
  costs. See :func:`excessive_aliasing`.
- **Nodes**: a kind may also have a most YAML nodes (:attr:`Budget.max_nodes`): each costs the
  composer and the readers about the same whatever its text, so a file of small nodes under the
  size limit (a flow list of one-character items) costs many times what a real one does. The
  node past the budget ends the composing, before anything is built (:class:`TooManyNodesError`).
- **Depth**: go-yaml's ``DefaultDepthCheck`` refuses nesting deeper than 10,000 levels ("exceeded
  max depth of 10000") and libyaml, PyYAML's fast parser, deeper than 1,000. The readers built on
  the composed nodes (and the canonical emitter, whose output grows with the square of the depth)
  recurse once or twice per level, so nesting deeper than :data:`MAX_NESTING` levels is refused
  here first, long before Python's recursion limit, at the line where it happens. A schematic
  nested 101 to 10,000 levels deep is therefore refused here though the factory would take it.

Source of the go-yaml rules: ``internal/libyaml/options.go`` (``DefaultAliasCheck``,
``DefaultDepthCheck``) and ``internal/libyaml/constructor.go`` (where the counts are kept) of
go-yaml v4 (github.com/yaml/go-yaml, tag v4.0.0-rc.6), recorded in ``schematic/data/SOURCES.md``.

The composer here is iterative (no recursion at any depth) and builds the same ``yaml.Node``
graph PyYAML's would, an alias being the anchored node itself; unlike PyYAML's, and like
go-yaml's, it lets an anchor be defined again (the later definition wins).
"""

from __future__ import annotations

import enum
import errno
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "BUDGETS",
    "BUDGET_OF",
    "DEFAULT_MAX_INPUT_SIZE",
    "GO_YAML_MAX_DEPTH",
    "INPUT_LIMITS",
    "MAX_NESTING",
    "MAX_NUMBER_DIGITS",
    "Budget",
    "InputKind",
    "InputTooLargeError",
    "NotRegularFileError",
    "NotTextError",
    "Resolver",
    "TooManyNodesError",
    "YamlLimitError",
    "check_file_size",
    "check_size",
    "check_syntax",
    "compose_all",
    "compose_first",
    "compose_single",
    "decode_text",
    "excessive_aliasing",
    "files_below",
    "format_size",
    "load",
    "max_input_size",
    "nesting_exceeds",
    "node_budget",
    "parse_size",
    "read_bytes",
    "read_problem",
    "read_text",
    "set_max_input_size",
]

DEFAULT_MAX_INPUT_SIZE = 16 * 1024 * 1024
_MIB = 1024 * 1024


class InputKind(enum.Enum):
    """What an input is, for its size limit; the value names it in a message."""

    SCHEMATIC = "a schematic"
    PROFILE = "a hardware profile"
    CLUSTER = "a cluster file"
    LINT = "a lint input"
    CONFIG_PATCH = "a Talos config patch"
    HARDWARE = "a hardware dump"
    HARDWARE_DOCUMENTS = "a YAML or JSON hardware dump"
    EVIDENCE = "a triage evidence file"
    EVIDENCE_DOCUMENTS = "YAML triage evidence"
    EVIDENCE_JSON = "JSON triage evidence"
    METRICS = "a metrics query answer"
    OUTPUT_RECORD = "an output directory's index or journal"
    FACTORY_ANSWER = "a factory's answer"
    FACTORY_LIST = "a factory's extension, overlay or version list"
    OTHER = "an input"


@dataclass(frozen=True)
class Budget:
    """One kind of input: the inputs of the kind, how large a real one is, and the size limit
    under which any of them, in its worst shape, costs at most 5 s and 500 MB (the figures:
    ``benchmarks/hostile_shapes.py``, ``benchmarks/triage.py``). ``docs/security.md`` shows
    this table as it is (``tests/test_input_budgets.py``). ``max_nodes``: the most YAML nodes
    the kind's reader composes, where its size limit alone lets a file of small nodes cost more
    than the promise; ``real_nodes`` says how many a real input of the kind holds."""

    kind: InputKind
    inputs: str
    real: str
    limit: int
    max_nodes: int | None = None
    real_nodes: str = ""


# Each kind's default limit: far above the kind's real inputs, and low enough that its worst
# shape costs at most 5 s and 500 MB. YAML costs about 3 s of CPU and 250 MB a MiB in its worst
# shapes (a flow list of one-character items, a million small documents); line-oriented text
# (lspci, logs) and JSON a small part of that. The index `generate --out` writes takes about
# 1.3 kB a GPU pool (2 kB with every output kind), its journal less; anyone with write access
# to the repository may have replaced either. What a YAML index costs is its nodes: planted
# ones of small nodes under 1,792 KiB cost `generate --out` 8.4 s and 456 MB (a flow list of
# mappings), and `check` 13 s. So it is read within its nodes as well. Measured on `generate
# --out` of a thousand pools (examples/cluster.yaml's four pools, 250 of each), counted as
# compose_all counts: 46,037 nodes in 1.3 MB (the default kinds), 60,048 in 1.9 MB (every
# output kind). 100,000 nodes is 1.7 times the larger (at 120,000, `check` of an index in the
# tool's shape up to them took 3.8 s). Within them the size limit is 3 MiB, which
# holds a thousand pools of every kind with room (1,792 KiB did not): a planted index in the
# tool's shape up to the nodes costs `triage --against` 2.1 s and 80 MB, `check` 2.1 s; a
# planted journal of 3 MiB `generate --out` 1.9 s.
# A metrics answer costs some 0.25 s a MiB (one series of samples) to 0.5 s a MiB (a series
# per node): 256 MiB of it took 20-31 s.
BUDGETS: tuple[Budget, ...] = (
    # Lowered from 1 MiB (a schematic, a config patch, a YAML hardware dump, a profile) and
    # 16 MiB (lspci text, logs) where make bench measured a worst shape over 4 s (5 s less
    # 20 %) on the 2-core reference machine: `init --pool` on a profile took 7.8 s, `lint
    # --config-patch` 6.1 s, detect on lspci text 7.2 s.
    Budget(InputKind.SCHEMATIC, "schematic (`id`, `register`, `verify`)", "a few kB", _MIB // 2),
    Budget(
        InputKind.PROFILE,
        "hardware profile (`profile: ./f`, `lint --hardware`, `detect --against`, `init --pool`)",
        "a few kB",
        _MIB // 4,
    ),
    Budget(
        InputKind.CLUSTER,
        "cluster file (`generate`, `check`, `upgrade`, `verify`)",
        "a thousand pools: 250 to 500 kB; ten thousand terse ones: 940 kB",
        _MIB,
        # A cluster file's worst shapes (a flow list of mappings: 390,000 nodes) cost `check`
        # 3.5-3.8 s at 1 MiB, within a few tenths of the 4 s make bench allows. Real files hold
        # some 10 nodes a pool: ten thousand terse pools (benchmarks/upgrade.py) 106,009 nodes
        # in 940 kB, the most the size limit lets a real file hold; this is about twice that.
        max_nodes=200_000,
        real_nodes="ten thousand pools of two to four keys each: 106,009",
    ),
    Budget(
        InputKind.LINT,
        "lint input (a file lint reads)",
        "a rendered chart: hundreds of kB",
        _MIB,
    ),
    Budget(
        InputKind.CONFIG_PATCH,
        "Talos config patch (`lint --config-patch @f`, a patch a talconfig or Omni template names)",
        "a few kB",
        3 * _MIB // 8,
    ),
    Budget(
        InputKind.HARDWARE_DOCUMENTS,
        "hardware dump: YAML or JSON (`talosctl get pcidevices`)",
        "a node: 30 kB",
        _MIB // 2,
    ),
    Budget(InputKind.HARDWARE, "hardware dump: lspci text", "a node: 5 kB; a fleet: MBs", 6 * _MIB),
    Budget(
        InputKind.EVIDENCE,
        "triage evidence: logs, consoles, tables",
        "a two-day boot loop: MBs",
        6 * _MIB,
    ),
    Budget(
        InputKind.EVIDENCE_DOCUMENTS,
        "triage evidence: YAML",
        "a cluster's objects (give JSON: read as it streams)",
        _MIB,
    ),
    Budget(
        InputKind.EVIDENCE_JSON,
        "triage evidence: JSON (`kubectl get -o json`, `talosctl get -o json`)",
        "5,000 pods: 56 MB",
        64 * _MIB,
    ),
    Budget(
        InputKind.METRICS,
        "triage evidence: a Prometheus or VictoriaMetrics query answer",
        "a day of one metric, 200 nodes, 5-minute steps: 1.5 MB",
        4 * _MIB,
    ),
    Budget(
        InputKind.OUTPUT_RECORD,
        "output directory's `index.yaml` and journal (`generate --out`, `check`, "
        "`triage --against`; `lint` reads an `index.yaml` the tool wrote by it)",
        "a thousand GPU pools: 1.3 MB (of every output kind: 1.9 MB)",
        3 * _MIB,
        max_nodes=100_000,
        real_nodes="a thousand GPU pools of every output kind: 60,048",
    ),
    Budget(
        InputKind.FACTORY_ANSWER,
        "a factory's answer (a schematic, an error body)",
        "a few kB",
        16 * _MIB,
    ),
    # Each element becomes an object and a validated model, about 150 bytes of memory a byte
    # of answer: 1 MiB costs about 150 MB, where 12 MB of a million names cost 1.7 GB.
    Budget(
        InputKind.FACTORY_LIST,
        "a factory's extension, overlay or version list",
        "tens of kB",
        _MIB,
    ),
    Budget(InputKind.OTHER, "any other input", "-", DEFAULT_MAX_INPUT_SIZE),
)
INPUT_LIMITS: dict[InputKind, int] = {budget.kind: budget.limit for budget in BUDGETS}
BUDGET_OF: dict[InputKind, Budget] = {budget.kind: budget for budget in BUDGETS}
GO_YAML_MAX_DEPTH = 10_000
MAX_NESTING = 100
# No input takes a number near this long; Python refuses to convert an integer of more than
# 4,300 decimal digits to or from text, and a hex or sexagesimal numeral of 1,000 characters
# stays below that.
MAX_NUMBER_DIGITS = 1000

_TOO_DEEP = (
    f"nested deeper than {MAX_NESTING} levels, the most talos-schematic reads "
    f"(go-yaml, the factory's parser, stops at {GO_YAML_MAX_DEPTH})"
)

_TOO_LONG_NUMBER = (
    f"a number of more than {MAX_NUMBER_DIGITS:,} digits, longer than any value "
    "talos-schematic reads (quote it if it is meant as text)"
)
# What a reader may turn into an integer: decimal, 0x/0o/0b, YAML 1.1's 0-octal and 1:20:30.
_NUMERAL = re.compile(r"[-+]?[0-9][0-9a-fA-FxXoObB_:]*")

_FastLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# How a reader types untagged nodes: PyYAML's ``resolve(kind, value, implicit)``.
Resolver = Callable[[type[yaml.Node], Any, Any], str]

# --max-input-size: one limit for every kind; None: each kind's own.
_max_input_size: int | None = None


class InputTooLargeError(OSError):
    """An input larger than the size limit (an ``OSError``, so readers say "cannot read")."""

    def __init__(self, limit: int, kind: InputKind | None = None, size: int | None = None) -> None:
        if kind in (None, InputKind.OTHER) or _max_input_size is not None:
            what = f"the {format_size(limit)} input limit"
        else:
            what = f"{format_size(limit)}, the limit for {kind.value}"
        # The size when it is known before reading (a file's), so the refusal says by how much.
        larger = f"{size:,} bytes, larger" if size is not None else "larger"
        super().__init__(errno.EFBIG, f"{larger} than {what} (raise it with --max-input-size)")


class NotTextError(OSError):
    """An input that is not UTF-8 (or BOM-marked UTF-16) text."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EILSEQ, f"not UTF-8 text ({reason})")


class NotRegularFileError(OSError):
    """A FIFO, socket or device named as an input: opening a FIFO waits for a writer forever and
    a device may never end, so neither is opened."""

    def __init__(self) -> None:
        super().__init__(
            errno.EINVAL,
            "not a regular file (a FIFO, socket or device); give a file, or - for standard input",
        )


class YamlLimitError(yaml.MarkedYAMLError):
    """A document refused by a go-yaml safety rule or the nesting limit, before it is built."""


class TooManyNodesError(YamlLimitError):
    """A stream of more YAML nodes than its reader's budget, refused at the node past it."""

    def __init__(self, max_nodes: int, mark: Any) -> None:
        super().__init__(problem=f"holds more than {max_nodes:,} YAML nodes", problem_mark=mark)
        self.max_nodes = max_nodes


def set_max_input_size(limit: int | None) -> None:
    """Set one size limit for every input read from now on (``--max-input-size``); None goes
    back to each kind's own (:data:`INPUT_LIMITS`)."""
    global _max_input_size
    if limit is not None and limit < 1:
        raise ValueError("the input size limit must be at least 1 byte")
    _max_input_size = limit


def max_input_size(kind: InputKind = InputKind.OTHER) -> int:
    """The size limit an input of ``kind`` is read with."""
    return INPUT_LIMITS[kind] if _max_input_size is None else _max_input_size


def node_budget(kind: InputKind) -> int | None:
    """The most YAML nodes an input of ``kind`` is composed to (None: no count): the kind's
    own, or under ``--max-input-size`` as many more or fewer as that limit is than the kind's,
    so the nodes of a larger real input can be read where its size can."""
    budget = BUDGET_OF[kind]
    if budget.max_nodes is None or _max_input_size is None:
        return budget.max_nodes
    return max(1, budget.max_nodes * _max_input_size // budget.limit)


def check_file_size(status: os.stat_result, limit: int, kind: InputKind) -> None:
    """InputTooLargeError, naming the size, for a regular file larger than ``limit``: found
    before a byte is read (a pipe's size is known only once read, and is refused there)."""
    if stat.S_ISREG(status.st_mode) and status.st_size > limit:
        raise InputTooLargeError(limit, kind, status.st_size)


def check_size(text: str | bytes, kind: InputKind) -> None:
    """InputTooLargeError when ``text``, already read, is larger than ``kind``'s limit: for a
    reader that learns the kind from the content (a hardware dump that turns out to be YAML)."""
    limit = max_input_size(kind)
    if len(text) > limit:
        raise InputTooLargeError(limit, kind)


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "ki": 1024,
    "kib": 1024,
    "mi": 1024**2,
    "mib": 1024**2,
    "gi": 1024**3,
    "gib": 1024**3,
}


# Far above any input; keeps `1e309` (infinity) and its like out of integer arithmetic.
_LARGEST_SIZE = 1024**5


def parse_size(text: str) -> int:
    """Bytes from ``16MiB``, ``64M``, ``500k`` or ``1048576``; ValueError when unreadable."""
    cleaned = text.strip().replace("_", "").lower()
    digits = cleaned.rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = cleaned[len(digits) :].strip()
    if not digits or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size (e.g. 16MiB, 64M, 1048576)")
    try:
        number = float(digits) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"{text!r} is not a size (e.g. 16MiB, 64M, 1048576)") from None
    if not math.isfinite(number) or number > _LARGEST_SIZE:
        raise ValueError(f"{text!r}: the size must be at most {format_size(_LARGEST_SIZE)}")
    size = int(number)
    if size < 1:
        raise ValueError(f"{text!r}: the size must be at least 1 byte")
    return size


def format_size(size: int) -> str:
    """``16 MiB`` for 16777216; bytes when not a whole number of KiB/MiB/GiB."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} bytes"


def read_bytes(
    path: str | Path, limit: int | None = None, kind: InputKind = InputKind.OTHER
) -> bytes:
    """At most ``limit`` bytes of ``path`` (``-`` is standard input); InputTooLargeError beyond.

    Reads with ``os.read`` in bounded chunks, so a pipe that never ends costs at most the limit.
    A FIFO, socket or device is a :class:`NotRegularFileError`, found before it is opened, except
    a descriptor this process already holds (``/dev/stdin``, ``/dev/fd/N`` from ``<(command)``).
    """
    cap = max_input_size(kind) if limit is None else limit
    if str(path) == "-":
        data = sys.stdin.buffer.read(cap + 1)
        if len(data) > cap:
            raise InputTooLargeError(cap, kind)
        return data
    inherited = _OPEN_DESCRIPTOR.fullmatch(os.path.normpath(path)) is not None
    status = os.stat(path)
    if not inherited and not _regular_or_directory(status.st_mode):
        raise NotRegularFileError
    check_file_size(status, cap, kind)
    # Not blocking on open: a FIFO swapped in after the check has no writer to wait for.
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(descriptor).st_mode
        if inherited:
            os.set_blocking(descriptor, True)  # a pipe's writer may still be writing
        elif not _regular_or_directory(mode):
            raise NotRegularFileError
        chunks: list[bytes] = []
        total = 0
        while total <= cap:
            chunk = os.read(descriptor, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(descriptor)
    if total > cap:
        raise InputTooLargeError(cap, kind)
    return b"".join(chunks)


# Paths naming a descriptor this process already holds: its writer is already there.
_OPEN_DESCRIPTOR = re.compile(r"/dev/(?:stdin|fd/\d+)|/proc/(?:self|\d+)/fd/\d+")


def _regular_or_directory(mode: int) -> bool:
    # A directory is let through to fail on read with "Is a directory", as it always has.
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def files_below(folder: Path) -> Iterator[Path]:
    """Every entry below ``folder`` that is not a folder, folder by folder in name order; names
    starting with a dot (``.git``, an editor's swap file) and links to folders are passed by.

    A folder that cannot be listed raises its OSError (``filename`` names it): a command that
    went on would report on the rest as if it had read everything. A folder that is gone by the
    time it is listed (a process of ``/proc`` that ended) held nothing to read and is passed by.
    """

    def unlistable(err: OSError) -> None:
        if not isinstance(err, FileNotFoundError):
            raise err

    for root, folders, names in os.walk(folder, onerror=unlistable):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(names):
            if not name.startswith("."):
                yield Path(root, name)


def decode_text(data: bytes) -> str:
    """UTF-8 text (a BOM is dropped); NotTextError otherwise."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise NotTextError(f"{err.reason} at byte {err.start}") from None


def read_text(path: str | Path, limit: int | None = None, kind: InputKind = InputKind.OTHER) -> str:
    """:func:`read_bytes` then :func:`decode_text`: every error is an ``OSError``."""
    return decode_text(read_bytes(path, limit, kind))


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether lists and dicts nest deeper than ``limit`` levels in ``value`` (no recursion)."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth + 1 > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def read_problem(err: OSError) -> str:
    """What to say after the file name when reading it failed."""
    if isinstance(err, (NotTextError, NotRegularFileError)):
        return str(err.strerror)
    return f"cannot read: {err.strerror or err}"


def excessive_aliasing(alias_count: int, construct_count: int) -> bool:
    """go-yaml's ``DefaultAliasCheck``: too large a share of the document comes from aliases.

    ``construct_count`` counts every node go-yaml constructs (an alias's target once per alias);
    ``alias_count`` those constructed inside an alias. Past 100 aliased and 1,000 constructed
    nodes the aliased share may be at most 0.99 up to 400,000 nodes, falling linearly to 0.10 at
    4,000,000 and staying there.
    """
    if alias_count <= 100 or construct_count <= 1000:
        return False
    low, high = 400_000, 4_000_000
    if construct_count <= low:
        allowed = 0.99
    elif construct_count >= high:
        allowed = 0.10
    else:
        allowed = 0.99 - 0.89 * ((construct_count - low) / (high - low))
    return alias_count / construct_count > allowed


# PyYAML's own typing of plain scalars (YAML 1.1), for readers that bring none.
_default_resolver: Resolver = yaml.resolver.Resolver().resolve


_STARTS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)


class _Open:
    """A collection being composed: its node, the key awaiting its value, its expanded size."""

    __slots__ = ("anchor", "key", "node", "size")

    def __init__(self, node: yaml.Node, anchor: str | None) -> None:
        self.node = node
        self.anchor = anchor
        self.key: yaml.Node | None = None
        self.size = 1


def _refusal(problem: str, event: Any) -> YamlLimitError:
    return YamlLimitError(problem=problem, problem_mark=event.start_mark)


def _events(text: str | bytes, loader: type[Any]) -> Iterator[Any]:
    parser = loader(text)
    get_event = parser.get_event
    try:
        # One call per event (not check_event then get_event): None comes after the stream end.
        while (event := get_event()) is not None:
            yield event
    finally:
        parser.dispose()


def compose_all(
    text: str | bytes,
    resolve: Resolver | None = None,
    *,
    loader: type[Any] | None = None,
    longest_number: int | None = MAX_NUMBER_DIGITS,
    max_nodes: int | None = None,
) -> Iterator[yaml.Node]:
    """The root node of each document of ``text``, composed with go-yaml's safety rules.

    ``resolve`` types untagged nodes (PyYAML's resolver by default); ``loader`` picks the parser
    (libyaml's by default). Raises ``yaml.YAMLError``: :class:`YamlLimitError` for excessive
    aliasing, nesting deeper than :data:`MAX_NESTING`, an anchor that contains itself, or a
    plain or tagged numeral longer than ``longest_number`` characters (None: any length, for
    go-yaml's reading, which takes a number out of the int64 range as text);
    :class:`TooManyNodesError` at the node that makes the stream hold more than ``max_nodes``
    (each document's nodes counted as go-yaml counts them, an alias as its target's whole tree;
    the documents' counts added, so many small documents count too).
    """
    resolve = resolve or _default_resolver
    anchors: dict[str, tuple[yaml.Node, int | None]] = {}
    stack: list[_Open] = []
    root: yaml.Node | None = None
    constructed = aliased = 0
    # The nodes this document may still hold: the budget less the earlier documents' nodes.
    room = sys.maxsize if max_nodes is None else max_nodes
    try:
        for event in _events(text, loader or _FastLoader):
            kind = type(event)
            if kind is yaml.DocumentStartEvent:
                room -= constructed
                anchors, stack, root = {}, [], None
                constructed, aliased = 1, 0  # go-yaml counts the document node too
                if constructed > room:
                    raise TooManyNodesError(max_nodes or 0, event.start_mark)
                continue
            if kind is yaml.DocumentEndEvent:
                if root is not None:
                    yield root
                continue
            if kind is yaml.AliasEvent:
                found = anchors.get(event.anchor)
                if found is None:
                    raise yaml.composer.ComposerError(
                        None, None, f"unknown anchor '{event.anchor}' referenced", event.start_mark
                    )
                node, size = found
                if size is None:
                    raise _refusal(f"anchor '{event.anchor}' value contains itself", event)
                # The alias node, then its target's whole tree inside the alias. The aliased
                # share only grows along that run, so checking at its end is checking each step.
                constructed += 1
                if excessive_aliasing(aliased, constructed):
                    raise _refusal("document contains excessive aliasing", event)
                constructed += size
                aliased += size
                if excessive_aliasing(aliased, constructed):
                    raise _refusal("document contains excessive aliasing", event)
                if constructed > room:
                    raise TooManyNodesError(max_nodes or 0, event.start_mark)
                size += 1
            else:
                if kind is yaml.ScalarEvent or kind in _STARTS:
                    constructed += 1
                    if constructed > room:
                        raise TooManyNodesError(max_nodes or 0, event.start_mark)
                    # (excessive_aliasing's own first test, spared a call per node)
                    if aliased > 100 and excessive_aliasing(aliased, constructed):
                        raise _refusal("document contains excessive aliasing", event)
                if kind is yaml.ScalarEvent:
                    tag = event.tag
                    if (
                        longest_number is not None
                        and len(event.value) > longest_number
                        and (event.implicit[0] or tag not in (None, "!"))
                        and _NUMERAL.fullmatch(event.value)
                    ):
                        raise _refusal(_TOO_LONG_NUMBER, event)
                    if tag is None or tag == "!":
                        tag = resolve(yaml.ScalarNode, event.value, event.implicit)
                    node = yaml.ScalarNode(
                        tag, event.value, event.start_mark, event.end_mark, style=event.style
                    )
                    size = 1
                    if event.anchor is not None:
                        anchors[event.anchor] = (node, 1)
                elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
                    if len(stack) >= MAX_NESTING:
                        raise _refusal(_TOO_DEEP, event)
                    sequence = kind is yaml.SequenceStartEvent
                    node_type = yaml.SequenceNode if sequence else yaml.MappingNode
                    tag = event.tag
                    if tag is None or tag == "!":
                        tag = resolve(node_type, None, event.implicit)
                    node = node_type(tag, [], event.start_mark, None, flow_style=event.flow_style)
                    if event.anchor is not None:
                        anchors[event.anchor] = (node, None)  # open: an alias to it is a loop
                    stack.append(_Open(node, event.anchor))
                    continue
                elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
                    done = stack.pop()
                    node = done.node
                    node.end_mark = event.end_mark
                    size = done.size
                    if done.anchor is not None and anchors.get(done.anchor, (None,))[0] is node:
                        anchors[done.anchor] = (node, size)
                else:
                    continue  # stream start/end
            if not stack:
                root = node
                continue
            parent = stack[-1]
            parent.size += size
            if type(parent.node) is yaml.SequenceNode:
                parent.node.value.append(node)
            elif parent.key is None:
                parent.key = node
            else:
                parent.node.value.append((parent.key, node))
                parent.key = None
    except yaml.scanner.ScannerError as err:
        raise _scanner_refusal(err) from None


def _scanner_refusal(err: yaml.scanner.ScannerError) -> yaml.YAMLError:
    # libyaml's scanner reads ahead and has a nesting limit of its own (1,000 levels).
    if "maximum nesting depth" not in str(err.problem):
        return err
    return YamlLimitError(problem=_TOO_DEEP, problem_mark=err.problem_mark)


def check_syntax(text: str | bytes) -> None:
    """Raise the ``yaml.YAMLError`` libyaml's parser finds in ``text``, building nothing.

    For text nothing will be read from: the parser runs in C without handing each event to
    Python, so no node, value or alias is ever made and the cost is linear in the text. The
    composer's own checks (aliasing, nesting past :data:`MAX_NESTING`, unknown anchors, long
    numbers) are not applied; libyaml's nesting limit is, as a :class:`YamlLimitError`.
    """
    parser = _FastLoader(text)
    try:
        raw_parse = getattr(parser, "raw_parse", None)
        if raw_parse is not None:
            raw_parse()
        else:  # PyYAML built without libyaml: its Python parser, event by event
            while parser.check_event():
                parser.get_event()
    except yaml.scanner.ScannerError as err:
        raise _scanner_refusal(err) from None
    finally:
        parser.dispose()


def compose_first(
    text: str | bytes,
    resolve: Resolver | None = None,
    *,
    loader: type[Any] | None = None,
    longest_number: int | None = MAX_NUMBER_DIGITS,
) -> yaml.Node | None:
    """The first document's root node (what go-yaml's ``Unmarshal`` reads), or None."""
    for node in compose_all(text, resolve, loader=loader, longest_number=longest_number):
        return node
    return None


def compose_single(
    text: str | bytes,
    resolve: Resolver | None = None,
    *,
    loader: type[Any] | None = None,
    max_nodes: int | None = None,
) -> yaml.Node | None:
    """The only document's root node, or None for an empty stream; a second one is an error."""
    documents = compose_all(text, resolve, loader=loader, max_nodes=max_nodes)
    first = next(documents, None)
    second = next(documents, None)
    if second is not None and first is not None:
        raise yaml.composer.ComposerError(
            "expected a single document in the stream",
            first.start_mark,
            "but found another document",
            second.start_mark,
        )
    return first


def load(
    text: str | bytes, loader: type[Any] | None = None, *, max_nodes: int | None = None
) -> Any:
    """``yaml.load(text, Loader=loader)`` (one document) with this module's rules.

    The loader's resolver types the scalars and its constructor builds the values (an alias
    becomes the same object, not a copy); libyaml's safe loader by default. ``max_nodes``: as
    :func:`compose_all`'s, checked before any value is built.
    """
    instance = (loader or _FastLoader)("")
    try:
        node = compose_single(text, instance.resolve, max_nodes=max_nodes)
        return None if node is None else instance.construct_document(node)
    finally:
        instance.dispose()
