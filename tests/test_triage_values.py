"""Every triage reader is total: a value it cannot hold is reported at its file and line.

The roots below each ended in a traceback: values real tools print (Prometheus' ``NaN`` and
``+Inf``, a row cut short) or that a hostile bundle holds (a time past the calendar, an integer
beyond the interpreter's 4,300-digit conversion limit). Each must end in a report that names
the value as unreadable at its line, or is simply not read, and an ordinary exit code.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import triage_paths
from schematic.doctor.triage.values import (
    age_minutes,
    count,
    epoch_time,
    json_decoder,
    number,
    parse_time,
)

register_all_commands()

DATA = Path(__file__).parent / "data" / "triage"
HUGE = "9" * 4400  # past Python's int-to-str limit (4,300 digits)


def triage(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["triage", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _prometheus(sample: str, name: str = "node_boot_time_seconds") -> str:
    # The shape of tests/data/triage/healthy-prometheus-instant (a /api/v1/query answer).
    series = {"metric": {"__name__": name, "node": "worker-1"}, "value": [1764007200, sample]}
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [series]}})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("7", 7),
        (" 12 ", 12),
        ("9" * 20, int("9" * 20)),
        ("9" * 21, None),
        (HUGE, None),
        ("-1", None),
        ("1.5", None),
        ("", None),
        ("NaN", None),
    ],
)
def test_count_holds_only_what_a_tool_prints(text: str, expected: int | None) -> None:
    assert count(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4218.512345", 4218.512345),
        ("1763355061", 1763355061.0),
        ("1.7633e+09", 1.7633e9),
        ("0.30000000000000004", 0.30000000000000004),
        ("NaN", None),
        ("+Inf", None),
        ("-Inf", None),
        ("1e400", None),
        ("9" * 400 + ".000000", None),
        (HUGE, None),
        ("twelve", None),
    ],
)
def test_number_is_finite_and_of_a_printed_length(text: str, expected: float | None) -> None:
    assert number(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-10-30T18:20:10Z", datetime(2025, 10, 30, 18, 20, 10, tzinfo=UTC)),
        ("2025-10-30T18:20:10.123456789+02:00", datetime(2025, 10, 30, 16, 20, 10, 123456, UTC)),
        ("2025-10-30 18:20:10", datetime(2025, 10, 30, 18, 20, 10, tzinfo=UTC)),
        ("9999-12-31T23:59:59-05:00", None),
        ("0001-01-01T00:00:00+05:00", None),
        ("2025-13-01T00:00:00Z", None),
        ("yesterday", None),
    ],
)
def test_parse_time_stays_on_the_calendar(text: str, expected: datetime | None) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    ("seconds", "on_calendar"), [(0.0, True), (1.7e9, True), (1e20, False), (-1e20, False)]
)
def test_epoch_time_stays_on_the_calendar(seconds: float, on_calendar: bool) -> None:
    assert (epoch_time(seconds) is not None) is on_calendar


@pytest.mark.parametrize(
    ("text", "expected"), [("69m52s", 69 + 52 / 60), ("2d3h", 3060.0), (HUGE + "m", None)]
)
def test_age_minutes_reads_an_age_and_refuses_a_huge_one(text: str, expected: float | None) -> None:
    assert age_minutes(text) == expected


def test_the_json_decoder_holds_a_huge_integer_as_its_text() -> None:
    assert json_decoder().decode(f'{{"n": {HUGE}, "m": 12}}') == {"n": HUGE, "m": 12}


def _unreadable_at(stdout: str, file: Path, line: int) -> bool:
    return f"{file}: unreadable value at line {line}:" in stdout.replace("\n    ", " ")


@pytest.mark.parametrize("sample", ["NaN", "+Inf", "-Inf"])
def test_a_prometheus_sample_that_is_no_number_is_reported(tmp_path: Path, sample: str) -> None:
    answer = tmp_path / "node_boot_time_seconds.json"
    answer.write_text(_prometheus(sample))
    code, stdout, _ = triage(str(answer))
    assert code == 4  # the one sample unreadable: nothing could be judged
    assert _unreadable_at(stdout, answer, 1)
    assert repr(sample) in stdout


def test_a_prometheus_memory_sample_of_infinity_is_reported(tmp_path: Path) -> None:
    answer = tmp_path / "memory.json"
    answer.write_text(_prometheus("+Inf", "node_memory_MemAvailable_bytes"))
    code, stdout, _ = triage(str(answer))
    assert code in (0, 3, 4)
    assert _unreadable_at(stdout, answer, 1)


def test_finite_prometheus_samples_are_not_reported(tmp_path: Path) -> None:
    answer = tmp_path / "node_boot_time_seconds.json"
    answer.write_text(_prometheus("1763355061"))
    report = triage_paths([str(answer)])
    assert [r.problem for r in report.readings] == [""]
    assert report.readings[0].format == "json"


def test_a_vmi_row_cut_before_its_ip_is_read_without_it(tmp_path: Path) -> None:
    # The header of tests/data/triage/class2-vmi-describe-talosctl/vmis.txt; the row cut.
    vmis = tmp_path / "vmis.txt"
    vmis.write_text(
        "NAME                              AGE    PHASE     IP            NODENAME       READY\n"
        "kubernetes-tenant-h-md0-6d7b9     3d2h   Running\n"
    )
    code, _, stderr = triage(str(vmis))
    assert code in (0, 3, 4)
    assert "Traceback" not in stderr


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"])
def test_a_log_time_past_the_calendar_is_no_time(tmp_path: Path, stamp: str) -> None:
    log = tmp_path / "machined.log"
    log.write_text(f"{stamp} [talos] service[kubelet](Waiting): Waiting for service containerd\n")
    code, _, stderr = triage(str(log))
    assert code in (0, 3, 4)
    assert "Traceback" not in stderr


def test_a_json_log_stamp_past_the_calendar_keeps_its_message(tmp_path: Path) -> None:
    # A device-plugin log line (zap JSON) whose "ts" no calendar holds: the Xid still counts.
    log = tmp_path / "plugin.log"
    log.write_text(
        "I1114 10:00:00.000000 1 main.go:1] starting\n"
        '{"level":"info","ts":1e20,"msg":"NVRM: Xid (PCI:0000:01:00): 79, pid=1, '
        'GPU has fallen off the bus."}\n'
    )
    report = triage_paths([str(log)])
    assert report.readings[0].format == "log"
    assert any(s.kind.name == "GPU_XID" for s in report.readings[0].signals)


def test_a_400_digit_kernel_uptime_is_reported_at_its_line(tmp_path: Path) -> None:
    dmesg = tmp_path / "dmesg.txt"
    wait = '[talos] task startAllServices (1/1): waiting for 1 services: service "ext-x" to be up'
    dmesg.write_text(f"[    1.000000] {wait}\n[{'9' * 400}.000000] {wait}\n")
    code, stdout, _ = triage(str(dmesg))
    assert code in (0, 3, 4)
    assert _unreadable_at(stdout, dmesg, 2)
    assert "kernel uptime" in stdout


def test_a_huge_restart_count_in_kubectl_json_is_reported(tmp_path: Path) -> None:
    pods = tmp_path / "pods.json"
    pods.write_text(
        '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"n"},\n'
        '"spec":{"nodeName":"worker-1"},\n'
        f'"status":{{"containerStatuses":[{{"name":"c","restartCount":{HUGE}}}]}}}}\n'
    )
    code, stdout, stderr = triage("-f", "json", str(pods))
    assert code in (0, 3, 4), stderr
    [read] = json.loads(stdout)["inputs"]
    assert read["notRead"].startswith("unreadable value at line 3: restartCount '99999"), read


def test_a_huge_restart_count_in_kubectl_describe_is_reported(tmp_path: Path) -> None:
    seed = DATA / "paste-describe-pod-init-waiting"
    described = next(p for p in sorted(seed.iterdir()) if "Restart Count:" in p.read_text())
    lines = described.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "Restart Count:" in line)
    lines[at] = lines[at].split(":")[0] + f":  {HUGE}"
    target = tmp_path / described.name
    target.write_text("\n".join(lines) + "\n")
    code, stdout, _ = triage(str(target))
    assert code in (0, 3, 4)
    assert _unreadable_at(stdout, target, at + 1)


def test_a_huge_restarts_cell_in_kubectl_get_pods_is_reported(tmp_path: Path) -> None:
    pods = tmp_path / "pods.txt"
    pods.write_text(
        "NAME    READY   STATUS    RESTARTS   AGE   IP          NODE       NOMINATED NODE\n"
        f"plugin  1/1     Running   {HUGE}    19h   10.0.0.5    worker-1   <none>\n"
    )
    code, stdout, _ = triage(str(pods))
    assert code in (0, 3, 4)
    assert _unreadable_at(stdout, pods, 2)


def test_a_huge_service_age_is_no_age(tmp_path: Path) -> None:
    services = tmp_path / "services.txt"
    services.write_text(
        "NODE         SERVICE   STATE     HEALTH   LAST CHANGE   LAST EVENT\n"
        f"10.0.0.5     kubelet   Waiting   ?        {HUGE}m ago   Waiting for service\n"
    )
    code, _, stderr = triage(str(services))
    assert code in (0, 3, 4)
    assert "Traceback" not in stderr


def test_a_huge_xid_number_is_no_xid(tmp_path: Path) -> None:
    # The device plugin's health line as tests/data/triage/ts212-plugin-marked-unhealthy holds it.
    seed = DATA / "ts212-plugin-marked-unhealthy"
    logs = [p for p in sorted(seed.iterdir()) if "Xid=" in p.read_text(encoding="utf-8")]
    assert logs
    for log in logs:
        target = tmp_path / log.name
        target.write_text(re.sub(r"Xid=\d+", f"Xid={HUGE}", log.read_text(encoding="utf-8")))
    code, _, stderr = triage(str(tmp_path))
    assert code in (0, 3, 4)
    assert "Traceback" not in stderr
