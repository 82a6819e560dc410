"""Mutational fuzz over triage's inputs: whatever the bytes, a report or one message.

Seeds are the evidence bundles in tests/data/triage; each case applies a few seeded byte and
line mutations to one file and triages it in-process. A case fails on an exception that escapes
the command, an exit code other than 0, 1 or 3, or "Traceback" in the output. Cases are fixed
by their seeds, so a failure replays exactly.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands

register_all_commands()

SEEDS = sorted(
    path
    for path in (Path(__file__).parent / "data" / "triage").rglob("*")
    if path.is_file() and path.name != "SOURCES.md"
)
CASES = 60
# Bytes that have broken readers before: JSON and YAML openers, escapes, control bytes.
TOKENS = [b"{", b"[", b"]", b"}", b'"', b"\\x0a", b"\n", b"\x00", b": ", b"- ", b"\xff", b"---\n"]


def _mutate(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(4)
        at = rng.randrange(len(data) + 1)
        if kind == 0:
            data = data[:at] + rng.choice(TOKENS) + data[at:]
        elif kind == 1:
            data = data[:at] + data[at + rng.randint(1, 64) :]
        elif kind == 2:
            lines = data.splitlines(keepends=True)
            if lines:
                line = rng.choice(lines)
                data = data[:at] + line * rng.randint(2, 50) + data[at:]
        else:
            data = data[:at]
    return data


@pytest.mark.parametrize("case", range(CASES))
def test_mutated_evidence_never_escapes_as_a_traceback(case: int, tmp_path: Path) -> None:
    rng = random.Random(case)
    seed = SEEDS[case % len(SEEDS)]
    mutated = _mutate(seed.read_bytes(), rng)
    target = tmp_path / seed.name
    target.write_bytes(mutated)
    result = CliRunner().invoke(app, ["triage", "-f", "json", str(target)])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        seed.name,
        mutated[:400],
    )
    assert result.exit_code in (0, 1, 3, 4), (seed.name, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
