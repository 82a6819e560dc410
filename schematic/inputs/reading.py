"""Reading user YAML: one typing rule, and problems named by file:line, pool and key.

Cluster files, hardware profiles and a pool's inline ``hardware`` are typed by one rule, so the
same value gets the same answer wherever it is written:

- only ``true``/``false`` (any case of the first letter, or all capitals) are booleans, only
  ``null``, ``~`` and nothing are null, and only decimal numbers are numbers (``12``, ``-3``,
  ``2.5``, ``1.5e3``). YAML 1.1's ``on``/``no``, ``0x10``, ``0o7``, ``1:20`` and dates stay text;
- an explicit tag (``!!int 12``, ``!!str 12``) must fit its value: ``!!int abc`` is an error;
  only ``!!str``, ``!!int``, ``!!float``, ``!!bool``, ``!!null``, ``!!map`` and ``!!seq`` are read;
- a key given twice in one mapping is an error; ``<<`` merges mappings (keys already there win);
- a number of over 1,000 digits is an error (:mod:`schematic.safe_yaml` refuses it).

The readers (:mod:`schematic.inputs.profiles`, :mod:`schematic.inputs.cluster_file`) walk the
typed data with :class:`At` (where a value sits) and :class:`Fields` (a mapping's keys), record
every problem they find, and raise one error listing them, each as
``FILE:LINE: [pool "NAME": ]KEY: what is wrong``. The line is looked up in the composed YAML
only when there is a problem to report.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import yaml

from schematic.errors import TalosSchematicError, closest_names, printable
from schematic.safe_yaml import (
    BUDGET_OF,
    InputKind,
    TooManyNodesError,
    YamlLimitError,
    compose_single,
    node_budget,
)

__all__ = [
    "MAX_PROBLEMS",
    "At",
    "Fields",
    "Reading",
    "choice",
    "collector_paused",
    "described",
    "flag",
    "optional",
    "parse_yaml",
    "read_list",
    "text",
    "texts",
    "whole",
]

T = TypeVar("T")
KeyPath = tuple[Any, ...]
# A file with the same mistake in every one of 10,000 pools gets a readable error.
MAX_PROBLEMS = 20
# Problems kept of one file; the rest are counted. Those shown are the first by line, and
# readers find problems in about the order of the file.
MAX_COLLECTED = 1000

# --- the typing rule ------------------------------------------------------------------------------

_TAG = "tag:yaml.org,2002:"
_PLAIN = "?plain"  # the tag :func:`_untyped` gives every untagged plain scalar
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_COLLECTION_TAGS = frozenset({_TAG + "map", _TAG + "seq"})


class _YamlError(Exception):
    def __init__(self, node: yaml.Node, reason: str) -> None:
        super().__init__(reason)
        self.line = node.start_mark.line + 1


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag


def _value(node: yaml.Node) -> Any:
    """A composed node as Python data, typed by the rule above."""
    if isinstance(node, yaml.ScalarNode):
        return _scalar(node)
    if node.tag not in _COLLECTION_TAGS:
        raise _YamlError(node, f"the tag {_short_tag(node.tag)} is not read here; leave it out")
    if isinstance(node, yaml.SequenceNode):
        return [_value(item) for item in node.value]
    mapping: dict[Any, Any] = {}
    merged: list[yaml.Node] = []
    for key_node, value_node in node.value:
        if key_node.tag == _PLAIN and key_node.value == "<<":
            merged.append(value_node)
            continue
        key = _value(key_node)
        if isinstance(key, (dict, list)):
            raise _YamlError(key_node, "a mapping key must be a scalar")
        if key in mapping:
            raise _YamlError(key_node, f"key {key!r} appears twice in one mapping")
        mapping[key] = _value(value_node)
    for source in merged:  # << merges: keys already present win
        sources = source.value if isinstance(source, yaml.SequenceNode) else [source]
        for item in sources:
            extra = _value(item)
            if not isinstance(extra, dict):
                raise _YamlError(item, "a << merge needs a mapping or a list of mappings")
            for key, value in extra.items():
                mapping.setdefault(key, value)
    return mapping


def _scalar(node: yaml.ScalarNode) -> Any:
    text: str = node.value
    tag: str = node.tag
    if tag == _PLAIN:
        if text in _NULLS:
            return None
        if text in _BOOLS:
            return _BOOLS[text]
        if _INT.fullmatch(text):
            return int(text)
        if _FLOAT.fullmatch(text):
            return float(text)
        return text  # YAML 1.1's yes/no, 0x10, 1:20 and dates stay text
    if tag == _TAG + "str":
        return text
    if tag == _TAG + "null" and text in _NULLS:
        return None
    if tag == _TAG + "bool" and text in _BOOLS:
        return _BOOLS[text]
    if tag == _TAG + "int" and _INT.fullmatch(text):
        return int(text)
    if tag == _TAG + "float" and (_FLOAT.fullmatch(text) or _INT.fullmatch(text)):
        return float(text)
    shown = text if len(text) <= 40 else text[:40] + "…"
    raise _YamlError(node, f"cannot read {shown!r} as {_short_tag(tag)}")


def _untyped(kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
    """Plain scalars are left untyped for :func:`_scalar` to read."""
    if kind is yaml.ScalarNode:
        return _PLAIN if implicit[0] else _TAG + "str"
    return _TAG + ("seq" if kind is yaml.SequenceNode else "map")


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a file is read.

    The nodes and values built are acyclic and all live until the file is read: with thousands
    of pools the collector's passes over them cost more than building them.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def parse_yaml(
    text: str, source: str, error: type[TalosSchematicError], kind: InputKind | None = None
) -> tuple[Any, yaml.Node | None]:
    """The one document of ``text`` typed by the rule above, and its node (for line numbers);
    within the YAML nodes of ``kind``'s budget, where it has one.

    Raises ``error`` naming ``source`` and the line for text that is not such YAML.
    """
    source = printable(source, one_line=True)  # a file name stays on its message's line
    try:
        # Aliases counted, never expanded, and nesting bounded before a value is built.
        node = compose_single(text, _untyped, max_nodes=node_budget(kind) if kind else None)
        return (_value(node) if node is not None else None), node
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        reason = " ".join(filter(None, [err.context, err.problem]))
        if isinstance(err, TooManyNodesError) and kind is not None:
            reason += f" ({BUDGET_OF[kind].real_nodes}); for a larger file, raise --max-input-size"
        said = "" if isinstance(err, YamlLimitError) else "not valid YAML: "
        raise error(f"{where}: {said}{reason}") from None
    except yaml.YAMLError as err:
        raise error(f"{source}: not valid YAML: {err}") from None
    except _YamlError as err:
        raise error(f"{source}:{err.line}: {err}") from None


# --- where a problem is ---------------------------------------------------------------------------


_KeyIndex = dict[object, tuple[int, yaml.Node]]


def _line(
    node: yaml.Node | None, path: KeyPath, keys: dict[int, _KeyIndex] | None = None
) -> int | None:
    """The line of the key or item ``path`` names, or of the nearest enclosing one."""
    return _walk(node, path, keys)[0]


def _key_index(node: yaml.MappingNode) -> _KeyIndex:
    """A mapping's keys (and, for a key that is not text, its text) with each key's line and
    value; the first pair of a key wins, as in :func:`_pairs`."""
    index: _KeyIndex = {}
    for key_node, value_node in _pairs(node):
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        try:
            value = _scalar(key_node)
        except _YamlError:
            continue
        found = (key_node.start_mark.line + 1, value_node)
        with contextlib.suppress(TypeError):  # an unhashable key names nothing
            index.setdefault(value, found)
        if not isinstance(value, str):
            # A key that is not text is named by its text in a path (see Fields).
            index.setdefault(str(value), found)
    return index


def _walk(
    node: yaml.Node | None, path: KeyPath, keys: dict[int, _KeyIndex] | None = None
) -> tuple[int | None, yaml.Node | None]:
    """The line ``path`` names (as :func:`_line`) and the node there, if the path is whole.

    ``keys`` keeps each mapping's key index between calls: a file with a problem on each of
    16,000 keys is then located in one pass over each mapping, not one pass a problem."""
    if node is None:
        return None, None
    keys = {} if keys is None else keys
    line = node.start_mark.line + 1
    for step in path:
        child: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            index = keys.get(id(node))
            if index is None:
                index = keys[id(node)] = _key_index(node)
            with contextlib.suppress(TypeError):
                if step in index:
                    line, child = index[step]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            child = node.value[step] if 0 <= step < len(node.value) else None
            line = line if child is None else child.start_mark.line + 1
        if child is None:
            return line, None
        node = child
    return line, node


def _pairs(node: yaml.MappingNode) -> Iterator[tuple[yaml.Node, yaml.Node]]:
    """A mapping's own pairs, then those it merges (the readers see merged keys too)."""
    merged = []
    for key_node, value_node in node.value:
        if key_node.tag == _PLAIN and key_node.value == "<<":
            merged.append(value_node)
        else:
            yield key_node, value_node
    for source in merged:
        for item in source.value if isinstance(source, yaml.SequenceNode) else [source]:
            if isinstance(item, yaml.MappingNode):
                yield from _pairs(item)


