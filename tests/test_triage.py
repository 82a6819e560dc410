"""`triage`: each bundle of real-format evidence is named with its code and node, and its
look-alike is not reported; the readers recognise formats by content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import readers, triage_paths
from schematic.doctor.triage.diagnose import diagnose
from schematic.doctor.triage.readers import documents, logs, read_evidence
from schematic.doctor.triage.readers.messages import KEYWORDS, message_kinds
from schematic.doctor.triage.signals import Kind, Signal

register_all_commands()

BUNDLES = Path(__file__).parent / "data" / "triage"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def codes(bundle: str) -> dict[str, tuple[str, ...]]:
    report = triage_paths([str(BUNDLES / bundle)])
    return {d.code: d.nodes for d in report.diagnoses}


# bundle → (the code and node it must show, the look-alike it must not)
CASES = {
    "ts101-nvidia-image-cpu-worker": ("TS101", "tenant-a-cpu-7c9xv", "TS131"),
    "ts101-talos114-dmesg": ("TS101", "172.16.20.31", "TS131"),
    "ts131-trustd-port-missing": ("TS131", "10.244.7.12", "TS101"),
    "ts103-proprietary-on-blackwell": ("TS103", "10.0.40.21", "TS123"),
    "ts123-modules-not-loaded": ("TS123", "10.244.9.40", "TS101"),
    "ts140-device-plugin-env-override": ("TS140", None, "TS210"),
    "ts155-nvlink5-without-ib-umad": ("TS155", "10.10.10.10", "TS123"),
    "ts104-pascal-on-open-modules": ("TS104", None, "TS103"),
    "ts105-pascal-on-590": ("TS105", "172.16.8.14", "TS104"),
    "ts210-cdi-pods-too-early": ("TS210", "tenant-d-gpu-5tq7z", "TS140"),
    "ts211-upgrade-reverted": ("TS211", None, "TS101"),
    "ts201-lldpd-waits": ("TS201", "192.168.30.11", "TS131"),
    "ts202-timer-without-console": ("TS202", "tenant-e-md0-b7k2c", "TS101"),
}


@pytest.mark.parametrize("bundle", sorted(CASES))
def test_each_bundle_is_diagnosed_and_its_look_alike_is_not(bundle: str) -> None:
    code, node, look_alike = CASES[bundle]
    found = codes(bundle)
    # None: the inputs name no node (a plain dmesg, a cluster-wide DaemonSet).
    assert found.get(code) == ((node,) if node else ()), found
    assert look_alike not in found


@pytest.mark.parametrize("bundle", [*sorted(CASES), "healthy-memory-96"])
def test_every_bundle_names_its_sources(bundle: str) -> None:
    sources = (BUNDLES / bundle / "SOURCES.md").read_text(encoding="utf-8")
    # The notes sit among the evidence and must not count as any.
    assert read_evidence(sources, "SOURCES.md").signals == ()
    for file in (BUNDLES / bundle).iterdir():
        if file.name != "SOURCES.md":
            assert f"`{file.name}`" in sources, file.name


def test_the_diagnosis_cites_lines_that_say_what_it_claims() -> None:
    report = triage_paths([str(BUNDLES / "ts101-nvidia-image-cpu-worker")])
    (diagnosis,) = report.diagnoses
    for evidence in diagnosis.evidence:
        line = Path(evidence.file).read_text(encoding="utf-8").splitlines()[evidence.line - 1]
        assert evidence.text.removesuffix("…") in line or "restartCount" in line, evidence
    assert "4206 s of uptime" in diagnosis.summary
    assert "all 4 restarted pods on it restarted 14 times" in diagnosis.summary
    assert any("services.yaml" in reason and "50001" in reason for reason in diagnosis.ruled_out)


@pytest.mark.parametrize(
    "line",
    [
        # Talos ≤ 1.13 (service_events.go before b1abd9c03): the state quoted.
        '[talos] task startAllServices (1/1): service "ext-lldpd" to be "up"',
        # Talos ≥ 1.14: up and finished are separate events, joined with "/".
        '[talos] task startAllServices (1/1): service "ext-lldpd" to be up/finished',
    ],
)
def test_both_pending_service_wordings_are_read(line: str) -> None:
    text = f" user: warning: [2025-11-03T14:52:40.00536313Z]: {line}\n"
    (signal,) = read_evidence(text, "dmesg").signals
    assert (signal.kind, signal.value) == (Kind.SERVICE_WAITING, "ext-lldpd")
    assert signal.get("time") == "2025-11-03T14:52:40Z"


def test_a_pcidevices_table_and_its_yaml_say_the_same() -> None:
    table = (
        "NODE         NAMESPACE   TYPE        ID             VERSION   CLASS"
        "                       SUBCLASS                    VENDOR              PRODUCT\n"
        "172.20.0.5   hardware    PCIDevice   0000:00:02.0   1         Network controller"
        "          Ethernet controller         Red Hat, Inc.       Virtio network device\n"
        "172.20.0.5   hardware    PCIDevice   0000:01:00.0   1         Display controller"
        "          3D controller               NVIDIA Corporation  GH100 [H200 SXM 141GB]\n"
    )
    as_yaml = "".join(
        f"node: 172.20.0.5\nmetadata:\n    namespace: hardware\n"
        f"    type: PCIDevices.hardware.talos.dev\n    id: {address}\n"
        f'spec:\n    class_id: "{klass}"\n    subclass_id: "0x00"\n    vendor_id: "{vendor}"\n'
        f'    product_id: "{product}"\n---\n'
        for address, klass, vendor, product in (
            ("0000:00:02.0", "0x02", "0x1af4", "0x1041"),
            ("0000:01:00.0", "0x03", "0x10de", "0x2335"),
        )
    )
    readings = [read_evidence(table, "table"), read_evidence(as_yaml, "yaml")]
    assert [r.format for r in readings] == ["table", "yaml"]
    for reading in readings:
        found = [(s.node, s.get("address"), s.value == "0x10de") for s in reading.signals]
        assert found == [
            ("172.20.0.5", "0000:00:02.0", False),
            ("172.20.0.5", "0000:01:00.0", True),
        ]


def test_files_are_recognised_by_content_not_name(tmp_path: Path) -> None:
    source = BUNDLES / "ts101-nvidia-image-cpu-worker"
    for number, file in enumerate(sorted(source.iterdir())):
        (tmp_path / f"{number}-tenant-a-cpu-7c9xv.bin").write_bytes(file.read_bytes())
    report = triage_paths([str(tmp_path)])
    assert {d.code: d.nodes for d in report.diagnoses} == {"TS101": ("tenant-a-cpu-7c9xv",)}
    assert sorted(r.format for r in report.readings) == ["", "json", "json", "log", "table", "yaml"]


def test_a_console_that_names_no_node_is_not_guessed_among_several(tmp_path: Path) -> None:
    source = BUNDLES / "ts101-nvidia-image-cpu-worker"
    for file in source.iterdir():
        name = "console.log" if file.name.endswith(".console.log") else file.name
        (tmp_path / name).write_bytes(file.read_bytes())
    found = {d.code: d.nodes for d in triage_paths([str(tmp_path)]).diagnoses}
    # pods.json speaks of two nodes: the console's node is not guessed.
    assert found["TS201"] == ()
    assert "TS101" not in found


def test_json_output_has_the_documented_shape() -> None:
    code, out, _ = run("triage", "--format", "json", str(BUNDLES / "ts131-trustd-port-missing"))
    assert code == 3
    document = json.loads(out)
    assert set(document) == {"verdict", "summary", "diagnoses", "inputs", "unrecognised"}
    assert document["verdict"] == "failures"
    (diagnosis,) = document["diagnoses"]
    assert {"code", "severity", "title", "nodes", "evidence", "ruledOut", "confirm", "fix"} <= set(
        diagnosis
    )
    assert diagnosis["code"] == "TS131"
    assert all(set(e) == {"file", "line", "text"} for e in diagnosis["evidence"])
    assert any(":50001" in e["text"] for e in diagnosis["evidence"])


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "sarif"])
def test_every_format_is_deterministic(fmt: str) -> None:
    path = str(BUNDLES / "ts101-nvidia-image-cpu-worker")
    first, second = run("triage", "-f", fmt, path), run("triage", "-f", fmt, path)
    assert first == second
    assert first[0] == 3
    assert "TS101" in first[1]


def test_sarif_points_at_the_evidence() -> None:
    _, out, _ = run("triage", "-f", "sarif", str(BUNDLES / "ts131-trustd-port-missing"))
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["ruleId"] == "TS131"
    region = result["locations"][0]["physicalLocation"]
    assert region["artifactLocation"]["uri"].endswith(".json")
    assert region["region"]["startLine"] == 10


def test_unrecognised_files_are_listed_not_errors(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing to see here\n", encoding="utf-8")
    (tmp_path / "broken.json").write_text('{"items": [', encoding="utf-8")
    (tmp_path / "binary").write_bytes(b"\xff\xfe\x00")
    code, out, err = run("triage", "-f", "json", str(tmp_path))
    # Nothing read: not exit 0, which a script takes for a healthy cluster.
    assert code == 4
    document = json.loads(out)
    assert (document["verdict"], document["diagnoses"]) == ("not judged", [])
    reasons = {Path(u["file"]).name: u["reason"] for u in document["unrecognised"]}
    assert set(reasons) == {"notes.txt", "broken.json", "binary"}
    assert "invalid JSON" in reasons["broken.json"]
    assert "UTF-8" in reasons["binary"]
    assert "3 unrecognised" in err


def test_bad_input_exits_1_with_one_message(tmp_path: Path) -> None:
    code, _, err = run("triage", str(tmp_path / "missing"))
    assert (code, err.count("\n")) == (1, 1)
    assert "no such file or directory" in err
    big = tmp_path / "dmesg.txt"
    big.write_text("x" * 2048, encoding="utf-8")
    code, _, err = run("triage", "--max-input-size", "1k", str(big))
    assert code == 1
    assert "dmesg.txt" in err and "--max-input-size" in err
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    code, _, err = run("triage", str(deep))
    assert code == 1
    assert "nested too deeply" in err


def test_an_unknown_format_is_a_usage_error() -> None:
    code, _, err = run("triage", "-f", "xml", str(BUNDLES))
    assert code == 2
    assert "--format" in err


def test_commands_name_the_cluster_namespace_and_node() -> None:
    code, out, _ = run(
        "triage", "--commands", "--cluster", "gpu", "--namespace", "tenant-a", "--node", "w1"
    )
    assert code == 0
    assert "kubectl -n tenant-a get secret kubernetes-gpu-talos-ca" in out
    assert "--roles os:reader" in out
    assert "kubectl -n tenant-a exec talosctl -- talosctl" in out
    assert "-n w1'" in out
    assert "/select/0/prometheus/api/v1/query_range" in out
    assert "node_memory_MemAvailable_bytes" in out
    # The CDI generator's log (it says when the driver does not answer) and the management
    # cluster's events (where KubeVirt refuses a VM's GPU) are collected too.
    # (a service's log under the node's folder, as `talosctl support` writes it).
    assert "$T logs ext-nvidia-cdi-gen > w1/service-logs/ext-nvidia-cdi-gen.log" in out
    assert "kubectl -n tenant-a get events -o json > management-events.json" in out
    # Placeholders where nothing was given.
    assert "TENANT_NAMESPACE" in run("triage", "--commands")[1]


def test_ts220_a_healthy_node_at_96_percent_gets_the_page_cache_note_and_no_error() -> None:
    code, out, _ = run("triage", "-f", "json", str(BUNDLES / "healthy-memory-96"))
    assert code == 0
    (note,) = json.loads(out)["diagnoses"]
    assert (note["code"], note["severity"], note["nodes"]) == (
        "TS220",
        "note",
        ["tenant-c-md0-4hx8d"],
    )
    assert "MemAvailable never fell below 5.7 GiB" in note["ruledOut"][0]
    # The share is of the machine's MemTotal (33,419,505,664 bytes), not of what was available.
    assert "(18% of 31.1 GiB)" in note["ruledOut"][0]
    assert any("96%" in e["text"] for e in note["evidence"])


def test_ts220_without_memtotal_claims_no_share_of_the_machine(tmp_path: Path) -> None:
    # Without node_memory_MemTotal_bytes the machine's size is unknown: MemAvailable's own
    # highest value is no stand-in for it.
    for file in (BUNDLES / "healthy-memory-96").iterdir():
        if file.name != "node_memory_MemTotal_bytes.json":
            (tmp_path / file.name).write_bytes(file.read_bytes())
    code, out, _ = run("triage", "-f", "json", str(tmp_path))
    assert code == 0
    (note,) = json.loads(out)["diagnoses"]
    assert note["code"] == "TS220"
    assert "MemAvailable never fell below 5.7 GiB over the window;" in note["ruledOut"][0]
    assert " of " not in note["ruledOut"][0].split("GiB", 1)[1].split(";")[0]


def test_ts221_available_memory_under_5_percent_of_memtotal_is_no_page_cache(
    tmp_path: Path,
) -> None:
    # MemAvailable scaled so its low is 1.2 GiB: above the 1 GiB floor used when the size is
    # unknown, below 5 % of the machine's 31.1 GiB MemTotal (1.56 GiB): short of memory (a
    # warning), no page-cache note.
    source = BUNDLES / "healthy-memory-96"
    for file in source.iterdir():
        (tmp_path / file.name).write_bytes(file.read_bytes())
    available = tmp_path / "node_memory_MemAvailable_bytes.json"
    answer = json.loads(available.read_text())
    (series,) = [
        s for s in answer["data"]["result"] if s["metric"]["instance"] == "10.244.11.5:9100"
    ]
    low = min(float(value) for _, value in series["values"])
    scale = 1.2 * (1 << 30) / low
    series["values"] = [[at, str(int(float(value) * scale))] for at, value in series["values"]]
    available.write_text(json.dumps(answer))
    _, out, _ = run("triage", "-f", "json", str(tmp_path))
    (diagnosis,) = json.loads(out)["diagnoses"]
    assert (diagnosis["code"], diagnosis["nodes"]) == ("TS221", ["tenant-c-md0-4hx8d"])


def test_ts221_real_oom_kills_are_not_called_page_cache(tmp_path: Path) -> None:
    source = BUNDLES / "healthy-memory-96"
    for file in source.iterdir():
        (tmp_path / file.name).write_bytes(file.read_bytes())
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "etl-0", "namespace": "jobs"},
        "spec": {"nodeName": "tenant-c-md0-4hx8d", "containers": [{"name": "etl"}]},
        "status": {
            "containerStatuses": [
                {
                    "name": "etl",
                    "restartCount": 3,
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                }
            ]
        },
    }
    (tmp_path / "pods.json").write_text(json.dumps(pod, indent=4), encoding="utf-8")
    found = {d.code: d for d in triage_paths([str(tmp_path)]).diagnoses}
    assert "TS220" not in found
    assert found["TS221"].nodes == ("tenant-c-md0-4hx8d",)


def test_a_kernel_message_joined_with_x0a_is_one_message() -> None:
    line = (
        "10.0.40.21: kern:     err: [2026-11-23T09:41:22.559842213Z]: NVRM: The NVIDIA GPU "
        "0000:c1:00.0 (PCI ID: 10de:2bb5)\\x0aNVRM: installed in this system requires use of "
        "the NVIDIA open kernel modules.\n"
    )
    (signal,) = read_evidence(line, "dmesg").signals
    assert (signal.kind, signal.node, signal.get("pci")) == (
        Kind.NVRM_NEEDS_OPEN,
        "10.0.40.21",
        "10de:2bb5",
    )
    # A plain kernel log carries the same message over an indented continuation line.
    plain = (
        "[    5.559842] NVRM: The NVIDIA GPU 0000:02:00.0 (PCI ID: 10de:2c58)\n"
        "               NVRM: installed in this system requires use of the NVIDIA open kernel "
        "modules.\n"
    )
    (signal,) = read_evidence(plain, "dmesg").signals
    assert (signal.kind, signal.get("pci"), signal.evidence.line) == (
        Kind.NVRM_NEEDS_OPEN,
        "10de:2c58",
        1,
    )


def test_a_continuation_line_holding_the_signal_joins_the_message_it_continues() -> None:
    # The first line holds no word a signal needs; its last continuation line, past a blank
    # line, does: the message is read whole, at its first line.
    text = (
        "[    5.559000] usb 1-1: new device\n"
        "[    5.559842] NVRM: GPU 0000:02:00.0: initialising\n"
        "               NVRM: GPU at PCI:0000:02:00.0\n"
        "\n"
        "               NVRM: RmInitAdapter failed! (0x22:0x56:884)\n"
        "[    5.600000] usb 1-2: new device\n"
    )
    (signal,) = read_evidence(text, "console").signals
    assert (signal.kind, signal.evidence.line) == (Kind.RM_INIT_FAILED, 2)
    assert signal.evidence.text.endswith("\\x0aNVRM: RmInitAdapter failed! (0x22:0x56:884)")
    # A file that starts with a continuation line reads it as a message of its own.
    (signal,) = read_evidence(text[text.index("    NVRM: GPU at") :], "console").signals
    assert (signal.kind, signal.evidence.line) == (Kind.RM_INIT_FAILED, 1)


def test_a_message_of_many_continuation_lines_is_quoted_at_both_ends_without_credentials() -> None:
    # The quote shows the message's two ends; each line that shows is redacted, a credential
    # on its last line as on its first, and the lines between cost nothing to quote.
    middle = "               NVRM: x\n" * 20_000
    text = (
        "[    5.559842] NVRM: RmInitAdapter failed! token=firstsecretvalue1234 (0x22:0x56:884)\n"
        + middle
        + "               NVRM: pulled https://robot:lastsecretvalue@registry.example/x\n"
    )
    (signal,) = read_evidence(text, "console").signals
    quoted = signal.evidence.text
    assert (signal.kind, signal.evidence.line, len(quoted)) == (Kind.RM_INIT_FAILED, 1, 400)
    assert quoted.startswith(
        "[    5.559842] NVRM: RmInitAdapter failed! token=*** (0x22:0x56:884)\\x0aNVRM: x"
    )
    assert quoted.endswith("NVRM: x\\x0aNVRM: pulled https://***@registry.example/x")
    assert "secretvalue" not in quoted and "…" in quoted


def test_a_log_of_more_signals_than_is_read_is_read_at_both_ends_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A log of millions of marked lines is read at its start and its end; what lies between
    # is counted and named, not silently dropped. The bounds are lowered to keep this small.
    monkeypatch.setattr(logs, "READ_FIRST", 3)
    monkeypatch.setattr(logs, "READ_LAST", 2)
    lines = []
    for number in range(1, 11):
        lines += [f"worker-{number}: OOMKilled", "worker: nothing to see"]
    (tmp_path / "kubelet.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = triage_paths([str(tmp_path)])
    (reading,) = report.readings
    assert [s.node for s in reading.signals] == [f"worker-{n}" for n in (1, 2, 3, 9, 10)]
    assert report.read_in_part == (reading,)
    assert reading.problem.startswith("lines 6-16 were counted, not read")
    result = CliRunner().invoke(app, ["triage", str(tmp_path)])
    assert "read in part:" in result.stdout
    assert "kubelet.log: lines 6-16 were counted, not read" in result.stdout
    assert "1 read in part: " in result.stderr
    assert json.loads(
        CliRunner().invoke(app, ["triage", "--format", "json", str(tmp_path)]).stdout
    )["inputs"][0]["notRead"].startswith("lines 6-16")


def test_a_file_naming_more_nodes_than_are_judged_says_how_many_were_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The diagnoses cost a fraction of a millisecond a machine: a file naming 150,000 nodes is
    # judged for its first names and says what it passed over. Lowered to keep this small.
    monkeypatch.setattr(readers, "MAX_NODES_A_FILE", 3)
    lines = [f"worker-{n}: OOMKilled" for n in (1, 2, 1, 3, 4, 5, 4)] + ["OOMKilled"]
    (tmp_path / "kubelet.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = triage_paths([str(tmp_path)])
    (reading,) = report.readings
    assert [s.node for s in reading.signals] == ["worker-1", "worker-2", "worker-1", "worker-3", ""]
    assert reading.problem == "3 signals of 2 nodes named past the first 3 were counted, not judged"
    assert report.read_in_part == (reading,)
    # At the limit, nothing is passed over and nothing is said.
    monkeypatch.setattr(readers, "MAX_NODES_A_FILE", 5)
    (reading,) = triage_paths([str(tmp_path)]).readings
    assert (len(reading.signals), reading.problem) == (8, "")


def test_a_file_is_judged_for_as_many_nodes_as_kubernetes_supports() -> None:
    # Kubernetes supports clusters of 5,000 nodes: a file naming each of them is judged whole;
    # one more name is counted, not judged.
    lines = [f"worker-{n}: OOMKilled" for n in range(5000)]
    assert read_evidence("\n".join(lines) + "\n", "kubelet.log").problem == ""
    reading = read_evidence("\n".join([*lines, "worker-5000: OOMKilled"]) + "\n", "kubelet.log")
    assert reading.problem == (
        "1 signals of 1 nodes named past the first 5,000 were counted, not judged"
    )


def test_a_json_list_of_more_objects_than_are_read_says_where_reading_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each object costs the interpreters tens of microseconds: a list is read at its first
    # objects, and the reading says from which line on it was not. Lowered to keep this small.
    monkeypatch.setattr(documents, "MAX_OBJECTS", 3)
    pods = [
        {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": f"p{n}", "namespace": "d"}}
        for n in range(5)
    ]
    listed = {"apiVersion": "v1", "kind": "List", "items": pods}
    (tmp_path / "pods.json").write_text(json.dumps(listed, indent=1), encoding="utf-8")
    (reading,) = triage_paths([str(tmp_path)]).readings
    assert [s.value for s in reading.signals] == ["d/p0", "d/p1", "d/p2"]
    assert reading.problem == (
        "from line 29 on, objects past the first 3 of its list were not read"
    )
    # A list of as many as are read is read whole, and says nothing.
    monkeypatch.setattr(documents, "MAX_OBJECTS", 5)
    (reading,) = triage_paths([str(tmp_path)]).readings
    assert (len(reading.signals), reading.problem) == (5, "")


def test_each_device_plugin_start_is_read_for_its_own_strategy_only() -> None:
    # Each "Running with config:" is followed by its own JSON: the strategy after the second
    # start is that start's, not the first's as well (a log of nothing but start headers was
    # searched 200 lines per header).
    config = (
        'Running with config:\n{\n  "flags": {\n    "plugin": {\n'
        '      "deviceListStrategy": [\n        "{strategy}"\n      ],\n'
        '      "deviceIDStrategy": "uuid"\n    }\n  }\n}\n'
    )
    log = "Running with config:\nI1120 starting\n" + config.replace("{strategy}", "volume-mounts")
    found = [
        (s.value, s.evidence.line)
        for s in read_evidence(log, "plugin.log").signals
        if s.kind is Kind.PLUGIN_STRATEGY
    ]
    assert found == [("volume-mounts", 7)]


def test_proc_modules_lines_with_and_without_users_and_taints() -> None:
    text = (
        "mlx4_ib 274432 - - Live 0xffffffffc0664000\n"
        "nvidia 11796480 2 nvidia_uvm,nvidia_modeset, Live 0xffffffffc0f6c000 (PO)\n"
    )
    signals = read_evidence(text, "modules").signals
    loaded = {s.value: s.get("taint") for s in signals if s.kind is Kind.MODULE_LOADED}
    assert loaded == {"mlx4_ib": "", "nvidia": "PO"}


def test_ts201_the_pending_extension_service_is_named() -> None:
    report = triage_paths([str(BUNDLES / "ts201-lldpd-waits")])
    (diagnosis,) = report.diagnoses
    assert diagnosis.summary.startswith("ext-lldpd pending for 70 minutes")
    assert any("ext-lldpd" in e.text for e in diagnosis.evidence)


def test_ts202_the_timer_without_its_cause_says_what_to_collect() -> None:
    (diagnosis,) = triage_paths([str(BUNDLES / "ts202-timer-without-console")]).diagnoses
    # Boot times 70 minutes apart are certain: the node cannot work, whatever holds its boot.
    assert diagnosis.severity == "error"
    code, _, _ = run("triage", str(BUNDLES / "ts202-timer-without-console"))
    assert code == 3
    assert "6 boots 4227 s apart" in diagnosis.summary
    assert "restarted 19 times, last exit 255 Unknown" in diagnosis.summary
    assert any("serial console" in item for item in diagnosis.collect)


def test_ts203_a_gpu_the_driver_could_not_bring_up_quotes_the_driver() -> None:
    (diagnosis,) = triage_paths([str(BUNDLES / "paste-gsp-init-timeout-second-gpu")]).diagnoses
    assert (diagnosis.code, diagnosis.severity) == ("TS203", "error")
    assert any("Cannot initialize GSP firmware RM" in e.text for e in diagnosis.evidence)
    assert any("TS103" in reason for reason in diagnosis.ruled_out)


def test_ts204_a_refused_module_key_is_named_not_its_look_alikes() -> None:
    (diagnosis,) = triage_paths([str(BUNDLES / "paste-nvidia-module-key-rejected")]).diagnoses
    assert (diagnosis.code, diagnosis.nodes) == ("TS204", ("10.20.30.29",))
    assert "signing key" in diagnosis.summary
    assert {r.split(" ", 1)[0] for r in diagnosis.ruled_out} >= {"TS101", "TS123"}


def test_ts204_is_not_claimed_for_a_module_that_found_no_device(tmp_path: Path) -> None:
    # A module whose init finds nothing to drive is the hardware's story, not a refused module.
    (tmp_path / "dmesg.txt").write_text(
        "10.20.30.29: user: warning: [2023-04-02T08:28:32.661330611Z]: [talos] controller failed "
        '{"component": "controller-runtime", "controller": "runtime.KernelModuleSpecController", '
        '"error": "error loading module \\x5c"nvidia\\x5c": load nvidia failed: no such device"}\n'
    )
    (reading,) = read_evidence((tmp_path / "dmesg.txt").read_text(), "dmesg.txt").signals
    assert (reading.kind, reading.value) == (Kind.MODULE_LOAD_FAILED, "nvidia")
    assert reading.get("reason") == "load nvidia failed: no such device"
    assert "TS204" not in {d.code for d in triage_paths([str(tmp_path)]).diagnoses}


# The line the device plugin logs when its container was given no driver library
# (NVIDIA/k8s-device-plugin#1371), and one the kubelet gives a pod whose RuntimeClass has no
# handler (NVIDIA/gpu-operator#730).
NO_NVML = (
    "W0819 07:02:54.757556       1 rm.go:109] NVML not detected: could not load NVML library: "
    "libnvidia-ml.so.1: cannot open shared object file: No such file or directory\n"
)
NO_HANDLER = (
    "  Warning  FailedCreatePodSandBox  12s (x10 over 2m11s)  kubelet            Failed to "
    "create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no "
    'runtime for "nvidia" is configured\n'
)


def _bundle_with(
    tmp_path: Path, source: str, names: tuple[str, ...], extra: dict[str, str]
) -> Path:
    for name in names:
        (tmp_path / name).write_bytes((BUNDLES / source / name).read_bytes())
    for name, text in extra.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_ts205_a_plugin_without_nvml_on_a_gpu_node_is_an_error(tmp_path: Path) -> None:
    bundle = _bundle_with(
        tmp_path,
        "healthy-gpu-worker-l40s",
        ("pcidevices.yaml", "modules.txt"),
        {"device-plugin.log": NO_NVML},
    )
    found = {d.code: d for d in triage_paths([str(bundle)]).diagnoses}
    diagnosis = found["TS205"]
    assert (diagnosis.severity, diagnosis.nodes) == ("error", ("10.244.9.52",))
    # The driver is loaded on the node: the plugin's container is what lacks it.
    assert any(reason.startswith("TS123") for reason in diagnosis.ruled_out)
    assert any("Runtime Class Name: nvidia" in item for item in diagnosis.collect)


def test_ts205_the_plugin_lines_on_a_node_without_nvidia_are_normal(tmp_path: Path) -> None:
    bundle = _bundle_with(
        tmp_path,
        "ts101-nvidia-image-cpu-worker",
        ("pcidevices.txt",),
        {
            "device-plugin.log": NO_NVML + "I0819 07:02:54.8 1 main.go:1] No devices found. "
            "Waiting indefinitely.\n"
        },
    )
    assert triage_paths([str(bundle)]).diagnoses == ()


def test_ts205_a_plugin_that_registered_after_failing_is_quiet(tmp_path: Path) -> None:
    # The plugin's journal lines as `kubectl logs` prints them: klog without the journal prefix.
    journal = (BUNDLES / "healthy-device-plugin-registered" / "device-plugin.log").read_text()
    registered = "".join(line.split(": ", 1)[1] + "\n" for line in journal.splitlines())
    bundle = _bundle_with(
        tmp_path,
        "healthy-gpu-worker-l40s",
        ("pcidevices.yaml",),
        {"device-plugin.log": NO_NVML + registered},
    )
    assert "TS205" not in {d.code for d in triage_paths([str(bundle)]).diagnoses}


def test_ts205_is_not_said_beside_the_cause_that_explains_it(tmp_path: Path) -> None:
    bundle = _bundle_with(
        tmp_path,
        "ts123-modules-not-loaded",
        ("pcidevices.yaml", "modules.txt", "nvidia-smi.txt"),
        {"device-plugin.log": NO_NVML},
    )
    found = {d.code for d in triage_paths([str(bundle)]).diagnoses}
    assert "TS123" in found and "TS205" not in found


def test_ts111_no_nvidia_handler_with_the_extensions_shown_is_an_error(tmp_path: Path) -> None:
    rows = (BUNDLES / "healthy-gpu-worker-l40s" / "extensions.txt").read_text().splitlines()
    without_toolkit = [r for r in rows if "nvidia-container-toolkit" not in r]
    bundle = _bundle_with(
        tmp_path,
        "healthy-gpu-worker-l40s",
        (),
        {"extensions.txt": "\n".join(without_toolkit) + "\n", "10.244.9.52.events.txt": NO_HANDLER},
    )
    found = {d.code: d for d in triage_paths([str(bundle)]).diagnoses}
    assert found["TS111"].severity == "error"
    assert "include no nvidia-container-toolkit" in found["TS111"].summary


def test_an_event_row_pasted_without_its_header_is_evidence() -> None:
    # kubectl's own "Warning: ..." on stderr is dropped; an event row whose type is Warning is
    # the evidence itself.
    text = "Warning: v1 ComponentStatus is deprecated in v1.19+\n" + NO_HANDLER.strip() + "\n"
    reading = read_evidence(text, "events.txt")
    assert [s.kind for s in reading.signals] == [Kind.RUNTIME_HANDLER_MISSING]


def test_ts111_is_not_claimed_where_the_toolkit_is_installed(tmp_path: Path) -> None:
    bundle = _bundle_with(
        tmp_path,
        "healthy-gpu-worker-l40s",
        ("extensions.txt",),
        {"10.244.9.52.events.txt": NO_HANDLER},
    )
    assert "TS111" not in {d.code for d in triage_paths([str(bundle)]).diagnoses}


def test_ts206_a_validator_that_finds_no_driver_names_the_install_dir() -> None:
    (diagnosis,) = triage_paths([str(BUNDLES / "paste-cozystack-validator-driver-off")]).diagnoses
    # The log alone does not show the host runs Talos: the cause holds only if it does.
    assert (diagnosis.code, diagnosis.severity, diagnosis.if_talos) == ("TS206", "warning", True)
    assert "/usr/local" in diagnosis.summary
    assert any(reason.startswith("TS141") for reason in diagnosis.ruled_out)


def test_ts206_one_retry_is_not_yet_a_loop(tmp_path: Path) -> None:
    lines = BUNDLES / "paste-gpu-operator-validator-on-talos" / "driver-validation.log"
    (tmp_path / "validator.log").write_text("".join(lines.read_text().splitlines(True)[:4]))
    (diagnosis,) = triage_paths([str(tmp_path)]).diagnoses
    assert (diagnosis.code, diagnosis.severity) == ("TS206", "warning")


def test_ts206_waiting_for_the_operators_driver_and_retrying_is_ts141(tmp_path: Path) -> None:
    # The validator's own words for an operator-managed driver (cmd/nvidia-validator/main.go).
    (tmp_path / "validator.log").write_text(
        'time="2026-01-23T20:08:10Z" level=info msg="Driver is not pre-installed on the host '
        'and is managed by GPU Operator. Checking driver container status."\n'
        'time="2026-01-23T20:08:15Z" level=warning msg="failed to validate the driver, '
        'retrying after 5 seconds\\n"\n'
    )
    (diagnosis,) = triage_paths([str(tmp_path)]).diagnoses
    assert (diagnosis.code, diagnosis.severity) == ("TS141", "warning")


def test_ts207_a_dra_device_is_not_recreated_away() -> None:
    (diagnosis,) = triage_paths([str(BUNDLES / "paste-dra-cdi-device-on-talos")]).diagnoses
    assert (diagnosis.code, diagnosis.severity) == ("TS207", "warning")
    assert "k8s.gpu.nvidia.com/device=gpu-1" in diagnosis.summary
    assert any(reason.startswith("TS210") for reason in diagnosis.ruled_out)


def test_ts208_a_plugin_on_no_node_beside_a_gpu_node_is_an_error(tmp_path: Path) -> None:
    bundle = _bundle_with(tmp_path, "healthy-gpu-worker-l40s", ("pcidevices.yaml",), {})
    rows = (BUNDLES / "paste-device-plugin-ds-desired-zero" / "daemonsets.txt").read_text()
    # `kubectl get ds -A` puts NAMESPACE first.
    lines = rows.splitlines()
    (bundle / "ds.txt").write_text(
        f"NAMESPACE              {lines[0]}\nnvidia-device-plugin   {lines[1]}\n"
    )
    (diagnosis,) = triage_paths([str(bundle)]).diagnoses
    assert (diagnosis.code, diagnosis.severity) == ("TS208", "error")
    assert diagnosis.nodes == ("10.244.9.52",)
    assert "nvidia-device-plugin/nvdp-nvidia-device-plugin" in diagnosis.summary


def test_ts208_other_daemonsets_at_zero_are_not_the_plugin(tmp_path: Path) -> None:
    text = (BUNDLES / "paste-device-plugin-ds-desired-zero" / "daemonsets.txt").read_text()
    (tmp_path / "ds.txt").write_text(text.replace("nvdp-nvidia-device-plugin", "node-exporter"))
    assert triage_paths([str(tmp_path)]).diagnoses == ()


MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\n"


def test_ts112_a_version_mismatch_with_two_driver_versions_listed_is_an_error(
    tmp_path: Path,
) -> None:
    rows = (BUNDLES / "healthy-gpu-worker-l40s" / "extensions.txt").read_text()
    # The toolkit of another tier (570 production on Talos 1.12) beside 580 modules.
    rows = rows.replace("580.105.08-v1.18.0", "570.195.03-v1.18.0")
    bundle = _bundle_with(
        tmp_path,
        "healthy-gpu-worker-l40s",
        (),
        {"extensions.txt": rows, "10.244.9.52.smi.txt": MISMATCH},
    )
    (diagnosis,) = triage_paths([str(bundle)]).diagnoses
    assert (diagnosis.code, diagnosis.severity, diagnosis.nodes) == (
        "TS112",
        "error",
        ("10.244.9.52",),
    )
    assert "570.195.03" in diagnosis.summary and "580.105.08" in diagnosis.summary


def test_ts112_is_not_claimed_when_the_extensions_carry_one_driver(tmp_path: Path) -> None:
    bundle = _bundle_with(
        tmp_path, "healthy-gpu-worker-l40s", ("extensions.txt",), {"10.244.9.52.smi.txt": MISMATCH}
    )
    assert "TS112" not in {d.code for d in triage_paths([str(bundle)]).diagnoses}


def test_ts209_a_service_restarted_once_or_twice_is_no_loop(tmp_path: Path) -> None:
    lines = (BUNDLES / "paste-fabricmanager-restart-loop" / "dmesg.txt").read_text().splitlines()
    (tmp_path / "dmesg.txt").write_text("\n".join(lines[:4]) + "\n")
    assert "TS209" not in {d.code for d in triage_paths([str(tmp_path)]).diagnoses}


def test_ts209_another_service_in_a_loop_is_a_warning(tmp_path: Path) -> None:
    text = (BUNDLES / "paste-fabricmanager-restart-loop" / "dmesg.txt").read_text()
    (tmp_path / "dmesg.txt").write_text(text.replace("ext-nvidia-fabricmanager", "ext-lldpd"))
    (diagnosis,) = triage_paths([str(tmp_path)]).diagnoses
    assert (diagnosis.code, diagnosis.severity) == ("TS209", "warning")
    assert any("talosctl -n <node> logs ext-lldpd" in item for item in diagnosis.collect)


def test_ts210_recreate_not_restart() -> None:
    (diagnosis,) = triage_paths([str(BUNDLES / "ts210-cdi-pods-too-early")]).diagnoses
    assert "recreate" in diagnosis.fix
    assert any("cdi-annotations" in reason for reason in diagnosis.ruled_out)


def test_ts211_a_reverted_upgrade_is_a_warning() -> None:
    code, out, _ = run("triage", "-f", "json", str(BUNDLES / "ts211-upgrade-reverted"))
    assert code == 0
    (diagnosis,) = json.loads(out)["diagnoses"]
    assert (diagnosis["code"], diagnosis["severity"]) == ("TS211", "warning")


def test_a_service_talosctl_services_shows_waiting_is_pending(tmp_path: Path) -> None:
    source = BUNDLES / "ts101-talos114-dmesg"
    for name in ("services.txt", "pcidevices.yaml"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    (diagnosis,) = triage_paths([str(tmp_path)]).diagnoses
    assert (diagnosis.code, diagnosis.nodes) == ("TS101", ("172.16.20.31",))
    assert "ext-nvidia-persistenced pending" in diagnosis.summary


def test_pods_as_yaml_say_what_pods_as_json_say(tmp_path: Path) -> None:
    import yaml

    source = BUNDLES / "ts101-nvidia-image-cpu-worker" / "pods.json"
    document = json.loads(source.read_text(encoding="utf-8"))
    as_yaml = yaml.safe_dump(document, sort_keys=True)
    from_json = read_evidence(source.read_text(encoding="utf-8"), "pods.json").signals
    from_yaml = read_evidence(as_yaml, "pods.yaml").signals
    assert read_evidence(as_yaml, "pods.yaml").format == "yaml"

    def facts(signals: tuple[Signal, ...]) -> list[tuple[str, str, str, str]]:
        return [(s.node, s.value, s.get("restarts"), s.get("exit")) for s in signals]

    assert facts(from_yaml) == facts(from_json)
    assert len([s for s in from_json if s.kind is Kind.POD]) == 5


def test_machinestatus_booting_and_ready_is_named_as_evidence() -> None:
    (diagnosis,) = triage_paths([str(BUNDLES / "ts101-talos114-dmesg")]).diagnoses
    assert "machinestatus says booting with ready: true" in diagnosis.summary
    assert any(e.file.endswith("machinestatus.yaml") for e in diagnosis.evidence)


def test_ts103_names_the_gpu_from_the_device_table() -> None:
    (diagnosis,) = triage_paths([str(BUNDLES / "ts103-proprietary-on-blackwell")]).diagnoses
    assert any(
        "10de:2bb5 (NVIDIA RTX PRO 6000 Blackwell Server Edition)" in reason
        for reason in diagnosis.ruled_out
    )


def test_no_devices_on_proprietary_modules_is_not_ts103_without_an_open_only_gpu(
    tmp_path: Path,
) -> None:
    # "No devices found" with the proprietary modules, but nothing says the GPU is open-only.
    source = BUNDLES / "ts103-proprietary-on-blackwell"
    for name in ("nvidia-smi.txt", "proc-modules.txt", "extensions.txt"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    assert "TS103" not in {d.code for d in triage_paths([str(tmp_path)]).diagnoses}


def _gpu_pod(name: str, created: str, waiting: str = "") -> dict[str, object]:
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {"startedAt": created}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "creationTimestamp": created},
        "spec": {
            "nodeName": "gpu-1",
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
        "status": {
            "startTime": created,
            "containerStatuses": [{"name": "main", "restartCount": 0, "state": state}],
        },
    }


def test_ts210_a_stuck_gpu_pod_created_before_the_device_plugin_started(tmp_path: Path) -> None:
    plugin = _gpu_pod("nvidia-device-plugin-daemonset-7xk2p", "2026-11-27T08:31:09Z")
    plugin["metadata"] = {
        "name": "nvidia-device-plugin-daemonset-7xk2p",
        "namespace": "cozy-gpu-operator",
        "creationTimestamp": "2026-11-27T08:31:09Z",
    }
    plugin["spec"] = {"nodeName": "gpu-1", "containers": [{"name": "plugin"}]}
    pods = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            plugin,
            _gpu_pod("trainer-0", "2026-11-27T08:14:00Z", waiting="CreateContainerError"),
            _gpu_pod("trainer-1", "2026-11-27T09:00:00Z"),
        ],
    }
    (tmp_path / "pods.json").write_text(json.dumps(pods, indent=4), encoding="utf-8")
    (diagnosis,) = triage_paths([str(tmp_path)]).diagnoses
    assert (diagnosis.code, diagnosis.nodes) == ("TS210", ("gpu-1",))
    assert "Pod ml/trainer-0 was created at 2026-11-27T08:14:00Z, before" in diagnosis.summary
    assert "trainer-1" not in diagnosis.summary


def test_kubectl_get_pods_wide_carries_the_restarts_per_node() -> None:
    table = (
        "NAMESPACE     NAME                  READY   STATUS    RESTARTS       AGE   IP"
        "             NODE                 NOMINATED NODE   READINESS GATES\n"
        "kube-system   cilium-5xq2d          1/1     Running   14 (9m ago)    19h   10.244.3.17"
        "    tenant-a-cpu-7c9xv   <none>           <none>\n"
        "kube-system   kube-proxy-hn8tb      1/1     Running   14 (9m ago)    19h   10.244.3.17"
        "    tenant-a-cpu-7c9xv   <none>           <none>\n"
        "tenant-a      web-6d4cf56db6-r2l8k  1/1     Running   14 (9m ago)    19h   10.233.1.4"
        "     tenant-a-cpu-7c9xv   <none>           <none>\n"
    )
    reading = read_evidence(table, "pods.txt")
    assert reading.format == "table"
    found = [(s.kind, s.node, s.value, s.get("restarts")) for s in reading.signals]
    assert found[0] == (Kind.POD, "tenant-a-cpu-7c9xv", "kube-system/cilium-5xq2d", "14")
    (diagnosis,) = diagnose(reading.signals)
    assert diagnosis.code == "TS202"
    assert diagnosis.summary.startswith(
        "All 3 restarted pods on it restarted 14 times, about every 81 minutes; nothing among "
        "the inputs shows that tenant-a-cpu-7c9xv runs Talos"
    )


def test_talosctl_service_detail_of_a_waiting_service() -> None:
    # renderServiceInfo's layout (cmd/talosctl/cmd/talos/service.go), as in talos#9839.
    text = (
        "NODE     172.16.20.31\n"
        "ID       ext-nvidia-persistenced\n"
        "STATE    Waiting\n"
        "HEALTH   ?\n"
        'EVENTS   [Waiting]: Waiting for file "/sys/bus/pci/drivers/nvidia" to exist (69m52s ago)\n'
        "         [Preparing]: Creating service runner (69m52s ago)\n"
    )
    reading = read_evidence(text, "service.txt")
    (signal,) = reading.signals
    assert (reading.format, signal.kind, signal.node, signal.value, signal.evidence.line) == (
        "table",
        Kind.SERVICE_WAITING,
        "172.16.20.31",
        "ext-nvidia-persistenced",
        3,
    )


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("[talos] task startAllServices (1/1): failed: 1 error occurred:", Kind.BOOT_FAILED),
        ("[talos] phase startEverything (11/11): failed", Kind.BOOT_FAILED),
        ("[talos] boot sequence: failed", Kind.BOOT_FAILED),
        ("[talos] rebooting in 10 seconds", Kind.REBOOTING),
        ('[talos] reverting failed upgrade, switching to "A"', Kind.UPGRADE_REVERTED),
        ("error: failed to sign API server CSR: rpc error", Kind.CSR_SIGN_FAILED),
        (
            "[talos] service[apid](Waiting): Waiting for api certificates",
            Kind.APID_WAITING_CERTIFICATES,
        ),
        (
            "NVRM: installed in this system requires use of the NVIDIA open kernel modules.",
            Kind.NVRM_NEEDS_OPEN,
        ),
        (
            "NVRM: nvidia.ko because it does not include the required GPU\nNVRM: System "
            "Processor (GSP).",
            Kind.NVRM_NO_GSP,
        ),
        ("NVRM:  supported through the NVIDIA 580.xx Legacy drivers. Please", Kind.NVRM_LEGACY),
        ("NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)", Kind.RM_INIT_FAILED),
        ("NVRM: RmInitAdapter: Cannot initialize GSP firmware RM", Kind.RM_INIT_FAILED),
        (
            "NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.",
            Kind.NVRM_OPEN_UNSUPPORTED,
        ),
        (
            "NVRM: The NVIDIA GPU 0000:00:10.0 (PCI ID: 10de:1b38)\nNVRM: installed in this system "
            "is not supported by the\nNVRM: NVIDIA 535.54.03 driver release.",
            Kind.NVRM_RELEASE_UNSUPPORTED,
        ),
        ("NVRM: The NVIDIA probe routine failed for 1 device(s).", Kind.RM_INIT_FAILED),
        ("Loading of module with unavailable key is rejected", Kind.MODULE_KEY_REJECTED),
        ("[talos] task startAllServices (1/1): done, 3.36s", Kind.BOOT_DONE),
        ("[talos] boot sequence: done: 28.819444293s", Kind.BOOT_DONE),
        (
            "E: Unable to locate package linux-objects-nvidia-535-server-6.1.51-talos",
            Kind.OPERATOR_DRIVER_ON_TALOS,
        ),
        ("No devices were found", Kind.NO_DEVICES),
        ("No devices found", Kind.NO_DEVICES),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
            Kind.NO_DRIVER,
        ),
        ("NVRM: No NVIDIA GPU found.", Kind.NO_GPU_FOUND),
        ("NVRM: No NVIDIA graphics adapter found!", Kind.NO_GPU_FOUND),
        ("please load kernel module 'ib_umad' for NVLSM", Kind.FABRIC_IB_UMAD),
        ("ERR: umad_init failed, is ib_umad module loaded?", Kind.FABRIC_IB_UMAD),
        (
            "failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]",
            Kind.FABRIC_NOTHING_TO_DO,
        ),
        ("        State                             : In Progress", Kind.FABRIC_IN_PROGRESS),
        ("CUDA error 802: system not yet initialized", Kind.CUDA_NOT_READY),
        ("cudaErrorSystemNotReady", Kind.CUDA_NOT_READY),
        (
            "failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=0",
            Kind.CDI_UNRESOLVABLE,
        ),
        ('Sending SIGKILL to cgroup {"cgroup": "/kubepods/burstable/pod1"}', Kind.OOM_KILL),
        ("Out of memory: Killed process 4242 (python)", Kind.OOM_KILL),
    ],
)
def test_every_message_pattern_passes_the_keyword_filter(message: str, kind: Kind) -> None:
    assert message_kinds(message) == [kind]
    assert any(word in message for word in KEYWORDS)


def test_an_image_without_the_module_extension_is_ts110_not_ts123(tmp_path: Path) -> None:
    # The modules-not-loaded bundle, plus a `talosctl get extensions` table (the format of the
    # TS103 bundle's) that lists the toolkit and no kernel-module extension: nothing to load.
    bundle = BUNDLES / "ts123-modules-not-loaded"
    for source in bundle.iterdir():
        if source.name != "SOURCES.md":
            (tmp_path / source.name).write_bytes(source.read_bytes())
    (tmp_path / "extensions.txt").write_text(
        "NODE          NAMESPACE   TYPE              ID   VERSION   NAME"
        "                                   VERSION\n"
        "10.244.9.40   runtime     ExtensionStatus   0    1         nvidia-container-toolkit-lts"
        "           580.95.05-v1.18.0\n"
    )
    codes = {d.code for d in triage_paths([str(tmp_path)]).diagnoses}
    assert "TS110" in codes and "TS123" not in codes


# --- TS103 from "No devices found": which evidence of the flavour counts -----------------------
# The GPU is named by a `talosctl get pcidevices -o yaml` record (the ts123 bundle's, with the
# node and the product ID of the GPU in question); "No devices were found", the extension table
# and /proc/modules are the bundles' own files: the proprietary ones of the TS103 bundle, the
# open ones of the healthy A100 bundle.
PROPRIETARY = BUNDLES / "ts103-proprietary-on-blackwell"
OPEN = BUNDLES / "class4-healthy-a100-nvlink3"


def _no_devices_bundle(
    tmp_path: Path, node: str, product: str, flavour_files: dict[str, Path]
) -> set[str]:
    pci = (BUNDLES / "ts123-modules-not-loaded" / "pcidevices.yaml").read_text()
    pci = pci.replace("10.244.9.40", node).replace('"0x26b9"', f'"0x{product}"')
    (tmp_path / "pcidevices.yaml").write_text(pci.replace('driver: ""', "driver: nvidia"))
    (tmp_path / "nvidia-smi.txt").write_bytes((PROPRIETARY / "nvidia-smi.txt").read_bytes())
    for name, source in flavour_files.items():
        (tmp_path / name).write_bytes(source.read_bytes())
    report = triage_paths([str(tmp_path)])
    return {f"{d.code} {','.join(d.nodes)}" for d in report.diagnoses}


@pytest.mark.parametrize("evidence", ["extensions.txt", "proc-modules.txt"])
def test_ts103_from_no_devices_needs_only_one_sign_of_the_proprietary_modules(
    tmp_path: Path, evidence: str
) -> None:
    # The extension's name alone, or the `P` taint alone, says the modules are proprietary.
    found = _no_devices_bundle(tmp_path, "10.0.40.21", "2bb5", {evidence: PROPRIETARY / evidence})
    assert "TS103 10.0.40.21" in found


def test_no_devices_on_the_open_modules_is_not_ts103(tmp_path: Path) -> None:
    # Open modules (their extension; `(O)`, no `P`, in /proc/modules) on an open-only GPU: the
    # flavour is right, whatever else keeps nvidia-smi from seeing the GPU.
    files = {
        "extensions.txt": OPEN / "extensions.txt",
        "proc-modules.txt": OPEN / "proc-modules.txt",
    }
    found = _no_devices_bundle(tmp_path, "10.30.0.12", "2bb5", files)
    assert not any(code.startswith("TS103") for code in found), found


def test_no_devices_on_gb10_with_the_proprietary_modules_is_not_ts103(tmp_path: Path) -> None:
    # GB10 (DGX Spark) is the exception: on Talos the proprietary modules are its flavour.
    files = {name: PROPRIETARY / name for name in ("extensions.txt", "proc-modules.txt")}
    found = _no_devices_bundle(tmp_path, "10.0.40.21", "2e12", files)
    assert not any(code.startswith("TS103") for code in found), found


@pytest.mark.parametrize(("period", "timer"), [(4227, True), (3700, False)])
def test_only_boots_on_the_70_minute_timer_are_the_timer(
    tmp_path: Path, period: int, timer: bool
) -> None:
    # The TS202 bundle's node_boot_time_seconds range query, its boot times respaced: a node
    # that reboots every ~62 minutes (a watchdog, a scheduled reboot) is not looping on the
    # boot timer, which fires at 70 minutes.
    source = BUNDLES / "ts202-timer-without-console" / "node_boot_time_seconds.json"
    document = json.loads(source.read_text())
    samples = document["data"]["result"][0]["values"]
    first = int(samples[0][1])
    for sample in samples:
        sample[1] = str(first + (sample[0] - first) // period * period)
    (tmp_path / "node_boot_time_seconds.json").write_text(json.dumps(document))
    found = {d.code for d in triage_paths([str(tmp_path)]).diagnoses}
    assert ("TS202" in found) is timer, found


# --- the machine config loads nvidia, the kernel has none ---------------------------------------

# `talosctl get mc -o yaml` as siderolabs/talos pkg/machinery/resources/config/machine_config.go
# prints it (the spec is the config as a YAML string).
MACHINE_CONFIG_LOADING_NVIDIA = (
    "node: 10.244.9.40\nmetadata:\n    namespace: config\n"
    "    type: MachineConfigs.config.talos.dev\n    id: v1alpha1\n    version: 4\n"
    "spec: |\n    version: v1alpha1\n    machine:\n        kernel:\n            modules:\n"
    "                - name: nvidia\n                - name: nvidia_uvm\n"
)
# Talos's controller line as siderolabs/pkgs#1194 quotes it, for module nvidia.
MODULE_NOT_FOUND = (
    "10.244.9.40: user: warning: [2025-03-21T17:06:41.370911596Z]: [talos] controller failed "
    '{"component": "controller-runtime", "controller": "runtime.KernelModuleSpecController", '
    '"error": "error loading module \\"nvidia\\": module not found"}\n'
)
EXTENSIONS_WITHOUT_MODULES = (
    "NODE            NAMESPACE   TYPE              ID   VERSION   NAME"
    "                           VERSION\n"
    "10.244.9.40     runtime     ExtensionStatus   0    1         nvidia-container-toolkit-lts"
    "   570.148.08-v1.17.8\n"
)


def _gpu_without_module(tmp_path: Path, **files: str) -> dict[str, str]:
    # The L40S with no driver bound and no nvidia module loaded (the TS123 bundle's node).
    for name in ("pcidevices.yaml", "modules.txt"):
        (tmp_path / name).write_text((BUNDLES / "ts123-modules-not-loaded" / name).read_text())
    for name, text in files.items():
        (tmp_path / f"{name}.txt").write_text(text)
    return {d.code: d.severity for d in triage_paths([str(tmp_path)]).diagnoses}


def test_a_machine_config_that_loads_nvidia_is_not_ts123(tmp_path: Path) -> None:
    found = _gpu_without_module(tmp_path, mc=MACHINE_CONFIG_LOADING_NVIDIA)
    assert found == {"TS204": "error"}


def test_module_not_found_without_a_kernel_module_extension_is_ts110(tmp_path: Path) -> None:
    found = _gpu_without_module(
        tmp_path, log=MODULE_NOT_FOUND, extensions=EXTENSIONS_WITHOUT_MODULES
    )
    assert found == {"TS110": "error"}


def test_module_not_found_alone_names_both_candidates(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text(MODULE_NOT_FOUND)
    (found,) = triage_paths([str(tmp_path)]).diagnoses
    assert found.code == "TS204"
    assert "TS110" in found.summary and "another kernel" in found.summary
    assert not any(line.startswith("TS123") and "refuses" in line for line in found.ruled_out)


def test_ts212_none_left_is_a_warning_that_names_a_stopped_plugin(tmp_path: Path) -> None:
    # The kubelet counts every device of a plugin that went away unhealthy for a while: with
    # no GPU left and no Xid among the inputs, a stopped plugin looks the same.
    fragment = (BUNDLES / "ts212-allocatable-below-capacity" / "describe-node.txt").read_text()
    (tmp_path / "node.txt").write_text(fragment.replace("7       <=========== here", "0"))
    (found,) = triage_paths([str(tmp_path)]).diagnoses
    assert (found.code, found.severity) == ("TS212", "warning")
    assert any("device plugin pod" in line for line in found.collect)
    # With the plugin's own word that it marked the GPU unhealthy, it is an error again.
    log = (BUNDLES / "ts212-plugin-marked-unhealthy" / "device-plugin.log").read_text()
    (tmp_path / "device-plugin.log").write_text(log)
    (found,) = triage_paths([str(tmp_path)]).diagnoses
    assert (found.code, found.severity) == ("TS212", "error")
    assert "Xid 94" in found.summary


def test_ts143_kubevirt_refusing_the_vms_gpu_names_the_resource(tmp_path: Path) -> None:
    refused = (BUNDLES / "ts143-host-device-not-permitted" / "kubectl-create.txt").read_text()
    (tmp_path / "create.txt").write_text(refused)
    (found,) = triage_paths([str(tmp_path)]).diagnoses
    assert (found.code, found.severity) == ("TS143", "error")
    assert "nvidia.com/TU104GL_Tesla_T4" in found.summary
    # Another message about the same resource is no refusal.
    (tmp_path / "create.txt").write_text(
        refused.replace("is not permitted in permittedHostDevices configuration", "is permitted")
    )
    assert triage_paths([str(tmp_path)]).diagnoses == ()


def test_ts203_a_gpu_that_fell_off_the_bus_at_probe_says_so() -> None:
    (found,) = triage_paths([str(BUNDLES / "ts203-fell-off-the-bus-at-probe")]).diagnoses
    assert found.code == "TS203"
    assert "fell off the bus as the driver probed it" in found.summary


def test_a_silent_driver_on_a_node_shown_without_an_nvidia_gpu_is_no_ts123(
    tmp_path: Path,
) -> None:
    # The PCI table of a CPU worker (healthy-cpu-worker-normal-boot) beside nvidia-smi's
    # "couldn't communicate": no NVIDIA device, so the modules are not what is missing.
    for bundle, name in (
        ("healthy-cpu-worker-normal-boot", "pcidevices.txt"),
        ("paste-smi-cannot-reach-driver-alone", "nvidia-smi.txt"),
    ):
        (tmp_path / name).write_text((BUNDLES / bundle / name).read_text())
    assert "TS123" not in [d.code for d in triage_paths([str(tmp_path)]).diagnoses]


def test_ts140_quotes_three_plugin_logs_however_many_show_the_strategy(tmp_path: Path) -> None:
    # Five device-plugin logs without a CDI strategy: the finding quotes the first three (the
    # rest say the same) and is one finding, not five.
    log = (BUNDLES / "ts140-device-plugin-env-override" / "device-plugin.log").read_bytes()
    for number in range(1, 6):
        (tmp_path / f"device-plugin-{number}.log").write_bytes(log)
    (ts140,) = [d for d in triage_paths([str(tmp_path)]).diagnoses if d.code == "TS140"]
    quoted = [e.file for e in ts140.evidence]
    assert [Path(file).name for file in quoted] == [
        "device-plugin-1.log",
        "device-plugin-2.log",
        "device-plugin-3.log",
    ]
