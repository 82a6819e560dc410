"""An output directory's index is read within its kind's YAML nodes: a planted index of small
nodes under the size limit is refused at the node past the budget, as the tool's other refusals
of an index are; a real index of a thousand pools is read without complaint."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from tree_snapshot import snapshot
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.lint.loader import load_paths
from schematic.doctor.lint.rollout import indexed_pools
from schematic.inputs.cluster_file import parse_cluster
from schematic.output.outdir import HEADER as INDEX_HEADER
from schematic.output.outdir import parse_index
from schematic.output.render.files import render_files
from schematic.output.render.kinds import DEFAULT_KINDS, KINDS
from schematic.plan.cluster import plan_cluster
from schematic.safe_yaml import (
    BUDGET_OF,
    INPUT_LIMITS,
    Budget,
    InputKind,
    compose_all,
)

register_all_commands()

BUDGET = BUDGET_OF[InputKind.OUTPUT_RECORD]
CLUSTER = (
    "cluster: c\nnamespace: tenant-c\ncozystack: {version: osimage}\n"
    "talos: {version: v1.13.9}\npools:\n  - {name: gpu, profile: kubevirt-l40s}\n"
)
# The pools of examples/cluster.yaml, by profile or by hardware, each a quarter of the pools.
_POOL_SHAPES = (
    "profile: rtx-pro-6000-blackwell-server, maxReplicas: 4, roles: [gpu]",
    "hardware: {platform: kubevirt, gpus: [{id: '10de:26b9', count: 2}]}, "
    "extensions: [siderolabs/iscsi-tools], nvidia: {tier: lts}",
    "profile: kubevirt-v100-pcie-16gb",
    "profile: kubevirt-cpu",
)


def _refusal(index: Path, nodes: int | None = BUDGET.max_nodes) -> str:
    return (
        f"{index}: holds more than {nodes:,} YAML nodes, more than talos-schematic writes for "
        f"an index ({BUDGET.real_nodes}; for an index of more pools, raise --max-input-size); "
        "the index was edited — restore it from version control, or move the directory away "
        "and generate into a new one"
    )


@pytest.fixture
def lower_budget(monkeypatch: pytest.MonkeyPatch) -> Budget:
    """The index's budget lowered to 1,000 nodes: each reader passes the budget on, at the
    cost of a thousand nodes rather than the default's."""
    lowered = replace(BUDGET, max_nodes=1000)
    monkeypatch.setitem(BUDGET_OF, InputKind.OUTPUT_RECORD, lowered)
    return lowered


def _index_of(pools: int, kinds: tuple[str, ...]) -> bytes:
    """The index `generate --out` writes for ``pools`` pools of the example's four shapes."""
    entries = "".join(
        f"  - {{name: p{n:04d}, {_POOL_SHAPES[n % len(_POOL_SHAPES)]}}}\n" for n in range(pools)
    )
    text = "cluster: c\nnamespace: tenant-c\ntalos: {version: v1.13.9}\npools:\n" + entries
    plan = plan_cluster(parse_cluster(text, "c.yaml"), source="c.yaml")
    return render_files(plan, kinds)["index.yaml"]


@pytest.fixture(scope="module")
def real_index() -> bytes:
    """The index of a thousand pools, every default kind."""
    return _index_of(1000, DEFAULT_KINDS)


def _planted(tmp_path: Path, items: int) -> Path:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.yaml").write_bytes(
        b"generator: talos-schematic\npools: [" + b"1," * items + b"1]\n"
    )
    return out


def test_a_planted_index_of_small_nodes_is_refused_by_its_count(tmp_path: Path) -> None:
    # 300,000 one-character items: 600 kB, under the size limit; composed whole (before the
    # node budget), `generate --out` took 8 s of CPU on it. Now it stops at the node past
    # its budget.
    out = _planted(tmp_path, 300_000)
    assert (out / "index.yaml").stat().st_size < INPUT_LIMITS[InputKind.OUTPUT_RECORD]
    before = snapshot(tmp_path)
    result = CliRunner().invoke(
        app, ["generate", str(tmp_path / "cluster.yaml"), "--out", str(out)]
    )
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [f"talos-schematic: {_refusal(out / 'index.yaml')}"]
    assert result.stdout == ""
    assert snapshot(tmp_path) == before  # nothing written, nothing deleted


def test_check_refuses_a_planted_index_by_its_count(tmp_path: Path, lower_budget: Budget) -> None:
    out = _planted(tmp_path, 5000)
    before = snapshot(tmp_path)
    result = CliRunner().invoke(app, ["check", str(tmp_path / "cluster.yaml"), "--out", str(out)])
    assert result.exit_code == 1, result.output
    said = _refusal(out / "index.yaml", lower_budget.max_nodes)
    assert result.stderr.splitlines() == [f"talos-schematic: {said}"]
    assert snapshot(tmp_path) == before


def test_triage_against_a_planted_index_is_refused_by_its_count(
    tmp_path: Path, lower_budget: Budget
) -> None:
    out = _planted(tmp_path, 5000)
    (tmp_path / "console.log").write_text("[    5.559842] NVRM: RmInitAdapter failed!\n")
    result = CliRunner().invoke(
        app, ["triage", str(tmp_path / "console.log"), "--against", str(out)]
    )
    assert result.exit_code == 1, result.output
    said = _refusal(out / "index.yaml", lower_budget.max_nodes)
    assert result.stderr.splitlines() == [f"talos-schematic: --against {out}: {said}"]


