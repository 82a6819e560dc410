"""The canonical YAML of a schematic: the bytes the Image Factory hashes into its ID.

The factory marshals its decoded schematic with go-yaml (v4 since image-factory v1.5.0) and
takes the SHA-256 of the result, so an offline ID is only right if these bytes are right to the
last quote. This module reproduces that marshaller's observable rules for the value shapes a
schematic can hold (mappings, sequences, strings, integers, floats, booleans, nulls and
timestamps inside ``overlay.options``):

* block style with 4-space indentation; sequences are indented under their key, a mapping in
  a sequence item starts after ``- `` and its later keys line up under the first; empty
  collections are written in flow style (``[]``, ``{}``);
* no line wrapping, UTF-8 written raw, exactly what libyaml's scalar analyser allows;
* a string is plain unless it would read back as something else (null, bool, number,
  timestamp) or the analyser forbids it; YAML-1.1-only words (``yes``, ``off``, base 60,
  ``<<``) are single-quoted (double-quoted by factories before v1.5.0, see ``legacy_quoting``);
  strings with a newline become literal blocks when they hold more than white space, with an
  indentation indicator only when the text starts with a space (factories before v1.5.0,
  on go-yaml v3 or v4 up to rc.4, also when it starts with a line break);
* mapping keys of ``overlay.options`` are sorted with go-yaml's natural order.

The emitter works on a small tree of ``dict``, :class:`GoMap`, ``list``, ``str``, ``bool``,
``int``, ``float``, ``None`` and :class:`GoTime`: a ``dict`` is a Go struct, written in its own
key order; a :class:`GoMap` is a Go map, written in go-yaml's sorted order.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from schematic.core.goscalar import RESOLVER_FIRST_CHARACTERS, YAML11_BOOLEANS, reads_as_string

__all__ = [
    "GoMap",
    "GoTime",
    "emit_document",
    "format_go_float",
    "natural_less",
    "sha256_hex",
    "string_scalar",
]

INDENT = 4
# A key longer than this (in UTF-8 bytes) cannot be a simple key: go-yaml writes "? key".
_SIMPLE_KEY_LIMIT = 128

_BREAKS = frozenset("\r\n\x85\u2028\u2029")
_FIRST_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")

# Fast path: text of these characters (no space, no indicator first, no final ":") is plain
# once the resolver has said it reads back as a string.
_SAFE_PLAIN = re.compile(r"[A-Za-z0-9_/=+~^$()][A-Za-z0-9_./=+~^$()@%,<>#&*!|'\[\]{}?:-]*(?<!:)\Z")
# The first characters _SAFE_PLAIN takes, less those where the resolver looks further (the
# YAML 1.1 words start with one of them too): after one of these, no test of the resolver's
# is needed. (The letters are spelled out: the string module would add an import to start-up.)
_UNAMBIGUOUS_FIRST = (
    frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_/=+~^$()")
    - RESOLVER_FIRST_CHARACTERS
)


@dataclass(frozen=True, slots=True)
class GoTime:
    """A timestamp as go-yaml holds it, with its RFC 3339 (nanosecond) text already rendered."""

    text: str


@dataclass(frozen=True, slots=True)
class GoMap:
    """A Go map (``overlay.options`` and what it nests): written with its keys sorted.

    Keys are strings, or for nested maps whose keys are not all strings, the typed values
    go-yaml gives them (int, float, bool, None, GoTime); ``items`` keeps input order.
    """

    items: tuple[tuple[Any, Any], ...]

    def sorted_items(self) -> list[tuple[Any, Any]]:
        return _sorted_items(self.items)


def sha256_hex(data: str) -> str:
    """Lower-case hex SHA-256 of ``data`` encoded as UTF-8."""
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


# --- what a plain scalar would read back as (go-yaml's resolver) -----------------------------

_BASE60_FIRST = frozenset("+-0123456789")
_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?\Z")


def _resolves_to_non_string(text: str) -> bool:
    return not reads_as_string(text)


def _is_yaml11_only(text: str) -> bool:
    # (true and false, also YAML 1.1 words, never get here: they resolve as booleans.) A
    # sexagesimal number starts with a digit or a sign: the test of the first character
    # spares most names a regex call.
    return (
        text in YAML11_BOOLEANS
        or text == "<<"
        or (text[:1] in _BASE60_FIRST and _BASE60.match(text) is not None)
    )


# --- scalar analysis (libyaml's analyser, as go-yaml ports it) --------------------------------


def _printable(ch: str) -> bool:
    cp = ord(ch)
    return (
        cp == 0x0A
        or 0x20 <= cp <= 0x7E
        or 0xA0 <= cp <= 0xD7FF
        or (0xE000 <= cp <= 0xFFFD and cp != 0xFEFF)
    )


@dataclass(frozen=True, slots=True)
class _Analysis:
    multiline: bool
    plain_allowed: bool  # block context; flow context never arises in a schematic
    single_allowed: bool
    block_allowed: bool


def _analyse(text: str) -> _Analysis:
    if not text:
        return _Analysis(False, True, True, False)
    block_indicators = text.startswith(("---", "..."))
    line_breaks = special = tabs = False
    leading_space = leading_break = trailing_space = trailing_break = False
    break_space = space_break = False
    previous_space = previous_break = False
    preceded_by_whitespace = True
    last = len(text) - 1
    for i, ch in enumerate(text):
        followed_by_whitespace = i == last or text[i + 1] in " \t"
        if i == 0:
            # "?", ":" and "-" start a block structure only when a blank follows.
            if ch in _FIRST_INDICATORS or (ch in "?:-" and followed_by_whitespace):
                block_indicators = True
        elif (ch == ":" and followed_by_whitespace) or (ch == "#" and preceded_by_whitespace):
            block_indicators = True
        if ch == "\t":
            tabs = True
        elif not _printable(ch):
            special = True
        if ch == " ":
            if i == 0:
                leading_space = True
            if i == last:
                trailing_space = True
            if previous_break:
                break_space = True
            previous_space, previous_break = True, False
        elif ch in _BREAKS:
            line_breaks = True
            if i == 0:
                leading_break = True
            if i == last:
                trailing_break = True
            if previous_space:
                space_break = True
            previous_space, previous_break = False, True
        else:
            previous_space = previous_break = False
        preceded_by_whitespace = ch in " \t" or ch in _BREAKS
    plain = not (
        leading_space
        or leading_break
        or trailing_space
        or trailing_break
        or break_space
        or space_break
        or tabs
        or special
        or line_breaks
        or block_indicators
    )
    single = not (break_space or space_break or tabs or special)
    block = not (trailing_space or space_break or special)
    return _Analysis(line_breaks, plain, single, block)


# --- scalar writers -----------------------------------------------------------------------------

_ESCAPES = {
    "\x00": "0",
    "\x07": "a",
    "\x08": "b",
    "\t": "t",
    "\n": "n",
    "\x0b": "v",
    "\x0c": "f",
    "\r": "r",
    "\x1b": "e",
    '"': '"',
    "\\": "\\",
    "\x85": "N",
    "\xa0": "_",
    "\u2028": "L",
    "\u2029": "P",
}


def _double_quoted(text: str) -> str:
    # go-yaml's byte-order-mark test looks at the start of the value, not at the current
    # character: a value that starts with U+FEFF has every character escaped.
    escape_all = text.startswith("\ufeff")
    out = ['"']
    for ch in text:
        if escape_all or ch == '"' or ch == "\\" or ch in _BREAKS or not _printable(ch):
            short = _ESCAPES.get(ch)
            if short is not None:
                out.append("\\" + short)
            else:
                cp = ord(ch)
                if cp <= 0xFF:
                    out.append(f"\\x{cp:02X}")
                elif cp <= 0xFFFF:
                    out.append(f"\\u{cp:04X}")
                else:
                    out.append(f"\\U{cp:08X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _break_then_indent(text: str, indent: int) -> str:
    """Write a literal block's body: breaks as they are, each line indented (empty ones not)."""
    pad = " " * indent
    out: list[str] = []
    after_break = True
    for ch in text:
        if ch in _BREAKS:
            out.append(ch)
            after_break = True
        else:
            if after_break:
                out.append(pad)
            out.append(ch)
            after_break = False
    return "".join(out)


