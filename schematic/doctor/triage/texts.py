"""The words of each diagnosis: lint's rule registry (schematic/data/lint-rules.yaml), where
the codes only triage reports (TS2xx) have their texts too, and the codes both report carry
``runtime`` (what a broken node shows) for `explain`."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RuleText", "rule_text"]


@dataclass(frozen=True)
class RuleText:
    title: str
    severity: str
    fix: str
    confirm: str


def rule_text(code: str) -> RuleText:
    """Title, severity, fix and how to confirm, for a diagnosis under ``code``."""
    from schematic.doctor.lint.findings import RULES

    rule = RULES[code]
    # lint suspects a cause from manifests (TS131 is a warning there); triage sees it happen,
    # so a cause diagnosed from runtime evidence is an error. TS2xx keep their own severity.
    severity = rule.severity if code.startswith("TS2") else "error"
    return RuleText(rule.title, severity, rule.fix, rule.confirm)
