"""Lint output: text for people, JSON for scripts, SARIF 2.1.0 for code-scanning UIs."""

from __future__ import annotations

import json
from typing import Any

from schematic import __version__
from schematic.doctor.lint import LintReport
from schematic.doctor.lint.findings import RULES
from schematic.errors import printable

__all__ = ["FORMATS", "render", "sarif_log", "sarif_rule_index", "sarif_uri"]

FORMATS = ("text", "json", "sarif")
_SARIF_LEVEL = {"error": "error", "warning": "warning", "note": "note"}
_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _where(file: str, line: int | None) -> str:
    # A file name holding a line break stays on its finding's line (JSON and SARIF keep it exact).
    shown = printable(file, one_line=True)
    return f"{shown}:{line}" if line is not None else shown


def render_text(report: LintReport) -> str:
    lines: list[str] = []
    for f in report.findings:
        lines.append(f"{_where(f.file, f.line)}: {f.severity} {f.code}: {f.message}")
        lines.append(f"    fix: {f.fix}  (talos-schematic explain {f.code})")
    return "".join(line + "\n" for line in lines)


def render_json(report: LintReport) -> str:
    document = {
        "findings": [
            {
                "code": f.code,
                "severity": f.severity,
                "title": RULES[f.code].title,
                "message": f.message,
                "fix": f.fix,
                "file": f.file,
                "line": f.line,
                "object": f.object,
            }
            for f in report.findings
        ],
        "summary": {
            "errors": report.count("error"),
            "warnings": report.count("warning"),
            "notes": report.count("note"),
            "files": report.files,
            # False: the inputs held nothing lint checks (exit 4), not a pass.
            "judged": report.judged,
        },
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def sarif_uri(file: str) -> str:
    """A file as a SARIF URI reference: forward slashes, relative where the input was."""
    return file.replace("\\", "/").removeprefix("./")


def sarif_rule_index() -> dict[str, int]:
    """Each code's index among the rules every SARIF log of this tool lists."""
    return {code: i for i, code in enumerate(sorted(RULES))}


def sarif_log(results: list[dict[str, Any]]) -> str:
    """A SARIF 2.1.0 log of ``results`` with every rule's text (shared with `triage`)."""
    rules = [
        {
            "id": code,
            "name": RULES[code].title,
            "shortDescription": {"text": RULES[code].title},
            "fullDescription": {"text": RULES[code].why},
            "help": {"text": RULES[code].explain()},
            "defaultConfiguration": {"level": _SARIF_LEVEL[RULES[code].severity]},
        }
        for code in sorted(RULES)
    ]
    document = {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "talos-schematic",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def render_sarif(report: LintReport) -> str:
    index = sarif_rule_index()
    results: list[dict[str, Any]] = []
    for f in report.findings:
        location: dict[str, Any] = {"artifactLocation": {"uri": sarif_uri(f.file)}}
        if f.line is not None:
            location["region"] = {"startLine": f.line}
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f"{f.message}. Fix: {f.fix}"},
            "locations": [{"physicalLocation": location}],
        }
        if f.object:
            result["properties"] = {"object": f.object}
        results.append(result)
    return sarif_log(results)


def render(report: LintReport, fmt: str) -> str:
    """The report in ``fmt`` (one of FORMATS)."""
    if fmt == "json":
        return render_json(report)
    if fmt == "sarif":
        return render_sarif(report)
    return render_text(report)