def _single_quoted(text: str, indent: int) -> str:
    if not any(ch in _BREAKS for ch in text):
        return "'" + text.replace("'", "''") + "'"
    # A quoted scalar folds a lone "\n"; libyaml writes it twice so it reads back as one.
    out: list[str] = ["'"]
    pad = " " * indent
    in_breaks = False
    for ch in text:
        if ch in _BREAKS:
            if not in_breaks and ch == "\n":
                out.append("\n")
            out.append(ch)
            in_breaks = True
        else:
            if in_breaks:
                out.append(pad)
            out.append("''" if ch == "'" else ch)
            in_breaks = False
    out.append("'")
    return "".join(out)


def _literal(text: str, indent: int, legacy: bool) -> str:
    header = "|"
    # The indentation indicator: go-yaml v4 (internal/libyaml/emitter.go, writeBlockScalarHints,
    # v4.0.0-rc.6; go-yaml issue 65) writes it only when the text starts with a space; go-yaml
    # v3, which factories before v1.5.0 use, also when it starts with a line break.
    if text[0] == " " or (legacy and text[0] in _BREAKS):
        header += str(INDENT)
    if text[-1] not in _BREAKS:
        header += "-"
    elif len(text) == 1 or text[-2] in _BREAKS:
        header += "+"
    return header + "\n" + _break_then_indent(text, indent)


