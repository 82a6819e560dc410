"""Causes only Talos has (its boot timer, its extensions, the GPU Operator's parts its extensions
replace), both sides: named where an input shows the node runs Talos; said as the cause only if
it does where nothing shows the OS (a warning, still a failure); and where the Node names another
system, not named at all — the lines are a failure no known cause explains (TS213)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import TriageReport, triage_paths
from schematic.doctor.triage.diagnose import CAUSES

register_all_commands()

BUNDLES = Path(__file__).parent / "data" / "triage"
TALOS = ("Talos (v1.11.5)", "6.12.57-talos")
UBUNTU = ("Ubuntu 22.04.4 LTS", "5.15.0-105-generic")

# (a Talos-only code, a bundle whose files show the failure and nothing of the host's OS, the
# node its finding names, the severity the cause gives it on Talos)
CASES = [
    ("TS206", "paste-gpu-operator-validator-on-talos", "", "error"),
    ("TS206", "paste-cozystack-validator-driver-off", "", "error"),
    ("TS141", "paste-operator-toolkit-hook-events", "", "warning"),
    ("TS141", "paste-operator-hook-driver-error-no-os", "", "warning"),
    ("TS111", "paste-no-runtime-nvidia-events", "", "warning"),
    ("TS111", "paste-no-runtime-nvidia-sandbox", "i-071a4e5a302e4025b", "warning"),
    ("TS112", "paste-nvml-version-mismatch-container", "", "warning"),
    ("TS123", "paste-smi-cannot-reach-driver-alone", "", "warning"),
    ("TS202", "ts202-pods-table-wide-loop", "tenant-a-cpu-7c9xv", "error"),
    ("TS202", "ts202-pods-table-loop-names-no-node", "", "error"),
]


def nodes_json(name: str, os_image: str, kernel: str) -> str:
    """`kubectl get nodes -o json` of one Node reporting its OS (Node v1 ``nodeInfo``)."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "addresses": [{"address": "10.244.3.99", "type": "InternalIP"}],
            "nodeInfo": {"osImage": os_image, "kernelVersion": kernel},
        },
    }
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [node]})


def triaged(bundle: str, tmp_path: Path, host: tuple[str, str] | None, node: str) -> TriageReport:
    folder = tmp_path / bundle
    shutil.copytree(BUNDLES / bundle, folder)
    for notes in ("SOURCES.md", "expected.yaml"):
        (folder / notes).unlink()
    if host is not None:
        (folder / "nodes.json").write_text(nodes_json(node or "gpu-worker-1", *host), "utf-8")
    return triage_paths([str(folder)])


def exit_code(path: Path) -> int:
    return CliRunner().invoke(app, ["triage", str(path)]).exit_code


def test_the_talos_only_causes_are_the_table_s_rows() -> None:
    # Every cause above takes its rule from a row marked talos_only; the others are not.
    marked = {c.rule.__name__ for c in CAUSES if c.talos_only}
    assert {"operator_driver_on_talos", "operator_validator", "runtime_handler_missing"} <= marked
    assert {"reboots", "modules_not_loaded", "driver_unreachable", "version_mismatch"} <= marked
    assert not {"wrong_flavour", "device_plugin", "fabric_causes", "unknown_failures"} & marked


@pytest.mark.parametrize(("code", "bundle", "node", "severity"), CASES)
def test_nothing_shows_the_os_the_cause_holds_only_if_talos(
    code: str, bundle: str, node: str, severity: str, tmp_path: Path
) -> None:
    report = triaged(bundle, tmp_path, None, node)
    (diagnosis,) = [d for d in report.diagnoses if d.code == code]
    assert (diagnosis.severity, diagnosis.if_talos) == ("warning", True)
    assert "runs Talos: " in diagnosis.summary and "the cause here only if" in diagnosis.summary
    assert "OS-IMAGE `Talos (v…)`" in diagnosis.collect[0]
    assert report.verdict == "failures"  # the failure is shown; only its cause is uncertain
    assert exit_code(tmp_path / bundle) == 3


@pytest.mark.parametrize(("code", "bundle", "node", "severity"), CASES)
def test_a_talos_node_makes_it_the_cause(
    code: str, bundle: str, node: str, severity: str, tmp_path: Path
) -> None:
    report = triaged(bundle, tmp_path, TALOS, node)
    (diagnosis,) = [d for d in report.diagnoses if d.code == code]
    assert (diagnosis.severity, diagnosis.if_talos) == (severity, False)
    assert "runs Talos" not in diagnosis.summary


@pytest.mark.parametrize(("code", "bundle", "node", "severity"), CASES)
def test_another_system_is_no_talos_cause(
    code: str, bundle: str, node: str, severity: str, tmp_path: Path
) -> None:
    # Must not fire: the Node says Ubuntu; the lines stay a failure, of no known cause.
    report = triaged(bundle, tmp_path, UBUNTU, node)
    assert code not in {d.code for d in report.diagnoses}
    (unexplained,) = [d for d in report.diagnoses if d.code == "TS213"]
    assert any(r.startswith(code) and "runs Ubuntu 22.04.4 LTS" in r for r in unexplained.ruled_out)
    assert not any("talosctl" in item or "Talos" in item for item in unexplained.collect)
    assert report.verdict == "failures"


def test_talos_s_own_lines_show_it_without_a_node(tmp_path: Path) -> None:
    # The operator's driver container naming a Talos kernel is Talos enough: TS141 as is.
    report = triaged("paste-gpu-operator-driver-on-talos", tmp_path, None, "")
    (diagnosis,) = report.diagnoses
    assert (diagnosis.code, diagnosis.severity, diagnosis.if_talos) == ("TS141", "error", False)


def test_talos_labels_on_the_node_show_it(tmp_path: Path) -> None:
    # Talos's extension labels on the Node are as good as its osImage.
    folder = tmp_path / "labelled"
    shutil.copytree(BUNDLES / "ts202-pods-table-wide-loop", folder)
    (folder / "node.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: tenant-a-cpu-7c9xv\n  labels:\n"
        "    extensions.talos.dev/qemu-guest-agent: 10.0.2\n"
    )
    (diagnosis,) = [d for d in triage_paths([str(folder)]).diagnoses if d.code == "TS202"]
    assert (diagnosis.severity, diagnosis.if_talos) == ("error", False)