def test_max_input_size_scales_the_node_budget_with_the_size(tmp_path: Path) -> None:
    # 96 KiB is a 32nd of the index's 3 MiB: 3,125 nodes. The 3,000 items are read (and found
    # to lack the tool's keys); the 5,000 are refused at their count.
    limit = 96 * 1024
    assert BUDGET.max_nodes is not None
    nodes = BUDGET.max_nodes * limit // INPUT_LIMITS[InputKind.OUTPUT_RECORD]
    assert nodes == 3125
    said: list[list[str]] = []
    for items in (3000, 5000):
        out = _planted(tmp_path / str(items), items)
        words = ["check", str(out.parent / "cluster.yaml"), "--out", str(out)]
        result = CliRunner().invoke(app, [*words, "--max-input-size", "96KiB"])
        assert result.exit_code == 1, result.output
        said.append(result.stderr.splitlines())
    assert said[0] == [
        f"talos-schematic: {tmp_path / '3000' / 'out' / 'index.yaml'}: cluster: must be a "
        "string, not empty; the index was edited — restore it from version control, or move the "
        "directory away and generate into a new one"
    ]
    assert said[1] == [
        f"talos-schematic: {_refusal(tmp_path / '5000' / 'out' / 'index.yaml', nodes)}"
    ]


def test_a_real_index_of_a_thousand_pools_is_read_within_half_the_budget(
    real_index: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Half the budget, so that pools with more extensions, GPUs or output kinds than these
    # stay under the whole of it.
    assert BUDGET.max_nodes is not None
    half = replace(BUDGET, max_nodes=BUDGET.max_nodes // 2)
    monkeypatch.setitem(BUDGET_OF, InputKind.OUTPUT_RECORD, half)
    index = parse_index(real_index)
    assert [entry["name"] for entry in index.pools] == [f"p{n:04d}" for n in range(1000)]


def test_a_thousand_pools_of_every_kind_fit_the_index_limits_with_room() -> None:
    # Ten times a hundred pools' index (its header counted ten times over): a thousand pools
    # of every output kind take 1.9 MB, past the 1,792 KiB the index was once read within,
    # and 60,048 nodes; within three quarters of each limit.
    hundred = _index_of(100, KINDS)
    assert BUDGET.max_nodes is not None
    assert 10 * len(hundred) <= INPUT_LIMITS[InputKind.OUTPUT_RECORD] * 3 // 4
    assert len(list(compose_all(hundred, max_nodes=BUDGET.max_nodes * 3 // 40))) == 1
    assert len(parse_index(hundred).pools) == 100


def test_lint_reads_a_real_index_of_a_thousand_pools_within_its_own_budget(
    real_index: bytes, tmp_path: Path
) -> None:
    # 1.3 MB, past lint's own 1 MiB: read as the index it is, its pools known to the rollout
    # rule; the same bytes without the tool's header are any other file of that size.
    assert len(real_index) > INPUT_LIMITS[InputKind.LINT]
    (tmp_path / "index.yaml").write_bytes(real_index)
    documents, problems = load_paths([str(tmp_path)])
    assert problems == []
    assert len(indexed_pools(documents)) == 1000
    (tmp_path / "index.yaml").write_bytes(real_index.split(b"\n", 1)[1])
    documents, problems = load_paths([str(tmp_path)])
    assert documents == []
    assert [(p.file, p.unread) for p in problems] == [(str(tmp_path / "index.yaml"), True)]


def test_lint_reads_a_planted_index_within_the_index_nodes(
    tmp_path: Path, lower_budget: Budget
) -> None:
    (tmp_path / "index.yaml").write_text(
        f"{INDEX_HEADER}generator: talos-schematic\n" + "pools: [" + "1," * 5000 + "1]\n"
    )
    documents, problems = load_paths([str(tmp_path)])
    assert documents == []
    assert [p.file for p in problems] == [str(tmp_path / "index.yaml")]
    assert f"holds more than {lower_budget.max_nodes:,} YAML nodes" in problems[0].message


def test_lint_reads_an_index_yaml_the_tool_did_not_write_within_lints_own_limits(
    tmp_path: Path, lower_budget: Budget
) -> None:
    # Named index.yaml but without the tool's header: lint's own size limit, and no node
    # budget (a user's manifest of many values is read whole, as any other file).
    text = "kind: HelmRelease\nmetadata: {name: x}\nspec:\n  values:\n    v: [" + "1," * 3000
    (tmp_path / "index.yaml").write_text(text + "1]\n")
    documents, problems = load_paths([str(tmp_path)])
    assert problems == []
    assert [doc.data["kind"] for doc in documents] == ["HelmRelease"]


def test_lint_reads_only_the_index_within_the_index_budget(tmp_path: Path) -> None:
    # Every file generate writes starts with the same header: a values file past lint's own
    # limit is not read, whatever its first line.
    values = INDEX_HEADER + "x: '" + "a" * INPUT_LIMITS[InputKind.LINT] + "'\n"
    (tmp_path / "values.yaml").write_text(values)
    documents, problems = load_paths([str(tmp_path)])
    assert documents == []
    assert [(p.file, p.unread) for p in problems] == [(str(tmp_path / "values.yaml"), True)]
