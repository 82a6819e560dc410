"""The rule registry both doctors speak from: each code's title, severity, one-line fix and the
long text `explain` prints.

The texts are package data, ``schematic/data/lint-rules.yaml`` (its header says how codes are
numbered and what each field holds), read once, at import. `lint` finds the TS0xx/TS1xx rules in
manifests; `triage` diagnoses from a cluster's evidence, under the same codes and its own TS2xx.
This module imports no model library: `triage` and `explain` start on it alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, Literal

__all__ = ["RULES", "RULES_FILE", "SEVERITIES", "Rule", "RuleDataError", "Severity", "rule"]

Severity = Literal["error", "warning", "note"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "note")
RULES_FILE = "lint-rules.yaml"
_CODE = re.compile(r"TS[0-9]{3}")


class RuleDataError(ValueError):
    """An entry of the rule data that is not a rule (a test holds the shipped file to this)."""


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One rule: what it checks and how to read and fix what it finds."""

    code: str
    title: str
    severity: Severity
    fix: str
    seen: str  # what the user sees
    why: str
    confirm: str
    remedy: str
    runtime: str = ""  # what a broken node shows, for the rules `triage` also diagnoses

    @classmethod
    def from_entry(cls, entry: Any) -> Rule:
        """The rule an entry of the data file states; RuleDataError naming the entry and field
        when a field is missing, unknown or not text, the code is not ``TSnnn`` or the
        severity none of :data:`SEVERITIES`."""
        if not isinstance(entry, dict):
            raise RuleDataError(f"{RULES_FILE}: an entry is not a mapping: {entry!r:.60}")
        name = entry.get("code", "an entry")
        known = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.name != "runtime"}
        if unknown := sorted(str(key) for key in entry if key not in known):
            raise RuleDataError(f"{RULES_FILE}: {name}: unknown field {', '.join(unknown)}")
        if missing := sorted(required - entry.keys()):
            raise RuleDataError(f"{RULES_FILE}: {name}: no {', '.join(missing)}")
        if not_text := sorted(key for key, value in entry.items() if not isinstance(value, str)):
            raise RuleDataError(f"{RULES_FILE}: {name}: {', '.join(not_text)} must be text")
        if not _CODE.fullmatch(entry["code"]):
            raise RuleDataError(f"{RULES_FILE}: {name}: a code is TS and three digits")
        if entry["severity"] not in SEVERITIES:
            raise RuleDataError(f"{RULES_FILE}: {name}: severity is one of {', '.join(SEVERITIES)}")
        return cls(**entry)

    def explain(self) -> str:
        """The long text of `talos-schematic explain CODE`."""
        runtime = f"What a broken node shows\n{_indent(self.runtime)}\n\n" if self.runtime else ""
        return (
            f"{self.code} ({self.severity}): {self.title}\n\n"
            f"What you see\n{_indent(self.seen)}\n\n"
            f"{runtime}"
            f"Why it happens\n{_indent(self.why)}\n\n"
            f"How to confirm it\n{_indent(self.confirm)}\n\n"
            f"How to fix it\n{_indent(self.remedy)}\n"
        )


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else "" for line in text.strip().splitlines())


def _load_rules() -> dict[str, Rule]:
    """The rules of ``schematic/data/lint-rules.yaml``, by code, in the file's order."""
    from importlib import resources

    from schematic.safe_yaml import load

    entries = load(resources.files("schematic.data").joinpath(RULES_FILE).read_text("utf-8"))
    rules: dict[str, Rule] = {}
    for entry in entries:
        known = Rule.from_entry(entry)
        if known.code in rules:
            raise RuleDataError(f"{RULES_FILE}: {known.code} is written twice")
        rules[known.code] = known
    return rules


RULES: dict[str, Rule] = _load_rules()


def rule(code: str) -> Rule:
    """The rule with this code (KeyError for an unknown code)."""
    return RULES[code]