def location(path: KeyPath) -> str:
    """``pools[0].nvidia.tier`` for a key path."""
    text = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


class Reading:
    """One file being read: its name, its YAML (for line numbers) and the problems found."""

    def __init__(
        self,
        source: str,
        error: type[TalosSchematicError],
        node: yaml.Node | None = None,
        label: Callable[[KeyPath], tuple[str, KeyPath]] | None = None,
    ) -> None:
        self.source = printable(source, one_line=True)  # as messages show it
        self.error = error
        self.node = node
        # Names a part of the file (a pool) by a word rather than its index.
        self.label = label
        self.problems: list[tuple[KeyPath, str]] = []
        self.left_out = 0

    @property
    def collecting(self) -> bool:
        """Whether a problem found now is kept (and worth a hint that costs a search)."""
        return len(self.problems) < MAX_COLLECTED

    def problem(self, path: KeyPath, message: str) -> None:
        if self.collecting:
            self.problems.append((path, message))
        else:
            self.left_out += 1

    def line(self, path: KeyPath) -> int | None:
        """The line ``path`` names: its key's, else the deepest enclosing key's (None without
        the YAML)."""
        return _walk(self.node, path)[0]

    def item_lines(self, path: KeyPath) -> list[int | None]:
        """The line of each item of the list at ``path`` (empty without the YAML)."""
        found = _walk(self.node, path)[1]
        if not isinstance(found, yaml.SequenceNode):
            return []
        return [item.start_mark.line + 1 for item in found.value]

    def finish(self) -> None:
        """Raise the reading's error if any problem was found: one line per problem."""
        if not self.problems:
            return
        lines: list[tuple[int, str]] = []
        keys: dict[int, _KeyIndex] = {}
        for path, message in self.problems:
            line = _line(self.node, path, keys)
            where = self.source if line is None else f"{self.source}:{line}"
            prefix, rest = self.label(path) if self.label else ("", path)
            key = location(rest)
            parts = [where, prefix, key, message] if key else [where, prefix, message]
            lines.append((line or 0, ": ".join(part for part in parts if part)))
        shown = list(dict.fromkeys(text for _line_number, text in sorted(lines, key=_first)))
        if len(shown) > MAX_PROBLEMS or self.left_out:
            more = max(len(shown) - MAX_PROBLEMS, 0) + self.left_out
            shown = [*shown[:MAX_PROBLEMS], f"… and {more} more problems"]
        raise self.error("\n".join(shown))


