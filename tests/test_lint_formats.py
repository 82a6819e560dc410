"""Lint output formats: text lines, JSON, and SARIF 2.1.0's required structure."""

from __future__ import annotations

import json

from schematic.doctor.lint import LintReport
from schematic.doctor.lint.findings import RULES, Finding
from schematic.doctor.lint.formats import render

REPORT = LintReport(
    findings=(
        Finding(
            code="TS101",
            severity="error",
            message="pool 'a': NVIDIA on a CPU pool",
            fix=RULES["TS101"].fix,
            file="./dir/n.yaml",
            line=9,
            object="a",
        ),
        Finding(
            code="TS003",
            severity="note",
            message="skipped",
            fix=RULES["TS003"].fix,
            file="t.yaml",
        ),
    ),
    files=2,
    judged=True,
)


def test_text_names_file_line_code_and_fix() -> None:
    lines = render(REPORT, "text").splitlines()
    assert lines[0] == "./dir/n.yaml:9: error TS101: pool 'a': NVIDIA on a CPU pool"
    assert lines[1].startswith("    fix: give this pool a schematic without NVIDIA")
    assert lines[2] == "t.yaml: note TS003: skipped"


def test_json_document() -> None:
    document = json.loads(render(REPORT, "json"))
    assert document["summary"] == {
        "errors": 1,
        "warnings": 0,
        "notes": 1,
        "files": 2,
        "judged": True,
    }
    first = document["findings"][0]
    assert (first["code"], first["line"], first["object"]) == ("TS101", 9, "a")
    assert first["title"] == RULES["TS101"].title


def test_sarif_required_fields() -> None:
    sarif = json.loads(render(REPORT, "sarif"))
    assert sarif["version"] == "2.1.0"
    assert sarif["$schema"].endswith("sarif-2.1.0.json")
    (run,) = sarif["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "talos-schematic"
    rule_ids = [r["id"] for r in driver["rules"]]
    assert rule_ids == sorted(RULES)
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    first, second = run["results"]
    assert first["ruleId"] == "TS101" and first["level"] == "error"
    assert rule_ids[first["ruleIndex"]] == "TS101"
    assert first["message"]["text"].startswith("pool 'a'")
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "dir/n.yaml"
    assert location["region"] == {"startLine": 9}
    # No line: no region (SARIF forbids startLine 0).
    assert "region" not in second["locations"][0]["physicalLocation"]
    assert second["level"] == "note"


def test_output_is_deterministic() -> None:
    assert render(REPORT, "sarif") == render(REPORT, "sarif")
    assert render(REPORT, "json").endswith("}\n")
