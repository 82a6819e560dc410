"""What a plain YAML scalar means to go-yaml: its resolver, reproduced for the factory's decoder.

The Image Factory decodes schematics with go-yaml, whose resolver follows YAML 1.2's core
schema with a few YAML 1.1 leftovers: ``yes``/``on`` are strings, but ``017`` is octal 15,
``1_000`` is 1000, ``0b11`` is 3 and ``2001-12-14`` is a timestamp. Go's ``strconv`` does the
number parsing; the helpers below follow its rules (base prefixes, underscores removed
first, 64-bit ranges, ``ParseFloat`` only for text shaped like a YAML float).
"""

from __future__ import annotations

import functools
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = [
    "NULL_WORDS",
    "RESOLVER_FIRST_CHARACTERS",
    "YAML11_BOOLEANS",
    "go_parse_int",
    "parse_go_timestamp",
    "reads_as_string",
    "resolve_plain",
]

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1

# The words both YAML 1.1 and 1.2 read as null, besides "~" and the empty text.
NULL_WORDS = frozenset(("null", "Null", "NULL"))

_MAP: dict[str, tuple[str, Any]] = {}
for _word in ("true", "True", "TRUE"):
    _MAP[_word] = ("bool", True)
for _word in ("false", "False", "FALSE"):
    _MAP[_word] = ("bool", False)
for _word in ("", "~", *NULL_WORDS):
    _MAP[_word] = ("null", None)
for _word in (".nan", ".NaN", ".NAN"):
    _MAP[_word] = ("float", math.nan)
for _word in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"):
    _MAP[_word] = ("float", math.inf)
for _word in ("-.inf", "-.Inf", "-.INF"):
    _MAP[_word] = ("float", -math.inf)

_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
# Go's ParseFloat syntax (decimal only; hex floats never reach it through _YAML_FLOAT).
_GO_DECIMAL_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z")
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


# Digits of UINT64_MAX in base 2, the most any number in Go's range has in any base.
_MOST_DIGITS = 64


def _parse_digits(text: str, base: int) -> int | None:
    if not text or any(ch not in _DIGITS[base] for ch in text):
        return None
    if len(text.lstrip("0")) > _MOST_DIGITS:
        return None  # out of Go's range, and past Python's 4,300-digit conversion limit
    return int(text, base)


def go_parse_int(text: str, *, unsigned: bool = False) -> int | None:
    """``strconv.ParseInt(text, 0, 64)`` (or ``ParseUint``); None where Go returns an error."""
    sign = 1
    body = text
    if body[:1] in ("+", "-"):
        if unsigned:
            return None
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    lowered = body[:2].lower()
    if lowered == "0x":
        value = _parse_digits(body[2:], 16)
    elif lowered == "0b":
        value = _parse_digits(body[2:], 2)
    elif lowered == "0o":
        value = _parse_digits(body[2:], 8)
    elif body.startswith("0") and len(body) > 1:
        value = _parse_digits(body[1:], 8)
    else:
        value = _parse_digits(body, 10)
    if value is None:
        return None
    value *= sign
    if unsigned:
        return value if value <= _UINT64_MAX else None
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _go_parse_float(text: str) -> float | None:
    if not _GO_DECIMAL_FLOAT.match(text):
        return None
    value = float(text)
    # Go reports overflow to infinity as an error.
    return None if math.isinf(value) else value


def _underscores_ok(text: str) -> bool:
    # strconv's rule: an underscore must sit between two digits.
    for i, ch in enumerate(text):
        if ch == "_" and not (
            0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()
        ):
            return False
    return True


def _prefixed(plain: str, prefix: str, base: int) -> int | None:
    if plain.startswith(prefix):
        rest = plain[len(prefix) :]
        sign = -1 if rest[:1] == "-" else 1
        value = _parse_digits(rest[1:] if rest[:1] in ("+", "-") else rest, base)
        if value is not None and _INT64_MIN <= sign * value <= _UINT64_MAX:
            return sign * value
        return None
    if plain.startswith("-" + prefix):
        value = _parse_digits(plain[len(prefix) + 1 :], base)
        if value is not None and -value >= _INT64_MIN:
            return -value
    return None


