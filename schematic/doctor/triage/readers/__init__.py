"""Evidence readers: one per source format, each chosen by what a file holds, never its name.

A JSON document (``{`` or ``[`` first) is read by documents.read_json (talosctl and kubectl
``-o json``, Prometheus answers, VictoriaMetrics export lines); every other paste by the first
row of :data:`TEXT_READERS` that recognises it (tables, ``kubectl describe``, YAML of known
shape, ...); what none recognises by logs.read_log (consoles, dmesg, service logs,
nvidia-smi, /proc/modules, ...).

A paste is first cleaned (paste.unquote: `> ` quote markers; paste.fenced_paste: the caption
around a fenced paste; paste.clean: colour, carriage returns, prompts, banners, fences,
`<details>`, tool warnings) and split at its shell prompts, so a file holding several
commands' outputs is read section by section. Notes and READMEs (paste.is_prose) are not
evidence. A file none of the readers finds anything in is *unrecognised*: listed in the report,
not an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from schematic.doctor.triage.readers.describe import (
    read_describe,
    read_describe_daemonset,
    read_describe_pod,
    recognise_describe,
    recognise_describe_daemonset,
    recognise_describe_pod,
)
from schematic.doctor.triage.readers.documents import (
    DocumentError,
    read_grafana_csv,
    read_json,
    read_yaml,
)
from schematic.doctor.triage.readers.grafana import recognise_grafana_csv
from schematic.doctor.triage.readers.health import read_health, recognise_health
from schematic.doctor.triage.readers.logs import read_log
from schematic.doctor.triage.readers.paste import (
    fenced_paste,
    first_visible,
    is_prose,
    sections,
    unquote,
)
from schematic.doctor.triage.readers.procpci import read_proc_pci, recognise_proc_pci
from schematic.doctor.triage.readers.tables import read_table, recognise_table
from schematic.doctor.triage.signals import Kind, Signal

__all__ = [
    "TEXT_READERS",
    "DocumentError",
    "Reading",
    "TextReader",
    "file_reading",
    "read_evidence",
]

# YAML of the shapes the document reader knows: a Kubernetes object or list, a talosctl
# resource, a query answer. Logs that happen to parse as YAML are not mistaken for it.
_YAML_SHAPE = re.compile(r"^(?:apiVersion|kind|node|metadata|status|machine):", re.MULTILINE)


@dataclass(frozen=True)
class TextReader:
    """How a cleaned paste is recognised, and the reader that reads it."""

    format: str  # what the report says the file was read as
    recognise: Callable[[str], bool]
    read: Callable[[str, str], Iterable[Signal]]  # (text, file) -> signals


def _yaml_shaped(text: str) -> bool:
    return bool(_YAML_SHAPE.search(text[:4096]))


# The text readers, first match wins; JSON (a "{" or "[" first) is tried before them, and what
# none recognises is read as a log. To add a reader: a module with its recognise and read
# functions, a row here, a row in the guide's table (docs/guides/when-broken.md).
TEXT_READERS: tuple[TextReader, ...] = (
    TextReader("table", recognise_table, read_table),
    TextReader("describe", recognise_describe, read_describe),
    TextReader("describe", recognise_describe_daemonset, read_describe_daemonset),
    TextReader("describe", recognise_describe_pod, read_describe_pod),
    TextReader("yaml", _yaml_shaped, read_yaml),
    TextReader("health", recognise_health, read_health),
    TextReader("proc-pci", recognise_proc_pci, read_proc_pci),
    TextReader("grafana-csv", recognise_grafana_csv, read_grafana_csv),
)


@dataclass(frozen=True)
class Reading:
    """What one file was read as, and what it showed."""

    file: str
    format: str  # "json", "yaml", "table", "log"; "" when unrecognised
    signals: tuple[Signal, ...]
    # why a file that looked like JSON or YAML was not read, or what of a file was not
    problem: str = ""


# Unreadable values named one by one, up to this many per file; the rest are counted.
_UNREADABLE_SHOWN = 5
# Node names one file's signals are judged for. Kubernetes supports clusters of up to 5,000
# nodes (kubernetes.io, "Considerations for large clusters"); the diagnoses cost about a quarter
# of a millisecond a machine, and 6 MiB of log lines each naming another node name 45,000: at
# 10,000 names such a file took 4.1-4.7 s of the 4 s make bench allows. A file naming every
# node by name and by address is judged for half of a largest cluster, and says so. Signals of
# the names past these are counted and said to be, not judged.
MAX_NODES_A_FILE = 5_000


def file_reading(file: str, kind: str, signals: list[Signal], problems: list[str]) -> Reading:
    """What a file was read as: its signals, and what of it was not read (the values no reader
    could hold among them, by line)."""
    signals, problems = _first_nodes(signals, problems)
    unread = [s for s in signals if s.kind is Kind.UNREADABLE_VALUE]
    if unread:
        signals = [s for s in signals if s.kind is not Kind.UNREADABLE_VALUE]
        shown = [f"line {s.evidence.line}: {s.evidence.text}" for s in unread[:_UNREADABLE_SHOWN]]
        more = len(unread) - _UNREADABLE_SHOWN
        problems = [
            *problems,
            "unreadable value at " + "; ".join(shown) + (f"; and {more} more" if more > 0 else ""),
        ]
    return Reading(file, kind if signals else "", tuple(signals), "; ".join(problems))


def _first_nodes(signals: list[Signal], problems: list[str]) -> tuple[list[Signal], list[str]]:
    """The signals of the first :data:`MAX_NODES_A_FILE` node names, in the file's order (and
    those naming no node), and what was passed over."""
    names: set[str] = set()
    kept: list[Signal] = []
    for signal in signals:
        if signal.node and signal.node not in names:
            if len(names) == MAX_NODES_A_FILE:
                continue
            names.add(signal.node)
        kept.append(signal)
    if len(kept) == len(signals):
        return signals, problems
    more = len({s.node for s in signals if s.node and s.node not in names})
    return kept, [
        *problems,
        f"{len(signals) - len(kept):,} signals of {more:,} nodes named past the first "
        f"{MAX_NODES_A_FILE:,} were counted, not judged",
    ]


def read_evidence(text: str, file: str) -> Reading:
    """Read one file's text with the reader its content calls for, once the paste is
    cleaned: quote markers, the caption and fences around it (:mod:`.paste`)."""
    text = unquote(text)
    paste = fenced_paste(text)
    if paste is not None:
        text = paste
    elif is_prose(text):
        return Reading(file, "", (), "notes or documentation for people, not tool output")
    formats: list[str] = []
    signals: list[Signal] = []
    problems: list[str] = []
    for section in sections(text):
        reading = _read_section(section.text, file)
        if reading.problem:
            problems.append(reading.problem)
        if not reading.format:
            continue
        formats.append(reading.format)
        if section.node:
            # The command line names the node its output does not ("talosctl -n X logs ...").
            signals += [s if s.node else replace(s, node=section.node) for s in reading.signals]
        else:
            signals += reading.signals
    return file_reading(file, "+".join(dict.fromkeys(formats)), signals, problems)


def _read_section(text: str, file: str) -> Reading:
    visible = first_visible(text)
    start = text[visible : visible + 1]
    try:
        if start in ("{", "["):
            taken: list[Signal] = []
            try:
                taken.extend(read_json(text, file))
                return _reading(file, "json", taken)
            except DocumentError as err:
                if taken and not err.fatal:
                    # A paste cut short: the objects before the cut still count.
                    where = f"line {err.line}: " if err.line else ""
                    return Reading(file, "json", tuple(taken), f"{where}{err}; read up to there")
                # "[   12.345678] ...", "[talos] ...", "[2025-11-03T14:52:40Z] ..." are log
                # lines, not a JSON list: a "[" whose first line is no JSON is read as a log.
                # "{...}" lines of a structured log are read as a log when they are not one
                # JSON stream.
                if err.fatal:
                    raise
                # A JSON document broken further on, "[   12.345678] ...", "[talos] ..." and
                # "{...}" lines of a structured log alike: tried as text before the JSON's
                # error is reported.
                notes: list[str] = []
                logged = list(read_log(text, file, notes))
                if not logged:
                    raise
                return Reading(file, "log", tuple(logged), "; ".join(notes))
        for reader in TEXT_READERS:
            if reader.recognise(text):
                return _reading(file, reader.format, list(reader.read(text, file)))
    except DocumentError as err:
        if err.fatal:
            raise
        where = f"line {err.line}: " if err.line else ""
        return Reading(file, "", (), f"{where}{err}")
    notes = []
    signals = list(read_log(text, file, notes))
    return _reading(file, "log", signals, "; ".join(notes))


def _reading(file: str, kind: str, signals: list[Signal], note: str = "") -> Reading:
    return Reading(file, kind if signals else "", tuple(signals), note)
