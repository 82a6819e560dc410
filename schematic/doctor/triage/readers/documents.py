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
from collections.abc import Iterator
from typing import Any

import yaml

from schematic.doctor.triage.readers.interpret import Located, interpret
from schematic.doctor.triage.signals import Signal
from schematic.safe_yaml import YamlLimitError, compose_all

__all__ = ["DocumentError", "read_json", "read_yaml"]

_SPACE = re.compile(r"[ \t\n\r]*")


class DocumentError(ValueError):
    """A file that starts like JSON or YAML but is not: ``line`` is where it went wrong."""

    def __init__(self, message: str, line: int | None, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.fatal = fatal  # beyond the input limits (nesting): an error, not just unread


class _Lines:
    """Line numbers of offsets visited front to back, counting each line break once."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._offset = 0
        self._line = 1

    def at(self, offset: int) -> int:
        if offset < self._offset:
            return self._text.count("\n", 0, offset) + 1
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line


def _json_located(text: str, start: int, end: int, line: int) -> Located:
    def locate(key: str) -> int:
        found = text.find(f'"{key}"', start, end)
        return line if found < 0 else line + text.count("\n", start, found)

    return Located(line, locate)


def read_json(text: str, file: str) -> Iterator[Signal]:
    """Signals of every JSON value in ``text`` (talosctl prints objects back to back)."""
    decoder = json.JSONDecoder()
    lines = _Lines(text)
    position = _SPACE.match(text, 0).end()  # type: ignore[union-attr]

    def decode(at: int) -> tuple[Any, int]:
        try:
            return decoder.raw_decode(text, at)
        except json.JSONDecodeError as err:
            raise DocumentError(f"invalid JSON: {err.msg}", err.lineno) from None
        except RecursionError:
            raise DocumentError("JSON nested too deeply", lines.at(at), fatal=True) from None

    def skip(at: int) -> int:
        return _SPACE.match(text, at).end()  # type: ignore[union-attr]

    while position < len(text):
        if text[position] != "{":
            value, end = decode(position)
            yield from _values(value, file, _json_located(text, position, end, lines.at(position)))
            position = skip(end)
            continue
        # An object: its members one by one, so that a kubectl list's items stream.
        header: dict[str, Any] = {}
        start = position
        position = skip(position + 1)
        while position < len(text) and text[position] != "}":
            key, position = decode(position)
            position = skip(position)
            if not isinstance(key, str) or text[position : position + 1] != ":":
                raise DocumentError("invalid JSON: expected a key and ':'", lines.at(position))
            position = skip(position + 1)
            if key == "items" and text[position : position + 1] == "[":
                position = skip(position + 1)
                while position < len(text) and text[position] != "]":
                    item, end = decode(position)
                    located = _json_located(text, position, end, lines.at(position))
                    yield from interpret(item, file, located)
                    position = skip(end)
                    if text[position : position + 1] == ",":
                        position = skip(position + 1)
                position = skip(position + 1)
                header["items"] = []
            else:
                header[key], position = decode(position)
                position = skip(position)
            if text[position : position + 1] == ",":
                position = skip(position + 1)
        if position >= len(text):
            raise DocumentError("invalid JSON: an object is not closed", lines.at(start))
        position = skip(position + 1)
        if header.get("items") != []:
            yield from interpret(
                header, file, _json_located(text, start, position, lines.at(start))
            )


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
