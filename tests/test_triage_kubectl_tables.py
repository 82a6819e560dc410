"""``kubectl get svc``, ``kubectl get pods -A`` and ``kubectl get pods -A -o wide`` as the real
kubectl prints them, read by triage.

kubectl (``.venv/tools``, installed by make) is run against the loopback API server of
kube_fake.py holding the objects below; what it prints is triaged beside the rest of a corpus
bundle and held to that bundle's verdict. The bundles' copies of these tables are the same
bytes (checked here; ``TALOS_SCHEMATIC_REGENERATE=1`` writes them again), so each fixture is
provably the real tool's output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_fake import FakeServer, fake_api_server
from real_tools import KUBECTL
from test_triage_corpus import verdict_problems

from schematic.doctor.triage import triage_paths

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
BUNDLES = DATA / "triage"
REGENERATE = os.environ.get("TALOS_SCHEMATIC_REGENERATE") == "1"
pytestmark = KUBECTL.needed


@dataclass(frozen=True)
class Recording:
    """A table a bundle holds: the command, the objects the server held, its clock."""

    table: str  # the bundle's file, under tests/data/triage
    command: tuple[str, ...]
    objects: str  # a YAML or JSON file of objects (a List's items), under tests/data
    now: datetime


RECORDINGS = (
    Recording(
        "ts131-svc-table-without-trustd/svc.txt",
        ("get", "svc", "-n", "tenant-b"),
        "kubectl/tenant-b-service.yaml",
        datetime(2026, 11, 21, 9, 30, tzinfo=UTC),
    ),
    Recording(
        "class1-svc-table-lists-trustd/svc.txt",
        ("get", "svc", "-n", "tenant-b"),
        "kubectl/tenant-b-service-trustd.yaml",
        datetime(2026, 11, 21, 9, 30, tzinfo=UTC),
    ),
    Recording(
        "ts202-pods-table-wide-loop/pods-wide.txt",
        ("get", "pods", "-A", "-o", "wide"),
        "triage/ts101-nvidia-image-cpu-worker/pods.json",
        datetime(2026, 11, 20, 11, 20, tzinfo=UTC),
    ),
    Recording(
        "ts202-pods-table-loop-names-no-node/pods.txt",
        ("get", "pods", "-A"),
        "triage/ts101-nvidia-image-cpu-worker/pods.json",
        datetime(2026, 11, 20, 11, 20, tzinfo=UTC),
    ),
    Recording(
        "class3-pods-table-wide-restarted-once/pods-wide.txt",
        ("get", "pods", "-A", "-o", "wide"),
        "triage/class3-restarted-once-no-timer/pods.json",
        datetime(2026, 11, 24, 7, 30, tzinfo=UTC),
    ),
)


def _objects(file: str) -> list[dict[str, Any]]:
    text = (DATA / file).read_text(encoding="utf-8")
    loaded = json.loads(text) if file.endswith(".json") else yaml.safe_load(text)
    return list(loaded["items"]) if loaded.get("kind", "").endswith("List") else [loaded]


def _kubectl_prints(server: FakeServer, recording: Recording, folder: Path) -> str:
    server.objects.clear()
    server.now = recording.now
    for obj in _objects(recording.objects):
        server.put(obj)
    return _run_kubectl(server, folder, recording.command)


def _run_kubectl(server: FakeServer, folder: Path, command: Sequence[str]) -> str:
    """What the real kubectl prints for ``command`` against the fake API server."""
    assert KUBECTL.path is not None
    # HOME: kubectl's discovery cache goes to the test's folder (and serves every run), not
    # to the user's.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder)}
    done = subprocess.run(
        [KUBECTL.path, "--kubeconfig", str(server.kubeconfig(folder)), *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What kubectl printed for each recording, run once for the module."""
    folder = tmp_path_factory.mktemp("kubectl")
    with fake_api_server() as server:
        return {r.table: _kubectl_prints(server, r, folder) for r in RECORDINGS}


def _ids(recordings: tuple[Recording, ...]) -> Iterator[Any]:
    for recording in recordings:
        yield pytest.param(recording, id=recording.table.split("/", 1)[0])


@pytest.mark.parametrize("recording", list(_ids(RECORDINGS)))
def test_the_bundle_holds_what_kubectl_prints(
    recording: Recording, printed: dict[str, str]
) -> None:
    fixture = BUNDLES / recording.table
    if REGENERATE:
        fixture.write_text(printed[recording.table], encoding="utf-8")
    assert fixture.read_text(encoding="utf-8") == printed[recording.table]


@pytest.mark.parametrize("recording", list(_ids(RECORDINGS)))
def test_triage_reads_what_kubectl_prints(
    recording: Recording, printed: dict[str, str], tmp_path: Path
) -> None:
    """The bundle with kubectl's table in place of its copy gets the bundle's verdict."""
    bundle = recording.table.split("/", 1)[0]
    shutil.copytree(BUNDLES / bundle, tmp_path / bundle)
    (tmp_path / recording.table).write_text(printed[recording.table], encoding="utf-8")
    report = triage_paths([str(tmp_path / bundle)])
    assert verdict_problems(bundle, report) == []
    table = Path(recording.table).name
    assert [r.format for r in report.readings if Path(r.file).name == table] == ["table"]


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_an_empty_list_kubectl_prints_is_read_and_alone_judges_nothing(
    tmp_path: Path, output: str
) -> None:
    # A namespace with no pods, as kubectl prints it: a List with no items (a quiet cluster's
    # events read the same). Beside a healthy bundle it is read (not "unrecognised"); alone it
    # shows nothing of the nodes (exit 4).
    with fake_api_server() as server:
        printed = _run_kubectl(
            server, tmp_path, ("get", "pods", "-n", "gpu-operator", "-o", output)
        )
    assert "items: []" in printed or '"items": []' in printed
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLES / "healthy-gpu-worker-l40s", bundle)
    events = bundle / f"gpu-operator-pods.{output}"
    events.write_text(printed, encoding="utf-8")
    report = triage_paths([str(bundle)])
    assert report.verdict == "healthy"
    assert str(events) not in [reading.file for reading in report.unrecognised]
    alone = triage_paths([str(events)])
    assert alone.verdict == "not judged"
    assert not alone.unrecognised