def _first(item: tuple[int, str]) -> int:
    return item[0]


class At:
    """Where a value sits in the file being read."""

    # A plain class: one is made per key read, and a frozen dataclass costs twice as much.
    __slots__ = ("path", "reading")

    def __init__(self, reading: Reading, path: KeyPath = ()) -> None:
        self.reading = reading
        self.path = path

    def __truediv__(self, key: object) -> At:
        return At(self.reading, (*self.path, key))

    def problem(self, message: str) -> None:
        self.reading.problem(self.path, message)

    @property
    def problems(self) -> int:
        return len(self.reading.problems) + self.reading.left_out

    def check(self, value: Any, check: Callable[[Any], T]) -> T | None:
        """``check(value)``, or None with its ValueError recorded here."""
        try:
            return check(value)
        except (ValueError, TalosSchematicError) as err:  # a check's words for the user
            self.problem(str(err))
            return None


# --- what a value may be --------------------------------------------------------------------------


def described(value: object) -> str:
    """What a value is, in the file's words (for "must be X, not ...")."""
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"the number {repr(value)[:40]}"
    if isinstance(value, str):
        return f"the text {value[:60]!r}" + ("…" if len(value) > 60 else "")
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def text(value: object) -> str:
    if type(value) is not str:
        raise ValueError(f"must be text, not {described(value)}")
    return value