def resolve_plain(text: str) -> tuple[str, Any]:
    """The tag (``str``, ``null``, ``bool``, ``int``, ``float``, ``timestamp``) and value of a
    plain scalar, as go-yaml's ``resolve("", text)`` gives them."""
    if text == "":
        return _MAP[""]
    first = text[0]
    if first in "yYnNtTfFoO~":
        return _MAP.get(text, ("str", text))
    if first == ".":
        found = _MAP.get(text)
        if found is not None:
            return found
        # Here the raw text goes to ParseFloat, which allows "_" between digits.
        value = _go_parse_float(text.replace("_", "")) if _underscores_ok(text) else None
        return ("float", value) if value is not None else ("str", text)
    if first in "+-0123456789":
        found = _MAP.get(text)
        if found is not None:
            return found
        stamp = parse_go_timestamp(text)
        if stamp is not None:
            return ("timestamp", stamp)
        plain = text.replace("_", "")
        if plain:
            number = go_parse_int(plain)
            if number is None:
                number = go_parse_int(plain, unsigned=True)
            if number is not None:
                return ("int", number)
            if _YAML_FLOAT.match(plain):
                value = _go_parse_float(plain)
                if value is not None:
                    return ("float", value)
            for prefix, base in (("0b", 2), ("0o", 8)):
                number = _prefixed(plain, prefix, base)
                if number is not None:
                    return ("int", number)
        return ("str", text)
    return ("str", text)


@functools.lru_cache(maxsize=65536)
def reads_as_string(text: str) -> bool:
    """Whether go-yaml reads the plain scalar ``text`` as a string.

    Cached, because the reader and the writer each ask it of every name and names repeat
    across schematics; and a ``map`` over a cached function runs in C for the names seen.
    """
    return resolve_plain(text)[0] == "str"


# The resolver looks past the first character only when it is one of these (or the text is
# empty): any other first character makes a plain scalar a string. The writer's shortcut for
# the usual name is built from this set.
RESOLVER_FIRST_CHARACTERS = frozenset("yYnNtTfFoO~.+-0123456789")


# --- YAML 1.1's words -------------------------------------------------------------------------

# The words YAML 1.1 (PyYAML's safe_load, go-yaml v2) reads as booleans: y|Y|yes|Yes|YES|n|N|
# no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF (yaml.org/type/bool.html).
# go-yaml v3 and later read only true/false as booleans and the rest as strings, yet still
# decode them into a bool field, and its marshaller quotes them so that an old reader keeps
# them strings. PyYAML's resolver takes all but y/Y/n/N. The one list every module uses.
YAML11_BOOLEANS: dict[str, bool] = {
    word: value
    for words, value in ((("y", "yes", "true", "on"), True), (("n", "no", "false", "off"), False))
    for lower in words
    for word in (lower, lower.title(), lower.upper())
}


# --- timestamps: Go's time.Parse for go-yaml's four layouts -----------------------------------

_DATE = r"(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})"
_CLOCK = r"(?P<h>\d{1,2}):(?P<mi>\d{1,2}):(?P<s>\d{1,2})(?:[.,](?P<f>\d+))?"
_TIMESTAMP_LAYOUTS = (
    re.compile(_DATE + r"T" + _CLOCK + r"(?P<z>Z|[-+]\d{2}:\d{2})\Z"),
    re.compile(_DATE + r"t" + _CLOCK + r"(?P<z>Z|[-+]\d{2}:\d{2})\Z"),
    re.compile(_DATE + r" " + _CLOCK + r"\Z"),
    re.compile(_DATE + r"\Z"),
)


def parse_go_timestamp(text: str) -> str | None:
    """If go-yaml reads ``text`` as a timestamp, its RFC 3339 (nanosecond) rendering."""
    if len(text) < 5 or not text[:4].isascii() or not text[:4].isdigit() or text[4] != "-":
        return None
    for layout in _TIMESTAMP_LAYOUTS:
        match = layout.match(text)
        if match is None:
            continue
        rendered = _render(match.groupdict())
        if rendered is not None:
            return rendered
    return None


def _render(parts: dict[str, str | None]) -> str | None:
    year, month, day = int(parts["y"] or 0), int(parts["mo"] or 0), int(parts["d"] or 0)
    hour = int(parts.get("h") or 0)
    minute = int(parts.get("mi") or 0)
    second = int(parts.get("s") or 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    try:
        moment = datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None
    fraction = (parts.get("f") or "")[:9]
    zone = parts.get("z")
    offset = 0
    if zone and zone != "Z":
        zone_hours, zone_minutes = int(zone[1:3]), int(zone[4:6])
        if zone_hours > 23 or zone_minutes > 59:
            return None
        offset = (zone_hours * 60 + zone_minutes) * (-1 if zone[0] == "-" else 1)
    stamp = moment.replace(tzinfo=timezone(timedelta(minutes=offset)))
    text = stamp.strftime("%Y-%m-%dT%H:%M:%S")
    nanos = fraction.ljust(9, "0").rstrip("0")
    if nanos:
        text += "." + nanos
    if offset == 0:
        return text + "Z"
    sign = "-" if offset < 0 else "+"
    return f"{text}{sign}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}"
