"""Block-style YAML for the rendered manifests: deterministic, and fast enough for 10,000 pools.

The layout is PyYAML's ``safe_dump(sort_keys=False, default_flow_style=False)`` (two-space
indent, list items level with their key, ``{}`` / ``[]`` for empty collections); whether and how
a string is quoted is PyYAML's decision, asked once per distinct string. Keys keep their order.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from schematic.core.goscalar import NULL_WORDS, YAML11_BOOLEANS

__all__ = ["dump", "dump_all"]

_Dumper: type[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# A string PyYAML would write over several lines is written as a JSON string instead: one line,
# and a valid YAML double-quoted scalar, whatever the indentation around it.
_DOCUMENT_END = "\n...\n"


# Letter-first names of these characters are plain for PyYAML unless they are one of its
# YAML 1.1 booleans or nulls (y and n, which it reads as strings, are asked too): answered
# without asking the emitter (thousands of pool names).
_PLAIN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")
_YAML11_WORDS = frozenset(YAML11_BOOLEANS) | NULL_WORDS
# Paths and digests (an index lists two of each per pool, every one new): no character here
# makes the emitter quote, and none starts an indicator or a document marker, so PyYAML writes
# them plain exactly when its resolver reads them back as strings; asking the resolver costs a
# tenth of asking the emitter.
_PLAIN_TOKEN = re.compile(r"(?!\.\.\.)[A-Za-z0-9_./][A-Za-z0-9_./-]*\Z")
_RESOLVER: Any = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"


def _resolves_to_string(text: str) -> bool:
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))
    return tag == _STR_TAG


def _string(text: str) -> str:
    if _PLAIN_NAME.match(text):
        if text not in _YAML11_WORDS:
            return text
    elif _PLAIN_TOKEN.match(text) and _resolves_to_string(text):
        return text
    return _emitted(text)


@functools.cache
def _emitted(text: str) -> str:
    rendered: str = yaml.dump(
        text, Dumper=_Dumper, allow_unicode=True, width=2**31 - 1, default_flow_style=False
    )
    rendered = rendered.removesuffix(_DOCUMENT_END).removesuffix("\n")
    if "\n" in rendered or rendered.startswith(("|", ">")):
        return json.dumps(text, ensure_ascii=False)
    return rendered


def _scalar(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return _string(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float:
        return _string_of_float(value)
    if isinstance(value, str):  # str subclasses, e.g. enums
        return _string(str(value))
    raise TypeError(f"cannot write {kind.__name__} as YAML")


def _string_of_float(value: float) -> str:
    rendered: str = yaml.dump(value, Dumper=_Dumper)
    return rendered.removesuffix(_DOCUMENT_END).removesuffix("\n")


def _plain(value: Any) -> Any:
    """Other mappings and sequences as dicts and lists (type checks below are exact)."""
    kind = type(value)
    if kind is dict or kind is list or kind is str or kind is int or value is None:
        return value
    if kind is tuple:
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


def _mapping_lines(value: dict[Any, Any], indent: str, out: list[str]) -> None:
    deeper = indent + "  "
    for key, item in value.items():
        item = _plain(item)
        kind = type(item)
        if kind is dict and item:
            out.append(f"{indent}{_scalar(key)}:")
            _mapping_lines(item, deeper, out)
        elif kind is list and item:
            out.append(f"{indent}{_scalar(key)}:")
            # PyYAML keeps a list level with its key ("indentless" sequences).
            _list_lines(item, indent, out)
        else:
            out.append(f"{indent}{_scalar(key)}: {_inline(item)}")


def _list_lines(value: list[Any], indent: str, out: list[str]) -> None:
    deeper = indent + "  "
    for item in value:
        item = _plain(item)
        kind = type(item)
        if (kind is dict or kind is list) and item:
            nested: list[str] = []
            if kind is dict:
                _mapping_lines(item, deeper, nested)
            else:
                _list_lines(item, deeper, nested)
            out.append(f"{indent}- {nested[0][len(deeper) :]}")
            out.extend(nested[1:])
        else:
            out.append(f"{indent}- {_inline(item)}")


def _inline(value: Any) -> str:
    kind = type(value)
    if kind is dict:
        return "{}"
    if kind is list:
        return "[]"
    return _scalar(value)


def dump(document: Any) -> str:
    """One YAML document, ending in a newline."""
    document = _plain(document)
    out: list[str] = []
    if type(document) is dict and document:
        _mapping_lines(document, "", out)
    elif type(document) is list and document:
        _list_lines(document, "", out)
    else:
        return _inline(document) + "\n"
    return "\n".join(out) + "\n"


def dump_all(documents: Iterable[Any] | Sequence[Any]) -> str:
    """Several documents separated by ``---``."""
    return "---\n".join(dump(document) for document in documents)
