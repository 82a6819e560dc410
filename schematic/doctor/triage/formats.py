"""Triage output: text for people, JSON for scripts, Markdown for tickets, SARIF 2.1.0 for
code-scanning UIs (the conventions of lint's formats: ``file:line``, `explain CODE`)."""

from __future__ import annotations

import json
from typing import Any

from schematic.doctor.triage import TriageReport
from schematic.doctor.triage.diagnose import Diagnosis
from schematic.errors import printable
from schematic.redact import redacted

__all__ = ["FORMATS", "render"]

FORMATS = ("text", "json", "markdown", "sarif")


def _shown(text: str) -> str:
    """Evidence (a line a tenant's workload may have written) and file names as text and
    Markdown show them: control characters and bidirectional overrides escaped, on one line."""
    return printable(text, one_line=True)


def _lines(text: str, indent: str) -> list[str]:
    return [indent + line if line else "" for line in text.splitlines()]


def _pools(d: Diagnosis) -> str:
    named = [p for p in d.pools if p]
    return ", ".join(f"pool {p}" for p in named) or "pool not known"


def _count(nodes: tuple[str, ...]) -> str:
    known = [n for n in nodes if n]
    if not known:
        return "node not known"
    return "1 node" if len(known) == 1 else f"{len(known)} nodes"


def summary_lines(report: TriageReport) -> list[str]:
    """One line per diagnosis: cause → pools → how many nodes → the fix."""
    return [
        _shown(f"{d.severity} {d.code} {d.title} → {_pools(d)} → {_count(d.nodes)} → {d.fix}")
        for d in report.diagnoses
    ]


# What an empty report means: judged healthy, or nothing read to judge.
_NO_DIAGNOSIS = {
    True: "no failure recognised in the inputs",
    False: "nothing could be judged: no input was read as evidence",
}


def render_text(report: TriageReport) -> str:
    out: list[str] = []
    if report.diagnoses:
        out.append("summary:")
        out += [f"  {line}" for line in summary_lines(report)]
        out.append("")
    for d in report.diagnoses:
        out.append(f"{d.severity} {d.code}: {d.title}")
        if d.summary:
            out.append(f"  {_shown(d.summary)}")
        if any(d.pools):
            out.append(f"  {_shown(_pools(d))}: {_count(d.nodes)}")
        out.append(f"  nodes: {_shown(', '.join(d.nodes)) or '(not known from the inputs)'}")
        for role, schematic in d.schematics:
            out.append(f"  schematic {role}: {_shown(schematic)}")
        out.append("  evidence:")
        out += [f"    {_shown(e.where)}: {_shown(e.text)}" for e in d.evidence]
        if d.ruled_out:
            out.append("  ruled out:")
            out += [f"    {_shown(reason)}" for reason in d.ruled_out]
        out.append("  confirm:")
        out += _lines(d.confirm, "    ")
        out.append(f"  fix: {d.fix}")
        out += [f"    {_shown(place)}" for place in d.places]
        out.append(f"    talos-schematic explain {d.code}")
        if d.collect:
            out.append("  collect next:")
            out += [f"    {_shown(item)}" for item in d.collect]
        out.append("")
    if not report.diagnoses:
        out.append(_NO_DIAGNOSIS[report.judged])
    if report.read_in_part:
        out.append("read in part:")
        out += [f"  {_shown(r.file)}: {_shown(r.problem)}" for r in report.read_in_part]
    if report.unrecognised:
        read = len(report.readings) - len(report.unrecognised)
        head = "not read as evidence" if read else "nothing was recognised; could not read"
        out.append(f"{head}:")
        out += [
            f"  {_shown(r.file)}: {_shown(r.problem or 'no known evidence in it')}"
            for r in report.unrecognised
        ]
    return "".join(line + "\n" for line in out)


def _diagnosis(d: Diagnosis) -> dict[str, Any]:
    return {
        "code": d.code,
        "severity": d.severity,
        "title": d.title,
        "summary": d.summary,
        "nodes": list(d.nodes),
        "evidence": [{"file": e.file, "line": e.line, "text": e.text} for e in d.evidence],
        "ruledOut": list(d.ruled_out),
        "confirm": d.confirm,
        "fix": d.fix,
        "collect": list(d.collect),
        "pools": list(d.pools),
        "schematics": [{"role": role, "id": value} for role, value in d.schematics],
        "fixWhere": list(d.places),
        "onlyIfTalos": d.if_talos,
    }