def _should_use_literal(text: str) -> bool:
    return len(text.encode("utf-8")) >= 2 and any(not ch.isspace() for ch in text)


def string_scalar(text: str, indent: int, *, legacy_quoting: bool = False) -> str:
    """How go-yaml writes the string value ``text`` when its lines are indented by ``indent``."""
    return _string_scalar(text, indent, False, legacy_quoting)


@functools.lru_cache(maxsize=65536)
def _string_scalar(text: str, indent: int, is_key: bool, legacy_quoting: bool) -> str:
    """Render one string scalar (without the separating space)."""
    return _render_string(text, indent, is_key, legacy_quoting)


def _render_string(text: str, indent: int, is_key: bool, legacy_quoting: bool) -> str:
    # The usual name, as the branches below would find it: no resolver word starts with this
    # first character, and _SAFE_PLAIN takes the rest. Most calls here are cache misses for
    # new names, and this spares them the resolver and the YAML 1.1 tests.
    if text[:1] in _UNAMBIGUOUS_FIRST and _SAFE_PLAIN.match(text):
        return text
    if "\n" in text:
        wanted = "literal" if _should_use_literal(text) else "double"
    elif _resolves_to_non_string(text):
        wanted = "double"
    elif _is_yaml11_only(text):
        wanted = "double" if legacy_quoting else "single"
    elif _SAFE_PLAIN.match(text):
        return text
    else:
        wanted = "plain"
    analysis = _analyse(text)
    if is_key and analysis.multiline:
        wanted = "double"
    if wanted == "plain" and (not analysis.plain_allowed or (not text and is_key)):
        wanted = "single"
    if wanted == "single" and not analysis.single_allowed:
        wanted = "double"
    if wanted == "literal" and (not analysis.block_allowed or is_key):
        wanted = "double"
    if wanted == "plain":
        return text
    if wanted == "single":
        return _single_quoted(text, indent)
    if wanted == "literal":
        return _literal(text, indent, legacy_quoting)
    return _double_quoted(text)


# --- numbers ------------------------------------------------------------------------------------


