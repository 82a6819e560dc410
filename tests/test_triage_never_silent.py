"""`triage` is never silent: an error line no rule knows is said (TS213), a cluster-wide cause is
one finding over every pool, and "nothing judged" is its own exit state (see also
tests/test_triage_model.py for the exit codes)."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import triage_paths
from schematic.doctor.triage.readers import read_evidence
from schematic.doctor.triage.readers.messages import unknown_failure
from schematic.doctor.triage.signals import Kind

BUNDLES = Path(__file__).parent / "data" / "triage"
TS131 = BUNDLES / "ts131-trustd-port-missing"


register_all_commands()
runner = CliRunner()


def _triage_exit(path: Path) -> Result:
    # In-process: the exit code is the command's own; a child process per bundle only adds
    # start-up time (the child-process path is covered by the --quiet tests).
    return runner.invoke(app, ["triage", str(path)])


def _diagnoses(path: Path) -> dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]]:
    found: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    for d in triage_paths([str(path)]).diagnoses:
        found.setdefault(d.code, []).append((d.nodes, d.pools))
    return found


# --- TS131: one finding for the cluster -------------------------------------------------------


def test_ts131_is_one_finding_listing_every_pool(tmp_path: Path) -> None:
    console = (TS131 / "tenant-b-md0-q8w2n.console.log").read_text(encoding="utf-8")
    shutil.copy(TS131 / "kamaji-service.json", tmp_path / "kamaji-service.json")
    # Two pools' workers, each console named after its node, plus a console that names none.
    (tmp_path / "tenant-b-md0-q8w2n.console.log").write_text(console, encoding="utf-8")
    (tmp_path / "tenant-b-gpu-x7k2p.console.log").write_text(console, encoding="utf-8")
    (tmp_path / "nodes.txt").write_text(
        "NAME                 STATUS   ROLES    AGE   VERSION\n"
        "tenant-b-md0-q8w2n   Ready    <none>   70m   v1.33.3\n"
        "tenant-b-gpu-x7k2p   Ready    <none>   70m   v1.33.3\n",
        encoding="utf-8",
    )
    found = _diagnoses(tmp_path)
    assert found["TS131"] == [
        (("tenant-b-gpu-x7k2p", "tenant-b-md0-q8w2n"), ("tenant-b-gpu", "tenant-b-md0"))
    ]
    report = triage_paths([str(tmp_path)])
    (diagnosis,) = [d for d in report.diagnoses if d.code == "TS131"]
    assert diagnosis.summary.startswith("2 nodes of pools tenant-b-gpu, tenant-b-md0 show it")


def test_a_console_naming_no_node_joins_the_pools_ts131(tmp_path: Path) -> None:
    console = (TS131 / "tenant-b-md0-q8w2n.console.log").read_text(encoding="utf-8")
    shutil.copy(TS131 / "kamaji-service.json", tmp_path / "kamaji-service.json")
    (tmp_path / "tenant-b-md0-q8w2n.console.log").write_text(console, encoding="utf-8")
    (tmp_path / "tenant-b-gpu-x7k2p.console.log").write_text(console, encoding="utf-8")
    (tmp_path / "console.log").write_text(console, encoding="utf-8")
    codes = [d.code for d in triage_paths([str(tmp_path)]).diagnoses]
    assert codes.count("TS131") == 1


def test_a_per_pool_cause_stays_per_pool() -> None:
    # Must not merge: TS101 of two pools is two findings, each with its own fix.
    from schematic.doctor.triage.diagnose import CLUSTER_WIDE

    assert "TS101" not in CLUSTER_WIDE


# --- TS213: an error line no rule knows -------------------------------------------------------


def test_ts213_an_unknown_fabric_manager_error_is_said_with_what_to_collect() -> None:
    report = triage_paths([str(BUNDLES / "paste-fabricmanager-invalid-config-h200")])
    (diagnosis,) = report.diagnoses
    assert (diagnosis.code, diagnosis.severity) == ("TS213", "warning")
    assert "FABRIC_NODE_CONFIG_FILE has an invalid value" in diagnosis.evidence[0].text
    assert any("logs ext-nvidia-fabricmanager" in c for c in diagnosis.collect)
    # A warning, since its cause is unknown; but a failing fabric manager is no healthy node.
    assert report.verdict == "failures"


def test_ts213_alone_exits_3_and_a_healthy_bundle_exits_0() -> None:
    unexplained = _triage_exit(BUNDLES / "paste-fabricmanager-invalid-config-h200")
    assert unexplained.exit_code == 3, unexplained.stderr
    assert "TS213" in unexplained.stdout
    healthy = [path for path in sorted(BUNDLES.iterdir()) if path.name.startswith("healthy")]
    assert healthy
    for bundle in healthy:
        result = _triage_exit(bundle)
        assert (result.exit_code, "TS213" in result.stdout) == (0, False), bundle.name


def test_unknown_container_cli_error_is_said() -> None:
    report = triage_paths([str(BUNDLES / "paste-container-cli-load-library-failed")])
    (diagnosis,) = report.diagnoses
    assert diagnosis.code == "TS213"
    assert diagnosis.evidence[0].line == 2
    assert any("nvidia-container-toolkit" in c for c in diagnosis.collect)


def test_sources_of_unknown_errors() -> None:
    assert unknown_failure("NVRM: GPU 0000:41:00.0: RmInitAdapter timed out") == "nvidia-driver"
    assert unknown_failure("NVRM: nvAssertFailed: Assertion failed: 0 @ g_kern.c:123") == (
        "nvidia-driver"
    )
    assert unknown_failure("[talos] task mountStatePartition (1/1): failed: no such device") == (
        "talos"
    )
    assert unknown_failure("nvidia-container-cli: mount error: file exists: unknown") == (
        "container-toolkit"
    )


def test_what_is_no_unknown_error() -> None:
    # Must not fire: the driver loading, the Talos wrapper's note on NVLink 4 boards, a task
    # that finished, prose that quotes a line, the words alone.
    for line in (
        "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.172.08",
        "nvidia-fabricmanager-wrapper: NVSwitch management disabled: failed to initialize "
        "libibumad",
        "[talos] task mountStatePartition (1/1): done, 27.5ms",
        'the reporter saw ("nvidia-container-cli: initialization error: load library failed")',
        "the fabric manager's log was empty and nothing failed that we could see",
    ):
        assert unknown_failure(line) == "", line


def test_a_known_error_on_the_node_takes_precedence_over_ts213(tmp_path: Path) -> None:
    # The unsupported-release NVRM lines are TS105's; an unknown NVRM error beside them on the
    # same node says nothing more.
    dmesg = (BUNDLES / "ts105-pascal-on-590").glob("*")
    for file in dmesg:
        shutil.copy(file, tmp_path / file.name)
    baseline = _diagnoses(tmp_path)
    assert "TS105" in baseline
    assert "TS213" not in baseline
    log = next(p for p in tmp_path.iterdir() if "NVRM" in p.read_text(encoding="utf-8"))
    log.write_text(
        log.read_text(encoding="utf-8")
        + "[   39.000001] NVRM: nvidia_frontend_open: minor 0, module->open() failed, error -5\n",
        encoding="utf-8",
    )
    after = _diagnoses(tmp_path)
    assert "TS213" not in after
    assert set(after) == set(baseline)


def test_the_same_line_alone_is_ts213(tmp_path: Path) -> None:
    (tmp_path / "dmesg.txt").write_text(
        "[   39.000001] NVRM: nvidia_frontend_open: minor 0, module->open() failed, error -5\n",
        encoding="utf-8",
    )
    assert set(_diagnoses(tmp_path)) == {"TS213"}


def test_notes_quoting_an_error_give_no_unknown_failure() -> None:
    sources = (BUNDLES / "paste-container-cli-load-library-failed" / "SOURCES.md").read_text(
        encoding="utf-8"
    )
    signals = read_evidence(sources, "SOURCES.md").signals
    assert not [s for s in signals if s.kind is Kind.UNKNOWN_FAILURE]


# --- another extension's service shown waiting -------------------------------------------------

ISCSI = BUNDLES / "paste-extension-service-waits-iscsid"


def test_another_extensions_wait_is_said_with_what_to_collect() -> None:
    (diagnosis,) = triage_paths([str(ISCSI)]).diagnoses
    assert (diagnosis.code, diagnosis.severity) == ("TS201", "warning")
    assert "ext-iscsid" in diagnosis.summary
    assert any("service ext-iscsid" in c for c in diagnosis.collect)


def test_an_extension_shown_running_or_waiting_seconds_into_a_boot_is_nothing(
    tmp_path: Path,
) -> None:
    # Must not fire: `talosctl services` shows it Running (the layout of the table in
    # siderolabs/extensions#237), or the kernel's uptime puts the wait in a boot's first seconds.
    shutil.copy(ISCSI / "console.md", tmp_path / "console.md")
    (tmp_path / "services.txt").write_text(
        "NODE   SERVICE      STATE     HEALTH   LAST CHANGE   LAST EVENT\n"
        "n1     ext-iscsid   Running   ?        2h2m53s ago   Started task ext-iscsid (PID 2299) "
        "for container ext-iscsid\n",
        encoding="utf-8",
    )
    assert "TS201" not in _diagnoses(tmp_path)
    early = tmp_path / "early"
    early.mkdir()
    (early / "console.log").write_text(
        '[    5.915003] [talos] task startAllServices (1/1): service "ext-iscsid" to be "up"\n',
        encoding="utf-8",
    )
    assert _diagnoses(early) == {}
