"""Property: every triage reader is total over the values its real inputs hold.

Seeds are the real bundles in tests/data/triage, grouped by the reader that takes each file
(JSON, YAML, table, describe, log). Hypothesis replaces numbers and times in a seed with what
hostile or merely unusual evidence holds — ``NaN``, ``+Inf``, 400 and 4,400 digits, a time in
year 9999 — and the file is triaged in-process: a report must come back (never an exception),
and every unreadable value it notes names a line of the file. Examples are bounded and
derandomized (tests/conftest.py's profile), so a failure replays exactly.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schematic.doctor.triage import triage_paths
from schematic.errors import TriageInputError

DATA = Path(__file__).parent / "data" / "triage"
_NUMBER = re.compile(rb"(?<![\w.])\d+(?:\.\d+)?(?!\w)")
_TIME = re.compile(rb"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?")
HOSTILE_NUMBERS = [
    b"NaN",
    b"+Inf",
    b"-Inf",
    b"1e20",
    b"1e400",
    b"-1",
    b"9" * 400,
    b"9" * 400 + b".000000",
    b"9" * 4400,
    b"0",
]
HOSTILE_TIMES = [
    b"9999-12-31T23:59:59-05:00",
    b"0001-01-01T00:00:00+05:00",
    b"9999-12-31T23:59:59.999999999Z",
    b"2025-02-30T00:00:00Z",
]
READERS = ("json", "yaml", "table", "describe", "log")


@cache
def seeds() -> dict[str, tuple[Path, ...]]:
    """Each seed file by the reader that takes it (its first format, as the report names it)."""
    found: dict[str, list[Path]] = {reader: [] for reader in READERS}
    for path in sorted(DATA.rglob("*")):
        if not path.is_file() or path.name in ("SOURCES.md", "expected.yaml"):
            continue
        [reading] = triage_paths([str(path)]).readings
        reader = reading.format.split("+")[0]
        if reader in found:
            found[reader].append(path)
    return {reader: tuple(paths) for reader, paths in found.items()}


@st.composite
def mutated(draw: st.DrawFn, reader: str) -> tuple[str, bytes]:
    seed = draw(st.sampled_from(seeds()[reader]))
    data = seed.read_bytes()
    for _ in range(draw(st.integers(1, 3))):
        numbers, times = list(_NUMBER.finditer(data)), list(_TIME.finditer(data))
        choices = [(numbers, HOSTILE_NUMBERS)] * bool(numbers) + [(times, HOSTILE_TIMES)] * bool(
            times
        )
        if not choices:
            break
        places, values = draw(st.sampled_from(choices))
        place = draw(st.sampled_from(places))
        data = data[: place.start()] + draw(st.sampled_from(values)) + data[place.end() :]
    return seed.name, data


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_has_seeds(reader: str) -> None:
    assert seeds()[reader], f"no file of tests/data/triage is read as {reader}"


@pytest.mark.parametrize("reader", READERS)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_reader_reports_what_it_cannot_hold(
    reader: str, data: st.DataObject, tmp_path: Path
) -> None:
    name, content = data.draw(mutated(reader))
    target = tmp_path / name
    target.write_bytes(content)
    try:
        report = triage_paths([str(target)])
    except TriageInputError:
        return  # a clear message and exit 1: a file too large or nested too deeply
    lines = content.count(b"\n") + 1
    for reading in report.readings:
        for at in re.findall(r"unreadable value at line (\d+)", reading.problem):
            assert 1 <= int(at) <= lines, reading.problem
        for note in re.findall(r"; line (\d+): ", reading.problem):
            assert 1 <= int(note) <= lines, reading.problem
