"""Every value triage takes from evidence — counts, numbers, times, ages, addresses — parsed by
one checked function each.

Evidence is whatever a user pasted, so a value may be anything: ``NaN`` and ``+Inf`` (Prometheus
writes both), a 400-digit uptime, an integer past the interpreter's 4,300-digit conversion limit,
a time in year 9999 that leaves the calendar once moved to UTC. Each function here returns
``None`` for what it cannot hold and never raises; a reader then reports the value as unreadable
at its file and line (:func:`unreadable`) instead of failing or guessing.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta

from schematic.doctor.triage.signals import Evidence, Kind, Signal
from schematic.redact import redacted

__all__ = [
    "JSON_NUMBER_DIGITS",
    "age_minutes",
    "count",
    "epoch_time",
    "is_address",
    "json_decoder",
    "json_integer",
    "number",
    "parse_time",
    "unreadable",
    "utc_stamp",
]

# No count, uptime, byte total or epoch a tool prints has more digits than this (2^64 has 20).
_MOST_DIGITS = 20
_COUNT = re.compile(rf"^\s*\+?(\d{{1,{_MOST_DIGITS}}})\s*$")
_NUMBER = re.compile(rf"^\s*[+-]?(?:\d{{1,{_MOST_DIGITS}}}(?:\.\d{{0,20}})?|\.\d{{1,20}})\s*$")
# Numbers in scientific notation as JSON and Prometheus print them ("1.7e+09").
_SCIENTIFIC = re.compile(r"^\s*[+-]?\d{1,17}(?:\.\d{0,17})?[eE][+-]?\d{1,3}\s*$")
# Beyond this a JSON integer is held as its text, which no reader takes for a number.
JSON_NUMBER_DIGITS = _MOST_DIGITS
_ADDRESS = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:]+)$")
_RFC3339 = re.compile(
    r"^(?P<date>\d{4}-\d\d-\d\d)[T ](?P<clock>\d\d:\d\d:\d\d)(?P<fraction>\.\d{1,6})?\d*"
    r"(?P<zone>Z|[+-]\d\d:?\d\d)?$"
)
_AGE = re.compile(r"(\d{1,9})([dhms])")
_AGE_SCALE = {"d": 1440.0, "h": 60.0, "m": 1.0, "s": 1 / 60}
# Python's datetime holds years 1 to 9999; a day's margin keeps any zone's shift inside.
_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def count(text: str) -> int | None:
    """A non-negative whole number (a restart count, a GPU count) of at most 20 digits."""
    found = _COUNT.match(text)
    return int(found[1]) if found else None


def number(text: str) -> float | None:
    """A finite decimal number (an uptime, a sample, an epoch): not NaN, not infinite, and of a
    length a tool prints."""
    if not (_NUMBER.match(text) or _SCIENTIFIC.match(text)):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def json_integer(text: str) -> int | str:
    """The JSON decoder's integer: held as its text when longer than any count a tool prints,
    so neither the decoder nor a reader meets the interpreter's conversion limit."""
    digits = len(text) - text.startswith("-")
    return int(text) if digits <= JSON_NUMBER_DIGITS else text


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time as Kubernetes, talosctl and Go print it, in UTC (nanoseconds cut to
    microseconds; no zone is taken as UTC); None when it is none or not on the calendar."""
    found = _RFC3339.match(text.strip())
    if not found:
        return None
    zone = found["zone"] or "Z"
    zone = "+00:00" if zone == "Z" else (zone if ":" in zone else zone[:3] + ":" + zone[3:])
    try:
        when = datetime.fromisoformat(
            f"{found['date']}T{found['clock']}{found['fraction'] or ''}{zone}"
        )
    except ValueError:
        return None
    if not _EARLIEST <= when <= _LATEST:
        return None
    return when.astimezone(UTC)


def epoch_time(seconds: float) -> datetime | None:
    """A Unix time in seconds as a UTC time; None when it is not finite or not on the calendar."""
    if not math.isfinite(seconds):
        return None
    if not (_EARLIEST - _EPOCH).total_seconds() <= seconds <= (_LATEST - _EPOCH).total_seconds():
        return None
    return _EPOCH + timedelta(seconds=seconds)


def utc_stamp(when: datetime) -> str:
    """A time as triage shows it: UTC, whole seconds (``2025-10-30T18:20:10Z``)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def age_minutes(text: str) -> float | None:
    """A Kubernetes or talosctl age (``19h``, ``2d3h``, ``69m52s``, ``45s``) in minutes."""
    stripped = text.strip()
    parts = _AGE.findall(stripped)
    if not parts or "".join(n + u for n, u in parts) != stripped:
        return None
    return sum(int(n) * _AGE_SCALE[u] for n, u in parts)


def is_address(name: str) -> bool:
    """Whether a node name is an IPv4 or IPv6 address rather than a host name."""
    return bool(_ADDRESS.match(name))


def json_decoder() -> json.JSONDecoder:
    """The JSON decoder every reader uses: integers through :func:`json_integer`."""
    return json.JSONDecoder(parse_int=json_integer)


def unreadable(file: str, line: int, what: str, text: str) -> Signal:
    """The note that a value could not be read: the report lists it as a part of the file
    not read, at its line."""
    text = redacted(text)
    shown = text if len(text) <= 40 else f"{text[:20]}…({len(text)} characters)"
    return Signal(Kind.UNREADABLE_VALUE, "", Evidence(file, line, f"{what} {shown!r}"), what)
