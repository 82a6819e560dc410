"""Formats read from real pastes (the bundles' SOURCES.md name them): what is read, what is not
and why, and the exit a script sees when a file could not be judged."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import triage_paths
from schematic.doctor.triage.readers import read_evidence
from schematic.doctor.triage.signals import Kind

register_all_commands()

BUNDLES = Path(__file__).parent / "data" / "triage"
NOTHING_JUDGED = 4


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


def reason(bundle: str, file: str) -> str:
    (reading,) = [
        r for r in triage_paths([str(BUNDLES / bundle)]).readings if Path(r.file).name == file
    ]
    assert reading.signals == ()
    return reading.problem


# --- Grafana CSV ------------------------------------------------------------------------------


def test_a_legend_without_the_metric_says_which_column_and_how_to_export_it() -> None:
    why = reason("paste-grafana-csv-legend-without-metric", "boot-times.csv")
    assert why.startswith('line 1: Grafana CSV: column 2 "10.244.12.8:9100": ')
    assert "metric{label=...} was expected" in why
    assert "Legend set to Verbose" in why and "{{__name__}}" in why


def test_a_legend_without_the_metric_alone_is_nothing_judged() -> None:
    code, out = run("triage", str(BUNDLES / "paste-grafana-csv-legend-without-metric"))
    assert code == NOTHING_JUDGED
    assert "nothing could be judged" in out
    assert "no failure recognised" not in out and "TS202" not in out


def test_the_same_numbers_under_their_metric_name_the_timer() -> None:
    # Must fire: the twin whose header names node_boot_time_seconds.
    code, out = run("triage", str(BUNDLES / "ts202-grafana-csv-joined-by-time"))
    assert code == 3
    assert "TS202" in out


def test_an_export_of_a_metric_triage_does_not_read_names_it() -> None:
    why = reason("paste-grafana-csv-up-joined-by-time", "grafana-export.csv")
    assert why == (
        "line 1: Grafana CSV of up: no metric triage reads (it reads "
        "node_memory_MemAvailable_bytes, node_memory_MemTotal_bytes, node_boot_time_seconds)"
    )
    code, out = run("triage", str(BUNDLES / "paste-grafana-csv-up-joined-by-time"), "-f", "json")
    assert code == NOTHING_JUDGED
    assert json.loads(out)["verdict"] == "not judged"


def test_columns_without_a_metric_beside_named_ones_are_listed_as_unread(tmp_path: Path) -> None:
    (tmp_path / "boot.csv").write_text(
        '"Time","node_boot_time_seconds{instance=""10.6.0.1:9100""}","10.6.0.2:9100"\r\n'
        "1795622460000,1795622400,1795622400\r\n"
        "1795626660000,1795622400,1795626627\r\n",
        encoding="utf-8",
    )
    (reading,) = triage_paths([str(tmp_path)]).readings
    assert [s.kind for s in reading.signals] == [Kind.BOOT_TIME]
    assert 'column 3 "10.6.0.2:9100": a series legend without' in reading.problem
    code, _ = run("triage", str(tmp_path))
    assert code == 0  # the named column was judged


def test_grafana_6_series_as_columns_is_recognised_and_its_aliases_said() -> None:
    why = reason("paste-grafana-csv-series-as-columns-aliases", "export.csv")
    assert why.startswith('line 1: Grafana CSV: column 2 "valA", column 3 "valB": ')


def test_grafana_5_series_as_rows_is_recognised_and_its_alias_said() -> None:
    why = reason("paste-grafana-csv-series-as-rows-aliases", "export.csv")
    assert why.startswith('line 1: Grafana CSV: series "[[tag_host]]": ')


def test_grafana_6_layouts_naming_a_metric_are_read_with_zoned_times() -> None:
    # Must fire: the same layouts when the alias is the series' name; ISO times with a zone.
    rows = (
        '"Series";"Time";"Value"\n'
        '"node_boot_time_seconds{instance=""10.6.0.1:9100""}";"2026-11-25T16:01:00+01:00";'
        "1795622400\n"
    )
    (boot,) = [s for s in read_evidence(rows, "p").signals if s.kind is Kind.BOOT_TIME]
    assert (boot.get("boots"), boot.get("taken")) == ("1795622400", "1795618860")
    columns = (
        'Time;node_boot_time_seconds{instance="10.6.0.1:9100"}\n'
        "2026-11-25T15:01:00.000Z;1795622400\n"
    )
    (boot,) = [s for s in read_evidence(columns, "p").signals if s.kind is Kind.BOOT_TIME]
    assert boot.get("taken") == "1795618860"


def test_a_log_line_starting_with_time_is_no_grafana_csv() -> None:
    # Must not fire: "Time;" alone does not make a CSV; the next line must be a time.
    assert read_evidence("Time; the node rebooted\nagain and again\n", "p").format != "grafana-csv"


# --- pods tables --------------------------------------------------------------------------------


def test_a_crash_looping_nvidia_operand_is_a_failure_said() -> None:
    bundle = BUNDLES / "paste-operator-validator-crashloop-pods-table"
    (diagnosis,) = triage_paths([str(bundle)]).diagnoses
    assert diagnosis.code == "TS213"
    assert [e.line for e in diagnosis.evidence] == [10]  # the validator's row, not the waiting
    assert any("--previous" in item for item in diagnosis.collect)
    code, _ = run("triage", str(bundle))
    assert code == 3


def test_operands_waiting_or_other_pods_failing_are_not_said(tmp_path: Path) -> None:
    # Must not fire: operands waiting on an init container, and a crash-looping pod that is
    # not NVIDIA's (a Node Feature Discovery worker, as in gpu-operator#401).
    (tmp_path / "pods.txt").write_text(
        "NAME                                   READY   STATUS             RESTARTS   AGE\n"
        "nvidia-device-plugin-daemonset-4ghzp   0/1     Init:0/1           0          22m\n"
        "gpu-operator-node-feature-discovery-worker-x7jj5   0/1     CrashLoopBackOff   "
        "6 (2m16s ago)   14m\n"
    )
    report = triage_paths([str(tmp_path)])
    (reading,) = report.readings
    assert [s.kind for s in reading.signals] == [Kind.POD, Kind.POD]  # both rows read
    assert report.diagnoses == ()


def test_the_same_operand_from_pods_json_is_said_alike(tmp_path: Path) -> None:
    # One rule for both forms: `-o json` of the validator whose init container crash-loops
    # (Pod v1: initContainerStatuses[].state.waiting.reason).
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nvidia-operator-validator-qpv7s", "namespace": "gpu-operator"},
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "nvidia-operator-validator"}]},
        "status": {
            "initContainerStatuses": [
                {"name": "driver-validation", "state": {"terminated": {"exitCode": 0}}},
                {
                    "name": "toolkit-validation",
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                },
            ],
            "containerStatuses": [
                {
                    "name": "nvidia-operator-validator",
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "PodInitializing"}},
                }
            ],
        },
    }
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": [pod]}))
    (diagnosis,) = triage_paths([str(tmp_path)]).diagnoses
    assert (diagnosis.code, diagnosis.nodes) == ("TS213", ("gpu-1",))
    assert "Init:CrashLoopBackOff" in diagnosis.evidence[0].text


# --- PCI listings -----------------------------------------------------------------------------


def test_insecure_pcidevices_rows_take_the_node_from_the_command_line() -> None:
    text = (BUNDLES / "healthy-pcidevices-insecure-no-nvidia" / "pcidevices.txt").read_text()
    found = read_evidence(text, "pcidevices.txt")
    assert found.format == "table"
    devices = [s for s in found.signals if s.kind is Kind.PCI_DEVICE]
    assert len(devices) == 5
    assert {s.node for s in devices} == {"10.0.20.81"}


def test_a_real_kernel_pci_list_without_nvidia_is_read_and_quiet() -> None:
    report = triage_paths([str(BUNDLES / "healthy-proc-pci-virtio-no-nvidia")])
    (reading,) = [r for r in report.readings if Path(r.file).name == "devices"]
    assert reading.format == "proc-pci"
    assert len(reading.signals) == 6
    assert report.diagnoses == ()
