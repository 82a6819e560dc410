"""One budget per input kind: the table in code is the table the security page shows, and each
limit is enforced before the work, by the file's size (and, for a kind with one, its YAML
nodes), with a message naming file, size and limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.safe_yaml import BUDGETS, INPUT_LIMITS, Budget, InputKind, format_size

register_all_commands()

SECURITY = Path(__file__).resolve().parents[1] / "docs" / "security.md"
HEADER = "| input | real size | default limit | most YAML nodes |"


def _table_rows(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(HEADER) + 2  # past the header and its rule
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def _nodes(budget: Budget) -> str:
    if budget.max_nodes is None:
        return "-"
    return f"{budget.max_nodes:,} ({budget.real_nodes})"


def test_the_security_page_shows_the_budget_table_the_readers_use() -> None:
    expected = [
        f"| {b.inputs} | {b.real} | {format_size(b.limit)} | {_nodes(b)} |" for b in BUDGETS
    ]
    assert _table_rows(SECURITY.read_text(encoding="utf-8")) == expected


def test_every_input_kind_has_one_budget() -> None:
    kinds = [budget.kind for budget in BUDGETS]
    assert sorted(kinds, key=lambda k: k.name) == sorted(InputKind, key=lambda k: k.name)
    assert {budget.kind: budget.limit for budget in BUDGETS} == INPUT_LIMITS


# What each triage evidence kind starts with; the file is then grown, sparse, to one byte past
# its kind's limit: read, it would cost the reader its whole size (and the zeros are not text).
_HEADS = {
    InputKind.EVIDENCE: b"[    5.559842] NVRM: RmInitAdapter failed!\n",
    InputKind.EVIDENCE_JSON: b'{"apiVersion": "v1", "items": [',
    InputKind.METRICS: b'{"status":"success","data":{"resultType":"matrix","result":[',
}


def _grown(path: Path, head: bytes, size: int) -> Path:
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


@pytest.mark.parametrize("kind", list(_HEADS), ids=lambda kind: kind.name)
def test_triage_refuses_a_file_past_its_kinds_limit_by_its_size(
    tmp_path: Path, kind: InputKind
) -> None:
    limit = INPUT_LIMITS[kind]
    evidence = _grown(tmp_path / "evidence", _HEADS[kind], limit + 1)
    result = CliRunner().invoke(app, ["triage", str(evidence)])
    assert result.exit_code == 1, result.output
    said = f"{evidence}: {limit + 1:,} bytes, larger than {format_size(limit)}, the limit for "
    assert said + kind.value in result.stderr


def test_a_metrics_answer_at_its_limit_is_read(tmp_path: Path) -> None:
    # At its limit it is read: its zeros are no JSON and no text, so nothing is judged (the
    # smallest of the triage limits: the suite reads 4 MiB, not 64).
    limit = INPUT_LIMITS[InputKind.METRICS]
    evidence = _grown(tmp_path / "evidence", _HEADS[InputKind.METRICS], limit)
    result = CliRunner().invoke(app, ["triage", str(evidence)])
    assert (result.exit_code, "larger than" in result.stderr) == (4, False), result.output