def format_go_float(value: float) -> str:
    """``strconv.FormatFloat(v, 'g', -1, 64)`` with go-yaml's spellings of infinity and NaN."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    # repr gives the shortest digits that round-trip, as Go's shortest formatting does.
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    exponent += len(digit_tuple) - len(digits)
    point = len(digits) + exponent  # the value is 0.<digits> x 10**point
    prefix = "-" if sign else ""
    exp10 = point - 1
    if exp10 < -4 or exp10 >= 6:  # shortest 'g' switches to %e from an exponent of 6
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{body}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return prefix + digits + "0" * (point - len(digits))
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def _scalar(value: Any, indent: int, is_key: bool, legacy_quoting: bool) -> str:
    if isinstance(value, str):
        return _string_scalar(value, indent, is_key, legacy_quoting)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_go_float(value)
    if isinstance(value, GoTime):
        return value.text
    raise TypeError(f"cannot emit {type(value).__name__}")


# --- go-yaml's natural key order -------------------------------------------------------------


def _is_letter(ch: str) -> bool:
    return ch.isalpha()


def _is_digit(ch: str) -> bool:
    # unicode.IsDigit: decimal digits (category Nd), which str.isdecimal matches.
    return ch.isdecimal()


def _digit_value(ch: str) -> int:
    # go-yaml accumulates rune - '0' even for non-ASCII digits; reproduce that arithmetic.
    return ord(ch) - ord("0")


def natural_less(a: str, b: str) -> bool:
    """go-yaml's ``keyList.Less`` for two string keys."""
    digits = False
    for i in range(min(len(a), len(b))):
        ca, cb = a[i], b[i]
        if ca == cb:
            digits = _is_digit(ca)
            continue
        la, lb = _is_letter(ca), _is_letter(cb)
        if la and lb:
            return ca < cb
        if la or lb:
            return la if digits else lb
        an = bn = 0
        if ca == "0" or cb == "0":
            j = i - 1
            while j >= 0 and _is_digit(a[j]):
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(a) and _is_digit(a[ai]):
            an = _wrap_int64(an * 10 + _digit_value(a[ai]))
            ai += 1
        bi = i
        while bi < len(b) and _is_digit(b[bi]):
            bn = _wrap_int64(bn * 10 + _digit_value(b[bi]))
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ca < cb
    return len(a) < len(b)