def render_json(report: TriageReport) -> str:
    document = {
        "verdict": report.verdict,
        "summary": summary_lines(report),
        "diagnoses": [_diagnosis(d) for d in report.diagnoses],
        "inputs": [
            {
                "file": r.file,
                "format": r.format,
                "signals": len(r.signals),
                **({"notRead": r.problem} if r.problem else {}),
            }
            for r in report.readings
            if r.format
        ],
        "unrecognised": [
            {"file": r.file, "reason": r.problem or "no known evidence in it"}
            for r in report.unrecognised
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def _cell(text: str) -> str:
    return _shown(text).replace("|", "\\|").replace("`", "'")


def render_markdown(report: TriageReport) -> str:
    out = ["# Triage", ""]
    if not report.diagnoses:
        out += [_sentence(_NO_DIAGNOSIS[report.judged]), ""]
    for d in report.diagnoses:
        out += [f"## {d.code} ({d.severity}): {d.title}", ""]
        out += [f"**Nodes:** {_shown(', '.join(d.nodes)) or '(not known from the inputs)'}", ""]
        if any(d.pools):
            out += [f"**Pools:** {_shown(', '.join(p for p in d.pools if p))}", ""]
        out += [f"**Schematic {role}:** `{_cell(value)}`" for role, value in d.schematics]
        if d.summary:
            out += [_shown(d.summary), ""]
        out += ["| where | line |", "| --- | --- |"]
        out += [f"| `{_cell(e.where)}` | {_cell(e.text)} |" for e in d.evidence]
        out.append("")
        if d.ruled_out:
            out += ["**Ruled out:**", ""] + [f"- {_shown(r)}" for r in d.ruled_out] + [""]
        out += ["**Confirm:**", "", d.confirm, ""]
        out += [f"**Fix:** {d.fix} (`talos-schematic explain {d.code}`)", ""]
        if d.places:
            out += [f"- {_shown(place)}" for place in d.places] + [""]
        if d.collect:
            out += ["**Collect next:**", ""] + [f"- {_shown(c)}" for c in d.collect] + [""]
    if report.read_in_part:
        out += ["## Read in part", ""]
        out += [f"- `{_cell(r.file)}` {_shown(r.problem)}" for r in report.read_in_part] + [""]
    if report.unrecognised:
        out += ["## Unrecognised inputs", ""]
        out += [
            f"- `{_cell(r.file)}` {_shown(r.problem)}".rstrip() for r in report.unrecognised
        ] + [""]
    return "\n".join(out).rstrip("\n") + "\n"


def render_sarif(report: TriageReport) -> str:
    """Lint's SARIF log (the same rule list); each diagnosis at its first evidence line."""
    from schematic.doctor.lint.formats import sarif_log, sarif_rule_index, sarif_uri

    index = sarif_rule_index()
    results: list[dict[str, Any]] = []
    for d in report.diagnoses:
        locations = [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": sarif_uri(e.file)},
                    "region": {"startLine": e.line},
                },
                "message": {"text": e.text},
            }
            for e in d.evidence
        ]
        nodes = ", ".join(d.nodes) or "unknown nodes"
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": d.severity,
            "message": {"text": f"{d.title} ({nodes}). Fix: {d.fix}"},
            "locations": locations[:1],
            "properties": {"nodes": list(d.nodes), "ruledOut": list(d.ruled_out)},
        }
        if len(locations) > 1:
            result["relatedLocations"] = [
                {"id": i, **location} for i, location in enumerate(locations[1:], 1)
            ]
        results.append(result)
    return sarif_log(results)


_RENDERERS = {
    "text": render_text,
    "json": render_json,
    "markdown": render_markdown,
    "sarif": render_sarif,
}


def render(report: TriageReport, fmt: str) -> str:
    """The report in ``fmt`` (one of FORMATS), credentials hidden: the readers hide them in each
    line they quote, before cutting it; this hides any a summary or a note still holds."""
    return redacted(_RENDERERS[fmt](report))
