"""Block-style YAML for the rendered manifests: deterministic, and fast enough for 10,000 pools.

The layout is PyYAML's ``safe_dump(sort_keys=False, default_flow_style=False)`` (two-space
indent, list items level with their key, ``{}`` / ``[]`` for empty collections); whether and how
a string is quoted is PyYAML's decision, asked once per distinct string. Keys keep their order.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

__all__ = ["dump", "dump_all"]

_Dumper: type[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# A string PyYAML would write over several lines is written as a JSON string instead: one line,
# and a valid YAML double-quoted scalar, whatever the indentation around it.
_DOCUMENT_END = "\n...\n"


@functools.cache
def _string(text: str) -> str:
    rendered: str = yaml.dump(
        text, Dumper=_Dumper, allow_unicode=True, width=2**31 - 1, default_flow_style=False
    )
    rendered = rendered.removesuffix(_DOCUMENT_END).removesuffix("\n")
    if "\n" in rendered or rendered.startswith(("|", ">")):
        return json.dumps(text, ensure_ascii=False)
    return rendered


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _string_of_float(value)
    raise TypeError(f"cannot write {type(value).__name__} as YAML")


def _string_of_float(value: float) -> str:
    rendered: str = yaml.dump(value, Dumper=_Dumper)
    return rendered.removesuffix(_DOCUMENT_END).removesuffix("\n")


def _is_collection(value: Any) -> bool:
    return isinstance(value, (Mapping, list, tuple))


def _lines(value: Any, indent: str, out: list[str]) -> None:
    """Append ``value`` (a non-empty collection) as block lines at ``indent``."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            head = f"{indent}{_scalar(key)}:"
            if _is_collection(item) and item:
                out.append(head)
                # PyYAML keeps a list level with its key ("indentless" sequences).
                _lines(item, indent if isinstance(item, (list, tuple)) else indent + "  ", out)
            else:
                out.append(f"{head} {_inline(item)}")
        return
    for item in value:
        if _is_collection(item) and item:
            nested: list[str] = []
            _lines(item, indent + "  ", nested)
            first = nested[0][len(indent) + 2 :]
            out.append(f"{indent}- {first}")
            out.extend(nested[1:])
        else:
            out.append(f"{indent}- {_inline(item)}")


def _inline(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, (list, tuple)):
        return "[]"
    return _scalar(value)


def dump(document: Any) -> str:
    """One YAML document, ending in a newline."""
    if _is_collection(document) and document:
        out: list[str] = []
        _lines(document, "", out)
        return "\n".join(out) + "\n"
    return _inline(document) + "\n"


def dump_all(documents: Iterable[Any] | Sequence[Any]) -> str:
    """Several documents separated by ``---``."""
    return "---\n".join(dump(document) for document in documents)