def _wrap_int64(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


# reflect.Kind numbers decide the order of keys of different types.
_KIND_BOOL, _KIND_INT, _KIND_UINT64, _KIND_FLOAT64 = 1, 2, 11, 14
_KIND_INTERFACE, _KIND_STRING, _KIND_STRUCT = 20, 24, 25
_INT64_MAX = (1 << 63) - 1


def _kind(key: Any) -> int:
    if key is None:
        return _KIND_INTERFACE
    if isinstance(key, bool):
        return _KIND_BOOL
    if isinstance(key, int):
        return _KIND_UINT64 if key > _INT64_MAX else _KIND_INT
    if isinstance(key, float):
        return _KIND_FLOAT64
    if isinstance(key, str):
        return _KIND_STRING
    return _KIND_STRUCT


def _key_less(a: Any, b: Any) -> bool:
    ka, kb = _kind(a), _kind(b)
    numeric = (_KIND_BOOL, _KIND_INT, _KIND_UINT64, _KIND_FLOAT64)
    if ka in numeric and kb in numeric:
        fa, fb = float(a), float(b)
        if fa != fb:
            return fa < fb
        if ka != kb:
            return ka < kb
        return bool(a < b)
    if ka != _KIND_STRING or kb != _KIND_STRING:
        return ka < kb
    return natural_less(a, b)


def _sorted_items(items: Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    def compare(x: tuple[Any, Any], y: tuple[Any, Any]) -> int:
        if _key_less(x[0], y[0]):
            return -1
        if _key_less(y[0], x[0]):
            return 1
        return 0

    return sorted(items, key=functools.cmp_to_key(compare))


# --- block structure ----------------------------------------------------------------------------


def _child_indent(indent: int) -> int:
    """Indentation of what a mapping at ``indent`` holds: the next multiple of four."""
    return INDENT * ((indent + INDENT) // INDENT)


def _is_mapping(value: Any) -> bool:
    return isinstance(value, (dict, GoMap))


def _is_collection(value: Any) -> bool:
    return isinstance(value, (dict, list, GoMap))


def _is_empty_collection(value: Any) -> bool:
    if isinstance(value, (dict, list)):
        return not value
    if isinstance(value, GoMap):
        return not value.items
    return False


def _items(value: Any) -> Iterable[tuple[Any, Any]]:
    # A dict is a struct, written in its own order; a GoMap is a Go map, written sorted.
    return value.items() if isinstance(value, dict) else value.sorted_items()


@functools.lru_cache(maxsize=4096)
def _complex_key(key: Any) -> bool:
    """A key go-yaml cannot write as ``key:`` (multi-line, or over 128 bytes): ``? key``."""
    return isinstance(key, str) and (
        any(ch in _BREAKS for ch in key) or len(key.encode("utf-8")) > _SIMPLE_KEY_LIMIT
    )


class _Writer:
    def __init__(self, legacy_quoting: bool) -> None:
        self.parts: list[str] = []
        self.legacy_quoting = legacy_quoting

    def line_start(self, indent: int) -> str:
        # After a literal block that ended in a line break the cursor is already at a line start.
        last = self.parts[-1] if self.parts else ""
        if last and last[-1] in _BREAKS:
            return " " * indent
        return "\n" + " " * indent

    def scalar(self, value: Any, indent: int, is_key: bool = False) -> str:
        if type(value) is str:
            return _string_scalar(value, indent, is_key, self.legacy_quoting)
        return _scalar(value, indent, is_key, self.legacy_quoting)

    def mapping(self, value: Any, indent: int, first_inline: bool) -> None:
        """Write a non-empty block mapping whose keys sit at ``indent``.

        ``first_inline``: the cursor already stands where the first key goes (the document
        start, or after ``- `` in a sequence item).
        """
        parts = self.parts
        child = _child_indent(indent)
        for number, (key, item) in enumerate(_items(value)):
            if number or not first_inline:
                parts.append(self.line_start(indent))
            if _complex_key(key):
                # Not a simple key: go-yaml writes "? key" and the value on its own ": " line.
                parts.append("? " + self.scalar(key, child))
                parts.append(self.line_start(indent) + ":")
                if _is_empty_collection(item) or not _is_collection(item):
                    self.value(item, indent)
                else:
                    # After a ": " indicator a block collection starts on the same line.
                    parts.append(" " * (child - indent - 1))
                    if isinstance(item, list):
                        self.sequence(item, child, first_inline=True)
                    else:
                        self.mapping(item, child, first_inline=True)
            else:
                parts.append(self.scalar(key, child, is_key=True) + ":")
                self.value(item, indent)

    def value(self, item: Any, indent: int) -> None:
        """Write a mapping value right after its ``:``."""
        if type(item) is str:
            self.parts.append(
                " " + _string_scalar(item, _child_indent(indent), False, self.legacy_quoting)
            )
        elif _is_empty_collection(item):
            self.parts.append(" []" if isinstance(item, list) else " {}")
        elif isinstance(item, list):
            self.sequence(item, _child_indent(indent), first_inline=False)
        elif _is_mapping(item):
            self.mapping(item, _child_indent(indent), first_inline=False)
        else:
            self.parts.append(" " + self.scalar(item, _child_indent(indent)))

    def sequence(self, value: Sequence[Any], indent: int, first_inline: bool) -> None:
        parts = self.parts
        legacy = self.legacy_quoting
        item_indent = indent + 2
        for number, item in enumerate(value):
            start = "" if (first_inline and not number) else self.line_start(indent)
            if type(item) is str:
                parts.append(start + "- " + _string_scalar(item, item_indent, False, legacy))
            elif _is_empty_collection(item):
                parts.append(start + ("- []" if isinstance(item, list) else "- {}"))
            elif isinstance(item, list):
                parts.append(start + "- ")
                self.sequence(item, item_indent, first_inline=True)
            elif _is_mapping(item):
                parts.append(start + "- ")
                self.mapping(item, item_indent, first_inline=True)
            else:
                parts.append(start + "- " + self.scalar(item, item_indent))


def emit_document(root: Mapping[str, Any], *, legacy_quoting: bool = False) -> str:
    """Marshal ``root`` the way go-yaml does: dicts in their own order, GoMaps sorted."""
    if not root:
        return "{}\n"
    writer = _Writer(legacy_quoting)
    writer.mapping(root, 0, first_inline=True)
    text = "".join(writer.parts)
    # Only a literal block can leave the text ending in a line break; go-yaml adds none then.
    return text if text[-1] in _BREAKS else text + "\n"
