"""The evidence corpus: every bundle in tests/data/triage that states its verdict in an
``expected.yaml`` is triaged and held to it — the codes it must report and on which nodes, the
codes it must not report, the files that are not evidence. Bundles are built from real public
pastes (each bundle's SOURCES.md); the classes are those of the triage issue: 1 the headline
called its look-alike, 2 one node with several names, 3 claims without time evidence, 4 TS155
on healthy HGX, 5 formats people paste, 6 files that are not evidence, 7 cluster-scale input,
8 output usable as is; plus healthy, mixed and noisy bundles.

Where today's engine gives the wrong verdict the case is marked xfail(strict): it flips to a
failure, and the mark must go, the day the engine gets it right.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import TriageReport, triage_paths

register_all_commands()

BUNDLES = Path(__file__).parent / "data" / "triage"
STATED = sorted(p.parent.name for p in BUNDLES.glob("*/expected.yaml"))

# Bundles today's engine gets wrong, and why (the engine's work removes these).
NOT_YET: dict[str, str] = {}


def expectation(bundle: str) -> dict[str, Any]:
    data = yaml.safe_load((BUNDLES / bundle / "expected.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict), bundle
    return data


def verdict_problems(bundle: str, report: TriageReport) -> list[str]:
    """How ``report`` departs from the bundle's expected.yaml (empty when it holds)."""
    want = expectation(bundle)
    found = {d.code: d for d in report.diagnoses}
    problems: list[str] = []
    for key, severity in (("errors", "error"), ("reported", None)):
        for code, nodes in (want.get(key) or {}).items():
            diagnosis = found.get(code)
            if diagnosis is None:
                problems.append(f"{code} not reported")
                continue
            if severity and diagnosis.severity != severity:
                problems.append(f"{code} is a {diagnosis.severity}, not an {severity}")
            if sorted(diagnosis.nodes) != sorted(nodes):
                problems.append(f"{code} names {list(diagnosis.nodes)}, not {nodes}")
    for code in want.get("absent") or []:
        if code in found:
            problems.append(f"{code} reported on {list(found[code].nodes)} but must not be")
    if want.get("no_errors"):
        errors = [d.code for d in report.diagnoses if d.severity == "error"]
        if errors:
            problems.append(f"errors reported on a healthy bundle: {errors}")
    unrecognised = {Path(r.file).name for r in report.unrecognised}
    for name in want.get("unrecognised") or []:
        if name not in unrecognised:
            problems.append(f"{name} was read as evidence")
    for reading in report.readings:
        name = Path(reading.file).name
        if name in ("SOURCES.md", "expected.yaml"):
            if reading.signals:
                problems.append(f"{name} yielded signals")
        elif not reading.format and name not in [
            *(want.get("unrecognised") or []),
            *(want.get("may_be_unread") or []),
        ]:
            problems.append(f"{name} not recognised: {reading.problem or 'no known evidence'}")
    return problems


def _case(bundle: str) -> Any:
    marks = []
    if bundle in NOT_YET:
        marks.append(pytest.mark.xfail(strict=True, reason=NOT_YET[bundle]))
    return pytest.param(bundle, marks=marks, id=bundle)


@pytest.mark.parametrize("bundle", [_case(b) for b in STATED])
def test_bundle_verdict(bundle: str) -> None:
    report = triage_paths([str(BUNDLES / bundle)])
    assert verdict_problems(bundle, report) == []


def test_the_corpus_is_large_and_balanced() -> None:
    classes = [str(expectation(b)["class"]) for b in STATED]
    for required in "12345678":
        assert required in classes, f"no bundle for class {required}"
    healthy = [b for b in STATED if expectation(b).get("no_errors")]
    assert len(healthy) >= 5, healthy
    assert sum(c == "mixed" for c in classes) >= 2
    assert sum(c == "noise" for c in classes) >= 1


