"""Triage reads `talosctl get imagefactoryschematics -o yaml` (Talos 1.14+) as the schematic a
node runs, and the collection script asks for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import triage_paths

register_all_commands()

FIXTURE = (
    Path(__file__).parent / "data" / "triage" / "running-schematic-resource" / "schematic.yaml"
)
RUNNING = "8dd5a4b1e3c0f8d6e1c1d1b7f9f5e2a3c4b6d7e8f9a0b1c2d3e4f5a6b7c8d9e0"
NODE = "kubernetes-mycluster-cpu-6f7d8c9b5-x7k2p"


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("deploy") / "mycluster"
    example = Path(__file__).parent.parent / "examples" / "cluster.yaml"
    result = CliRunner().invoke(app, ["generate", str(example), "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


def evidence(tmp_path: Path, schematic_yaml: str) -> Path:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
        "status": {
            "addresses": [{"address": "10.5.0.1", "type": "InternalIP"}],
            "conditions": [{"status": "True", "type": "Ready", "reason": "KubeletReady"}],
        },
    }
    (tmp_path / "nodes.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [node]}), "utf-8"
    )
    (tmp_path / "worker.schematic.yaml").write_text(schematic_yaml, "utf-8")
    return tmp_path


def test_the_resource_is_the_running_schematic_against_the_committed_one(
    tmp_path: Path, committed: Path
) -> None:
    folder = evidence(tmp_path, FIXTURE.read_text("utf-8"))
    report = triage_paths([str(folder)], against=str(committed))
    ts214 = [d for d in report.diagnoses if d.code == "TS214"]
    assert len(ts214) == 1
    found = ts214[0]
    assert found.nodes == (NODE,)
    assert RUNNING in found.summary
    assert any("image-factory-schematic schematicId" in e.text for e in found.evidence)


def test_a_node_running_its_pools_schematic_is_not_reported(
    tmp_path: Path, committed: Path
) -> None:
    from schematic.output.outdir import read_index

    index = read_index(committed)
    assert index is not None
    own = index.schematic_ids()["cpu"]
    folder = evidence(tmp_path, FIXTURE.read_text("utf-8").replace(RUNNING, own))
    report = triage_paths([str(folder)], against=str(committed))
    assert not [d for d in report.diagnoses if d.code == "TS214"]


def test_another_resource_with_the_same_keys_is_not_read_as_the_schematic(
    tmp_path: Path, committed: Path
) -> None:
    other = FIXTURE.read_text("utf-8").replace(
        "ImageFactorySchematics.runtime.talos.dev", "SomethingElses.runtime.talos.dev"
    )
    folder = evidence(tmp_path, other)
    report = triage_paths([str(folder)], against=str(committed))
    assert not [d for d in report.diagnoses if d.code == "TS214"]


def test_the_collection_script_asks_for_the_resource() -> None:
    result = CliRunner().invoke(
        app,
        [
            *("triage", "--commands", "--cluster", "mycluster"),
            *("--namespace", "tenant-ml", "--node", "10.5.0.1"),
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "get imagefactoryschematics -o yaml > " in result.stdout
