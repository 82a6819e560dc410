"""Property: every triage reader is total over the values its real inputs hold.

Seeds are the real bundles in tests/data/triage, grouped by the reader that takes each file
(JSON, YAML, table, describe, log). Hypothesis replaces numbers and times in a seed with what
hostile or merely unusual evidence holds — ``NaN``, ``+Inf``, 400 and 4,400 digits, a time in
year 9999 — and the file is triaged in-process: a report must come back (never an exception),
and every unreadable value it notes names a line of the file. Examples are bounded and
derandomized (tests/conftest.py's profile), so a failure replays exactly.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schematic.doctor.triage import triage_paths
from schematic.doctor.triage.readers.documents import read_json_chunks
from schematic.doctor.triage.signals import Kind
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


def _pod_list(pods: list[tuple[int, bool, bool]], indent: int | None) -> str:
    """A pod list as kubectl prints it (its keys in the order kubectl writes a Pod's fields):
    each pod with a restart count or not, a host IP or not."""
    items = []
    for number, (restarts, host_ip, sorted_keys) in enumerate(pods):
        status: dict[str, object] = {"phase": "Running"}
        if host_ip:
            status["hostIP"] = f"10.0.0.{number % 250}"
        status["containerStatuses"] = [{"name": "c", "restartCount": restarts}]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{number}", "namespace": "ns"},
            "spec": {"nodeName": f"node-{number}"},
            "status": dict(sorted(status.items())) if sorted_keys else status,
        }
        items.append(pod)
    return json.dumps({"apiVersion": "v1", "items": items, "kind": "List"}, indent=indent)


@settings(max_examples=60, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    pods=st.lists(
        st.tuples(st.integers(0, 3), st.booleans(), st.booleans()), min_size=1, max_size=8
    ),
    indent=st.sampled_from([None, 2, 4]),
    chunk=st.integers(1, 200),
)
def test_each_pod_line_is_the_line_of_the_key_it_quotes(
    pods: list[tuple[int, bool, bool]], indent: int | None, chunk: int
) -> None:
    # The reader counts a key's line on from the last one it found; the line must be the one
    # the key is on, whichever order the keys come in and wherever the chunks are cut.
    text = _pod_list([(r, h, s) for r, h, s in pods], indent)
    chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    signals = list(read_json_chunks(chunks, "pods.json"))

    def line_of(word: str, pod: int) -> int:
        # a pod's status comes after its name, and before the next pod's name
        key = text.index(f'"{word}"', text.index(f'"p{pod}"'))
        return text.count("\n", 0, key) + 1

    for number, (restarts, host_ip, _) in enumerate(pods):
        node = f"node-{number}"
        (pod,) = [s for s in signals if s.kind is Kind.POD and s.node == node]
        if restarts:
            assert pod.evidence.line == line_of("restartCount", number)
        identity = [s for s in signals if s.kind is Kind.IDENTITY and s.node == node]
        if host_ip:
            assert [s.evidence.line for s in identity] == [line_of("hostIP", number)]
        else:
            assert identity == []


def test_a_key_an_object_lacks_is_located_at_the_objects_own_line() -> None:
    # An event without a reason (a series' count only): its line is where the event starts.
    events = [
        {"apiVersion": "v1", "kind": "Event", "reason": "Started", "message": "m"},
        {"apiVersion": "v1", "kind": "Event", "message": "no reason given"},
    ]
    text = json.dumps({"apiVersion": "v1", "items": events, "kind": "List"}, indent=4)
    signals = [s for s in read_json_chunks([text], "events.json") if s.kind is Kind.EVENT]
    second = text.index("{", text.index('"Started"'))
    assert [s.evidence.line for s in signals] == [
        text.count("\n", 0, text.index('"reason"')) + 1,
        text.count("\n", 0, second) + 1,
    ]
