"""The words of each diagnosis: title, severity, how to confirm, the fix.

Codes that lint also reports (TS101, TS103, ...) keep lint's title and fix; the runtime
evidence and the confirmation at run time come from ``schematic/data/triage-rules.yaml``, which
also holds the full texts of the codes only triage reports (TS2xx).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from schematic.safe_yaml import load

__all__ = ["RuleText", "rule_text", "runtime_evidence", "triage_codes"]


@dataclass(frozen=True)
class RuleText:
    code: str
    title: str
    severity: str
    fix: str
    confirm: str
    seen: str = ""
    why: str = ""
    remedy: str = ""


@cache
def _data() -> dict[str, dict[str, Any]]:
    text = files("schematic.data").joinpath("triage-rules.yaml").read_text(encoding="utf-8")
    data: dict[str, dict[str, Any]] = load(text)
    return data


def triage_codes() -> tuple[str, ...]:
    """The codes only triage reports, in order."""
    return tuple(code for code, entry in _data().items() if "title" in entry)


def runtime_evidence(code: str) -> str:
    """What a running node shows for a lint code ("" if triage says nothing of it)."""
    return str(_data().get(code, {}).get("runtime", "")).strip()


@cache
def rule_text(code: str) -> RuleText:
    entry = _data()[code]
    if "title" in entry:
        return RuleText(
            code,
            entry["title"],
            entry["severity"],
            entry["fix"],
            entry["confirm"].strip(),
            entry["seen"].strip(),
            entry["why"].strip(),
            entry["remedy"].strip(),
        )
    from schematic.lint.findings import RULES

    rule = RULES[code]
    # At run time the cause is diagnosed, not suspected: a diagnosed cause is an error.
    return RuleText(code, rule.title, "error", rule.fix, entry["confirm"].strip())
