"""Evidence readers: one per source format, each chosen by what a file holds, never its name.

    JSON (``{`` or ``[`` first)      documents.read_json   talosctl -o json, kubectl -o json,
                                                           Prometheus query answers
    a known table header             tables.read_table     talosctl get / services, kubectl top
    YAML documents of known shape    documents.read_yaml   talosctl -o yaml, kubectl -o yaml
    anything else                    logs.read_log         consoles, dmesg, service logs,
                                                           nvidia-smi, /proc/modules, ...

A file none of them finds anything in is *unrecognised*: listed in the report, not an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from schematic.triage.readers.documents import DocumentError, read_json, read_yaml
from schematic.triage.readers.logs import read_log
from schematic.triage.readers.tables import read_table, recognise_table
from schematic.triage.signals import Signal

__all__ = ["DocumentError", "Reading", "read_evidence"]

# YAML of the shapes the document reader knows: a Kubernetes object or list, a talosctl
# resource, a query answer. Logs that happen to parse as YAML are not mistaken for it.
_YAML_SHAPE = re.compile(r"^(?:apiVersion|kind|node|metadata|status):", re.MULTILINE)
_KERNEL_STAMP = re.compile(r"\s*\[\s*\d+\.\d+\]")
_FIRST_CHARACTER = re.compile(r"\S")


@dataclass(frozen=True)
class Reading:
    """What one file was read as, and what it showed."""

    file: str
    format: str  # "json", "yaml", "table", "log"; "" when unrecognised
    signals: tuple[Signal, ...]
    problem: str = ""  # why a file that looked like JSON or YAML was not read


def read_evidence(text: str, file: str) -> Reading:
    """Read one file's text with the reader its content calls for."""
    first = _FIRST_CHARACTER.search(text)
    start = first.group() if first else ""
    try:
        if start in ("{", "["):
            try:
                return _reading(file, "json", list(read_json(text, file)))
            except DocumentError as err:
                # "[   12.345678] ..." is a kernel log, not a JSON list.
                if start == "{" or err.fatal or not _KERNEL_STAMP.match(text):
                    raise
        if recognise_table(text):
            return _reading(file, "table", list(read_table(text, file)))
        if _YAML_SHAPE.search(text[:4096]):
            return _reading(file, "yaml", list(read_yaml(text, file)))
    except DocumentError as err:
        if err.fatal:
            raise
        where = f"line {err.line}: " if err.line else ""
        return Reading(file, "", (), f"{where}{err}")
    return _reading(file, "log", list(read_log(text, file)))


def _reading(file: str, kind: str, signals: list[Signal]) -> Reading:
    return Reading(file, kind if signals else "", tuple(signals))
