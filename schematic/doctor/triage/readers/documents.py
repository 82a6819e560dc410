"""JSON and YAML documents: ``talosctl get ... -o yaml|json``, ``kubectl get ... -o json|yaml``
and Prometheus / VictoriaMetrics ``query_range`` and ``query`` answers.

A JSON list such as ``kubectl get pods -A -o json`` is read one item at a time (the list's
other keys first, then each element of ``items`` decoded on its own by the standard JSON
decoder and dropped once its signals are taken), so a 50 MB list costs about its own text in
memory. Lines are found by counting line breaks up to each item, once, front to back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

import yaml

from schematic.doctor.triage.readers.grafana import csv_answer, unnamed_columns
from schematic.doctor.triage.readers.interpret import (
    METRICS_READ,
    Located,
    empty_list,
    interpret,
)
from schematic.doctor.triage.signals import Evidence, Kind, Signal
from schematic.doctor.triage.values import json_decoder
from schematic.safe_yaml import (
    InputKind,
    InputTooLargeError,
    YamlLimitError,
    check_size,
    compose_all,
)

__all__ = ["DocumentError", "read_grafana_csv", "read_json", "read_json_chunks", "read_yaml"]

_SPACE = re.compile(r"[ \t\n\r]*")


class DocumentError(ValueError):
    """A file that starts like JSON or YAML but is not: ``line`` is where it went wrong."""

    def __init__(self, message: str, line: int | None, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.fatal = fatal  # beyond the input limits (nesting): an error, not just unread


class _Window:
    """The text of one input as it is decoded, chunk by chunk: only what is not yet read is kept,
    so a 50 MB list costs one item and one chunk. Offsets are from the start of the input; line
    numbers are counted once, front to back."""

    def __init__(self, chunks: Iterable[str]) -> None:
        self._chunks = iter(chunks)
        self.text = ""
        self.base = 0  # offset of text[0] in the input
        self.done = False
        self._cursor = 0  # an offset whose line is known
        self._line = 1

    def more(self, at_least: int = 0) -> bool:
        """Read on (at least ``at_least`` characters, so a large value is not re-read per
        chunk); False at the end of the input."""
        parts = [self.text]
        added = 0
        while not self.done and added <= at_least:
            chunk = next(self._chunks, None)
            if chunk is None:
                self.done = True
                break
            parts.append(chunk)
            added += len(chunk)
        if added:
            self.text = "".join(parts)
        return added > 0

    def char(self, offset: int) -> str:
        """The character at ``offset``, "" past the end."""
        while offset - self.base >= len(self.text):
            if not self.more():
                return ""
        return self.text[offset - self.base]

    def skip(self, offset: int) -> int:
        """The offset of the first non-space character from ``offset``."""
        while True:
            found = _SPACE.match(self.text, offset - self.base).end()  # type: ignore[union-attr]
            if found < len(self.text) or not self.more():
                return found + self.base

    def line(self, offset: int) -> int:
        offset = max(offset, self.base)
        if offset < self._cursor:
            return self._line - self.text.count("\n", offset - self.base, self._cursor - self.base)
        self._line += self.text.count("\n", self._cursor - self.base, offset - self.base)
        self._cursor = offset
        return self._line

    def release(self, offset: int) -> None:
        """Forget the text before ``offset`` (read already), a megabyte at a time."""
        if offset - self.base < _RELEASE:
            return
        self.line(offset)
        self.text = self.text[offset - self.base :]
        self.base = offset

    def decode(self, decoder: json.JSONDecoder, offset: int) -> tuple[Any, int]:
        """The JSON value at ``offset`` and the offset after it."""
        while True:
            try:
                value, end = decoder.raw_decode(self.text, offset - self.base)
            except json.JSONDecodeError as err:
                # A value cut by the chunk's end reads as invalid: read on (doubling) first.
                if self.more(len(self.text)):
                    continue
                line = self.line(offset) + err.doc.count("\n", offset - self.base, err.pos)
                raise DocumentError(f"invalid JSON: {err.msg}", line) from None
            except RecursionError:
                raise DocumentError(
                    "JSON nested too deeply", self.line(offset), fatal=True
                ) from None
            # A number at the very end may go on in the next chunk ("12" of "123").
            if end == len(self.text) and not self.done and self.more():
                continue
            return value, end + self.base

    def located(self, start: int, end: int) -> Located:
        # A key's line is counted on from the last line found (the object's, or a key's before
        # it), so an object's keys cost one count of its text, not one each.
        text, base, line = self.text, self.base, self.line(start)

        def locate(key: str) -> int:
            found = text.find(f'"{key}"', start - base, end - base)
            return line if found < 0 else self.line(found + base)

        return Located(line, locate)


_RELEASE = 1 << 20


def _at_line(line: int) -> Located:
    return Located(line, lambda key: line)


def read_json(text: str, file: str) -> Iterator[Signal]:
    """Signals of every JSON value in ``text`` (talosctl prints objects back to back)."""
    return read_json_chunks([text], file)


# Objects of a list read from one file: a cluster's pods, nodes, events. Each costs the
# interpreters tens of microseconds and its signals memory: 64 MiB of minimal pods are 440,000
# of them (22 s, 474 MB). A list past this is read at its first objects; the rest is not read,
# and the reading says so. Kubernetes supports 150,000 pods in a cluster: `kubectl get pods
# -A -o json` of a cluster that large is some 1.6 GB, past the JSON limit anyway.
MAX_OBJECTS = 50_000


def read_json_chunks(
    chunks: Iterable[str], file: str, notes: list[str] | None = None
) -> Iterator[Signal]:
    """Signals of every JSON value in the text ``chunks`` make up, read as they come; of a
    list, its first :data:`MAX_OBJECTS` objects (``notes`` says when more were not read)."""
    decoder = json_decoder()
    objects = 0
    window = _Window(chunks)
    position = window.skip(0)
    while window.char(position):
        if window.char(position) != "{":
            value, end = window.decode(decoder, position)
            yield from _values(value, file, window.located(position, end))
            position = window.skip(end)
            window.release(position)
            continue
        # An object: its members one by one, so that a kubectl list's items stream.
        header: dict[str, Any] = {}
        start = position
        listed = objects
        position = window.skip(position + 1)
        while window.char(position) not in ("}", ""):
            key, position = window.decode(decoder, position)
            position = window.skip(position)
            if not isinstance(key, str) or window.char(position) != ":":
                raise DocumentError("invalid JSON: expected a key and ':'", window.line(position))
            position = window.skip(position + 1)
            if key == "items" and window.char(position) == "[":
                position = window.skip(position + 1)
                while window.char(position) not in ("]", ""):
                    if objects == MAX_OBJECTS:
                        if notes is not None:
                            notes.append(
                                f"from line {window.line(position):,} on, objects past the "
                                f"first {MAX_OBJECTS:,} of its list were not read"
                            )
                        return
                    objects += 1
                    item, end = window.decode(decoder, position)
                    yield from interpret(item, file, window.located(position, end))
                    position = window.skip(end)
                    if window.char(position) == ",":
                        position = window.skip(position + 1)
                    window.release(position)
                position = window.skip(position + 1)
                header["items"] = []
            else:
                header[key], position = window.decode(decoder, position)
                position = window.skip(position)
            if window.char(position) == ",":
                position = window.skip(position + 1)
        if not window.char(position):
            raise DocumentError("invalid JSON: an object is not closed", window.line(start))
        position = window.skip(position + 1)
        # The header's own lines: the object stays in the window while its members are read
        # only when it is small; a large header is located at its first line.
        if start >= window.base:
            located = window.located(start, position)
        else:
            located = _at_line(window.line(window.base))
        if header.get("items") != []:
            yield from interpret(header, file, located)
        elif objects == listed:
            yield from empty_list(header, file, located)
        window.release(position)


def _values(value: Any, file: str, located: Located) -> Iterator[Signal]:
    if isinstance(value, list):
        for item in value:
            yield from interpret(item, file, located)
    else:
        yield from interpret(value, file, located)


_strings = yaml.resolver.BaseResolver().resolve


def _plain(node: yaml.Node) -> Any:
    # Scalars stay strings ("0x10de", "true"); the interpreters convert what they compare.
    if isinstance(node, yaml.MappingNode):
        return {str(_plain(key)): _plain(value) for key, value in node.value}
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item) for item in node.value]
    return node.value


def _yaml_located(text: str, node: yaml.Node) -> Located:
    start, end, line = node.start_mark.index, node.end_mark.index, node.start_mark.line + 1

    def locate(key: str) -> int:
        found = re.compile(rf"^[ -]*{re.escape(key)}:", re.MULTILINE).search(text, start, end)
        return line if found is None else line + text.count("\n", start, found.start())

    return Located(line, locate)


def read_yaml(text: str, file: str) -> Iterator[Signal]:
    """Signals of every YAML document in ``text`` (kubectl lists item by item)."""
    try:
        # YAML costs far more a byte than a log or JSON: its own, lower limit.
        check_size(text, InputKind.EVIDENCE_DOCUMENTS)
    except InputTooLargeError as err:
        raise DocumentError(
            f"{err.strerror}; or collect it with -o json", None, fatal=True
        ) from None
    try:
        nodes = list(compose_all(text, _strings))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        line = mark.line + 1 if mark else None
        fatal = isinstance(err, YamlLimitError)
        raise DocumentError(f"invalid YAML: {problem}", line, fatal=fatal) from None
    for node in nodes:
        if node is None:
            continue
        items = _items_node(node)
        if items is None:
            yield from interpret(_plain(node), file, _yaml_located(text, node))
            continue
        if not items and isinstance(node, yaml.MappingNode):
            yield from empty_list(_plain(node), file, _yaml_located(text, node))
        for item in items:
            yield from interpret(_plain(item), file, _yaml_located(text, item))


def _items_node(node: yaml.Node) -> list[yaml.Node] | None:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "items" and isinstance(value, yaml.SequenceNode):
                return list(value.value)
    return None


def read_grafana_csv(text: str, file: str) -> Iterator[Signal]:
    """The series of a Grafana panel's CSV export that name their metric (readers/grafana.py),
    read as a query answer. A file of which no column names its metric is no evidence
    (DocumentError, saying why); such columns beside named ones are listed as unread."""
    export = csv_answer(text)
    if export is None:
        return
    named = export.answer["data"]["result"]
    if export.unnamed and not named:
        raise DocumentError(f"Grafana CSV: {unnamed_columns(export)}", export.line)
    if export.unnamed:
        # Said in full: the unread-value note's cut to 40 characters would lose the remedy.
        evidence = Evidence(file, export.line, f"Grafana CSV {unnamed_columns(export)}")
        yield Signal(Kind.UNREADABLE_VALUE, "", evidence, "Grafana CSV")
    read = list(interpret(export.answer, file, Located(export.line, lambda _key: export.line)))
    if named and not any(s.kind is not Kind.UNREADABLE_VALUE for s in read):
        metrics = sorted({str(series["metric"]["__name__"]) for series in named})
        raise DocumentError(
            f"Grafana CSV of {', '.join(metrics)}: no metric triage reads (it reads "
            f"{', '.join(METRICS_READ)})",
            export.line,
        )
    yield from read
