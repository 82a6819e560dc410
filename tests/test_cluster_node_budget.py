"""A cluster file is read within its kind's YAML nodes: a file of small nodes under the size
limit is refused at the node past the budget, naming the file, the line and the way to read a
larger one; a real one of a thousand pools is read without complaint, by every command that
reads cluster files (`verify` finds out whether a file is one the same way)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.errors import ClusterFileError
from schematic.inputs.cluster_file import parse_cluster
from schematic.safe_yaml import (
    BUDGET_OF,
    INPUT_LIMITS,
    InputKind,
    compose_all,
    set_max_input_size,
)

register_all_commands()

BUDGET = BUDGET_OF[InputKind.CLUSTER]
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"


def _thousand_pools() -> str:
    """examples/cluster.yaml with its four pools 250 times over, each under its own name."""
    head, pools = EXAMPLE.read_text(encoding="utf-8").split("pools:\n")
    blocks = pools.split("  - name: ")[1:]
    entries = []
    for number in range(250):
        for block in blocks:
            name, rest = block.split("\n", 1)
            entries.append(f"  - name: {name}-{number:03d}\n{rest}")
    return head + "pools:\n" + "".join(entries)


def _small_nodes(mappings: int) -> str:
    return "cluster: c\npools: [" + "{a: 1}, " * mappings + "{a: 1}]\n"


def test_a_cluster_file_of_small_nodes_is_refused_by_its_count(tmp_path: Path) -> None:
    # 130,000 one-key mappings: 1 MB, under the 1 MiB limit, 390,001 nodes; composed whole,
    # `check` took 3.5-3.8 s of CPU on such a file.
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(_small_nodes(130_000))
    assert cluster.stat().st_size < INPUT_LIMITS[InputKind.CLUSTER]
    result = CliRunner().invoke(app, ["generate", str(cluster)])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [
        f"talos-schematic: {cluster}:2: holds more than {BUDGET.max_nodes:,} YAML nodes "
        f"({BUDGET.real_nodes}); for a larger file, raise --max-input-size"
    ]
    assert result.stdout == ""


def test_a_real_cluster_of_a_thousand_pools_is_read_within_a_quarter_of_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert BUDGET.max_nodes is not None
    quarter = replace(BUDGET, max_nodes=BUDGET.max_nodes // 4)
    monkeypatch.setitem(BUDGET_OF, InputKind.CLUSTER, quarter)
    text = _thousand_pools()
    assert len(text.encode()) <= INPUT_LIMITS[InputKind.CLUSTER] // 2
    assert len(parse_cluster(text, "c1000.yaml").pools) == 1000


def test_ten_thousand_terse_pools_under_the_size_limit_are_within_the_nodes() -> None:
    # The most pools a real file under 1 MiB holds (benchmarks/upgrade.py plans 10,000 such):
    # composed within three quarters of the budget.
    shapes = (
        "profile: kubevirt-cpu, instanceType: u1.large",
        "profile: kubevirt-l4, maxReplicas: 4",
        "profile: kubevirt-l40s, nvidia: {tier: lts}, diskSize: 100Gi",
        "profile: kubevirt-v100-pcie-16gb, resources: {cpu: 8, memory: 64Gi}",
    )

    def cluster(pools: int) -> str:
        entries = "".join(f"  - {{name: p{n:05d}, {shapes[n % 4]}}}\n" for n in range(pools))
        return "cluster: big\ntalos: {version: v1.13.9}\npools:\n" + entries

    assert len(cluster(10_000).encode()) <= INPUT_LIMITS[InputKind.CLUSTER]
    # A pool's nodes are the same whatever its number: a hundredth of the file in a
    # hundredth of the budget (and the 10 nodes of the document and its head).
    assert BUDGET.max_nodes is not None
    share = BUDGET.max_nodes * 3 // 4 // 100 + 10
    assert len(list(compose_all(cluster(100), max_nodes=share))) == 1


def test_max_input_size_moves_the_cluster_node_budget_with_the_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Twice the size limit, twice the nodes: the same file is read. (The budget lowered to a
    # thousand nodes, so the file stays small.)
    monkeypatch.setitem(BUDGET_OF, InputKind.CLUSTER, replace(BUDGET, max_nodes=1000))
    text = _small_nodes(600)  # 1,801 nodes
    with pytest.raises(ClusterFileError, match="holds more than 1,000 YAML nodes"):
        parse_cluster(text, "c.yaml")
    set_max_input_size(2 * INPUT_LIMITS[InputKind.CLUSTER])
    with pytest.raises(ClusterFileError, match=r"pools\[0\]"):  # read, then found to lack its keys
        parse_cluster(text, "c.yaml")


def test_verify_refuses_a_cluster_file_of_small_nodes_as_generate_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # verify reads a file as a cluster file, else as a schematic: one past the cluster's nodes
    # is refused as a cluster file, before any request (the factory here answers nothing), and
    # not read on as a schematic ("this is a cluster file, not a schematic").
    monkeypatch.setitem(BUDGET_OF, InputKind.CLUSTER, replace(BUDGET, max_nodes=1000))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(_small_nodes(2000))
    result = CliRunner().invoke(app, ["verify", str(cluster), "--factory", "http://127.0.0.1:9"])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [
        f"talos-schematic: {cluster}:2: holds more than 1,000 YAML nodes "
        f"({BUDGET.real_nodes}); for a larger file, raise --max-input-size"
    ]