def flag(value: object) -> bool:
    if type(value) is not bool:
        raise ValueError(f"write true or false, not {described(value)}")
    return value


def whole(value: object) -> int:
    if type(value) is not int:
        raise ValueError(f"must be a whole number, not {described(value)}")
    return value


def texts(value: object) -> tuple[str, ...]:
    if type(value) is not list:
        raise ValueError(f"must be a list of text, not {described(value)}")
    for index, item in enumerate(value):
        if type(item) is not str:
            raise ValueError(f"item {index + 1} must be text, not {described(item)}")
    return tuple(value)


def choice(choices: Collection[str]) -> Callable[[object], Any]:
    """A check that the value is one of ``choices``, with a hint for a misspelt one."""

    def check(value: object) -> str:
        if type(value) is str and value in choices:
            return value
        listed = ", ".join(choices)
        if type(value) is not str:
            raise ValueError(f"must be one of {listed}, not {described(value)}")
        close = closest_names(value, choices, most=1)  # a case slip first: case is no distance
        hint = f"; did you mean {close[0]}?" if close else ""
        raise ValueError(f"{value!r} is not one of {listed}{hint}")

    return check


def optional(check: Callable[[Any], T]) -> Callable[[Any], T | None]:
    """``check``, with null meaning "not set"."""

    def maybe(value: object) -> T | None:
        return None if value is None else check(value)

    return maybe


class Fields:
    """A mapping being read key by key: each problem is recorded and reading goes on.

    ``keys`` are the keys it may hold (None: the caller checks them); an unknown one is a
    problem with the closest known key as a hint.
    """

    def __init__(
        self, at: At, value: object, keys: Collection[str] | None, what: str = "a mapping"
    ) -> None:
        self.at = at
        self.start = at.problems
        self.data: Mapping[Any, Any] = {}
        if not isinstance(value, dict):
            at.problem(f"must be {what}, not {described(value)}")
            return
        self.data = value
        if keys is None:
            return
        for key in value:
            if key not in keys:
                # The hint is searched only for a problem that is kept: a hundred thousand
                # unknown keys each searched took a minute.
                close = closest_names(str(key), keys, most=1) if at.reading.collecting else []
                hint = f"; did you mean {close[0]}?" if close else ""
                (at / str(key)).problem(f"unknown key{hint}")

    @property
    def ok(self) -> bool:
        """No problem found in this mapping so far (nested mappings included)."""
        return self.at.problems == self.start

    def get(self, key: str, check: Callable[[Any], T], default: T) -> T:
        """The key's value through ``check``; ``default`` when absent or wrong."""
        if key not in self.data:
            return default
        found = (self.at / key).check(self.data[key], check)
        return default if found is None else found

    def read(self, key: str, read: Callable[[Any, At], T | None], default: T) -> T:
        """A nested mapping or list through its own reader (which records its problems)."""
        if key not in self.data:
            return default
        found = read(self.data[key], self.at / key)
        return default if found is None else found

    def need(self, key: str, check: Callable[[Any], T], example: str) -> T:
        """A required key's value; when absent or wrong the problem is recorded and the
        result must not be used (:attr:`ok` is then false)."""
        if key not in self.data:
            (self.at / key).problem(f"missing; add it, e.g. {example}")
            return cast(T, None)
        return cast(T, (self.at / key).check(self.data[key], check))


def read_list(
    value: object, at: At, read: Callable[[Any, At], T | None], what: str
) -> tuple[T, ...] | None:
    """A list whose items ``read`` reads, or None with the problems recorded; ``what`` says
    what the list should be ("a list of GPUs, e.g. ...")."""
    if not isinstance(value, list):
        at.problem(f"must be {what}, not {described(value)}")
        return None
    start = at.problems
    items = [read(item, at / index) for index, item in enumerate(value)]
    return tuple(item for item in items if item is not None) if at.problems == start else None