@pytest.mark.parametrize("bundle", STATED)
def test_every_file_of_a_bundle_is_sourced(bundle: str) -> None:
    sources = (BUNDLES / bundle / "SOURCES.md").read_text(encoding="utf-8")
    assert "Expected:" in sources
    for file in (BUNDLES / bundle).iterdir():
        if file.name != "SOURCES.md":
            assert f"`{file.name}`" in sources, file.name


# --- the eight classes, each on its own bundle(s) --------------------------------------------


def _holds(bundle: str) -> None:
    assert verdict_problems(bundle, triage_paths([str(BUNDLES / bundle)])) == []


def test_class1_corpus_early_apid_wait_is_not_ts131() -> None:
    _holds("class1-apid-waits-early-nvidia-pending")


def test_class1_corpus_listed_trustd_port_rules_ts131_out() -> None:
    _holds("class1-trustd-listed-apid-x509")


@pytest.mark.parametrize(
    "bundle", ["class2-one-node-several-names", "class2-vmi-describe-talosctl"]
)
def test_class2_corpus_one_node_several_names(bundle: str) -> None:
    _holds(bundle)


def test_class3_corpus_pods_restarted_once_are_no_timer() -> None:
    _holds("class3-restarted-once-no-timer")


def test_class3_corpus_loop_that_began_after_days_of_uptime() -> None:
    _holds("class3-loop-after-upgrade")


@pytest.mark.parametrize("bundle", ["class4-healthy-hgx-h100", "class4-healthy-a100-nvlink3"])
def test_class4_corpus_ts155_silent_on_healthy_hgx(bundle: str) -> None:
    _holds(bundle)


def test_class4_corpus_ts155_silent_when_ib_umad_is_loaded() -> None:
    _holds("class4-b200-ib-umad-loaded")


@pytest.mark.parametrize("bundle", ["class5-pasted-formats-ts103", "class5-grep-rows-crlf-ts101"])
def test_class5_corpus_pasted_formats(bundle: str) -> None:
    _holds(bundle)


def test_class6_corpus_notes_are_not_evidence() -> None:
    _holds("class6-readme-and-notes")


def test_class7_corpus_5000_pods_at_default_limits(tmp_path: Path) -> None:
    """~47 MB of `kubectl get pods -A -o json` (5,000 pods on 250 nodes) is read whole."""
    seed = json.loads((BUNDLES / "class7-cluster-scale" / "pods.json").read_text(encoding="utf-8"))
    template = json.dumps(seed["items"][0], indent=4)
    items = []
    for index in range(5000):
        node = f"kubernetes-big-md0-{index % 250:05d}"
        text = template.replace("kubernetes-big-md0-a1b2c", node)
        text = text.replace('"name": "web-', f'"name": "app-{index:05d}-')
        items.append(text)
    # kubectl's own layout: 4-space indent, one object per item; padded to the size
    # with the per-pod fields a real cluster carries (labels, ownerReferences, volumes).
    padding = ' "x-filler": "' + "v" * 7800 + '",'
    body = ",\n".join(item.replace("{", "{" + padding, 1) for item in items)
    (tmp_path / "pods.json").write_text(
        '{\n    "apiVersion": "v1",\n    "items": [\n' + body + '\n    ],\n    "kind": "List"\n}\n',
        encoding="utf-8",
    )
    assert (tmp_path / "pods.json").stat().st_size > 40_000_000
    report = triage_paths([str(tmp_path)])
    assert [r.format for r in report.readings] == ["json"]
    assert not [d for d in report.diagnoses if d.severity == "error"]


def test_class8_corpus_output_is_usable_as_is() -> None:
    bundle = str(BUNDLES / "class8-output-usable-ts101")
    result = CliRunner().invoke(app, ["triage", bundle])
    assert result.exit_code == 3, result.stdout
    text = result.stdout
    # No raw terminal control from the console capture reaches the report.
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), repr(text)
    # Every schematic ID is printed whole: never cut with an ellipsis.
    assert not re.search(r"[0-9a-f]{6,}…[0-9a-f]{2,}", text), text
    assert "TS101" in text and "kubernetes-tenant-f-cpu-m4v8t" in text
    _holds("class8-output-usable-ts101")
